"""The paper figures we set out to reproduce, beside ours: the Reproductions
page of the documentation, rendered from `benchmarks/results/*.json`.

A results file may carry a top-level `"claims"`: a list of dicts, one per
figure of a paper, each with every key of `KEYS`:

- `paper` ("Dehghani et al. 2019"), `table` ("Table 1"), `claim` (what is
  compared: "UT, bAbI 10k single-task, task 2 error");
- `theirs` and `ours`: the two figures, strings with their unit ("0.0%");
- `reproduced`: "yes", "partly" or "no" (`VERDICTS`);
- `seeds` (an int): how many runs give `ours`; `data`: what it was measured
  on; `command`: the command that measured it.

The machine (`machine`: `cpu`, `cores`, `backend`, `device`) and the date
(`when`) are the file's own. A file without `claims` whose benchmark stored
a paper's figures in another form has a deriver in `DERIVERS` (a function
of the record that returns its claims); files with neither are skipped.
A claim without one of the keys, or with a verdict not in `VERDICTS`,
raises ValueError naming the file and the key: a broken results file fails
the documentation build instead of rendering wrong.

Run: `python benchmarks/reproductions.py [--results-dir DIR]` prints the
page's markdown; `mkdocs build` puts it where docs/reproductions.md has
`<!-- reproductions -->` (docs/hooks/api.py).
"""

import argparse
import json
import pathlib
import statistics

HERE = pathlib.Path(__file__).parent
RESULTS = HERE / "results"

KEYS = ("paper", "table", "claim", "theirs", "ours", "reproduced", "seeds",
        "data", "command")
"""The keys every claim has."""
TEXT_KEYS = ("paper", "table", "claim", "theirs", "ours", "data", "command")
VERDICTS = ("yes", "partly", "no")
"""The values of `reproduced`."""
MACHINE_KEYS = ("cpu", "cores", "device")
COLUMNS = ("paper", "table", "claim", "theirs", "ours", "reproduced",
           "seeds", "data", "machine", "command")
"""The table's columns."""

# Music Transformer: within this many nats of the paper's validation NLL
# counts as reproduced.
MUSIC_TOLERANCE = 0.03
# Our variant -> (what the claim names, how the paper's row is recognized
# in the results file's `paper` list of [label, NLL] pairs).
MUSIC_VARIANTS = (
    ("absolute", "baseline Transformer (`absolute`)",
     lambda label: label.startswith("Transformer baseline")),
    ("relative", "relative attention (`relative`)",
     lambda label: label.startswith("Relative Transformer (")),
    ("relative_voices", "relative + cpsi (`relative_voices`: relative "
     "attention and voice labels)",
     lambda label: label == "Relative Transformer + cpsi"),
    ("relative_sinusoid_voices", "relative + cpsi "
     "(`relative_sinusoid_voices`: relative attention, sinusoids and "
     "voice labels)",
     lambda label: label == "Relative Transformer + cpsi"),
)


def _span(values, fmt="{}"):
    """`values` as one figure, or "low–high" where they differ."""
    low, high = min(values), max(values)
    if fmt.format(low) == fmt.format(high):
        return fmt.format(low)
    return f"{fmt.format(low)}–{fmt.format(high)}"


def music_transformer_jsb(record, name="music_transformer_jsb"):
    """Claims of a `music_transformer_jsb.py` results file: each variant
    that has a row of Huang et al.'s Table 2 (the file's `paper` list),
    its mean best validation NLL over its rows against the paper's."""
    paper = record.get("paper")
    if not paper:
        return []
    claims = []
    for variant, claim, is_theirs in MUSIC_VARIANTS:
        rows = [row for row in record.get("rows", [])
                if row.get("variant") == variant]
        if not rows:
            continue
        for row in rows:
            for key in ("best_nll", "steps", "training_minutes"):
                if key not in row:
                    raise ValueError(f"{name}: row of variant {variant!r} "
                                     f"has no '{key}'")
        found = [value for label, value in paper if is_theirs(label)]
        if len(found) != 1:
            raise ValueError(
                f"{name}: 'paper' has {len(found)} rows for variant "
                f"{variant!r}, expected 1")
        theirs = found[0]
        ours = statistics.mean(row["best_nll"] for row in rows)
        budget = (f"{_span([row['steps'] for row in rows])} steps, "
                  f"{_span([row['training_minutes'] for row in rows], '{:.0f}')}"
                  " min of training")
        claims.append({
            "paper": "Huang et al. 2019",
            "table": "Table 2",
            "claim": f"JSB Chorales note-wise valid NLL, {claim}",
            "theirs": f"{theirs:.3f} nats",
            "ours": (f"{ours:.3f} nats" if len(rows) == 1
                     else f"{ours:.3f} nats (mean)"),
            "reproduced": ("yes" if ours <= theirs + MUSIC_TOLERANCE
                           else "no"),
            "seeds": len(rows),
            "data": f"JSB Chorales at 16th notes, `valid` split; {budget}",
            "command": " then ".join(record.get("commands",
                                                [record["command"]])),
        })
    return claims + _music_orderings(record, paper)


# The paper's orderings: (ahead, behind, what the claim names, the two
# paper rows as label prefixes, ahead's first). "At equal steps": the two
# runs of one results file trained for the same steps, by one schedule.
MUSIC_ORDERINGS = (
    ("relative", "absolute", "relative attention ahead of the baseline "
     "Transformer at equal steps", ("Relative Transformer (",
                                    "Transformer baseline")),
    ("relative_sinusoid", "absolute", "relative attention ahead of the "
     "baseline Transformer, both with sinusoids, at equal steps",
     ("Relative Transformer (", "baseline + concat positional")),
    ("relative_voices", "relative", "voice labels ahead of relative "
     "attention alone at equal steps", ("Relative Transformer + cpsi",
                                        "Relative Transformer (")),
    ("relative_sinusoid_voices", "relative_sinusoid", "voice labels ahead "
     "of relative attention with sinusoids at equal steps",
     ("Relative Transformer + cpsi", "Relative Transformer (")),
)


def _music_orderings(record, paper):
    """A claim per ordering of `MUSIC_ORDERINGS` whose two variants both
    have rows (of equal steps) in `record`: ours is the mean best NLL of
    each, reproduced when the paper's order holds."""
    claims = []
    for ahead, behind, claim, (their_ahead, their_behind) in (
            MUSIC_ORDERINGS):
        mine = {variant: [row for row in record.get("rows", [])
                          if row.get("variant") == variant]
                for variant in (ahead, behind)}
        if not (mine[ahead] and mine[behind]):
            continue
        steps = {row["steps"] for row in mine[ahead] + mine[behind]}
        if len(steps) != 1:
            continue  # not equal steps: no ordering claim
        theirs = [next(value for label, value in paper
                       if label.startswith(prefix))
                  for prefix in (their_ahead, their_behind)]
        ours = [statistics.mean(row["best_nll"] for row in mine[variant])
                for variant in (ahead, behind)]
        claims.append({
            "paper": "Huang et al. 2019",
            "table": "Table 2",
            "claim": f"JSB Chorales, {claim} (`{ahead}` against "
                     f"`{behind}`)",
            "theirs": f"{theirs[0]:.3f} against {theirs[1]:.3f} nats",
            "ours": f"{ours[0]:.3f} against {ours[1]:.3f} nats",
            "reproduced": "yes" if ours[0] < ours[1] else "no",
            "seeds": len(mine[ahead]),
            "data": f"JSB Chorales at 16th notes, `valid` split; "
                    f"{steps.pop()} steps each",
            "command": " then ".join(record.get("commands",
                                                [record["command"]])),
        })
    return claims


DERIVERS = {"music_transformer_jsb": music_transformer_jsb,
            "music_transformer_jsb_variants": music_transformer_jsb,
            "music_transformer_jsb_variants_cps": music_transformer_jsb}
"""Benchmark name -> the function that derives claims from its record."""


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
        for key in TEXT_KEYS:
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
    return claims


def claims_of(record, name):
    """The validated claims of results file `name` (its own `claims`, else
    its benchmark's deriver's), `[]` where it has none."""
    if not isinstance(record, dict):
        return []
    if "claims" in record:
        claims = record["claims"]
    else:
        derive = DERIVERS.get(record.get("benchmark"))
        claims = derive(record, name) if derive else []
    return validate(claims, name)


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


def _cell(text):
    return str(text).replace("\n", " ").replace("|", "\\|")


def _code(text):
    text = str(text).replace("\n", " ")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def render(results_dir=RESULTS):
    """The page's markdown: a summary, then a section per results file
    with claims (smoke runs, `NAME_quick.json`, left out)."""
    results_dir = pathlib.Path(results_dir)
    sections = []
    verdicts = []
    for path in sorted(results_dir.glob("*.json")):
        if path.stem.endswith("_quick"):
            continue
        name = f"results/{path.name}"
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{name}: not JSON ({error})") from error
        claims = claims_of(record, name)
        if not claims:
            continue
        if "when" not in record:
            raise ValueError(f"{name}: no 'when'")
        machine = machine_of(record, name)
        benchmark = record.get("benchmark", path.stem)
        lines = [f"## {benchmark} (`{name}`)", "",
                 f"Run {str(record['when'])[:10]} on {machine}.", "",
                 "| " + " | ".join(COLUMNS) + " |",
                 "| " + " | ".join("---" for _ in COLUMNS) + " |"]
        for claim in claims:
            cells = [_cell(claim[key]) for key in COLUMNS[:8]]
            cells += [_cell(machine), _code(claim["command"])]
            lines.append("| " + " | ".join(cells) + " |")
            verdicts.append(claim["reproduced"])
        sections.append("\n".join(lines))
    if not sections:
        return ("No results file in `benchmarks/results/` carries a paper's "
                "figure yet.\n")
    summary = (f"{len(verdicts)} claims: {verdicts.count('yes')} reproduced, "
               f"{verdicts.count('partly')} partly, "
               f"{verdicts.count('no')} not yet.")
    explanation = (
        "Each row is one figure of a paper (theirs) beside the one our run "
        "measured (ours), from the `claims` of a results file in "
        "`benchmarks/results/` or derived from the paper's table that a "
        "benchmark stores beside its rows; reproduced is yes, partly or "
        "no (not yet), and seeds counts the runs behind ours.")
    return "\n\n".join([summary, explanation, *sections]) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", type=pathlib.Path, default=RESULTS,
                        help="the results files (default: %(default)s)")
    args = parser.parse_args(argv)
    print(render(args.results_dir), end="")


if __name__ == "__main__":
    main()
