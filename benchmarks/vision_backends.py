"""Which Keras backend trains the vision models faster on this machine:
the training examples per second of the 6-glimpse recurrent attention
model, the Image Transformer (local 2-D and full attention), the soft and
hard captioners and SAGAN's attention GAN under JAX and TensorFlow, each
in its own process, the processes interleaved (JAX, TensorFlow, JAX,
TensorFlow ...), the medians over `--repeats` and their ratio printed.

Each process builds its model with the benchmark's own functions, at the
benchmark's sizes and batch, on the project's real MNIST digits
(`../shared/data/mnist10k`, or `--data`, or `$KERAS_ATTENTION_MNIST`):
- `ram6` (reproductions/systems/ram_cluttered_mnist.py, batch 64): cluttered 60x60
  canvases of the first `--examples` training digits; canvases/s.
- `image_transformer_local_2d`, `image_transformer_full`
  (reproductions/systems/image_transformer_mnist.py, batch 32): that many binarized
  digits; images/s.
- `captioner_soft`, `captioner_hard` (reproductions/systems/captioner_hard_soft.py,
  batch 64): its `--speed` measurement, which fixes its own sizes (1,024
  scenes, one warm-up epoch and two timed ones, whatever `--examples` and
  `--epochs` say); scenes/s.
- `sagan_attention` (reproductions/systems/sagan_mnist.py's `attention` GAN, batch
  64): `keras_attention.models.SAGAN` and
  `keras_attention.training.gan.hinge_gan_trainer`'s step, one
  discriminator and one generator update a batch, over that many
  training images; real images/s.
Each fits (or steps through) its examples once to compile, then times
`--epochs` more passes over the same examples, whole batches only. The
backend is the process's `KERAS_BACKEND`, checked against the one it
reports. Writes `benchmarks/results/vision_backends.json`: a row per model
with both medians, every run and TensorFlow / JAX.

Run: `python benchmarks/vision_backends.py [--models ram6,...]
[--repeats 3] [--examples N] [--epochs E]`.
"""

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import time
from statistics import median

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(2, str(pathlib.Path(__file__).resolve().parents[1]
                       / "reproductions" / "systems"))  # the systems

import harness  # noqa: E402

NAME = "vision_backends"
BACKENDS = ("jax", "tensorflow")
# name -> what one example is, the batch, the default examples timed a pass
MODELS = {
    "ram6": dict(unit="canvases", batch=64, examples=4096),
    "image_transformer_local_2d": dict(unit="images", batch=32, examples=96),
    "image_transformer_full": dict(unit="images", batch=32, examples=64),
    "captioner_soft": dict(unit="scenes", batch=64, examples=1024),
    "captioner_hard": dict(unit="scenes", batch=64, examples=1024),
    "sagan_attention": dict(unit="images", batch=64, examples=1024),
}
# The captioners' `speed` fixes its sizes: 1,024 scenes, 2 timed epochs.
CAPTIONER_SIZES = dict(examples=1024, epochs=2)
# The split's held-out parts: nothing here reads them, so few.
SPLIT = ["--validation", "100", "--test", "100"]


def whole_batches(model_name, examples):
    """`examples` rounded down to whole batches of the model's, at least
    one batch."""
    batch = MODELS[model_name]["batch"]
    return max(1, examples // batch) * batch


def sizes(model_name, examples, epochs):
    """`(examples a pass, timed passes)` the model's process times."""
    if model_name.startswith("captioner_"):
        return CAPTIONER_SIZES["examples"], CAPTIONER_SIZES["epochs"]
    if examples is None:
        examples = MODELS[model_name]["examples"]
    return whole_batches(model_name, examples), epochs


def _arguments(bench, given):
    p = bench.parser()
    return bench.finish_arguments(p, p.parse_args(given)), p


def _ram6(data, examples, epochs):
    import keras
    import numpy as np
    import ram_cluttered_mnist as bench

    from keras_attention.data import mnist

    args, p = _arguments(bench, ["--variants", "ram6", *data, *SPLIT])
    digits = bench.load(args, p)["digits"]["train"]
    canvases = mnist.cluttered(digits.take(np.arange(examples)), seed=0,
                               **bench.canvas_options(args))
    steps = examples // args.batch_size
    schedule = keras.optimizers.schedules.CosineDecay(
        args.learning_rate, steps * (1 + epochs))
    model = bench.build("ram6", args, 0, schedule)
    inputs = bench.inputs_of("ram6", canvases, args)
    fit = dict(batch_size=args.batch_size, shuffle=True, verbose=0)
    model.fit(inputs, canvases.labels, epochs=1, **fit)  # compiles
    started = time.perf_counter()
    model.fit(inputs, canvases.labels, epochs=epochs, **fit)
    return epochs * examples / (time.perf_counter() - started)


def _image_transformer(variant, data, examples, epochs):
    import image_transformer_mnist as bench
    import keras
    import numpy as np

    from keras_attention.data import mnist

    # The backend is this process's (KERAS_BACKEND), not the script's
    # default: `choose_backend` is told it, and agrees.
    args, p = _arguments(bench, ["--variants", variant, "--backend",
                                 keras.backend.backend(), *data, *SPLIT])
    bench.choose_backend(p, args)
    digits = bench.load(args, p)["digits"]["train"]
    images = mnist.binarize(digits.images[:examples],
                            np.random.default_rng(0)).astype("int32")
    model = bench.build(variant, args, 0,
                        examples // args.batch_size * (1 + epochs))
    fit = dict(batch_size=args.batch_size, shuffle=False, verbose=0)
    model.fit(images, images, epochs=1, **fit)  # compiles
    started = time.perf_counter()
    model.fit(images, images, epochs=epochs, **fit)
    return epochs * examples / (time.perf_counter() - started)


def _captioner(variant, data):
    import captioner_hard_soft as bench

    args, p = _arguments(bench, ["--variants", variant, *data, *SPLIT,
                                 "--validation-scenes", "10",
                                 "--test-scenes", "10", "--speed"])
    return bench.speed(args, bench.load(args, p))[variant]


def _sagan_attention(data, examples, epochs):
    import keras
    import numpy as np
    import sagan_mnist as bench

    from keras_attention.models import SAGAN
    from keras_attention.training.gan import hinge_gan_trainer
    from keras_attention.training.gan import sagan_optimizers

    args, p = _arguments(bench, ["--variants", "attention", *data, *SPLIT,
                                 "--samples", "1"])
    train = bench.load(args, p)["train"][0][:examples]
    keras.utils.set_random_seed(0)
    gan = SAGAN(image_size=28, latent_dim=args.latent, width=args.width,
                attention=bench.VARIANTS["attention"])
    step, _ = hinge_gan_trainer(
        gan.generator, gan.discriminator,
        *sagan_optimizers(args.generator_rate, args.discriminator_rate))
    rng = np.random.default_rng(0)
    noise_shape = (args.batch_size, args.latent)

    def one_pass():
        losses = []
        for start in range(0, examples, args.batch_size):
            losses.append(step(
                train[start:start + args.batch_size],
                rng.normal(size=noise_shape).astype("float32"),
                rng.normal(size=noise_shape).astype("float32")))
        # Read back, as sagan_mnist.py does, so the work is done.
        return [[float(a), float(b)] for a, b in losses]

    one_pass()  # compiles
    started = time.perf_counter()
    for _ in range(epochs):
        one_pass()
    return epochs * examples / (time.perf_counter() - started)


def measure(model_name, examples, epochs, data=None):
    """`{"backend", "examples_per_s"}` of `model_name`, trained in this
    process's backend: `examples` a pass (whole batches), `epochs` timed
    passes after one that compiles; `data` the MNIST file or folder
    (None: the benchmarks' default)."""
    import keras

    given = ["--data", str(data)] if data else []
    if model_name == "ram6":
        rate = _ram6(given, examples, epochs)
    elif model_name.startswith("image_transformer_"):
        rate = _image_transformer(model_name[len("image_transformer_"):],
                                  given, examples, epochs)
    elif model_name.startswith("captioner_"):
        rate = _captioner(model_name[len("captioner_"):], given)
    elif model_name == "sagan_attention":
        rate = _sagan_attention(given, examples, epochs)
    else:
        raise ValueError(f"unknown model: {model_name!r}")
    return {"backend": keras.backend.backend(), "examples_per_s": rate}


def run_child(model_name, backend, examples, epochs, data=None):
    """Examples/s of `model_name` measured in a fresh process of
    `backend`; a failure ends this process with one line."""
    command = [sys.executable, str(pathlib.Path(__file__).resolve()),
               "--child", model_name, backend, "--examples", str(examples),
               "--epochs", str(epochs)] + (["--data", str(data)] if data
                                           else [])
    result = subprocess.run(
        command, capture_output=True, text=True,
        env={**os.environ, "KERAS_BACKEND": backend,
             "TF_CPP_MIN_LOG_LEVEL": "3"})
    lines = result.stderr.strip().splitlines()
    if result.returncode:
        sys.exit(f"{model_name} on {backend} failed: "
                 + (lines[-1] if lines else
                    f"exit status {result.returncode}, no message"))
    found = json.loads(result.stdout.strip().splitlines()[-1])
    if found["backend"] != backend:
        sys.exit(f"{model_name} on {backend} failed: it ran on "
                 f"{found['backend']}")
    return found["examples_per_s"]


def compare(models, repeats, examples, epochs, data=None):
    """A row per model: each backend's median examples/s over `repeats`
    processes, run JAX, TensorFlow, JAX, TensorFlow ..., every run, and
    TensorFlow / JAX."""
    cpu = harness.machine()["cpu"]
    rows = []
    for model_name in models:
        count, passes = sizes(model_name, examples, epochs)
        rates = {backend: [] for backend in BACKENDS}
        for _ in range(repeats):
            for backend in BACKENDS:
                rates[backend].append(run_child(model_name, backend, count,
                                                passes, data))
        medians = {backend: median(values)
                   for backend, values in rates.items()}
        row = {"model": model_name, "unit": MODELS[model_name]["unit"],
               **{f"{backend}_examples_per_s": medians[backend]
                  for backend in BACKENDS},
               "runs": rates,
               "tensorflow_over_jax": medians["tensorflow"] / medians["jax"],
               "examples": count, "epochs": passes,
               "batch_size": MODELS[model_name]["batch"], "cpu": cpu}
        rows.append(row)
        unit = MODELS[model_name]["unit"]
        print(f"{model_name}: JAX {medians['jax']:.1f} {unit}/s, "
              f"TensorFlow {medians['tensorflow']:.1f} {unit}/s "
              f"(TensorFlow / JAX {row['tensorflow_over_jax']:.2f}; medians "
              f"of {repeats} processes each)", flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None,
                        help="the MNIST .npz or its folder (default: "
                             "$KERAS_ATTENTION_MNIST, else "
                             "../shared/data/mnist10k)")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--repeats", type=int, default=3,
                        help="processes per backend and model, interleaved")
    parser.add_argument("--examples", type=int, default=None,
                        help="examples a pass, rounded down to whole "
                             "batches (default: each model's, "
                             + ", ".join(f"{name} {spec['examples']}"
                                         for name, spec in MODELS.items()
                                         if not name.startswith("captioner"))
                             + "; the captioners always 1024)")
    parser.add_argument("--epochs", type=int, default=1,
                        help="timed passes after the one that compiles "
                             "(the captioners always 2)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "BACKEND"),
                        help=argparse.SUPPRESS)
    harness.add_results_arguments(parser, NAME)
    args = parser.parse_args(argv)
    models = [name for name in args.models.split(",") if name]
    if not models or any(name not in MODELS for name in models):
        parser.error(f"--models must name some of {', '.join(MODELS)}, "
                     f"received: {args.models!r}")
    for name in ("repeats", "epochs"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, received: "
                         f"{getattr(args, name)!r}")
    largest = max(MODELS[name]["batch"] for name in models)
    if args.examples is not None and args.examples < largest:
        parser.error(f"--examples must be at least {largest} (a batch), "
                     f"received: {args.examples!r}")
    if args.child:
        found = measure(args.child[0], *sizes(args.child[0], args.examples,
                                              args.epochs), args.data)
        if not math.isfinite(found["examples_per_s"]):
            sys.exit(f"{args.child[0]}: a rate of "
                     f"{found['examples_per_s']!r}")
        print(json.dumps(found))
        return None
    started = time.perf_counter()
    rows = compare(models, args.repeats, args.examples, args.epochs,
                   args.data)
    minutes = (time.perf_counter() - started) / 60
    print(f"{minutes:.1f} minutes", flush=True)
    harness.write_results(args.results_name or NAME, rows,
                          directory=args.results_dir,
                          repeats=args.repeats, minutes=round(minutes, 1))
    return rows


if __name__ == "__main__":
    main()
