"""Mnih et al.'s Table 2 on 60x60 cluttered translated digits: the
recurrent attention model (RAM) with 4, 6 and 8 glimpses against their
two-layer convolutional network, trained in the same run.

Paper rows (Mnih, Heess, Graves, Kavukcuoglu, "Recurrent Models of Visual
Attention", NeurIPS 2014, Table 2, 60x60 cluttered translated MNIST, test
error): FC 2 layers of 64: 28.58%; FC 2 layers of 256: 11.96%;
convolutional, 2 layers: 8.09%; RAM 4 glimpses, 12x12, 3 scales: 4.96%;
6 glimpses: 4.08%; 8 glimpses: 4.04%; 8 random glimpses: 14.4%.

Data (`keras_attention.data.mnist`): the project's 10,000 real MNIST
digits (`../shared/data/mnist10k`, or `--data`, or
`$KERAS_ATTENTION_MNIST`; the paper had 60,000 training digits), split once
by `--split-seed` into 7,000 train, 1,000 validation, 2,000 test digits.
Each canvas is 60x60 with the digit at a uniformly random place and four
8x8 fragments of other digits of the same split (the paper's clutter).
Training canvases are composed afresh every epoch (seed and epoch); the
validation and test canvases are fixed. The model of the epoch with the
best validation error is the one tested.

Models: RAM as the paper (glimpses of 12x12 pixels at 3 scales, 12, 24 and
48 pixels wide, each averaged to 12x12; h_g and h_l of 128, g_t and the
rectifier core of 256; a Gaussian location policy of fixed σ trained by
REINFORCE with a learned baseline, reward 1 for a right answer);
`ram6_full_gradient` lets REINFORCE's gradient reach the core and glimpse
network (the paper's eq. 2 over all parameters) where the others stop it
at the core's state; the location mean is a tanh of the core's state,
or with `_linear` (`ram6_linear`, `ram6_full_gradient_linear`) the
paper's linear one, the glimpse going to the sample clipped to the
image. The convolutional network is one layer of 8 10x10
filters with stride 5 and a fully connected layer of 256 (ReLU), then the
classifier; `fc256` is two fully connected layers of 256. All train with
Adam and a cosine-decayed learning rate (the paper: SGD with momentum and
a linear decay) for `--epochs`. The rule with no weights is "always the
most frequent training class".

Run: `python reproductions/systems/ram_cluttered_mnist.py [--variants
ram4,ram6,ram8,conv] [--seeds 0,1,2] [--epochs E] [--parallel 2]` (JAX by
default, `--backend` or `$KERAS_BACKEND` for another); `--minutes` ends a
piece of every run, `--resume` continues them from their checkpoints;
`--diagnose` prints the gradient norms of each loss term at the core
(JAX).
"""

import argparse
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
import harness  # noqa: E402

from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402

PROJECT_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / (
    "data") / "mnist10k"
NAME = "ram_cluttered_mnist"
# Table 2, 60x60 cluttered translated MNIST, test error %, as data.
PAPER = common.paper_rows("mnih2014", "Table 2")
VARIANTS = {
    "ram4": dict(kind="ram", glimpses=4),
    "ram6": dict(kind="ram", glimpses=6),
    "ram8": dict(kind="ram", glimpses=8),
    "ram6_full_gradient": dict(kind="ram", glimpses=6, full_gradient=True),
    "ram6_linear": dict(kind="ram", glimpses=6, linear=True),
    "ram6_full_gradient_linear": dict(kind="ram", glimpses=6,
                                      full_gradient=True, linear=True),
    "conv": dict(kind="conv"),
    "fc256": dict(kind="fc"),
    "oracle_glimpse": dict(kind="oracle"),
}
FLAGS = {"--append", "--diagnose"}  # options without a value
LABELS = {
    "ram4": "RAM, 4 glimpses, 12x12, 3 scales",
    "ram6": "RAM, 6 glimpses, 12x12, 3 scales",
    "ram8": "RAM, 8 glimpses, 12x12, 3 scales",
    "ram6_full_gradient": "RAM, 6 glimpses, REINFORCE into the core",
    "ram6_linear": "RAM, 6 glimpses, linear location mean",
    "ram6_full_gradient_linear": "RAM, 6 glimpses, REINFORCE into the "
                                 "core, linear location mean (the paper's)",
    "conv": "Convolutional, 2 layers",
    "fc256": "FC, 2 layers (256 hiddens each)",
    "oracle_glimpse": "one glimpse at the digit's centre, told",
}


def parser():

    p = argparse.ArgumentParser(
        description="RAM against a convolutional network on 60x60 "
                    "cluttered translated MNIST digits (Mnih et al. 2014, "
                    "Table 2)")
    p.add_argument("--data", default=None,
                   help="the MNIST .npz or its folder (default: "
                        "$KERAS_ATTENTION_MNIST, else ../shared/data/mnist10k)")
    p.add_argument("--variants", default="ram4,ram6,ram8,conv",
                   help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    common.add_backend_option(p, "jax")
    p.add_argument("--epochs", type=int, default=100,
                   help="the stopping rule's budget, and the cosine "
                        "schedule's length")
    p.add_argument("--patience", type=int, default=None,
                   help="the rule also finishes a run after this many "
                        "epochs without a lower validation error")
    p.add_argument("--budget-minutes", type=float, default=None,
                   help="the rule also finishes a run after this many "
                        "minutes of training, at an epoch's end; after its "
                        "second epoch the cosine schedule is fitted to the "
                        "epochs the minutes allow (at most --epochs)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--location-std", type=float, default=0.1,
                   help="σ of the location policy, in half-widths")
    p.add_argument("--first-glimpse", default="centre",
                   choices=("centre", "random"),
                   help="the RAM's first glimpse: at the centre, or in "
                        "training drawn uniformly on the canvas (the "
                        "public reproductions'; scored at the centre on "
                        "the mean path, drawn on the sampled paths)")
    p.add_argument("--sampled-paths", type=int, default=10,
                   help="glimpse paths drawn from the policy to score the "
                        "RAM's test error a second way, the mean of their "
                        "softmax (0: the mean path only)")
    p.add_argument("--glimpse-size", type=int, default=12)
    p.add_argument("--scales", type=int, default=3)
    p.add_argument("--canvas-size", type=int, default=60)
    p.add_argument("--clutter", type=int, default=4)
    p.add_argument("--fragment-size", type=int, default=8)
    common.add_run_options(p, "runs/ram_cluttered_mnist")
    common.add_resume_options(p, "runs/ram_cluttered_mnist/checkpoints")
    p.add_argument("--save-dir", default="runs/ram_cluttered_mnist",
                   help="each RAM run's model goes to "
                        "SAVE_DIR/VARIANT_seedN.keras")
    p.add_argument("--figure", default=None,
                   help="draw the glimpses of the best RAM on six test "
                        "canvases into this PNG")
    p.add_argument("--draw", default=None, metavar="MODEL",
                   help="train nothing: draw a saved RAM's glimpses on "
                        "the test canvases into --figure")
    p.add_argument("--diagnose", action="store_true",
                   help="print each loss term's gradient norm at the core "
                        "(RAM variants, JAX) at the start and the end")
    return p


def finish_arguments(p, args):
    """Check every value; a mistake is one line through `p.error`."""
    for flag in ("epochs", "batch_size", "learning_rate", "location_std",
                 "glimpse_size", "scales", "canvas_size", "fragment_size",
                 "parallel"):
        if getattr(args, flag) <= 0:
            p.error(f"--{flag.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, flag)!r}")
    for flag in ("patience", "budget_minutes"):
        if getattr(args, flag) is not None and getattr(args, flag) <= 0:
            p.error(f"--{flag.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, flag)!r}")
    if args.clutter < 0:
        p.error(f"--clutter must be >= 0, received: {args.clutter}")
    if args.sampled_paths < 0:
        p.error(f"--sampled-paths must be >= 0, received: "
                f"{args.sampled_paths}")
    if args.canvas_size < 28:
        p.error(f"--canvas-size must be at least 28, received: "
                f"{args.canvas_size}")
    if args.fragment_size > 28:
        p.error(f"--fragment-size must be at most 28, received: "
                f"{args.fragment_size}")

    common.variants_and_seeds(p, args, VARIANTS)
    return common.finish_resume(p, args, run_settings(args))


def run_settings(args):
    """What a checkpoint's run must share with the command resuming it."""
    return {key: value for key, value in vars(args).items() if key in (
        "epochs", "patience", "budget_minutes", "batch_size",
        "learning_rate", "location_std", "first_glimpse", "sampled_paths",
        "glimpse_size", "scales", "canvas_size", "clutter", "fragment_size",
        "validation", "test", "split_seed")}


def load(args, p):
    """`{"train", "validation", "test"}` digits; validation and test
    canvases fixed. A bad data path is one line."""
    from keras_attention.data import mnist

    path = args.data or os.environ.get(mnist.MNIST_VARIABLE)
    if not path and PROJECT_DATA.is_dir():
        path = PROJECT_DATA
    try:
        digits = mnist.split(mnist.load_mnist(path), args.split_seed,
                             args.validation, args.test)
    except (FileNotFoundError, ValueError) as error:
        p.error(str(error).strip("'\""))
    options = canvas_options(args)
    return {
        "digits": digits,
        "validation": mnist.cluttered(digits["validation"], seed=10_001,
                                      **options),
        "test": mnist.cluttered(digits["test"], seed=10_002, **options),
    }


def canvas_options(args):
    return dict(canvas_size=args.canvas_size, clutter=args.clutter,
                fragment_size=args.fragment_size)


def majority_error(train_labels, test_labels):
    """The rule with no weights: answer the most frequent training class;
    its error on `test_labels`."""
    majority = np.bincount(train_labels).argmax()
    return float(np.mean(test_labels != majority))


"""
## Models
"""


def build(variant, args, seed, schedule):
    """The model of `variant`, compiled with Adam on `schedule`."""
    import keras

    from keras_attention.models import RecurrentAttentionModel

    spec = VARIANTS[variant]
    keras.utils.set_random_seed(seed)
    optimizer = keras.optimizers.Adam(schedule, clipnorm=5.0)
    if spec["kind"] == "ram":
        model = RecurrentAttentionModel(
            num_glimpses=spec["glimpses"], glimpse_size=args.glimpse_size,
            num_scales=args.scales, glimpse_units=128, units=256,
            location_std=args.location_std,
            stop_location_gradient=not spec.get("full_gradient", False),
            location_activation="linear" if spec.get("linear") else "tanh",
            first_location=args.first_glimpse, seed=seed)
        model.compile(optimizer=optimizer)
        return model
    layers = keras.layers
    size = args.canvas_size
    if spec["kind"] == "oracle":
        features = args.scales * args.glimpse_size**2
        model = keras.Sequential([
            keras.Input((features,)), layers.Dense(128, activation="relu"),
            layers.Dense(256, activation="relu"), layers.Dense(10)],
            name=variant)
        model.compile(optimizer=optimizer,
                      loss=keras.losses.SparseCategoricalCrossentropy(
                          from_logits=True))
        return model
    if spec["kind"] == "conv":
        body = [layers.Reshape((size, size, 1)),
                layers.Conv2D(8, 10, strides=5, activation="relu"),
                layers.Flatten(), layers.Dense(256, activation="relu")]
    else:
        body = [layers.Flatten(), layers.Dense(256, activation="relu"),
                layers.Dense(256, activation="relu")]
    model = keras.Sequential([keras.Input((size, size)), *body,
                              layers.Dense(10)], name=variant)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    return model


def inputs_of(variant, canvases, args):
    """What the variant reads: the canvases, or (`oracle_glimpse`) the
    flattened glimpse (`GlimpseSensor`, the RAM's sizes) centred on each
    digit's true box, a place no other model is told."""
    if VARIANTS[variant]["kind"] != "oracle":
        return canvases.images
    from keras_attention.layers import GlimpseSensor

    centres = canvases.boxes[:, :2] + canvases.boxes[:, 2:] / 2  # (N, 2)
    locations = (centres / args.canvas_size * 2 - 1).astype("float32")
    sensor = GlimpseSensor(args.glimpse_size, args.scales, 2)
    patches = [np.asarray(sensor(canvases.images[i:i + 1000],
                                 locations[i:i + 1000]))
               for i in range(0, len(locations), 1000)]
    return np.concatenate(patches).reshape(len(locations), -1)


def logits_of(model, inputs):
    outputs = model.predict(inputs, batch_size=500, verbose=0)
    return outputs["logits"] if isinstance(outputs, dict) else outputs


def error_of(model, inputs, labels):
    return float(np.mean(np.argmax(logits_of(model, inputs), -1) != labels))


def gradient_norms(model, images, labels, seed=0):
    """Each loss term's gradient norm over the core and glimpse network's
    weights (everything but the location, baseline and classifier heads),
    with the locations sampled (JAX), REINFORCE's as if it reached the
    core (the paper's eq. 2) whatever the model's setting:
    `{"classification", "reinforce", "baseline"}`, and
    `"saturated_means"`, the share of location means beyond ±0.95."""
    import jax
    from keras import ops

    if not model.built:
        model(images[:2])
    heads = ("location_head", "baseline_head", "classifier")
    chosen = [index for index, variable in enumerate(model.trainable_variables)
              if variable.path.split("/")[-2] not in heads]
    noise = np.random.default_rng(seed).normal(
        size=(len(images), model.num_glimpses - 1, 2)).astype("float32")
    trainable = [v.value for v in model.trainable_variables]
    fixed = [v.value for v in model.non_trainable_variables]

    def term(weights, name):
        outputs, _ = model.stateless_call(weights, fixed, images,
                                          training=True, noise=noise)
        return model.losses_of(outputs, labels)[name]

    norms = {}
    # What REINFORCE would send into the core, even where it is stopped.
    stopped, model.stop_location_gradient = model.stop_location_gradient, False
    try:
        for name in ("classification", "reinforce", "baseline"):
            grads = jax.grad(term)(trainable, name)
            norms[name] = float(ops.sqrt(sum(
                ops.sum(ops.square(grads[index])) for index in chosen)))
    finally:
        model.stop_location_gradient = stopped
    # Where the policy looks: the share of means pinned at the edge of
    # the image by a saturated tanh (|μ| > 0.95 in either coordinate).
    means = np.asarray(model.predict(images, verbose=0)["means"])
    norms["saturated_means"] = float(np.mean(np.abs(means) > 0.95))
    return norms


"""
## One run
"""


def train_run(variant, seed, args, data):
    """Train one variant from one seed with the package's loop
    (`training.train_run`): the rule (`--epochs`, `--patience`,
    `--budget-minutes`) finishes the run, the weights of the lowest
    validation error are kept and tested once, when the run finishes;
    `--minutes` ends a piece, `--resume` continues it. Returns the run's
    row (an unfinished one has no test figure) and the model."""
    import keras

    from keras_attention.data import mnist
    from keras_attention.training import StoppingRule
    from keras_attention.training import train_run as run_epochs

    train_digits = data["digits"]["train"]
    steps_per_epoch = len(train_digits) // args.batch_size
    count = steps_per_epoch * args.batch_size  # whole batches only
    schedule = keras.optimizers.schedules.CosineDecay(
        args.learning_rate, steps_per_epoch * args.epochs)
    model = build(variant, args, seed, schedule)
    ram = VARIANTS[variant]["kind"] == "ram"
    validation = inputs_of(variant, data["validation"], args)
    model(validation[:2])  # built, to restore into
    checkpoint = common.checkpoint_for(args, variant, seed)
    counts = common.saved_counts(checkpoint)
    spent = list(counts.get("epoch_seconds", []))  # the earlier pieces' too
    if counts.get("schedule_epochs"):  # the fitted schedule goes on
        schedule.decay_steps = counts["schedule_epochs"][0] * steps_per_epoch
    diagnosis = {}
    if args.diagnose and ram:
        probe = data["validation"]
        diagnosis["start"] = gradient_norms(model, probe.images[:256],
                                            probe.labels[:256], seed)
        print(f"{variant} seed {seed}: gradient norms at the core, start: "
              f"{diagnosis['start']}", flush=True)

    def epoch(model, index, rng):
        # The clock of the rule's time budget: the whole epoch, the
        # canvases' making included (validation not).
        started = time.perf_counter()
        canvases = mnist.cluttered(train_digits, seed=seed * 100_003 + index,
                                   **canvas_options(args))
        order = rng.permutation(len(canvases.labels))[:count]
        model.fit(inputs_of(variant, canvases, args)[order],
                  canvases.labels[order], batch_size=args.batch_size,
                  epochs=1, shuffle=False, verbose=0)
        seconds = time.perf_counter() - started
        spent.append(seconds)
        counts = {"epoch_seconds": [round(seconds, 2)]}
        if args.budget_minutes and index == 1:
            counts["schedule_epochs"] = [fit_schedule(
                model, schedule, seconds_per_epoch=seconds,
                budget=60 * args.budget_minutes - sum(spent), done=2,
                args=args, steps_per_epoch=steps_per_epoch)]
        return counts

    def validate(model):
        error = error_of(model, validation, data["validation"].labels)
        if args.verbose:
            print(f"{variant} seed {seed}: validation error {error:.2%}",
                  flush=True)
        return round(error, 4)

    def test(model):
        found = {"test_error": error_of(
            model, inputs_of(variant, data["test"], args),
            data["test"].labels)}
        if ram and args.sampled_paths:
            # Scored as the public reproductions score: the mean of the
            # softmax over sampled glimpse paths, beside the mean path; on
            # validation too (the same weights), to choose by.
            from keras_attention.training import glimpse_paths

            for part, offset in (("validation", 20_000), ("test", 10_000)):
                probabilities = glimpse_paths.sampled_path_probabilities(
                    model, data[part].images, paths=args.sampled_paths,
                    seed=offset + seed)
                found[f"{part}_error_sampled"] = float(np.mean(
                    np.argmax(probabilities, -1) != data[part].labels))
            found["sampled_paths"] = args.sampled_paths
        return found

    state = run_epochs(
        model, epoch=epoch, validate=validate, test=test,
        rule=StoppingRule(args.epochs, patience=args.patience,
                          minutes=args.budget_minutes),
        higher_is_better=False, directory=checkpoint, seed=seed, verbose=0,
        seconds=common.piece_seconds(args))
    if not state["finished"]:
        print(f"{variant} seed {seed}: stopped after epoch {state['epoch']} "
              f"of {args.epochs} by --minutes; --resume continues it",
              flush=True)
    if args.diagnose and ram:
        probe = data["validation"]
        diagnosis["end"] = gradient_norms(model, probe.images[:256],
                                          probe.labels[:256], seed)
        print(f"{variant} seed {seed}: gradient norms at the core, end: "
              f"{diagnosis['end']}", flush=True)
    if ram and args.save_dir and state["finished"]:
        folder = pathlib.Path(args.save_dir)
        folder.mkdir(parents=True, exist_ok=True)
        model.save(folder / f"{variant}_seed{seed}.keras")
    seconds = sum(state["counts"]["epoch_seconds"])
    row = {
        "variant": variant,
        "label": LABELS[variant],
        "seed": seed,
        "test_error": None,
        "validation_error": state["best"]["score"][0],
        "best_epoch": state["best"]["epoch"],
        "epochs": state["epoch"],
        "train_seconds": round(seconds, 1),
        "examples_per_second": round(count * state["epoch"] / seconds, 1),
        "parameters": int(sum(np.prod(w.shape)
                              for w in model.trainable_weights)),
        "validation_curve": state["curve"],
        "backend": keras.backend.backend(),
        "cpu": harness.machine()["cpu"],
        # False: a piece ended by --minutes; no test figure, and the
        # summary leaves it out until --resume finishes it.
        "finished": state["finished"],
        "stopped_by": state["stopped_by"],
        "weights_sha256": state.get("weights_sha256"),
        # Each piece's machine, code version, minutes and epochs (`cpu`
        # above is the machine that wrote this row).
        "pieces": state["pieces"],
    }
    if ram:  # the exploration it trained with
        row["location_std"] = args.location_std
        row["first_glimpse"] = args.first_glimpse
    row.update(state["test"] or {})
    if diagnosis:
        row["gradient_norms"] = diagnosis
    return row, model


def fit_schedule(model, schedule, seconds_per_epoch, budget, done, args,
                 steps_per_epoch):
    """With `--budget-minutes`: end the cosine schedule at the last epoch the
    `budget` seconds left allow at `seconds_per_epoch` (at most
    `--epochs` in all), so the learning rate reaches its floor when the
    time runs out; the training step is traced again with it."""
    epochs = min(args.epochs, done + max(int(budget // max(
        seconds_per_epoch, 1e-9)), 1))
    schedule.decay_steps = epochs * steps_per_epoch
    model.train_function = None  # compiled again with the new schedule
    print(f"--budget-minutes: the schedule ends at epoch {epochs} "
          f"({seconds_per_epoch:.1f} s per epoch)", flush=True)
    return epochs


def summary(rows):
    """Per variant: mean and spread (sample standard deviation) of the
    test error over seeds, with the paper's figure. A RAM scored both
    ways also gets `scoring`, the one of the lower mean validation error
    (`"mean_path"` or `"sampled"`), and `scored_test_error_mean` and
    `_std`, its test error by that scoring: what the claims compare.
    Unfinished runs (no test figure yet) are left out."""
    rows = [row for row in rows if row.get("finished", True)]
    out = {}
    for variant in dict.fromkeys(row["variant"] for row in rows):
        errors = [row["test_error"] for row in rows
                  if row["variant"] == variant]
        out[variant] = {
            "label": LABELS[variant],
            "seeds": len(errors),
            "test_error_mean": statistics.fmean(errors),
            "test_error_std": (statistics.stdev(errors) if len(errors) > 1
                               else 0.0),
            "paper_test_error": (PAPER[variant] / 100 if variant in PAPER
                                 else None),
        }
        sampled = [row["test_error_sampled"] for row in rows
                   if row["variant"] == variant and "test_error_sampled" in row]
        if sampled:  # the RAM scored by its sampled paths too
            out[variant].update(
                test_error_sampled_mean=statistics.fmean(sampled),
                test_error_sampled_std=(statistics.stdev(sampled)
                                        if len(sampled) > 1 else 0.0))
        mine = [row for row in rows if row["variant"] == variant]
        figures = out[variant]
        figures["scoring"] = "mean_path"
        if all("validation_error_sampled" in row for row in mine):
            by_path = statistics.fmean(row["validation_error"] for row in mine)
            by_samples = statistics.fmean(row["validation_error_sampled"]
                                          for row in mine)
            figures.update(validation_error_mean=by_path,
                           validation_error_sampled_mean=by_samples)
            if by_samples < by_path:
                figures["scoring"] = "sampled"
        suffix = "_sampled" if figures["scoring"] == "sampled" else ""
        figures["scored_test_error_mean"] = figures[f"test_error{suffix}_mean"]
        figures["scored_test_error_std"] = figures[f"test_error{suffix}_std"]
    return out


def exploration(rows):
    """How the RAM explores, chosen on validation: per variant and
    setting (σ, first glimpse), the mean validation error over seeds by
    the mean path and by the sampled paths, and the setting of the lowest
    (the better of its two scorings). None with one setting per variant
    (nothing to choose)."""
    groups = {}
    for row in rows:
        if "location_std" not in row or not row.get("finished", True):
            continue
        key = (row["variant"], row["location_std"],
               row.get("first_glimpse", "centre"))
        groups.setdefault(key, []).append(row)
    if len(groups) == len({key[0] for key in groups}):
        return None
    settings = []
    for (variant, std, first), runs in groups.items():
        line = {"variant": variant, "location_std": std,
                "first_glimpse": first, "seeds": len(runs),
                "validation_error_mean": statistics.fmean(
                    row["validation_error"] for row in runs)}
        if all("validation_error_sampled" in row for row in runs):
            line["validation_error_sampled_mean"] = statistics.fmean(
                row["validation_error_sampled"] for row in runs)
        line["best_validation_error"] = min(
            value for key, value in line.items()
            if key.startswith("validation_error"))
        settings.append(line)
    chosen = {}
    for variant in dict.fromkeys(line["variant"] for line in settings):
        best = min((line for line in settings if line["variant"] == variant),
                   key=lambda line: line["best_validation_error"])
        chosen[variant] = {key: best[key] for key in (
            "location_std", "first_glimpse", "best_validation_error")}
    return {"settings": settings, "chosen": chosen}


def draw(model, data, path):
    from keras_attention.visualize import plot_glimpses

    test = data["test"]
    outputs = model.predict(test.images[:6], verbose=0)
    predicted = np.argmax(outputs["logits"], axis=-1)
    plot_glimpses(
        test.images[:6], outputs["locations"], model.glimpse_size,
        model.num_scales, model.scale,
        titles=[f"digit {label}, read {guess}"
                for label, guess in zip(test.labels[:6], predicted)],
        title=f"RAM, {model.num_glimpses} glimpses on 60x60 cluttered "
              "test digits (patches 12, 24, 48 px)", path=path)
    print(f"wrote {path}")


def main(argv=None):
    p = parser()
    args = finish_arguments(p, p.parse_args(argv))

    common.choose_backend(p, args)
    data = load(args, p)
    if args.draw:
        if not args.figure:
            p.error("--draw needs --figure, the PNG to write")
        import keras

        import keras_attention.models  # noqa: F401 (registers the RAM)

        try:
            model = keras.saving.load_model(args.draw)
        except (OSError, ValueError) as error:
            p.error(f"--draw: cannot load {args.draw}: {error}")
        draw(model, data, args.figure)
        return []
    name = args.results_name or NAME
    rule = majority_error(data["digits"]["train"].labels,
                          data["test"].labels)
    print(f"machine: {harness.machine()}")
    print(f"digits: {', '.join(f'{len(d)} {k}' for k, d in data['digits'].items())}"
          f" (of the 10,000 in mnist10k; the paper had 60,000 + 10,000)")
    print(f"the most frequent class, no weights: test error {rule:.2%}",
          flush=True)
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    models = {}

    def train(variant, seed):
        row, models[(variant, seed)] = train_run(variant, seed, args, data)
        return row

    jobs = [(variant, seed) for variant in args.variant_list
            for seed in args.seed_list]
    # With --resume, a run the file already holds finished gives its row
    # again as it is: its checkpoint may be gone.
    given = common.finished_earlier(
        args, pathlib.Path(args.results_dir or harness.RESULTS_DIR)
        / f"{name}.json")

    def in_order(trained):
        return common.in_job_order(jobs, given, trained)

    def write(rows):
        # While runs go on (a piece ended by --minutes, runs not begun,
        # or others still training), the file says so and names each
        # one's checkpoint, which --resume continues; the settings they
        # were saved with let --resume give the finished rows again.
        all_rows = earlier + rows
        explored = exploration(all_rows)
        harness.write_results(
            name, all_rows, directory=args.results_dir,
            commands=commands + [harness.command_line()],
            complete=sum(row.get("finished", True) for row in rows)
            == len(jobs),
            in_progress=common.runs_in_progress(args, rows, jobs),
            run_settings=args.run_settings,
            summary=summary(all_rows), paper_test_error=PAPER,
            majority_rule_test_error=rule,
            **({"exploration": explored} if explored else {}),
            data={"digits": {k: len(d) for k, d in data["digits"].items()},
                  "source": "mnist10k (10,000 MNIST digits, not 70,000)",
                  "canvas": canvas_options(args),
                  "split_seed": args.split_seed})

    # The file is written again as each run finishes (on two cores, the
    # other's row waits for it no longer).
    rows = in_order(processes.variant_seed_runs(
        __file__, common.with_deadline(
            sys.argv[1:] if argv is None else list(argv), args),
        args, FLAGS | {"--resume"}, train, also_strip={"--figure"},
        skip=given, on_rows=lambda done: write(in_order(done))))
    all_rows = earlier + rows
    print(f"\n{'model':<42} {'seed':>4} {'test error':>10} {'paper':>7} "
          f"{'epoch':>5} {'ex/s':>7}")
    for row in rows:
        paper = PAPER.get(row["variant"])
        tested = ("—" if row["test_error"] is None
                  else f"{row['test_error']:.2%}")
        print(f"{row['label']:<42} {row['seed']:>4} {tested:>10}"
              f" {'' if paper is None else f'{paper:.2f}%':>7} "
              f"{row['best_epoch']:>5} {row['examples_per_second']:>7.0f}")
    print(f"{'most frequent class (no weights)':<42} {'':>4} {rule:>10.2%}")
    for figures in summary(all_rows).values():
        print(f"{figures['label']}: {figures['test_error_mean']:.2%} ± "
              f"{figures['test_error_std']:.2%} over {figures['seeds']} "
              "seed(s)")
    explored = exploration(all_rows)
    if explored:
        for variant, line in explored["chosen"].items():
            print(f"chosen on validation for {variant}: --location-std "
                  f"{line['location_std']} --first-glimpse "
                  f"{line['first_glimpse']} (validation error "
                  f"{line['best_validation_error']:.2%})")
    if args.figure and models:
        ram = [key for key in models if VARIANTS[key[0]]["kind"] == "ram"]
        if ram:
            best = min(ram, key=lambda key: next(
                row["validation_error"] for row in rows
                if (row["variant"], row["seed"]) == key))
            draw(models[best], data, args.figure)
    write(rows)
    return all_rows


def derived(rows):
    """The results file's figures beyond the summary, from its rows (for
    `python -m reproductions render`)."""
    return {"exploration": exploration(rows)}


if __name__ == "__main__":
    main()
