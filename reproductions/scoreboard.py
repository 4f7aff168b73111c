"""The paper figures we set out to reproduce, beside ours: the Reproductions
page of the documentation, the project's scoreboard, rendered from
`benchmarks/results/*.json`.

The page: the verdicts counted by system (the model family a claim is
about: Universal Transformer, Music Transformer, ...) and overall; one
table with a row per claim, grouped by system (claim, the paper's figure
and its source, ours, the verdict); a plot of ours against the paper's
figure for the claims with numbers (`plot`); then, per system, a
collapsible block of how each figure was measured (command, data,
machine, seeds, date, results file).

A results file may carry a top-level `"claims"`: a list of dicts, one per
figure of a paper, each with every key of `KEYS`:

- `paper` ("Dehghani et al. 2019"), `table` ("Table 1"), `claim` (what is
  compared: "UT, bAbI 10k single-task, task 2 error");
- `theirs` and `ours`: the two figures, strings with their unit ("0.0%");
- `reproduced`: "yes", "partly" or "no" (`VERDICTS`);
- `seeds` (an int): how many runs give `ours`; `data`: what it was measured
  on; `command`: the command that measured it;

and optionally `system` (else `SYSTEMS` maps the paper to it) and
`theirs_value`, `ours_value`: the figures as numbers, for the plot (else
the first number of `theirs` and `ours`; a claim without both is not
plotted).

The machine (`machine`: `cpu`, `cores`, `backend`, `device`) and the date
(`when`) are the file's own. A file whose benchmark a paper's claim
specs name (`papers/NAME.json`, `reproductions.claims`) has its claims
judged from its rows by the one comparator instead; files with neither
are skipped.
A claim without one of the keys, with a verdict not in `VERDICTS`, a bad
optional key or a paper that maps to no system raises ValueError naming
the file and the key: a broken results file fails the documentation
build instead of rendering wrong.

Run: `python -m reproductions.scoreboard [--results-dir DIR] [--plot PNG]`
prints the page's markdown (and writes the plot); `mkdocs build` puts it
where docs/reproductions.md has `<!-- reproductions -->`, with the plot
drawn at build time (docs/hooks/api.py).
"""

import argparse
import functools
import io
import json
import math
import numbers
import pathlib
import re

from reproductions import claims as claims_lib

HERE = pathlib.Path(__file__).parent
RESULTS = HERE.parent / "benchmarks" / "results"
PAPERS = HERE / "papers"
"""The papers' figures as data: `papers/NAME.json`, each with its paper,
unit, direction, and per table what it reports, its rows and the
tolerance a claim on it is judged with."""
DIRECTIONS = ("lower", "higher")

KEYS = ("paper", "table", "claim", "theirs", "ours", "reproduced", "seeds",
        "data", "command")
"""The keys every claim has."""
TEXT_KEYS = ("paper", "table", "claim", "theirs", "ours", "data", "command")
VALUE_KEYS = ("theirs_value", "ours_value")
"""The optional numeric keys: the figures as numbers, for the plot."""
VERDICTS = ("yes", "partly", "no")
"""The values of `reproduced`."""
MACHINE_KEYS = ("cpu", "cores", "device")
SYSTEMS = {
    "Sukhbaatar et al. 2015": "End-to-end memory network",
    "Dehghani et al. 2019": "Universal Transformer",
    "Huang et al. 2019": "Music Transformer",
    "Mnih et al. 2014": "Recurrent attention model",
    "Xu et al. 2015": "Show, attend and tell captioner",
    "Zhang et al. 2019": "SAGAN",
    "Parmar et al. 2018": "Image Transformer",
    "Vaswani et al. 2017": "Transformer translator",
    "Bahdanau et al. 2015": "RNN translator",
    "Luong et al. 2015": "RNN translator",
    "Shaw et al. 2018": "Relative attention",
    "Lin et al. 2017": "Self-attentive pooling",
    "Devlin et al. 2019": "BERT",
}
"""How a claim's `paper` starts -> the system (model family) it is about,
for a claim without a `system` of its own."""
VERDICT_MARKS = {"yes": "✓ yes", "partly": "◐ partly", "no": "✗ no"}
VERDICT_COLOURS = {"yes": "#2e7d32", "partly": "#ef8f00", "no": "#c62828"}
SCOREBOARD = ("system", "#", "claim", "paper", "ours", "verdict")
"""The scoreboard's columns."""
DETAILS = ("#", "seeds", "data")
"""The columns of a run's table in a system's block of details."""
# The first number of a figure ("13.90% over 20 ..." -> 13.90).
NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")



def paper_figures(name, directory=PAPERS):
    """The figures of paper `name` (`papers/NAME.json`) as a dict; a
    ValueError naming the file where its direction is not one of
    `DIRECTIONS`, a claim names a table it lacks, or a table a figure is
    judged on has no tolerance."""
    path = pathlib.Path(directory) / f"{name}.json"
    figures = json.loads(path.read_text())
    if figures.get("direction") not in DIRECTIONS:
        raise ValueError(f"{path}: 'direction' must be one of {DIRECTIONS}, "
                         f"received: {figures.get('direction')!r}")
    tables = figures.get("tables", {})
    for spec in claims_lib.specs(figures):
        table = tables.get(spec.get("table"))
        if table is None:
            raise ValueError(f"{path}: claim {spec.get('claim')!r} names "
                             f"no table of the paper: {spec.get('table')!r}")
        if spec.get("kind") == "figure" and "tolerance" not in table:
            raise ValueError(f"{path}: table {spec['table']!r} has no "
                             "'tolerance'")
    return figures


def system_of(claim, where="claim"):
    """The system `claim` is about: its `system`, else `SYSTEMS`' entry
    for its paper; ValueError naming `where` if neither."""
    if "system" in claim:
        return claim["system"]
    for paper, system in SYSTEMS.items():
        if claim["paper"].startswith(paper):
            return system
    raise ValueError(
        f"{where}: 'paper' {claim['paper']!r} maps to no system: give the "
        "claim a 'system' or add the paper to SYSTEMS in "
        "reproductions/scoreboard.py")


def value_of(claim, side):
    """Figure `side` ("theirs" or "ours") of `claim` as a number: its
    `SIDE_value`, else the first number of its text; None if it has
    none."""
    if f"{side}_value" in claim:
        return float(claim[f"{side}_value"])
    found = NUMBER.search(claim[side])
    return float(found.group()) if found else None


def validate(claims, name):
    """Raise ValueError naming file `name` and the key at fault unless
    `claims` is a list of complete claims."""
    if not isinstance(claims, list):
        raise ValueError(f"{name}: 'claims' is not a list")
    for number, claim in enumerate(claims):
        where = f"{name}: claim {number}"
        if not isinstance(claim, dict):
            raise ValueError(f"{where} is not a dict")
        for key in KEYS:
            if key not in claim:
                raise ValueError(f"{where} has no '{key}'")
        for key in TEXT_KEYS + ("system",) * ("system" in claim):
            if not isinstance(claim[key], str) or not claim[key].strip():
                raise ValueError(f"{where}: '{key}' is not a non-empty "
                                 f"string: {claim[key]!r}")
        if claim["reproduced"] not in VERDICTS:
            raise ValueError(
                f"{where}: 'reproduced' is {claim['reproduced']!r}, not one "
                f"of {', '.join(VERDICTS)}")
        seeds = claim["seeds"]
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise ValueError(f"{where}: 'seeds' is not a positive int: "
                             f"{seeds!r}")
        for key in VALUE_KEYS:
            value = claim.get(key, 0.0)
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or not math.isfinite(value)):
                raise ValueError(f"{where}: '{key}' is not a finite number: "
                                 f"{value!r}")
        system_of(claim, where)
    return claims


def claims_of(record, name):
    """The validated claims of results file `name` (its own `claims`, else
    its benchmark's deriver's), `[]` where it has none."""
    if not isinstance(record, dict):
        return []
    judged = judged_claims(record, results=pathlib.Path(name).stem)
    if judged is not None:
        claims = judged
    else:
        claims = record.get("claims", [])
    return validate(claims, name)


@functools.lru_cache(maxsize=4)
def papers(directory=PAPERS):
    """Every paper's figures as data, `{name: figures}` (read once)."""
    return {path.stem: paper_figures(path.stem, directory)
            for path in sorted(pathlib.Path(directory).glob("*.json"))}


def judged_claims(record, directory=PAPERS, results=None):
    """The claims the papers' specs (`claims.specs`) make of `record`,
    judged by the one comparator; None where no spec names its results
    file (`results`, its name; default its `benchmark`), whose own
    `claims`, if any, are then read."""
    results = results or record.get("benchmark")
    found = None
    command = " then ".join(record.get("commands", [record.get("command")])
                            or [""])
    for paper in papers(directory).values():
        for spec in claims_lib.specs(paper):
            if results not in spec["results"]:
                continue
            found = found or []
            claim = claims_lib.judge(spec, record, paper, command)
            if claim is not None:
                found.append(claim)
    return found


def machine_of(record, name):
    """"CPU, N cores (backend)" for a CPU run, else "device (backend)"."""
    machine = record.get("machine")
    if not isinstance(machine, dict):
        raise ValueError(f"{name}: no 'machine'")
    for key in MACHINE_KEYS:
        if key not in machine:
            raise ValueError(f"{name}: 'machine' has no '{key}'")
    where = (f"{machine['cpu']}, {machine['cores']} cores"
             if machine["device"] == "cpu" else machine["device"])
    backend = machine.get("backend")
    return f"{where} ({backend})" if backend else where


def scoreboard(results_dir=RESULTS):
    """Every claim of the results files in `results_dir` (smoke runs,
    `NAME_quick.json`, files whose record says in `off_scoreboard`
    why they are not the claim's source, such as an earlier run kept
    beside the newer one, and files with runs `in_progress` left out),
    grouped by system (in name order), each a dict: the claim's keys and
    `system`, `number` (its row, from 1), `file` ("results/NAME.json"),
    `machine` and `date`."""
    rows = []
    for path in sorted(pathlib.Path(results_dir).glob("*.json")):
        if path.stem.endswith("_quick"):
            continue
        name = f"results/{path.name}"
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{name}: not JSON ({error})") from error
        claims = claims_of(record, name)
        # A file whose runs are still going (`in_progress` names them)
        # comes on once they are all finished.
        if not claims or record.get("off_scoreboard") or record.get(
                "in_progress"):
            continue
        if "when" not in record:
            raise ValueError(f"{name}: no 'when'")
        machine = machine_of(record, name)
        rows += [dict(claim, system=system_of(claim), file=name,
                      machine=machine, date=str(record["when"])[:10])
                 for claim in claims]
    rows.sort(key=lambda row: row["system"].lower())  # stable: file order
    for number, row in enumerate(rows, 1):
        row["number"] = number
    return rows


def _cell(text):
    return str(text).replace("\n", " ").replace("|", "\\|")


def _code(text):
    text = str(text).replace("\n", " ")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _systems(rows):
    """`[(system, its rows)]` in the order of `rows`."""
    groups = {}
    for row in rows:
        groups.setdefault(row["system"], []).append(row)
    return list(groups.items())


def _count(rows):
    verdicts = [row["reproduced"] for row in rows]
    return " · ".join(f"{verdicts.count(verdict)} {verdict}"
                      for verdict in VERDICTS)


def counts(rows):
    """The verdicts counted, overall and by system (markdown lines)."""
    lines = [f"**{len(rows)} claims: {_count(rows)}.**", ""]
    lines += [f"- {system}: {_count(mine)}" for system, mine in _systems(rows)]
    return lines


def _table(columns, cells):
    return ["| " + " | ".join(columns) + " |",
            "| " + " | ".join("---" for _ in columns) + " |",
            *("| " + " | ".join(row) + " |" for row in cells)]


def scoreboard_table(rows):
    """One row per claim, grouped by system: `SCOREBOARD`'s columns."""
    cells = []
    for system, mine in _systems(rows):
        for first, row in zip([True] + [False] * len(mine), mine):
            cells.append([
                f"**{_cell(system)}**" if first else "", str(row["number"]),
                _cell(row["claim"]),
                f"{_cell(row['theirs'])}<br>*{_cell(row['paper'])}, "
                f"{_cell(row['table'])}*",
                _cell(row["ours"]), VERDICT_MARKS[row["reproduced"]]])
    return _table(SCOREBOARD, cells)


def details(rows):
    """Per system, a collapsible block (pymdownx.details) of how each of
    its figures was measured: per results file and command, the file, the
    run's date and machine, the command, and a table of `DETAILS`'
    columns."""
    lines = []
    for system, mine in _systems(rows):
        title = system.replace('"', "'")
        lines += [f'??? info "{title}: command, data, machine, seeds, date"',
                  ""]
        runs = {}
        for row in mine:
            runs.setdefault((row["file"], row["command"]), []).append(row)
        for (name, command), claims in runs.items():
            block = [f"`{name}`, run {claims[0]['date']} on "
                     f"{claims[0]['machine']}:", "", "```bash",
                     command.replace("\n", " "), "```", "",
                     *_table(DETAILS, [[str(row["number"]),
                                        str(row["seeds"]),
                                        _cell(row["data"])]
                                       for row in claims]), ""]
            lines += [f"    {line}" if line else "" for line in block]
    return lines


def points(rows):
    """`(row, theirs, ours)` for each row whose two figures have numbers."""
    found = []
    for row in rows:
        theirs, ours = value_of(row, "theirs"), value_of(row, "ours")
        if theirs is not None and ours is not None:
            found.append((row, theirs, ours))
    return found


def plot(rows):
    """A PNG (bytes) of ours against the paper's figure, a panel per
    system, a point per claim with numbers (labelled with its row, coloured
    by its verdict; a ring for each further claim at the same point) and
    the diagonal where the two are equal; None if no claim has numbers."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    found = points(rows)
    if not found:
        return None
    systems = _systems([row for row, _, _ in found])
    columns = min(len(systems), 2)
    lines = math.ceil(len(systems) / columns)
    figure = Figure(figsize=(4.2 * columns, 4.2 * lines + 0.6))
    axes = figure.subplots(lines, columns, squeeze=False).ravel()
    values = {row["number"]: (theirs, ours) for row, theirs, ours in found}
    for axis, (system, mine) in zip(axes, systems):
        pairs = [values[row["number"]] for row in mine]
        low = min(min(pair) for pair in pairs)
        high = max(max(pair) for pair in pairs)
        margin = 0.08 * (high - low) or 0.1 * abs(high) or 1.0
        limits = (low - margin, high + margin)
        axis.plot(limits, limits, ls="--", lw=0.8, color="grey")
        # Claims at one point (an ordering's first figures are often
        # another claim's): one label, a ring per further verdict.
        at = {}
        for row, pair in zip(mine, pairs):
            at.setdefault(pair, []).append(row)
        for (theirs, ours), here in at.items():
            for ring, row in enumerate(here):
                colour = VERDICT_COLOURS[row["reproduced"]]
                axis.plot(theirs, ours, "o", ms=7 + 4 * ring, mew=1.5,
                          color=colour, mfc=colour if ring == 0 else "none",
                          zorder=3 - ring)
            axis.annotate(", ".join(str(row["number"]) for row in here),
                          (theirs, ours), fontsize=8, xytext=(6, 4),
                          textcoords="offset points")
        axis.set_xlim(limits)
        axis.set_ylim(limits)
        axis.set_aspect("equal")
        axis.set_title(system, fontsize=10)
        axis.set_xlabel("paper", fontsize=9)
        axis.set_ylabel("ours", fontsize=9)
        axis.tick_params(labelsize=8)
    for axis in axes[len(systems):]:
        axis.set_visible(False)
    figure.legend(
        [Line2D([], [], ls="none", marker="o", color=VERDICT_COLOURS[verdict])
         for verdict in VERDICTS], [f"reproduced: {verdict}"
                                    for verdict in VERDICTS],
        loc="upper center", ncol=3, fontsize=9, frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.5 / figure.get_figheight()))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


EXPLANATION = (
    "Each row is one figure of a paper beside the one our run measured "
    "(ours), from the `claims` of a results file in `benchmarks/results/` "
    "or derived from the paper's table that a benchmark stores beside its "
    "rows; the verdict is yes, partly or no (not yet), and # numbers the "
    "row for the plot and the details below.")


def render(results_dir=RESULTS, plot_path=None):
    """The page's markdown: the verdicts counted, the scoreboard, the plot
    (an image link to `plot_path`, where given and some claim has
    numbers: `plot(scoreboard(results_dir))` is its PNG) and each system's
    details."""
    rows = scoreboard(results_dir)
    if not rows:
        return ("No results file in `benchmarks/results/` carries a paper's "
                "figure yet.\n")
    lines = ["## Verdicts", "", *counts(rows), "", "## Claim by claim", "",
             EXPLANATION, "", *scoreboard_table(rows), ""]
    if plot_path and points(rows):
        lines += ["## Ours against the paper's figures", "",
                  f"![ours against the paper's figure, claim by claim]"
                  f"({plot_path})", "",
                  "A point per claim with a number on both sides, labelled "
                  "with its row: on the dashed diagonal ours equals the "
                  "paper's figure. For an ordering claim the point is the "
                  "first of its figures.", ""]
    lines += ["## How each figure was measured", "", *details(rows)]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", type=pathlib.Path, default=RESULTS,
                        help="the results files (default: %(default)s)")
    parser.add_argument("--plot", type=pathlib.Path,
                        help="also write the plot of ours against the "
                             "paper's figures to this PNG")
    args = parser.parse_args(argv)
    if args.plot:
        png = plot(scoreboard(args.results_dir))
        if png:
            args.plot.write_bytes(png)
    print(render(args.results_dir, args.plot), end="")


if __name__ == "__main__":
    main()
