"""SAGAN's question on 28x28 digits: does the self-attention block, at the
resolution the paper puts it, lower the Fréchet distance of a
spectrally normalized GAN? Judged over seeds by a one-sided Mann-Whitney
U test (p < 0.1) with each run's generator chosen by its validation
distance (`--select best`, the default).

Paper rows (Zhang, Goodfellow, Metaxas, Odena, "Self-Attention Generative
Adversarial Networks", ICML 2019, arXiv 1805.08318, Table 1, ImageNet
128x128, FID, lower is better): no attention 22.96; the block at feat8
22.98, feat16 22.14, feat32 18.28, feat64 18.65; a residual block there
instead 42.13, 22.40, 27.33, 28.82. "featK" is the K x K feature map; the
paper finds "middle-to-high level feature maps (e.g., feat32 and feat64)"
best. 18.65 is the abstract's figure; the other rows are as read from
Table 1 (see `PAPER`).

Data (`keras_attention.data.mnist`): the project's 10,000 MNIST digits
(`../shared/data/mnist10k`, `--data` or `$KERAS_ATTENTION_MNIST`), or with
`--dataset fashion` the first 10,000 images of Fashion-MNIST's training
set (Debian's `/usr/share/datasets/fashion-mnist`, or `--data`), split
once by `--split-seed` into 7,000 train, 1,000 validation, 2,000 test
images, scaled to [-1, 1]. The GAN trains on the train images only.

Models: G maps a latent of 64 through a dense layer to 7x7x4w, then
upsampling and 3x3 convolutions to 14x14x2w and 28x28xw, batch
normalization and ReLU, and a 3x3 convolution with tanh to the image; D
mirrors it (3x3 at 28x28xw, 4x4 stride 2 to 14x14x2w and to 7x7x4w,
LeakyReLU 0.1, a dense score); w = `--width`. Every convolution and dense
layer is spectrally normalized (`keras.layers.SpectralNormalization`).
`attention` adds `SelfAttention2D(spectral_normalization=True)` on the
14x14 maps of both, half the image's side, as feat64 is of 128 (the
paper's best placements are a quarter and half). The paper's recipe:
hinge loss, Adam(β1 = 0, β2 = 0.9), D at 4e-4 and G at 1e-4 (two time
scales), one D step per G step, γ starting at 0.

The judge: a small CNN trained on the training images by a fixed recipe
(`CLASSIFIER`, seed 0), cached under `--cache-dir` by a hash of the
recipe and the images (a file another recipe or split cannot match);
parallel runs and both backends read the same file. The Fréchet distance
(Heusel et al. 2017) of its 64 penultimate features compares `--samples`
generated images with the test images. Beside it, with no GAN: the floor,
as many training images against the test images; the ceiling, Gaussian
noise images with the training images' per-pixel mean and standard
deviation (clipped to [-1, 1]).

Training is the package's loop (`keras_attention.training.train_run`):
one loop epoch is `--eval-every` epochs of the data and a distance to
the validation images; `--epochs` is the stopping rule; the generator
chosen (`--select`: of the lowest validation distance, or the last) is
scored on the test images once, when the run finishes. Each row holds
that distance, the validation curve, each block's γ after every epoch,
the mean losses per epoch, and for `attention` where the blocks look:
the mean distance in pixels between a query and the keys it attends to
(against attention spread evenly), and the share of attention on the
keys whose 4x4 patch holds ink (against the share of such keys).

Run: `python reproductions/systems/sagan_mnist.py [--dataset mnist|fashion]
[--variants plain,attention] [--seeds 0,1,2] [--epochs E] [--parallel 2]
[--figures DIR]` (TensorFlow or JAX: `KERAS_BACKEND=jax`).
"""

import argparse
import hashlib
import json
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
NAME = "sagan_mnist"
VARIANTS = {"plain": False, "attention": True}
LABELS = {"plain": "SN-GAN, no attention",
          "attention": "SN-GAN, SelfAttention2D at 14x14 in G and D"}
# Table 1 of Zhang et al. (ImageNet 128x128, FID), as data:
# reproductions/papers/zhang2019.json.
PAPER = common.paper_rows("zhang2019", "Table 1")
CLASSIFIER = {"filters": [32, 64], "features": 64, "batch_size": 64,
              "learning_rate": 1e-3, "seed": 0}
FLAGS = {"--append"}  # options without a value


def parser():

    p = argparse.ArgumentParser(
        description="A small SN-GAN with and without SAGAN's self-attention "
                    "block on 28x28 digits, judged by a Fréchet distance")
    p.add_argument("--dataset", default="mnist", choices=["mnist", "fashion"])
    p.add_argument("--data", default=None,
                   help="the MNIST .npz or its folder (default: "
                        "$KERAS_ATTENTION_MNIST, else ../shared/data/mnist10k);"
                        " with --dataset fashion, the folder of the IDX files")
    p.add_argument("--variants", default="plain,attention",
                   help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--latent", type=int, default=64)
    p.add_argument("--width", type=int, default=16,
                   help="channels at 28x28; 2x at 14x14, 4x at 7x7")
    p.add_argument("--generator-rate", type=float, default=1e-4)
    p.add_argument("--discriminator-rate", type=float, default=4e-4)
    p.add_argument("--samples", type=int, default=2000,
                   help="generated images per Fréchet distance")
    p.add_argument("--eval-every", type=int, default=5,
                   help="epochs between distances to the validation images "
                        "(0: none)")
    p.add_argument("--select", default="best", choices=("final", "best"),
                   help="which generator is tested: the last epoch's, or "
                        "the one of the lowest validation distance (of the "
                        "--eval-every checkpoints)")
    p.add_argument("--classifier-epochs", type=int, default=8)
    p.add_argument("--cache-dir", default="runs/sagan_mnist",
                   help="where the judge's classifier is kept")
    common.add_run_options(p, "runs/sagan_mnist/logs")
    p.add_argument("--figures", default=None,
                   help="folder for each run's samples and attention maps")
    return p


def finish_arguments(p, args):
    """Check every value; a mistake is one line through `p.error`."""
    for flag in ("epochs", "batch_size", "latent", "width", "generator_rate",
                 "discriminator_rate", "samples", "classifier_epochs",
                 "parallel"):
        if getattr(args, flag) <= 0:
            p.error(f"--{flag.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, flag)!r}")
    if args.eval_every < 0:
        p.error(f"--eval-every must be >= 0, received: {args.eval_every}")
    if args.select == "best" and not args.eval_every:
        p.error("--select best needs --eval-every > 0 (the validation "
                "distances it chooses by), received: --eval-every 0")
    if args.width % 4:
        p.error(f"--width must be a multiple of 4 (the block's keys have "
                f"2*width/8 channels), received: {args.width}")

    return common.variants_and_seeds(p, args, VARIANTS)


def scaled(images):
    """uint8 `(N, 28, 28)` -> float32 `(N, 28, 28, 1)` in [-1, 1]."""
    return (np.asarray(images, "float32") / 127.5 - 1.0)[..., None]


def load(args, p):
    """`{"train", "validation", "test"}` -> `(images, labels)`; a bad
    path or split is one line."""
    from keras_attention.data import mnist

    try:
        if args.dataset == "fashion":
            digits = mnist.load_fashion_mnist(args.data, "train")
            digits = digits.take(np.arange(min(10_000, len(digits))))
        else:
            path = args.data or os.environ.get(mnist.MNIST_VARIABLE)
            if not path and PROJECT_DATA.is_dir():
                path = PROJECT_DATA
            digits = mnist.load_mnist(path)
        parts = mnist.split(digits, args.split_seed, args.validation,
                            args.test)
    except (FileNotFoundError, ValueError) as error:
        p.error(str(error).strip("'\""))
    if args.samples > len(parts["train"]):
        p.error(f"--samples must be at most the {len(parts['train'])} "
                f"training images, received: {args.samples}")
    if args.batch_size > len(parts["train"]):
        p.error(f"--batch-size must be at most the {len(parts['train'])} "
                f"training images, received: {args.batch_size}")
    return {name: (scaled(part.images), part.labels)
            for name, part in parts.items()}


"""
## The judge: a Fréchet distance on a fixed classifier's features

The networks, the loss and the step are `keras_attention.models.SAGAN`
and `keras_attention.training.gan`, as in `examples/sagan_digits.py`.
"""


def classifier_path(args, train):
    """The cache file of the recipe on these images."""
    digest = hashlib.sha256(json.dumps(
        [CLASSIFIER, args.classifier_epochs]).encode())
    digest.update(train[0].tobytes())
    digest.update(train[1].tobytes())
    return pathlib.Path(args.cache_dir) / (
        f"classifier_{args.dataset}_{digest.hexdigest()[:12]}.keras")


def feature_judge(args, data):
    """`(features model, record)`: the cached classifier, trained by
    `CLASSIFIER` on the training images when missing."""
    import keras

    from keras_attention.training.frechet import feature_classifier

    path = classifier_path(args, data["train"])
    trained = not path.is_file()
    if trained:
        keras.utils.set_random_seed(CLASSIFIER["seed"])
        model, _ = feature_classifier((28, 28, 1), 10, CLASSIFIER["filters"],
                                      CLASSIFIER["features"])
        model.compile(optimizer=keras.optimizers.Adam(
            CLASSIFIER["learning_rate"]), metrics=["accuracy"],
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(*data["train"], epochs=args.classifier_epochs,
                  batch_size=CLASSIFIER["batch_size"], verbose=0)
        path.parent.mkdir(parents=True, exist_ok=True)
        model.save(path)
    model = keras.saving.load_model(path)
    logits = model.predict(data["test"][0], batch_size=500, verbose=0)
    record = {
        "file": str(path), "trained_now": trained,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
        "recipe": {**CLASSIFIER, "epochs": args.classifier_epochs},
        "test_accuracy": float(np.mean(np.argmax(logits, -1)
                                       == data["test"][1])),
    }
    return keras.Model(model.inputs, model.get_layer("features").output), (
        record)


def features_of(features, images):
    return features.predict(images, batch_size=500, verbose=0).astype(
        "float64")


def references(args, data, features):
    """The floor (training images) and ceiling (per-pixel Gaussian noise)
    against the test images, with no GAN."""
    from keras_attention.training.frechet import frechet_distance

    train, test = data["train"][0], features_of(features, data["test"][0])
    mean, std = train.mean(0), train.std(0)
    noise = np.random.default_rng(0).normal(
        size=(args.samples, *mean.shape)).astype("float32")
    return {
        "floor_train_vs_test": frechet_distance(
            features_of(features, train[:args.samples]), test),
        "ceiling_pixel_noise_vs_test": frechet_distance(
            features_of(features, np.clip(mean + std * noise, -1, 1)), test),
    }


"""
## Where the blocks look
"""


def looking(weights, images):
    """Summaries of `weights` `(B, 196, 49)` over the 14x14 queries and
    the 7x7 pooled keys of `images` `(B, 28, 28, 1)`, in image pixels."""
    rows, cols = np.divmod(np.arange(196), 14)
    queries = np.stack([2 * rows + 0.5, 2 * cols + 0.5], -1)  # (196, 2)
    rows, cols = np.divmod(np.arange(49), 7)
    keys = np.stack([4 * rows + 1.5, 4 * cols + 1.5], -1)  # (49, 2)
    distance = np.linalg.norm(queries[:, None] - keys[None], axis=-1)
    ink = images[..., 0].reshape(-1, 7, 4, 7, 4).max((2, 4)).reshape(
        -1, 49) > 0.0  # (B, 49): the key's 4x4 patch holds ink
    entropy = -(weights * np.log(weights + 1e-12)).sum(-1)  # (B, 196)
    return {
        "distance_px": float((weights * distance).sum(-1).mean()),
        "uniform_distance_px": float(distance.mean()),
        "on_ink": float((weights * ink[:, None]).sum(-1).mean()),
        "ink_share": float(ink.mean()),
        "entropy_over_uniform": float(entropy.mean() / np.log(49)),
    }


def attention_summary(probes, args, data, seed):
    from keras import ops

    make_probe, judge_probe = probes  # SAGAN.attention_probes()
    noise = np.random.default_rng(20_000 + seed).normal(
        size=(256, args.latent)).astype("float32")
    images, weights = make_probe(noise, training=False)
    real = data["test"][0][:256]
    return {
        "generator": looking(ops.convert_to_numpy(weights),
                             ops.convert_to_numpy(images)),
        "discriminator": looking(ops.convert_to_numpy(
            judge_probe(real, training=False)), real),
    }, (ops.convert_to_numpy(images), ops.convert_to_numpy(weights))


def draw(path_stem, samples, looked):
    from matplotlib.figure import Figure

    from keras_attention.visualize import plot_image_attention

    figure = Figure(figsize=(6, 3))
    for index, image in enumerate(samples[:50]):
        axes = figure.add_subplot(5, 10, index + 1)
        axes.imshow(image[..., 0], cmap="gray_r", vmin=-1, vmax=1)
        axes.axis("off")
    figure.savefig(f"{path_stem}_samples.png", dpi=100)
    if looked is not None:
        images, weights = looked
        queries = [(3, 7), (7, 3), (7, 10), (11, 7)]  # (row, col) of 14x14
        plot_image_attention(
            images[0, ..., 0], weights[0, [r * 14 + c for r, c in queries]],
            [f"query ({2 * r}, {2 * c})" for r, c in queries], (7, 7),
            title="where G's block looks (keys pooled to 7x7)",
            path=f"{path_stem}_attention.png")


"""
## One run
"""


def train_run(variant, seed, args, data, features):
    import keras

    from keras_attention.models import SAGAN
    from keras_attention.training import StoppingRule
    from keras_attention.training import train_run
    from keras_attention.training.frechet import frechet_distance
    from keras_attention.training.gan import hinge_gan_trainer
    from keras_attention.training.gan import sagan_optimizers

    attention = VARIANTS[variant]
    keras.utils.set_random_seed(seed)
    gan = SAGAN(image_size=28, latent_dim=args.latent, width=args.width,
                attention=attention)
    make, judge = gan.generator, gan.discriminator
    step, sync = hinge_gan_trainer(
        make, judge, *sagan_optimizers(args.generator_rate,
                                       args.discriminator_rate))
    train = data["train"][0]
    reference = {name: features_of(features, data[name][0])
                 for name in ("validation", "test")}
    steps_per_epoch = len(train) // args.batch_size
    noise_shape = (args.batch_size, args.latent)
    fixed_noise = np.random.default_rng(10_000 + seed).normal(
        size=(args.samples, args.latent)).astype("float32")

    def score(part):
        samples = make.predict(fixed_noise, batch_size=500, verbose=0)
        return frechet_distance(features_of(features, samples),
                                reference[part]), samples

    gammas, losses, curve, timings = [[0, 0.0, 0.0]], [], [], []
    every = args.eval_every or args.epochs  # epochs a validation

    def epoch(model, index, rng):
        # `every` epochs of the data, then (the loop) one validation.
        for epoch in range(index * every + 1,
                           min((index + 1) * every, args.epochs) + 1):
            order = rng.permutation(len(train))
            started, used, totals = (time.perf_counter(),
                                     time.process_time(), [])
            for number in range(steps_per_epoch):
                real = train[order[number * args.batch_size:
                                   (number + 1) * args.batch_size]]
                totals.append(step(
                    real, rng.normal(size=noise_shape).astype("float32"),
                    rng.normal(size=noise_shape).astype("float32")))
            totals = np.asarray([[float(a), float(b)] for a, b in totals])
            timings.append([time.perf_counter() - started,
                            time.process_time() - used])
            losses.append([epoch, *np.round(totals.mean(0), 4).tolist()])
            if attention:
                found = gan.attention_gammas()
                gammas.append([epoch, found["generator"],
                               found["discriminator"]])
            if args.verbose:
                said = (f", γ G {gammas[-1][1]:+.4f} D {gammas[-1][2]:+.4f}"
                        if attention else "")
                print(f"{variant} seed {seed} epoch {epoch}: D loss "
                      f"{losses[-1][1]:.3f}, G loss {losses[-1][2]:+.3f}"
                      f"{said}", flush=True)
        sync()  # the trained state into the variables the loop keeps
        return {"epochs": epoch - index * every}

    def validate(model):
        if not args.eval_every:
            return 0.0  # no validation: the last epoch's generator
        value = round(score("validation")[0], 3)
        curve.append([min((len(curve) + 1) * every, args.epochs), value])
        if args.verbose:
            print(f"{variant} seed {seed}: validation distance {value:.2f}",
                  flush=True)
        return value

    tested = {}

    def test(model):  # once, on the selected generator
        tested["distance"], tested["samples"] = score("test")
        return {"frechet_distance": tested["distance"]}

    state = train_run(
        gan, epoch=epoch, validate=validate, test=test,
        rule=StoppingRule(-(-args.epochs // every)),
        selection="best" if args.select == "best" else "last",
        higher_is_better=False, seed=seed, verbose=0)
    # No sync after this: the loop set the selected weights.
    fid, samples = tested["distance"], tested["samples"]
    seconds, busy = (float(total) for total in np.sum(timings, axis=0))
    selected = {"selection": args.select, "selected_epoch": min(
        state["best"]["epoch"] * every, args.epochs)}
    row = {
        "variant": variant,
        "label": LABELS[variant],
        "seed": seed,
        "dataset": args.dataset,
        "frechet_distance": round(fid, 4),
        **selected,
        "validation_curve": curve,
        "epochs": args.epochs,
        "steps": steps_per_epoch * args.epochs,
        "batch_size": args.batch_size,
        "train_seconds": round(seconds, 1),
        "seconds_per_epoch": round(seconds / args.epochs, 2),
        "epoch_seconds": [round(wall, 2) for wall, _ in timings],
        # The processor time of this process: about the wall time on a
        # core of its own, whatever else shares it.
        "cpu_seconds_per_epoch": round(busy / args.epochs, 2),
        "examples_per_second": round(
            steps_per_epoch * args.batch_size * args.epochs / seconds, 1),
        "parameters": {name: int(sum(np.prod(w.shape)
                                     for w in model.trainable_weights))
                       for name, model in (("generator", make),
                                           ("discriminator", judge))},
        "loss_curve": losses,
        "backend": keras.backend.backend(),
        "cpu": harness.machine()["cpu"],
    }
    looked = None
    if attention:
        row["gamma_curve"] = gammas
        row["attention"], looked = attention_summary(
            gan.attention_probes(), args, data, seed)
    if args.figures:
        pathlib.Path(args.figures).mkdir(parents=True, exist_ok=True)
        draw(pathlib.Path(args.figures) / f"{variant}_seed{seed}", samples,
             looked)
    return row


def summary(rows):
    """Per variant: mean, spread (sample standard deviation) and median
    of the distance over seeds; then the block's verdict: a one-sided
    Mann-Whitney U test that the runs with the block reach lower
    distances than the runs without (a rank test, so one collapsed run
    cannot decide it as it decides a mean)."""
    distances = {}
    for row in rows:
        distances.setdefault(row["variant"], []).append(
            row["frechet_distance"])
    out = {
        variant: {
            "label": LABELS[variant], "seeds": len(values),
            "mean": statistics.fmean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "median": statistics.median(values),
        } for variant, values in distances.items()}
    if {"plain", "attention"} <= set(out):
        out["verdict"] = common.block_verdict(distances["plain"],
                                              distances["attention"])
    return out


def main(argv=None):
    p = parser()
    args = finish_arguments(p, p.parse_args(argv))

    data = load(args, p)
    name = args.results_name or NAME
    features, judge_record = feature_judge(args, data)
    baselines = references(args, data, features)
    print(f"machine: {harness.machine()}")
    counts = ", ".join(f"{len(part[1])} {key}" for key, part in data.items())
    how = "trained now" if judge_record["trained_now"] else "cached"
    print(f"{args.dataset}: {counts}; the judge's classifier ({how}, "
          f"{judge_record['file']}): {judge_record['test_accuracy']:.2%} on "
          "the test images")
    print(f"Fréchet distance to the test images, no GAN: floor (training "
          f"images) {baselines['floor_train_vs_test']:.2f}, ceiling "
          f"(per-pixel noise) {baselines['ceiling_pixel_noise_vs_test']:.2f}",
          flush=True)
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    rows = processes.variant_seed_runs(
        __file__, sys.argv[1:] if argv is None else list(argv), args, FLAGS,
        lambda variant, seed: train_run(variant, seed, args, data, features))
    all_rows = earlier + rows
    print(f"\n{'model':<46} {'seed':>4} {'distance':>9} {'s/epoch':>8} "
          f"{'ex/s':>6}  γ G, D at the end")
    for row in rows:
        last = row.get("gamma_curve", [[0, None, None]])[-1]
        print(f"{row['label']:<46} {row['seed']:>4} "
              f"{row['frechet_distance']:>9.2f} {row['seconds_per_epoch']:>8.1f}"
              f" {row['examples_per_second']:>6.0f}  "
              + ("" if last[1] is None else f"{last[1]:+.4f}, {last[2]:+.4f}"))
    figures = summary(all_rows)
    for variant in VARIANTS:
        if variant in figures:
            line = figures[variant]
            print(f"{line['label']}: median {line['median']:.2f}, mean "
                  f"{line['mean']:.2f} ± {line['std']:.2f} over "
                  f"{line['seeds']} seed(s)")
    if "verdict" in figures:
        verdict = figures["verdict"]
        print(f"the block lowers the median distance by "
              f"{verdict['median_gain']:+.2f} (the mean by "
              f"{verdict['gain']:+.2f}); Mann-Whitney U "
              f"{verdict['mann_whitney_u']:g}, one-sided p = "
              f"{verdict['p_value']:.3f}: "
              + ("it helps" if verdict["block_helps"] else
                 f"not shown at p < {verdict['level']:g}"))
    sizes = {part: len(labels) for part, (_, labels) in data.items()}
    harness.write_results(
        name, all_rows, directory=args.results_dir,
        commands=commands + [harness.command_line()], summary=figures,
        paper={"source": "Zhang et al. 2019 (arXiv 1805.08318), Table 1, "
                         "ImageNet 128x128, FID", "rows": PAPER},
        references=baselines, judge=judge_record,
        data={"dataset": args.dataset, "split_seed": args.split_seed,
              "sizes": sizes,
              "source": ("mnist10k (the first 10,000 MNIST training digits)"
                         if args.dataset == "mnist" else
                         "the first 10,000 Fashion-MNIST training images")})
    return all_rows


if __name__ == "__main__":
    main()
