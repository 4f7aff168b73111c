"""The Image Transformer on 28x28 binarized digits: local 2-D attention
against full attention, negative log-likelihood in nats per image on
held-out digits, and the time per epoch of each at 784 pixels.

Paper rows (van den Oord, Kalchbrenner, Kavukcuoglu, "Pixel Recurrent
Neural Networks", ICML 2016, Table 4, binarized MNIST, test NLL in nats):
PixelCNN 81.30; Row LSTM 80.54; Diagonal BiLSTM (1 layer, h=32) 80.75;
Diagonal BiLSTM (7 layers, h=16) 79.20. They are on the full 70,000-digit
binarized MNIST, not our 10,000 digits, and of far larger models: beside
ours, not comparable with them. The Image Transformer paper (Parmar et
al., 2018) reports no MNIST figure.

Data (`keras_attention.data.mnist`): the project's 10,000 real MNIST
digits (`../shared/data/mnist10k`, or `--data`, or
`$KERAS_ATTENTION_MNIST`), split once by `--split-seed` into 7,000 train,
1,000 validation and 2,000 test digits. Binarization is dynamic: each
pixel is 1 with probability its grey level / 255. The training digits are
drawn afresh every epoch (from the run's seed and the epoch); the
validation and test digits are drawn once, by `--binarize-seed`, the same
for every run. The model of the epoch with the best validation NLL is the
one tested.

Models: `ImageTransformer` over 2 levels, in the Image Transformer's
generation order (query blocks of `--query-block` pixels in raster
order); `local_2d` attends each pixel's memory block (`--memory-flange`
rows above and columns either side of its query block, causal),
`full` every earlier pixel; the same sizes otherwise. Adam, a linear
warm-up then a cosine decay to zero over `--epochs`.

The rules with no weights: each pixel an independent Bernoulli with its
training mean grey level / 255 (add-one smoothed; the exact mean of the
dynamic binarization), and the uniform guess, 784 ln 2 = 543.4 nats.

Speed (the defaults; one epoch of 160 digits after a warm-up one; TF and
JAX at once on the same core of the 2-core AMD EPYC, which other jobs
shared): TensorFlow trained 1.2x faster than JAX with local attention
(15.1 against 12.8 digits/s) and 2.3x with full attention (7.6 against
3.3), so TensorFlow is the default; `--backend jax` or `$KERAS_BACKEND`
picks another. Counted in CPU seconds, TensorFlow trains 57-74 digits/s
local and 30 full on a core: about 100-120 s for an epoch of the 7,000
training digits with local attention, 230 s with full, so the default 15
epochs take a run of local attention about 25-30 minutes on a free core
and one of full attention about an hour: to split the six runs' time
into shorter sittings, `--checkpoint-dir` saves each run after every epoch,
`--minutes` stops them all by a shared deadline and `--resume` goes on
where each stopped.

Run: `python reproductions/systems/image_transformer_mnist.py [--variants
local_2d,full] [--seeds 0,1,2] [--epochs E] [--parallel 2]`.
"""

import argparse
import math
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
# benchmarks/ for harness.py; the repository for `reproductions` (and for
# the package, on a machine where it is not installed).
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402

PROJECT_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / (
    "data") / "mnist10k"
NAME = "image_transformer_mnist"
SIDE = 28
PIXELS = SIDE * SIDE
PAPER = [  # van den Oord et al. 2016, Table 4: test NLL, nats per image
    ("PixelCNN", 81.30),
    ("Row LSTM", 80.54),
    ("Diagonal BiLSTM (1 layer, h=32)", 80.75),
    ("Diagonal BiLSTM (7 layers, h=16)", 79.20),
]
PAPER_DATA = "full 70,000-digit binarized MNIST, not our 10,000"
VARIANTS = {"local_2d": "local", "full": "full"}  # -> `attention`
LABELS = {
    "local_2d": "Image Transformer, local 2-D attention",
    "full": "Image Transformer, full attention",
}


def parser():

    p = argparse.ArgumentParser(
        description="The Image Transformer on 28x28 binarized digits: "
                    "local 2-D against full attention, NLL in nats")
    p.add_argument("--data", default=None,
                   help="the MNIST .npz or its folder (default: "
                        "$KERAS_ATTENTION_MNIST, else ../shared/data/mnist10k)")
    p.add_argument("--variants", default="local_2d,full",
                   help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    common.add_backend_option(p, "tensorflow")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200,
                   help="steps of linear warm-up")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--ff", type=int, default=64,
                   help="the feed-forward layers' width")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--query-block", default="4,7",
                   help="rows,columns of a query block")
    p.add_argument("--memory-flange", default="4,7",
                   help="rows above, columns either side (local_2d)")
    p.add_argument("--binarize-seed", type=int, default=0,
                   help="of every draw: numpy seeds [S, 1] validation, "
                        "[S, 2] test, [S, 0, run seed, epoch] training")
    common.add_run_options(p, "runs/image_transformer_mnist")
    common.add_resume_options(p, "runs/image_transformer_mnist/checkpoints")
    return p


def _pair(p, flag, text, least):
    try:
        pair = tuple(int(part) for part in text.split(","))
    except ValueError:
        pair = ()
    if len(pair) != 2 or min(pair) < least:
        p.error(f"--{flag} must be two ints >= {least} as rows,columns, "
                f"received: {text!r}")
    return pair


def finish_arguments(p, args):
    """Check every value; a mistake is one line through `p.error`."""
    for flag in ("epochs", "batch_size", "learning_rate", "layers", "heads",
                 "hidden", "ff", "parallel", "validation", "test"):
        if getattr(args, flag) <= 0:
            p.error(f"--{flag.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, flag)!r}")
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0, received: {args.warmup}")
    if not 0.0 <= args.dropout < 1.0:
        p.error(f"--dropout must be in [0, 1), received: {args.dropout}")
    if args.hidden % args.heads:
        p.error(f"--hidden must be divisible by --heads, received: "
                f"{args.hidden} and {args.heads}")
    args.query_block_pair = _pair(p, "query-block", args.query_block, 1)
    args.memory_flange_pair = _pair(p, "memory-flange", args.memory_flange,
                                    0)

    common.variants_and_seeds(p, args, VARIANTS)
    common.finish_resume(p, args, run_settings(args))
    return args


def run_settings(args):
    """What a checkpoint's run must share with the command resuming it:
    the model, the training and the data."""
    return {**settings(args), "epochs": args.epochs,
            "binarize_seed": args.binarize_seed,
            "split_seed": args.split_seed, "validation": args.validation,
            "test": args.test}


def load(args, p):
    """The split's digits, and the validation and test digits binarized
    once. A bad data path is one line."""
    from keras_attention.data import mnist

    path = args.data or os.environ.get(mnist.MNIST_VARIABLE)
    if not path and PROJECT_DATA.is_dir():
        path = PROJECT_DATA
    try:
        digits = mnist.split(mnist.load_mnist(path), args.split_seed,
                             args.validation, args.test)
    except (FileNotFoundError, ValueError) as error:
        p.error(str(error).strip("'\""))
    if len(digits["train"]) < args.batch_size:
        p.error(f"--batch-size must be at most the {len(digits['train'])} "
                f"training digits, received: {args.batch_size}")
    return {
        "digits": digits,
        # (N, 28, 28) int32 0/1, the same draw for every run.
        "validation": binarized(digits["validation"], args.binarize_seed, 1),
        "test": binarized(digits["test"], args.binarize_seed, 2),
    }


def binarized(digits, *seed):
    """`digits`' images binarized dynamically, drawn from `seed` (a
    sequence of ints): `(N, 28, 28)` int32 0/1."""
    from keras_attention.data import mnist

    rng = np.random.default_rng(list(seed))
    return mnist.binarize(digits.images, rng).astype("int32")


def pixel_means_nll(train_images, test_binary):
    """The rule with no weights: each pixel an independent Bernoulli with
    its training mean grey level / 255, add-one smoothed (one white and
    one black digit more); the mean NLL of `test_binary` `(N, 28, 28)` in
    nats per image."""
    grey = np.asarray(train_images, "float64") / 255.0  # (N, 28, 28)
    ones = (grey.sum(0) + 1.0) / (len(grey) + 2.0)  # (28, 28)
    chosen = np.where(np.asarray(test_binary) == 1, ones, 1.0 - ones)
    return float(-np.log(chosen).sum(axis=(1, 2)).mean())


"""
## One run
"""


def build(variant, args, seed, steps):
    import keras

    from keras_attention.models.image_transformer import ImageTransformer

    keras.utils.set_random_seed(seed)
    model = ImageTransformer(
        image_shape=(SIDE, SIDE), num_levels=2, attention=VARIANTS[variant],
        query_block=args.query_block_pair,
        memory_flange=args.memory_flange_pair, num_layers=args.layers,
        num_heads=args.heads, hidden_dim=args.hidden,
        intermediate_dim=args.ff, dropout=args.dropout)
    warmup = min(args.warmup, steps - 1)
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, steps - warmup, warmup_target=args.learning_rate,
        warmup_steps=warmup)
    model.compile(optimizer=keras.optimizers.Adam(schedule, clipnorm=1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model(np.zeros((1, SIDE, SIDE), "int32"))  # build, to count weights
    return model


def nll(model, binary):
    """The mean NLL of `binary` `(N, 28, 28)` under `model`, nats per
    image: `ImageTransformer.log_likelihood`'s float64 sum over the
    logits, which come here from the compiled `predict` (the eager call
    is several times slower with full attention on TensorFlow)."""
    logits = model.predict(binary, batch_size=250, verbose=0)
    logits = logits.astype("float64")  # (N, 28, 28, 2)
    peak = logits.max(-1, keepdims=True)
    log_norm = peak[..., 0] + np.log(np.exp(logits - peak).sum(-1))
    chosen = np.take_along_axis(logits, binary[..., None], -1)[..., 0]
    return float(-(chosen - log_norm).sum(axis=(1, 2)).mean())


def train_run(variant, seed, args, data):
    """Train one variant from one seed with the package's loop
    (`training.train_run`): `--epochs` (the stopping rule), the weights
    of the best validation NLL, the test split scored once when the run
    finishes; `--minutes` ends a piece, `--resume` continues it from its
    checkpoint. Returns the run's row (an unfinished one has no test
    figure)."""
    import harness
    import keras

    from keras_attention.data import mnist
    from keras_attention.training import StoppingRule
    from keras_attention.training import train_run as run_epochs

    train_digits = data["digits"]["train"]
    steps_per_epoch = len(train_digits) // args.batch_size
    count = steps_per_epoch * args.batch_size  # whole batches only
    model = build(variant, args, seed, steps_per_epoch * args.epochs)
    checkpoint = common.checkpoint_for(args, variant, seed)
    def epoch(model, index, _):
        # A fresh binarization and order each epoch, from seed and epoch.
        rng = np.random.default_rng([args.binarize_seed, 0, seed, index])
        chosen = rng.permutation(len(train_digits))[:count]
        images = mnist.binarize(train_digits.images[chosen],
                                rng).astype("int32")  # (n, 28, 28)
        started, cpu = time.perf_counter(), time.process_time()
        model.fit(images, images, batch_size=args.batch_size, epochs=1,
                  shuffle=False, verbose=0)
        return {"epoch_seconds": [round(time.perf_counter() - started, 1)],
                "cpu_seconds": time.process_time() - cpu}

    def validate(model):
        value = round(nll(model, data["validation"]), 3)
        if args.verbose:
            print(f"{variant} seed {seed}: validation NLL {value:.2f} nats",
                  flush=True)
        return value

    state = run_epochs(
        model, epoch=epoch, validate=validate,
        test=lambda model: {"test_nll": nll(model, data["test"])},
        rule=StoppingRule(args.epochs), higher_is_better=False,
        directory=checkpoint, seed=seed, verbose=0,
        seconds=common.piece_seconds(args))
    if not state["finished"]:
        print(f"{variant} seed {seed}: stopped after epoch {state['epoch']} "
              f"of {args.epochs} by --minutes; --resume continues it",
              flush=True)
    epoch_seconds = state["counts"]["epoch_seconds"]
    cpu_seconds = state["counts"]["cpu_seconds"]
    seconds = sum(epoch_seconds)
    return {
        "variant": variant,
        "label": LABELS[variant],
        "seed": seed,
        "test_nll": (state["test"] or {}).get("test_nll"),
        "validation_nll": state["best"]["score"][0],
        "best_epoch": state["best"]["epoch"],
        "epochs": args.epochs,
        "train_seconds": round(seconds, 1),
        # The median epoch: the first also compiles the step.
        "seconds_per_epoch": round(statistics.median(epoch_seconds), 1),
        "epoch_seconds": epoch_seconds,
        "train_cpu_seconds": round(cpu_seconds, 1),
        "examples_per_second": round(count * len(epoch_seconds) / seconds,
                                     1),
        "parameters": int(model.count_params()),
        "validation_curve": state["curve"],
        "backend": keras.backend.backend(),
        "cpu": harness.machine()["cpu"],
        # False: stopped by --minutes after len(epoch_seconds) epochs; no
        # test figure, and the summary leaves it out.
        "finished": state["finished"],
        "weights_sha256": state.get("weights_sha256"),
    }


LATE_EPOCHS = 5
"""The last epochs whose validation gain says whether a run had stopped
improving (`late_gain`)."""


def late_gain(curve, window=LATE_EPOCHS):
    """How many nats the last `window` epochs of validation NLL `curve`
    fell below the best before them (<= 0: it had stopped improving);
    None for a curve of `window` epochs or fewer."""

    return common.late_gain(curve, window, lower_is_better=True)


def summary(rows):
    """Per variant: mean and spread (sample standard deviation) of the
    test NLL over seeds, the mean time per epoch, and (runs of more than
    `LATE_EPOCHS` epochs) the largest `late_gain` of its seeds."""
    out = {}
    rows = [row for row in rows if row.get("finished", True)]
    for variant in dict.fromkeys(row["variant"] for row in rows):
        mine = [row for row in rows if row["variant"] == variant]
        values = [row["test_nll"] for row in mine]
        gains = [late_gain(row["validation_curve"]) for row in mine]
        out[variant] = {
            "label": LABELS[variant],
            "seeds": len(values),
            "test_nll_mean": statistics.fmean(values),
            "test_nll_std": (statistics.stdev(values) if len(values) > 1
                             else 0.0),
            "seconds_per_epoch_mean": statistics.fmean(
                row["seconds_per_epoch"] for row in mine),
            "examples_per_second_mean": statistics.fmean(
                row["examples_per_second"] for row in mine),
            "best_epochs": [row["best_epoch"] for row in mine],
        }
        if None not in gains:
            out[variant].update(late_gain_max=max(gains),
                                late_epochs=LATE_EPOCHS)
    return out


def derived(rows):
    """The results file's figures beyond the summary, from its rows (for
    `python -m reproductions render`)."""
    return {"comparison": common.local_against_full(summary(rows))}


def settings(args):
    """The model and training settings every row shares."""
    return {"query_block": list(args.query_block_pair),
            "memory_flange": list(args.memory_flange_pair),
            "layers": args.layers, "heads": args.heads,
            "hidden": args.hidden, "ff": args.ff, "dropout": args.dropout,
            "batch_size": args.batch_size,
            "learning_rate": args.learning_rate, "warmup": args.warmup}


def main(argv=None):
    p = parser()
    args = finish_arguments(p, p.parse_args(argv))
    import harness

    common.choose_backend(p, args)
    data = load(args, p)
    name = args.results_name or NAME
    baselines = {
        "pixel_means": pixel_means_nll(data["digits"]["train"].images,
                                       data["test"]),
        "uniform": PIXELS * math.log(2.0),
    }
    print(f"machine: {harness.machine()}")
    print(f"digits: {', '.join(f'{len(d)} {k}' for k, d in data['digits'].items())}"
          f" (of the 10,000 in mnist10k; the paper had 70,000)")
    print(f"no weights: independent pixels at their training means "
          f"{baselines['pixel_means']:.2f} nats, uniform "
          f"{baselines['uniform']:.1f} nats", flush=True)
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    given = common.with_deadline(sys.argv[1:] if argv is None
                                  else list(argv), args)
    rows = processes.variant_seed_runs(
        __file__, given, args, {"--append", "--resume"},
        lambda variant, seed: train_run(variant, seed, args, data))
    all_rows = earlier + rows
    print(f"\n{'model':<40} {'seed':>4} {'test NLL':>9} {'epoch':>5} "
          f"{'s/epoch':>8} {'ex/s':>6}")
    for row in rows:
        tested = ("—" if row["test_nll"] is None
                  else f"{row['test_nll']:.2f}")
        print(f"{row['label']:<40} {row['seed']:>4} {tested:>9} "
              f"{row['best_epoch']:>5} {row['seconds_per_epoch']:>8.0f} "
              f"{row['examples_per_second']:>6.1f}"
              + ("" if row.get("finished", True) else
                 f"  (unfinished: {len(row['validation_curve'])} of "
                 f"{row['epochs']} epochs)"))
    print(f"{'independent pixels (no weights)':<40} {'':>4} "
          f"{baselines['pixel_means']:>9.2f}")
    for figures in summary(all_rows).values():
        print(f"{figures['label']}: {figures['test_nll_mean']:.2f} ± "
              f"{figures['test_nll_std']:.2f} nats over {figures['seeds']} "
              f"seed(s), {figures['seconds_per_epoch_mean']:.0f} s/epoch"
              + (f"; the last {LATE_EPOCHS} epochs lowered validation NLL "
                 f"by at most {figures['late_gain_max']:.2f}"
                 if "late_gain_max" in figures else ""))
    found = common.local_against_full(summary(all_rows))
    if found:
        print(f"local against full: full's mean less local's "
              f"{found['difference']:+.2f} nats, spread {found['spread']:.2f}"
              f": {found['outcome']}")
    print("van den Oord et al. 2016 (" + PAPER_DATA + "): " + "; ".join(
        f"{label} {value:.2f}" for label, value in PAPER))
    harness.write_results(
        name, all_rows, directory=args.results_dir,
        commands=commands + [harness.command_line()],
        summary=summary(all_rows),
        comparison=common.local_against_full(summary(all_rows)),
        paper={"source": "van den Oord et al. 2016, Pixel Recurrent Neural "
                         "Networks, Table 4 (binarized MNIST, test NLL, "
                         "nats)",
               "data": PAPER_DATA,
               "rows": [{"model": label, "test_nll": value}
                        for label, value in PAPER]},
        baselines=baselines, settings=settings(args),
        data={"digits": {k: len(d) for k, d in data["digits"].items()},
              "source": "mnist10k (10,000 MNIST digits, not 70,000)",
              "binarization": "dynamic: each pixel 1 with probability "
                              "grey / 255; training digits drawn afresh "
                              "each epoch, validation and test drawn once "
                              f"by binarize seed {args.binarize_seed}",
              "split_seed": args.split_seed})
    return all_rows


if __name__ == "__main__":
    main()
