"""The SAGAN example's figures, measured over seeds: the Fréchet
distance to the held-out digits of a small spectrally normalized GAN on
scikit-learn's digits (16x16), with and without `SelfAttention2D`,
beside the distance of the training digits themselves (the floor, no
weights).

One command runs `examples/sagan_digits.py` with the seeds given (its
defaults: 3,000 steps of 64, latent 32, Adam 1e-4 / 4e-4 with
beta1 = 0, beta2 = 0.9, 1,000 samples a GAN) and keeps the figures it
writes (`--results`): no second copy of the GAN or its training. The
rows are one per variant and seed, with the generator's and
discriminator's gamma; the summary
the mean, median and spread (sample standard deviation) per variant,
and the 28x28 benchmark's verdict on the block
(`reproductions.common.block_verdict`: a one-sided Mann-Whitney U
test). No paper row: Zhang et al. report no figure on these digits (their Table 1
is beside `sagan_mnist.py`'s).

Run: `python -m reproductions run sagan_digits` (its setting), or
`python reproductions/systems/sagan_digits.py [--seeds 0,1,2] [--steps N]
[--append]`.
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

NAME = "sagan_digits"
LABELS = {"plain": "without self-attention",
          "attention": "with SelfAttention2D in both networks"}


def rows_of(results, steps):
    """The example's runs as one row per variant and seed, and the row of
    the floor (the training digits against the held-out digits)."""
    cpu = harness.machine()["cpu"]
    rows = [{"variant": "floor",
             "label": "the training digits themselves (no weights)",
             "frechet_distance": results["floor"],
             "classifier_accuracy": results["classifier_accuracy"],
             "cpu": cpu}]
    for run in results["runs"]:
        variant = "attention" if run["attention"] else "plain"
        row = {"variant": variant, "label": LABELS[variant],
               "seed": run["seed"], "steps": steps,
               "frechet_distance": run["distance"],
               "seconds": run["seconds"]}
        if run.get("gammas"):
            row.update(gamma_generator=run["gammas"]["generator"],
                       gamma_discriminator=run["gammas"]["discriminator"])
        rows.append({**row, "cpu": cpu})
    return rows


def summary(rows):
    """Per variant: seeds, mean, median and spread of the distance, the
    mean seconds; and the rank test that the block lowers it."""
    out = {}
    for variant in ("plain", "attention"):
        values = [row["frechet_distance"] for row in rows
                  if row["variant"] == variant]
        if not values:
            continue
        mean, spread = common.mean_and_spread(values)
        out[variant] = {
            "label": LABELS[variant], "seeds": len(values),
            "frechet_distance_mean": mean, "frechet_distance_std": spread,
            "frechet_distance_median": statistics.median(values),
            "seconds_mean": statistics.fmean(
                row["seconds"] for row in rows if row["variant"] == variant)}
    if len(out) == 2:
        out["verdict"] = common.block_verdict(
            *([row["frechet_distance"] for row in rows
               if row["variant"] == variant]
              for variant in ("plain", "attention")))
    return out


def parser():
    """The options (the runner's settings' schema)."""
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--steps", type=int, default=3000)
    common.add_example_arguments(p)
    harness.add_results_arguments(p, NAME)
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error(f"--steps must be an int >= 1, received: {args.steps}")
    name = args.results_name or NAME
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    with tempfile.TemporaryDirectory() as folder:
        results = processes.run_example("sagan_digits", [
            "--seeds", ",".join(map(str, args.seeds)),
            "--steps", str(args.steps), "--output-dir", folder])
    rows = rows_of(results, args.steps)
    if any(row["variant"] == "floor" for row in earlier):
        rows = rows[1:]  # the floor does not depend on the seeds
    all_rows = earlier + rows
    found = summary(all_rows)
    for variant in ("plain", "attention"):
        line = found.get(variant)
        if line:
            print(f"{line['label']}: {line['frechet_distance_mean']:.2f} ± "
                  f"{line['frechet_distance_std']:.2f}, median "
                  f"{line['frechet_distance_median']:.2f}")
    harness.write_results(
        name, all_rows, directory=args.results_dir,
        commands=commands + [harness.command_line()], summary=found,
        data={"source": "scikit-learn's digits, upsampled to 16x16",
              "held_out": 359})
    return all_rows


if __name__ == "__main__":
    main()
