"""One comparator for the papers' claims.

A claim is data: the paper's file (`papers/NAME.json`) lists under
`claims` what it says and where ours is measured, and this module
computes the two figures and the verdict the same way for every system.
A claim spec has:

- `results`: the benchmark names (results files) it is judged on;
- `table` and `claim` (the text), `kind`: `"figure"` or `"ordering"`;
- `groups`: how rows make the groups compared: `from` (the record's
  list of rows read: `"rows"`, the default, or `"summary"`), `where`
  (`{field: value}` the rows kept must match), `by` (a row field, such
  as `variant`; none: one group of every row kept, named `null`) or
  `fields` (each of these fields a group over the same rows), `per` (a
  field: the value is first averaged over the rows sharing it, such as
  the tasks of one `seed`; a `per` value with fewer rows than the others
  is left out), `seeds` (a row field counting the seeds behind a figure
  read from a summary; default the number of values), `value` (the row
  field of the figure, `a.b` for a nested key; or a list of
  `[figure, validation]` field pairs, of which each group uses the pair
  with the better mean validation, the others being other ways to score
  the same runs), `scale` (ours times it is in the paper's unit),
  `format` (ours as text, e.g. `"{:.2%}"`), `unit` (said after it and
  its spread) and `notes` (`{field: text}`
  said beside a figure scored by that field);
- `note` (optional): why the spec is as it is, for readers of the file;
- `data`: what it was measured on (a format string over the results
  record, such as `"{data[sizes][train]:,} train"`), optionally `describe`
  (`{field: [number format, words]}`: the span of these fields over the
  rows compared, added to `data`) and `equal` (a row field all the rows
  compared must share, such as `steps`, else no claim);
- for a `figure`: `group` and `row` (the paper's row: a key of its
  table's rows, one label of a list of `[label, value]`, or a path of
  keys into nested rows, a name in the table's `columns` picking an
  item of a list), and optionally `spread_row` (the paper's spread over
  its runs, shown beside its figure), `tolerance` (a number, or a key
  of the table's tolerances; default the table's), `failed` (`field`: a
  row field listing our failed tasks, `row`: the paper's count; "no"
  where ours fails more tasks than the paper's, or than one where the
  paper fails none), `theirs_note` (said after the paper's figure) and
  `partly_ahead_of` (a group: "partly" where ours misses the paper's
  figure but is ahead of that group by more than the larger spread, the
  paper's ordering);
- for an `ordering`: `order` (groups, the one the paper puts ahead
  first; the texts say them in this order, `a against b`) and `rows`
  (their paper rows; or `theirs`, the paper's ordering in words where
  it gives no figures), optionally `direction` (default the paper's:
  which way is ahead) and `rule`:
  `"spread"` (default) or `"mann_whitney"` (with `level`).

A claim's text may say `{seeds}`, replaced by the count of seeds.

The spread is the sample standard deviation over seeds, everywhere.
An ordering with two seeds or more a group is "yes" where each step
holds by more than the larger spread of its two, "partly" where each
holds within it, else "no"; with one seed, "yes" where it holds. By
`mann_whitney`: "yes" where the runs ahead rank ahead at one-sided
p < `level` and their median is ahead, "partly" where only the median
is, else "no".
"""

import statistics

from reproductions import render

DIRECTIONS = ("lower", "higher")
KINDS = ("figure", "ordering")
RULES = ("spread", "mann_whitney")


def verdict(ours, theirs, tolerance, direction="lower"):
    """A figure against the paper's: "yes" when `ours` is no worse than
    `theirs` by more than `tolerance` in `direction` ("lower" is better,
    as an error; or "higher", as an accuracy), else "no".

    >>> verdict(14.5, 13.9, 1.0), verdict(15.0, 13.9, 1.0)
    ('yes', 'no')
    >>> verdict(0.93, 0.95, 0.01, direction="higher")
    'no'
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"`direction` must be one of {DIRECTIONS}, "
                         f"received: direction={direction!r}")
    if direction == "lower":
        return "yes" if ours <= theirs + tolerance else "no"
    return "yes" if ours >= theirs - tolerance else "no"


def spread(values):
    """The sample standard deviation (0 for one value)."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def ordering_verdict(gains, spreads, seeds):
    """The paper's ordering from each step's `gains` (> 0: as the paper
    has it) and `spreads`, over `seeds` seeds a group at least.

    >>> ordering_verdict([0.02, 0.03], [0.01, 0.01], 3)
    'yes'
    >>> ordering_verdict([0.02, 0.005], [0.01, 0.01], 3)
    'partly'
    >>> ordering_verdict([0.02], [0.05], 1), ordering_verdict([-0.1], [0], 1)
    ('yes', 'no')
    """
    if seeds > 1 and all(g > s for g, s in zip(gains, spreads)):
        return "yes"
    if all(g > 0 for g in gains):
        return "yes" if seeds == 1 else "partly"
    return "no"


def mann_whitney(ahead, behind, direction="lower"):
    """Whether the runs `ahead` rank ahead of the runs `behind` (lower
    values, or higher with `direction` "higher"): the one-sided
    Mann-Whitney U test (exact for small samples) as `{"u", "p_value",
    "median_gain"}`, the gain the median's step the paper's way.

    >>> found = mann_whitney([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    >>> found["u"], round(found["p_value"], 2), found["median_gain"]
    (0.0, 0.05, 3.0)
    """
    from scipy import stats

    sign = 1 if direction == "lower" else -1
    test = stats.mannwhitneyu([sign * v for v in ahead],
                              [sign * v for v in behind], alternative="less")
    return {"u": float(test.statistic), "p_value": float(test.pvalue),
            "median_gain": sign * (statistics.median(behind)
                                   - statistics.median(ahead))}


def paper_value(table, row, where):
    """The figure of paper row `row` of `table` (a dict of rows, or a
    list of `[label, value]`, `row` a label; or a list, a path of keys
    into nested rows, a name of the table's `columns` indexing a list).

    >>> table = {"columns": ["error", "failed"],
    ...          "rows": {"1k": {"UT": [7.78, 5]}}}
    >>> paper_value(table, ["1k", "UT", "failed"], "here")
    5
    """
    rows = table["rows"]
    if isinstance(row, list):
        found = rows
        for key in row:
            if isinstance(found, list) and isinstance(key, str):
                if key not in table.get("columns", []):
                    raise ValueError(f"{where}: the paper's table has no "
                                     f"column {key!r}")
                key = table["columns"].index(key)
            try:
                found = found[key]
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"{where}: the paper's table has no row "
                                 f"{row!r}") from None
        return found
    if isinstance(rows, dict):
        if row not in rows:
            raise ValueError(f"{where}: the paper's table has no row "
                             f"{row!r}; its rows: {', '.join(rows)}")
        return rows[row]
    found = [value for label, value in rows if label == row]
    if len(found) != 1:
        raise ValueError(f"{where}: {len(found)} rows of the paper's table "
                         f"are labelled {row!r}, expected 1")
    return found[0]


MISSING = object()


def field_of(row, field):
    """`row[field]` as the renderer reads it (`render.lookup`: `a.b` a
    nested key), MISSING where absent or None."""
    try:
        return render.lookup(row, field)
    except render.Missing:
        return MISSING


def _per(rows, field, per):
    """The values of `field` over `rows`, or with `per` their means over
    the rows sharing each value of `per` (those with fewer rows than the
    most left out)."""
    if per is None:
        return [field_of(row, field) for row in rows]
    buckets = {}
    for row in rows:
        buckets.setdefault(row.get(per), []).append(field_of(row, field))
    most = max(len(values) for values in buckets.values())
    return [statistics.fmean(values) for values in buckets.values()
            if len(values) == most]


def groups(record, how, direction):
    """`{group: {"values", "mean", "spread", "seeds", "field", "rows"}}`
    from the finished rows of `record` (its `how["from"]` list) that
    match `how["where"]`, grouped by `how["by"]` (or one group per field
    of `how["fields"]`)."""
    where = how.get("where", {})
    rows = [row for row in record.get(how.get("from", "rows")) or []
            if row.get("finished", True) and all(
                field_of(row, key) == value for key, value in where.items())]
    pairs = how.get("value")
    if isinstance(pairs, str):
        pairs = [[pairs, None]]
    if "fields" in how:
        named = {field: (rows, [[field, None]]) for field in how["fields"]}
    else:
        by = how.get("by")
        named = {name: ([row for row in rows if row.get(by) == name], pairs)
                 for name in dict.fromkeys(row.get(by) for row in rows)}
    sign = 1 if direction == "lower" else -1
    out = {}
    for name, (mine, pairs) in named.items():
        usable = [(field, check) for field, check in pairs
                  if mine and all(field_of(row, field) is not MISSING and (
                      check is None or field_of(row, check) is not MISSING)
                      for row in mine)]
        if not usable:
            continue
        field, _ = min(usable, key=lambda pair: 0 if pair[1] is None else
                       sign * statistics.fmean(
                           field_of(row, pair[1]) for row in mine))
        values = _per(mine, field, how.get("per"))
        seeds = (int(field_of(mine[0], how["seeds"])) if "seeds" in how
                 else len(values))
        out[name] = {"values": values, "mean": statistics.fmean(values),
                     "spread": spread(values), "seeds": seeds,
                     "field": field, "rows": mine}
    return out


def _span(values, fmt):
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}–{high}"


def specs(paper):
    """The claim specs of `paper` (its figures as data), each with the
    paper's `claim_defaults` under its own keys (a dict, such as
    `groups`, merged key by key; an empty one, none)."""
    defaults = paper.get("claim_defaults", {})
    out = []
    for spec in paper.get("claims", []):
        merged = dict(defaults)
        for key, value in spec.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                value = {**merged[key], **value} if value else {}
            merged[key] = value
        out.append(merged)
    return out


def _tolerance(spec, table, where):
    """The claim's tolerance: its own (a number, or a key of the table's
    tolerances), else the table's."""
    tolerance = spec.get("tolerance", table.get("tolerance"))
    if isinstance(tolerance, str):
        tolerance = table.get("tolerance", {}).get(tolerance)
    if isinstance(tolerance, bool) or not isinstance(tolerance,
                                                     (int, float)):
        raise ValueError(f"{where}: no tolerance: give the claim a "
                         "'tolerance' (a number or a key of the table's)")
    return tolerance


def judge(spec, record, paper, command):
    """The claim `spec` (of `paper`, its figures as data) judged on the
    results `record`, a dict of the scoreboard's claim keys; None where
    the record lacks the groups the claim compares."""
    where = f"{paper['paper']}: claim {spec['claim']!r}"
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}: 'kind' must be one of {KINDS}, "
                         f"received: {kind!r}")
    table = paper["tables"][spec["table"]]
    direction = spec.get("direction", paper["direction"])
    if direction not in DIRECTIONS:
        raise ValueError(f"{where}: 'direction' must be one of "
                         f"{DIRECTIONS}, received: {direction!r}")
    how = spec["groups"]
    found = groups(record, how, direction)
    scale, fmt = how.get("scale", 1.0), how.get("format", "{:.3f}")
    names = [spec.get("group")] if kind == "figure" else list(spec["order"])
    if not all(name in found for name in names):
        return None
    compared = [row for name in names for row in found[name]["rows"]]
    if spec.get("equal") and len({row[spec["equal"]]
                                  for row in compared}) != 1:
        return None
    try:  # `data` may name the record's fields: "{data[sizes][train]:,}"
        data = spec["data"].format_map(record)
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(f"{where}: 'data' names {error} the results file "
                         "lacks") from None
    described = ", ".join(
        f"{_span([row[field] for row in compared], number)} {words}"
        for field, (number, words) in spec.get("describe", {}).items())
    if described:
        data = f"{data}; {described}"
    sign = 1 if direction == "lower" else -1

    def text(name, noted=True):
        group = found[name]
        said = fmt.format(group["mean"])
        if len(group["values"]) > 1:
            said += f" ± {fmt.format(group['spread'])}"
        said += how.get("unit", "")
        note = how.get("notes", {}).get(group["field"])
        return f"{said} ({note})" if note and noted else said

    seeds = min(found[name]["seeds"] for name in names)
    claim = {"paper": paper["paper"], "table": spec["table"],
             "claim": spec["claim"].replace(
                 "{seeds} seeds", f"{seeds} seed{'s' * (seeds != 1)}")
             .replace("{seeds}", str(seeds)),
             "data": data, "command": command, "seeds": seeds}
    theirs_format = spec.get("theirs_format", paper["format"])
    if kind == "figure":
        group = found[spec.get("group")]
        theirs = paper_value(table, spec["row"], where)
        ours = group["mean"] * scale
        result = verdict(ours, theirs, _tolerance(spec, table, where),
                         direction)
        rival = spec.get("partly_ahead_of")
        if result == "no" and rival in found and spec.get("group") != rival:
            gain = sign * (found[rival]["mean"] - group["mean"])
            if gain > max(group["spread"], found[rival]["spread"]):
                result = "partly"
        theirs_text = theirs_format.format(theirs)
        if "spread_row" in spec:  # "0.2 ± 0.4%": the unit said once
            number, unit = theirs_format.rsplit("}", 1)
            theirs_text = (f"{(number + '}').format(theirs)} ± "
                           + theirs_format.format(
                               paper_value(table, spec["spread_row"], where)))
        ours_text = text(spec.get("group"))
        said = []  # beside the paper's figure, in one parenthesis
        if spec.get("failed"):
            failed = field_of(group["rows"][0], spec["failed"]["field"])
            theirs_failed = paper_value(table, spec["failed"]["row"], where)
            if failed is MISSING:
                return None
            ours_text += f" ({len(failed)} failed: {failed})"
            said.append(f"{theirs_failed} failed")
            if len(failed) > max(theirs_failed, 1):
                result = "no"
        if spec.get("theirs_note"):
            said.append(spec["theirs_note"])
        if said:
            theirs_text += f" ({'; '.join(said)})"
        return {**claim, "theirs": theirs_text, "ours": ours_text,
                "reproduced": result,
                "theirs_value": float(theirs), "ours_value": float(ours)}
    steps = list(zip(names, names[1:]))
    if spec.get("rule", "spread") == "mann_whitney":
        (ahead, behind), = steps
        test = mann_whitney(found[ahead]["values"], found[behind]["values"],
                            direction)
        result = ("yes" if test["p_value"] < spec.get("level", 0.1)
                  and test["median_gain"] > 0
                  else "partly" if test["median_gain"] > 0 else "no")
        tail = ("; medians " + " against ".join(
            fmt.format(statistics.median(found[name]["values"]))
            for name in (ahead, behind))
            + f"; Mann-Whitney one-sided p = {test['p_value']:.3f}")
    elif spec.get("rule", "spread") == "spread":
        result = ordering_verdict(
            [sign * (found[b]["mean"] - found[a]["mean"]) for a, b in steps],
            [max(found[a]["spread"], found[b]["spread"]) for a, b in steps],
            seeds)
        tail = ""
    else:
        raise ValueError(f"{where}: 'rule' must be one of {RULES}, "
                         f"received: {spec['rule']!r}")
    theirs_text = spec.get("theirs") or " against ".join(
        theirs_format.format(paper_value(table, row, where))
        for row in spec["rows"])
    return {**claim, "theirs": theirs_text,
            "ours": " against ".join(text(name, noted=False)
                                      for name in names) + tail,
            "reproduced": result}
