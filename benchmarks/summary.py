"""Write `benchmarks/RESULTS.md` from the JSON files in `benchmarks/results/`.

Each benchmark script writes one JSON file (see `harness.write_results`);
this script renders every one of them as a table under a heading that
names the script, its command line, when it ran and the machine. Smoke
runs (`--quick`, written as `NAME_quick.json`) are left out.

Run: `python benchmarks/summary.py` (`make bench` runs it last).
"""

import json
import pathlib
import statistics
import sys

HERE = pathlib.Path(__file__).parent
if str(HERE.parent) not in sys.path:  # the repository, for reproductions/
    sys.path.insert(0, str(HERE.parent))

from reproductions import render as tables  # noqa: E402

RESULTS = HERE / "results"
OUTPUT = HERE / "RESULTS.md"


def _plus_minus(spread, seeds, spec):
    """A table's spread cell: `±spread` over several seeds, else —."""
    return f"±{spread:{spec}}" if seeds > 1 else "—"


def _commands(record):
    """A file written by several commands (`--append`, or runs merged)
    names them, in order, above its tables; else nothing."""
    if len(record.get("commands", [])) <= 1:
        return []
    return ["The rows come from " + ", then ".join(
        f"`{command}`" for command in record["commands"]) + ".", ""]


def _mean_or_dash(values):
    """The mean of the values that are numbers (not None or NaN), or —
    (a bAbI task with no sentence of that kind)."""
    values = [v for v in values if v is not None and v == v]
    return f"{sum(values) / len(values):.2f}" if values else "—"


def _spread(values):
    """The sample standard deviation, the one spread of every page."""
    if len(values) < 2:
        return "—"
    return f"±{statistics.stdev(values):.1f}"


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


def _quantization(record):
    """A trained translator in float32, bfloat16 and quantized
    (benchmarks/quantization.py): BLEU, weights on disk and speed in
    memory, then the served model's latency (and the server's memory),
    each beside float32's, and the targets as computed."""
    rows, found = record["rows"], record.get("summary", {})
    base = next(row for row in rows if row["variant"] == "float32")
    beam = base["beam_size"]
    lines = [f"| variant | greedy BLEU | beam {beam} BLEU | weights (MiB) "
             "| size / float32 | greedy sentences/s | speed / float32 | "
             f"beam {beam} sentences/s |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        against = found.get(row["variant"], {})
        lines.append(
            f"| `{row['variant']}` | {row['bleu_greedy']:.2f} | "
            f"{row['bleu_beam']:.2f} | {row['weights_bytes'] / 2**20:.1f} | "
            f"{against.get('size_over_float32', 1.0):.2f}× | "
            f"{row['greedy_sentences_per_s']:.1f} | "
            f"{against.get('speed_over_float32', 1.0):.2f}× | "
            f"{row['beam_sentences_per_s']:.1f} |")
    clients = [served["clients"] for served in base["served"]]
    lines += ["", "| variant | " + " | ".join(
        f"{n} client{'s' if n > 1 else ''}: p50 / p99 ms, requests/s"
        for n in clients) + " |", "|---" * (len(clients) + 1) + "|"]
    for row in rows:
        lines.append(f"| `{row['variant']}` | " + " | ".join(
            f"{s['p50_ms']:.0f} / {s['p99_ms']:.0f}, "
            f"{s['requests_per_s']:.1f}"
            + (f" ({s['errors']} errors)" if s["errors"] else "")
            + (f"; server {s['server_rss_bytes'] / 2**20:,.0f} MiB"
               if "server_rss_bytes" in s else "")
            for s in row["served"]) + " |")
    targets = found.get("targets")
    if targets:
        # one variant's verdicts (older files: int8's), or a dict of them
        if not all(isinstance(met, dict) for met in targets.values()):
            targets = {"int8": targets}
        sentences = f"{base['sentences']:,} test sentences. "
        lines.append("")
        for variant, verdicts in targets.items():
            lines.append(sentences + f"{variant}'s targets (computed): "
                         + "; ".join(f"{name.replace('_', ' ')}: "
                                     f"{'yes' if met else 'no'}"
                                     for name, met in verdicts.items())
                         + ".")
            sentences = ""
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
    first = record["rows"][0] if record["rows"] else {}
    found = tables.render(record) if record["rows"] else None
    if found:  # by its table specs, reproductions/tables.json
        lines += found
    elif record["benchmark"].startswith("quantization") and "bleu_greedy" in first:
        lines += _quantization(record)
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
