"""The Show, Attend and Tell example's figures, measured over seeds:
held-out exact match and BLEU of the captioner on two-digit scenes of
scikit-learn's 8x8 digits, soft or hard attention, at each doubly
stochastic lambda, greedy and beam decoding, the hard model's REINFORCE
gradient variance with and without its baseline, beside the rule with
no weights (the most common training caption for every scene).

`--models` names the models, each an attention and its doubly
stochastic lambda (`soft:1,soft:0,hard:0`, the default); for each
attention the command runs `examples/show_attend_tell_digits.py` once
with the seeds and that attention's lambdas (its defaults: 8,000
training and 500 held-out scenes, 12 epochs, Adam 3e-3, beam 4) and
keeps the figures it writes (`--results`), its rule with no weights
among them: no second copy of the model or its training. The rows are
one per model and seed; the summary the mean and spread (sample
standard deviation) of each metric per model. No paper row: Xu et al.
report no figure on these scenes (the paper's ordering is judged by
`captioner_hard_soft.py`).

Run: `python -m reproductions run show_attend_tell_digits`, or
`python reproductions/systems/show_attend_tell_digits.py [--seeds 0,1,2]
[--models soft:1,soft:0,hard:0] [--epochs E] [--append]`.
"""

import argparse
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
# benchmarks/ for harness.py; the repository for `reproductions` (and for
# the package, on a machine where it is not installed).
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import harness  # noqa: E402

from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402

NAME = "show_attend_tell_digits"
DECODINGS = {  # the example's name -> the row's prefix
    "greedy": "greedy", "beam4": "beam", "greedy (argmax)": "argmax"}
METRICS = [f"{prefix}_{metric}" for prefix in DECODINGS.values()
           for metric in ("exact", "bleu")]


def rows_of(runs, epochs):
    """The example's `runs` as one row per attention, lambda and
    seed."""
    cpu = harness.machine()["cpu"]
    rows = []
    for figures in runs:
        attention, penalty, seed = (figures[key] for key in
                                    ("attention", "penalty", "seed"))
        row = {"variant": f"{attention}, lambda {penalty:g}",
               "attention": attention, "penalty": penalty, "seed": seed,
               "epochs": epochs, "seconds": figures["seconds"]}
        for name, prefix in DECODINGS.items():
            if name in figures:
                row[f"{prefix}_exact"] = figures[name]["exact"]
                row[f"{prefix}_bleu"] = figures[name]["bleu"]
        for when, variance in figures.get("variance", {}).items():
            row[f"variance_{when}"] = {
                "mean_nll": variance["mean_nll"],
                "with_baseline": variance["baseline"],
                "without_baseline": variance["none"]}
        rows.append({**row, "cpu": cpu})
    return rows


def no_weights_row(figures):
    """The example's most common training caption, written for every
    held-out scene and scored as the models are, as a row."""
    return {"variant": "most common caption", "caption": figures["caption"],
            "greedy_exact": figures["exact"], "greedy_bleu": figures["bleu"],
            "cpu": harness.machine()["cpu"]}


def summary(rows):
    """Per variant: seeds, and the mean and spread of each metric."""
    out = {}
    for variant in dict.fromkeys(row["variant"] for row in rows):
        mine = [row for row in rows if row["variant"] == variant]
        line = {"seeds": [row.get("seed") for row in mine]}
        for metric in METRICS + ["seconds"]:
            if metric in mine[0]:
                mean, spread = common.mean_and_spread(
                    row[metric] for row in mine)
                line[f"{metric}_mean"], line[f"{metric}_std"] = mean, spread
        if "variance_before" in mine[0]:
            line["variance_ratio"] = {
                when: [row[f"variance_{when}"]["without_baseline"]
                       / row[f"variance_{when}"]["with_baseline"]
                       for row in mine] for when in ("before", "after")}
        out[variant] = line
    return out


def model_list(text):
    """`--models`' type: comma-separated `ATTENTION:LAMBDA` (attention
    soft or hard, lambda a number >= 0), each once; [(attention,
    lambda)] in their order (argparse's error names the value)."""
    models = []
    for part in text.split(","):
        attention, _, penalty = part.partition(":")
        try:
            penalty = float(penalty)
        except ValueError:
            penalty = -1.0
        if attention not in ("soft", "hard") or not penalty >= 0:
            raise argparse.ArgumentTypeError(
                f"must be comma-separated ATTENTION:LAMBDA (attention soft "
                f"or hard, lambda >= 0), received: {text!r}")
        models.append((attention, penalty))
    if len(set(models)) < len(models):
        raise argparse.ArgumentTypeError(
            f"names a model twice, received: {text!r}")
    return models


def parser():
    """The options (the runner's settings' schema)."""
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--models", type=model_list,
                   default=model_list("soft:1,soft:0,hard:0"),
                   help="the models, each ATTENTION:LAMBDA (the doubly "
                        "stochastic penalty), comma-separated")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--train-size", type=int, default=8000)
    common.add_example_arguments(p)
    harness.add_results_arguments(p, NAME)
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if args.epochs < 1 or args.train_size < 1:
        p.error(f"--epochs and --train-size must be ints >= 1, received: "
                f"{args.epochs}, {args.train_size}")
    name = args.results_name or NAME
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    rows = []
    for attention in dict.fromkeys(a for a, _ in args.models):
        lambdas = [penalty for a, penalty in args.models if a == attention]
        with tempfile.TemporaryDirectory() as folder:
            results = processes.run_example("show_attend_tell_digits", [
                "--seeds", ",".join(map(str, args.seeds)),
                "--attention", attention,
                "--lambdas", ",".join(f"{penalty:g}" for penalty in lambdas),
                "--epochs", str(args.epochs),
                "--train-size", str(args.train_size), "--pictures", "0",
                "--verbose", "0", "--output-dir", folder])
        rows += rows_of(results["runs"], args.epochs)
    if not any(row["variant"] == "most common caption" for row in earlier):
        rows.insert(0, no_weights_row(results["most_common_caption"]))
    all_rows = earlier + rows
    found = summary(all_rows)
    for variant, line in found.items():
        print(f"{variant}: greedy exact match "
              f"{line['greedy_exact_mean']:.1%} ± "
              f"{line['greedy_exact_std']:.1%}, BLEU "
              f"{line['greedy_bleu_mean']:.1f} ± "
              f"{line['greedy_bleu_std']:.1f}")
    harness.write_results(
        name, all_rows, directory=args.results_dir,
        commands=commands + [harness.command_line()], summary=found,
        data={"source": "scikit-learn's digits, 32x32 two-digit scenes",
              "train": args.train_size, "test": 500})
    return all_rows


if __name__ == "__main__":
    main()
