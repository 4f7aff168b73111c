"""Write `benchmarks/RESULTS.md` from the JSON files in `benchmarks/results/`.

Each benchmark script writes one JSON file (see `harness.write_results`);
this script renders every one of them as a table under a heading that
names the script, its command line, when it ran and the machine. Smoke
runs (`--quick`, written as `NAME_quick.json`) are left out.

Run: `python benchmarks/summary.py` (`make bench` runs it last).
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).parent
if str(HERE.parent) not in sys.path:  # the repository, for reproductions/
    sys.path.insert(0, str(HERE.parent))

from reproductions import render as tables  # noqa: E402

RESULTS = HERE / "results"
OUTPUT = HERE / "RESULTS.md"


def _generic(record):
    rows = record["rows"]
    if not rows:
        return ["(no rows)"]
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |",
             "| " + " | ".join("---" for _ in keys) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(
            f"{row.get(k):.3g}" if isinstance(row.get(k), float)
            else str(row.get(k)) for k in keys) + " |")
    return lines


def render(record, stem=None):
    """`record`'s section; `stem` is its file's name without `.json`
    (default: the benchmark's name), which differs when a run was kept
    beside a newer one."""
    machine = record["machine"]
    where = (f"{machine['backend']} on {machine['device']}; CPU "
             f"{machine['cpu']} ({machine['cores']} cores; "
             f"{', '.join(machine['cpu_flags']) or 'no listed flags'}); "
             f"Keras {machine['keras']}"
             + "".join(f", {name} {machine[name]}"
                       for name in ("tensorflow", "jax", "keras_hub")
                       if name in machine))
    stem = stem or record["benchmark"]
    lines = [f"## {record['benchmark']} (`results/{stem}.json`)",
             "",
             f"`{record['command']}`, {record['when']}.", "", where, ""]
    found = tables.render(record) if record["rows"] else None
    if found:  # by its table specs, reproductions/tables.json
        lines += found
    else:
        lines += _generic(record)
    return lines + [""]


def main():
    records = [(path.stem, json.loads(path.read_text()))
               for path in sorted(RESULTS.glob("*.json"))
               if not path.stem.endswith("_quick")]
    lines = [
        "# Benchmark results",
        "",
        "Written by `python benchmarks/summary.py` from "
        "`benchmarks/results/*.json` (`make bench` runs every benchmark, "
        "then this). Times are medians of runs interleaved with the "
        "reference in one process; IQR is the interquartile range; a "
        "speed-up above 1 means ours is faster. Efficiency: the FLOPs of "
        "a layer's products per second over the matrix-multiply rate "
        "measured in the same run. Sections measured otherwise (memory, "
        "a server under load) say how.",
        "",
    ]
    for stem, record in records:
        lines += render(record, stem)
    OUTPUT.write_text("\n".join(lines))
    print(f"wrote {OUTPUT} ({len(records)} benchmarks)")


if __name__ == "__main__":
    main()
