"""One comparator for the papers' claims.

A claim is data: the paper's file (`papers/NAME.json`) lists under
`claims` what it says and where ours is measured, and this module
computes the two figures and the verdict the same way for every system.
A claim spec has:

- `results`: the benchmark names (results files) it is judged on;
- `table` and `claim` (the text), `kind`: `"figure"` or `"ordering"`;
- `groups`: how rows make the groups compared: `by` (a row field, such
  as `variant`), `value` (the row field of the figure; or a list of
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
  table's rows, or the start of one label of a list of `[label, value]`),
  and optionally `partly_ahead_of` (a group: "partly" where ours misses
  the paper's figure but is ahead of that group by more than the larger
  spread, the paper's ordering);
- for an `ordering`: `order` (groups, the one the paper puts ahead
  first; the texts say them in this order, `a against b`) and `rows`
  (their paper rows), optionally `rule`:
  `"spread"` (default) or `"mann_whitney"` (with `level`).

The spread is the sample standard deviation over seeds, everywhere.
An ordering with two seeds or more a group is "yes" where each step
holds by more than the larger spread of its two, "partly" where each
holds within it, else "no"; with one seed, "yes" where it holds. By
`mann_whitney`: "yes" where the runs ahead rank ahead at one-sided
p < `level` and their median is ahead, "partly" where only the median
is, else "no".
"""

import statistics

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


def paper_value(table, row, where):
    """The figure of paper row `row` of `table` (a dict of rows, or a
    list of `[label, value]`, `row` a label)."""
    rows = table["rows"]
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


def groups(record, how, direction):
    """`{group: {"values", "mean", "spread", "seeds", "field"}}` from the
    finished rows of `record`, grouped by `how["by"]`."""
    rows = [row for row in record.get("rows", [])
            if row.get("finished", True)]
    pairs = how["value"]
    if isinstance(pairs, str):
        pairs = [[pairs, None]]
    sign = 1 if direction == "lower" else -1
    out = {}
    for name in dict.fromkeys(row.get(how["by"]) for row in rows):
        mine = [row for row in rows if row.get(how["by"]) == name]
        usable = [(field, check) for field, check in pairs
                  if all(field in row and (check is None or check in row)
                         for row in mine)]
        if not usable:
            continue
        field, _ = min(usable, key=lambda pair: 0 if pair[1] is None else
                       sign * statistics.fmean(row[pair[1]] for row in mine))
        values = [row[field] for row in mine]
        out[name] = {"values": values, "mean": statistics.fmean(values),
                     "spread": spread(values), "seeds": len(values),
                     "field": field, "rows": mine}
    return out


def _span(values, fmt):
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}–{high}"


def specs(paper):
    """The claim specs of `paper` (its figures as data), each with the
    paper's `claim_defaults` under its own keys."""
    defaults = paper.get("claim_defaults", {})
    return [{**defaults, **spec} for spec in paper.get("claims", [])]


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
    direction = paper["direction"]
    how = spec["groups"]
    found = groups(record, how, direction)
    scale, fmt = how.get("scale", 1.0), how.get("format", "{:.3f}")
    names = [spec["group"]] if kind == "figure" else list(spec["order"])
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
        if group["seeds"] > 1:
            said += f" ± {fmt.format(group['spread'])}"
        said += how.get("unit", "")
        note = how.get("notes", {}).get(group["field"])
        return f"{said} ({note})" if note and noted else said

    claim = {"paper": paper["paper"], "table": spec["table"],
             "claim": spec["claim"], "data": data, "command": command,
             "seeds": min(found[name]["seeds"] for name in names)}
    if kind == "figure":
        group = found[spec["group"]]
        theirs = paper_value(table, spec["row"], where)
        ours = group["mean"] * scale
        result = verdict(ours, theirs, table["tolerance"], direction)
        rival = spec.get("partly_ahead_of")
        if result == "no" and rival in found and spec["group"] != rival:
            gain = sign * (found[rival]["mean"] - group["mean"])
            if gain > max(group["spread"], found[rival]["spread"]):
                result = "partly"
        return {**claim, "theirs": paper["format"].format(theirs),
                "ours": text(spec["group"]), "reproduced": result,
                "theirs_value": float(theirs), "ours_value": float(ours)}
    theirs = [paper_value(table, row, where) for row in spec["rows"]]
    steps = list(zip(names, names[1:]))
    if spec.get("rule", "spread") == "mann_whitney":
        from scipy import stats

        (ahead, behind), = steps
        test = stats.mannwhitneyu(
            [sign * v for v in found[ahead]["values"]],
            [sign * v for v in found[behind]["values"]], alternative="less")
        median = sign * (statistics.median(found[behind]["values"])
                         - statistics.median(found[ahead]["values"]))
        result = ("yes" if test.pvalue < spec.get("level", 0.1)
                  and median > 0 else "partly" if median > 0 else "no")
        tail = ("; medians " + " against ".join(
            fmt.format(statistics.median(found[name]["values"]))
            for name in (ahead, behind))
            + f"; Mann-Whitney one-sided p = {test.pvalue:.3f}")
    elif spec.get("rule", "spread") == "spread":
        result = ordering_verdict(
            [sign * (found[b]["mean"] - found[a]["mean"]) for a, b in steps],
            [max(found[a]["spread"], found[b]["spread"]) for a, b in steps],
            claim["seeds"])
        tail = ""
    else:
        raise ValueError(f"{where}: 'rule' must be one of {RULES}, "
                         f"received: {spec['rule']!r}")
    return {**claim, "theirs": " against ".join(
        paper["format"].format(value) for value in theirs),
            "ours": " against ".join(text(name, noted=False)
                                      for name in names) + tail,
            "reproduced": result}
