"""The Image Transformer example's figures, measured over seeds: held-out
bits per pixel of local 2-D and full attention on scikit-learn's 8x8
digits, beside independent pixels (the rule with no weights).

Each seed runs `examples/image_transformer_digits.py` at its defaults
(1,500 training digits, the last 297 held out, 17 intensity levels as
tokens, 2 layers, d=64, 30 epochs, Adam 2e-3) and keeps the figures it
writes (`--results`): no second copy of the model or its training.
The rows are one per model and seed; the summary the mean and spread
(sample standard deviation) of each; `comparison` judges local against
full as the 28x28 benchmark does (`common.local_against_full`:
a side is ahead only beyond the larger spread, else the two tie). No
paper row: the Image Transformer paper reports no figure on these
digits.

Run: `python -m reproductions run image_transformer_digits` (its setting),
or `python reproductions/systems/image_transformer_digits.py
[--seeds 0,1,2] [--epochs E] [--append]`.
"""

import argparse
import pathlib
import statistics
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
# benchmarks/ for harness.py; the repository for `reproductions` (and for
# the package, on a machine where it is not installed).
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import harness  # noqa: E402

from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402

NAME = "image_transformer_digits"
MODELS = {  # row variant -> the example's name of it
    "independent": "independent",
    "full": "full",
    "local_2d": "local",
}
LABELS = {
    "independent": "each pixel independent (counts, add-one smoothing)",
    "full": "full causal attention",
    "local_2d": "local 2-D attention (2x4 query blocks, 2-pixel flanges)",
}


def rows_of(results, seed, epochs):
    """The example's `results` of one seed as one row per model."""
    cpu = harness.machine()["cpu"]
    rows = []
    for variant, name in MODELS.items():
        row = {"variant": variant, "label": LABELS[variant], "seed": seed,
               "test_bits_per_dim": results[f"{name}_bits_per_dim"]}
        if variant != "independent":
            row.update(
                train_bits_per_dim=results[f"{name}_train_bits_per_dim"],
                epochs=epochs, train_seconds=results[f"{name}_seconds"],
                parameters=results[f"{name}_parameters"],
                cached_equals_uncached=results[
                    f"{name}_cached_equals_uncached"])
        rows.append({**row, "cpu": cpu})
    return rows


def summary(rows):
    """Per model: seeds, mean and spread of the held-out bits/dim, and
    the mean training seconds (the models with weights)."""
    out = {}
    for variant in dict.fromkeys(row["variant"] for row in rows):
        mine = [row for row in rows if row["variant"] == variant]
        mean, spread = common.mean_and_spread(
            row["test_bits_per_dim"] for row in mine)
        out[variant] = {
            "label": LABELS[variant], "seeds": len(mine),
            "test_bits_per_dim_mean": mean, "test_bits_per_dim_std": spread}
        if "train_seconds" in mine[0]:
            out[variant]["train_seconds_mean"] = statistics.fmean(
                row["train_seconds"] for row in mine)
    return out


def derived(rows):
    """The results file's figures beyond the summary, from its rows (for
    `python -m reproductions render`)."""
    return {"comparison": common.local_against_full(
        summary(rows), "test_bits_per_dim", digits=3)}


def parser():
    """The options (the runner's settings' schema)."""
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--train-size", type=int, default=1500)
    common.add_example_arguments(p)
    harness.add_results_arguments(p, NAME)
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error(f"--epochs must be an int >= 1, received: {args.epochs}")
    if not 1 <= args.train_size <= 1500:
        p.error(f"--train-size must be in 1..1500, received: "
                f"{args.train_size}")
    name = args.results_name or NAME
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in args.seeds:
            print(f"seed {seed}:", flush=True)
            results = processes.run_example("image_transformer_digits", [
                "--seed", str(seed), "--epochs", str(args.epochs),
                "--train-size", str(args.train_size),
                "--output", str(pathlib.Path(folder) / "samples.png")])
            rows += rows_of(results, seed, args.epochs)
    all_rows = earlier + rows
    found = summary(all_rows)
    judged = derived(all_rows)["comparison"]
    for line in found.values():
        print(f"{line['label']}: {line['test_bits_per_dim_mean']:.3f} ± "
              f"{line['test_bits_per_dim_std']:.3f} bits/dim over "
              f"{line['seeds']} seed(s)")
    if judged:
        print(f"local against full: full's mean less local's "
              f"{judged['difference']:+.3f} bits/dim, spread "
              f"{judged['spread']:.3f}: {judged['outcome']}")
    harness.write_results(
        name, all_rows, directory=args.results_dir,
        commands=commands + [harness.command_line()], summary=found,
        comparison=judged,
        data={"source": "scikit-learn's digits (8x8, 17 levels)",
              "train": args.train_size, "test": 297})
    return all_rows


if __name__ == "__main__":
    main()
