"""The recurrent attention example's figures, measured over seeds:
held-out accuracy of the RAM at each number of glimpses, the CNN of its
size and the MLP told where the digit is, on 40x40 cluttered canvases
made from scikit-learn's 8x8 digits, beside the rule with no weights
(the most common training class).

Each seed runs `examples/recurrent_attention_digits.py` with the
settings given (its defaults: 24,000 training and 1,000 held-out
canvases, 15 epochs, Adam 1e-3 clipped at norm 5, sigma 0.2, batch 64)
and keeps the figures it writes (`--results`), its rule with no weights
among them: no second copy of the models or their training. The rows
are one per model, setting and seed; the summary the mean and spread
(sample standard deviation) of each model and setting, so runs at other
settings (`--location-std`, `--learning-rate`, `--glimpses 4 --no-cnn
--oracle 0`) added with `--append` sit beside the defaults' rows as the
page's trials. No paper row: Mnih et al. report no
figure on these digits (the paper's Table 2 is the 60x60 benchmark's,
`ram_cluttered_mnist.py`).

Run: `python -m reproductions run recurrent_attention_digits` (its
setting), or `python reproductions/systems/recurrent_attention_digits.py
[--seeds 0,1,2] [--epochs E] [--location-std S] [--learning-rate R]
[--glimpses 1,2,4,6] [--no-cnn] [--oracle 0] [--append]`.
"""

import argparse
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
# benchmarks/ for harness.py; the repository for `reproductions` (and for
# the package, on a machine where it is not installed).
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import harness  # noqa: E402

from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402

NAME = "recurrent_attention_digits"
LABELS = {
    "majority": "the most common training class (no weights)",
    "cnn": "CNN, 3 conv layers",
    "told": "MLP, 1 glimpse at the digit (told where it is)",
}


def variant_of(name):
    """The example's model name as a row's variant: `ram4`, `cnn`,
    `told`, `majority`."""
    glimpses = re.match(r"RAM, (\d+) glimpse", name)
    if glimpses:
        return f"ram{glimpses.group(1)}"
    return {"CNN, 3 conv layers": "cnn",
            "MLP, 1 glimpse at the digit": "told",
            "most common training class": "majority"}[name]


def label_of(variant):
    if variant.startswith("ram"):
        count = int(variant[3:])
        return (f"RAM, {count} glimpse{'s' * (count > 1)}"
                + (" (the centre: no attention)" if count == 1 else ""))
    return LABELS[variant]


def rows_of(results, seed, settings):
    """The example's `results` of one seed as one row per model (the
    rule with no weights first, with no parameters or seconds), each
    with the settings it ran at."""
    cpu = harness.machine()["cpu"]
    rows = []
    for name, figures in results.items():
        variant = variant_of(name)
        row = {"variant": variant, "label": label_of(variant),
               "seed": seed, "test_accuracy": figures["accuracy"]}
        if variant != "majority":
            row.update(parameters=figures["parameters"],
                       seconds=figures["seconds"])
        rows.append({**row, **settings, "cpu": cpu})
    return rows


def setting_key(row):
    return (f"{row['variant']}, sigma {row['location_std']:g}, "
            f"lr {row['learning_rate']:g}, {row['epochs']} epochs")


def summary(rows):
    """Per model and setting: seeds, mean and spread of the held-out
    accuracy, each seed's accuracy, and the mean seconds."""
    out = {}
    for key in dict.fromkeys(setting_key(row) for row in rows):
        mine = [row for row in rows if setting_key(row) == key]
        mean, spread = common.mean_and_spread(
            row["test_accuracy"] for row in mine)
        out[key] = {
            "variant": mine[0]["variant"], "label": mine[0]["label"],
            **{name: mine[0][name] for name in
               ("location_std", "learning_rate", "epochs")},
            "seeds": [row["seed"] for row in mine],
            "test_accuracy": [row["test_accuracy"] for row in mine],
            "test_accuracy_mean": mean, "test_accuracy_std": spread}
        if "seconds" in mine[0]:
            out[key]["seconds_mean"] = common.mean_and_spread(
                row["seconds"] for row in mine)[0]
    return out


def parser():
    """The options (the runner's settings' schema)."""
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--train-size", type=int, default=24000)
    p.add_argument("--location-std", type=float, default=0.2)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--glimpses", default="1,2,4,6")
    p.add_argument("--no-cnn", action="store_true")
    p.add_argument("--oracle", type=int, default=1, choices=(0, 1))
    common.add_example_arguments(p)
    harness.add_results_arguments(p, NAME)
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    for flag in ("epochs", "train_size", "location_std", "learning_rate"):
        if getattr(args, flag) <= 0:
            p.error(f"--{flag.replace('_', '-')} must be > 0, received: "
                    f"{getattr(args, flag)}")
    if not re.fullmatch(r"\d+(,\d+)*", args.glimpses) or "0" in \
            args.glimpses.split(","):
        p.error(f"--glimpses must be comma-separated ints >= 1, received: "
                f"{args.glimpses!r}")
    name = args.results_name or NAME
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    settings = {"location_std": args.location_std,
                "learning_rate": args.learning_rate, "epochs": args.epochs}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in args.seeds:
            print(f"seed {seed}:", flush=True)
            argv = ["--seed", str(seed), "--epochs", str(args.epochs),
                    "--train-size", str(args.train_size),
                    "--location-std", str(args.location_std),
                    "--learning-rate", str(args.learning_rate),
                    "--glimpses", args.glimpses, "--oracle",
                    str(args.oracle), "--pictures", "0", "--verbose", "0",
                    "--output-dir", folder] + ["--no-cnn"] * args.no_cnn
            results = processes.run_example("recurrent_attention_digits", argv)
            rows += rows_of(results, seed, settings)
    all_rows = earlier + rows
    found = summary(all_rows)
    for key, line in found.items():
        print(f"{key}: {line['test_accuracy_mean']:.1%} ± "
              f"{line['test_accuracy_std']:.1%} over {len(line['seeds'])} "
              f"seed(s)")
    harness.write_results(
        name, all_rows, directory=args.results_dir,
        commands=commands + [harness.command_line()], summary=found,
        data={"source": "scikit-learn's digits, 40x40 cluttered canvases",
              "train": args.train_size, "test": 1000})
    return all_rows


if __name__ == "__main__":
    main()
