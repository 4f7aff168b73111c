"""Write `benchmarks/RESULTS.md` from the JSON files in `benchmarks/results/`.

Each benchmark script writes one JSON file (see `harness.write_results`);
this script renders every one of them as a table under a heading that
names the script, its command line, when it ran and the machine.

Run: `python benchmarks/summary.py` (`make bench` runs it last).
"""

import json
import pathlib

HERE = pathlib.Path(__file__).parent
RESULTS = HERE / "results"
OUTPUT = HERE / "RESULTS.md"


def _ms(timing):
    return (f"{timing['median_ms']:.2f} "
            f"({timing['q1_ms']:.2f}–{timing['q3_ms']:.2f})")


def _layers(record):
    rates = record.get("matmul_gflops", {})
    lines = [
        "Matrix-multiply rate measured in the same run: "
        + ", ".join(f"{dtype} {rate:,.0f} GFLOP/s"
                    for dtype, rate in rates.items()) + ".",
        "",
        "| pair | shape | policy | ours ms (IQR) | reference ms (IQR) "
        "| speed-up | efficiency | tokens/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in record["rows"]:
        lines.append(
            f"| {row['name']} | {row['shape']} | {row['policy']} "
            f"| {_ms(row['ours'])} | {_ms(row['reference'])} "
            f"| {row['speedup']:.2f}× | {row['efficiency']:.0%} "
            f"| {row['tokens_per_s']:,.0f} |")
    return lines


def _rates(record):
    lines = ["| case | ours | reference | speed-up | identical outputs |",
             "| --- | --- | --- | --- | --- |"]
    for row in record["rows"]:
        unit = row.get("unit", "/s")
        lines.append(
            f"| {row['name']} ({row['ours']} vs {row['reference']}) "
            f"| {row['ours_per_s']:.1f} {unit} "
            f"| {row['reference_per_s']:.1f} {unit} "
            f"| {row['speedup']:.2f}× "
            f"| {row.get('identical', '–')} of {row.get('sentences', '–')} |")
    return lines


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


def render(record):
    machine = record["machine"]
    where = (f"{machine['backend']} on {machine['device']}; CPU "
             f"{machine['cpu']} ({machine['cores']} cores; "
             f"{', '.join(machine['cpu_flags']) or 'no listed flags'}); "
             f"Keras {machine['keras']}"
             + "".join(f", {name} {machine[name]}"
                       for name in ("tensorflow", "jax", "keras_hub")
                       if name in machine))
    lines = [f"## {record['benchmark']} (`results/{record['benchmark']}.json`)",
             "",
             f"`{record['command']}`, {record['when']}.", "", where, ""]
    if record["benchmark"].startswith("layers"):
        lines += _layers(record)
    elif record["rows"] and "ours_per_s" in record["rows"][0]:
        lines += _rates(record)
    else:
        lines += _generic(record)
    return lines + [""]


def main():
    records = [json.loads(path.read_text())
               for path in sorted(RESULTS.glob("*.json"))]
    lines = [
        "# Benchmark results",
        "",
        "Written by `python benchmarks/summary.py` from "
        "`benchmarks/results/*.json` (`make bench` runs every benchmark, "
        "then this). Times are medians of runs interleaved with the "
        "reference in one process; IQR is the interquartile range; a "
        "speed-up above 1 means ours is faster. Efficiency: the FLOPs of "
        "a layer's products per second over the matrix-multiply rate "
        "measured in the same run.",
        "",
    ]
    for record in records:
        lines += render(record)
    OUTPUT.write_text("\n".join(lines))
    print(f"wrote {OUTPUT} ({len(records)} benchmarks)")


if __name__ == "__main__":
    main()
