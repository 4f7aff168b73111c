"""
Title: Recurrent attention on cluttered digits
Description: Mnih et al.'s recurrent attention model (RAM) reads a cluttered
canvas through a few small glimpses, learns where to look with REINFORCE,
and is compared with a convolutional network of about its size.

Mnih, Heess, Graves and Kavukcuoglu (2014) classify an image without ever
looking at all of it: a recurrent network takes a *glimpse* (a few
patches around a point, each coarser than the last), decides where to
look next, and after the last glimpse names the class. Where to look is
a non-differentiable choice; the location policy is trained with
REINFORCE, rewarded 1 when the final answer is right. This script trains
`keras_attention.models.RecurrentAttentionModel` with 1, 2, 4 and 6
glimpses on cluttered translated digits composed from scikit-learn's
bundled 8x8 digits (`keras_attention.data.cluttered_digits`; no download),
trains a small CNN of about the same parameter count on the same canvases
and, for scale, an MLP that is shown one glimpse at the digit, prints the
held-out accuracies beside the rule with no weights (the most common
training class), and draws the glimpse paths of a few test canvases.
Six to seven minutes on one CPU core
(`reproductions/systems/recurrent_attention_digits.py` runs it over seeds).

Run: `python examples/recurrent_attention_digits.py [--epochs E]
[--glimpses 1,2,4,6] [--output-dir DIR] [--results FILE]`.
"""

import argparse
import collections
import json
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np

from keras_attention.data.cluttered_digits import generate_cluttered_digits
from keras_attention.layers import GlimpseSensor
from keras_attention.models import RecurrentAttentionModel
from keras_attention.visualize import plot_glimpses

"""
## Data: one digit and some clutter

A 40x40 black canvas holds one digit, upscaled from 8x8 to 16x16, at a
random place, over four 6x6 fragments of other digits (the paper's
cluttered translated MNIST, 60x60 with 8x8 fragments of 28x28 digits, in
small). Test canvases are composed only from the held-out 20% of the
1,797 digit images, digits and fragments alike.
"""


NO_WEIGHTS = "most common training class"


def load(args):
    options = dict(canvas_size=args.canvas_size, clutter=args.clutter)
    train = generate_cluttered_digits(args.train_size, "train",
                                      seed=args.seed, **options)
    test = generate_cluttered_digits(args.test_size, "test",
                                     seed=args.seed + 1, **options)
    return train, test


"""
## The recurrent attention model

Each glimpse is three patches around the location, 8x8, 16x16 and 32x32
pixels, all averaged down to 8x8 (`GlimpseSensor`). The glimpse network
mixes *what* (the patches) and *where* (the location); a rectifier RNN
(the paper's core for classification) carries what has been seen; the
location network proposes the next location's mean `μ_t = tanh(W h_t)`,
and training samples around it (σ = 0.2 of the half-width). The first
glimpse is at the centre, so one glimpse is a fixed, foveated look at
the centre: no attention at all. At test time the model looks at the
means.

The loss is the cross-entropy of the final answer, plus REINFORCE for
the locations, `−Σ_t log π(l_t) (R − b_t)`, plus the squared error of
the baseline `b_t` that predicts the reward.
"""


def train_ram(args, train, glimpses):
    keras.utils.set_random_seed(args.seed)
    model = RecurrentAttentionModel.from_preset(
        args.preset, num_glimpses=glimpses, location_std=args.location_std,
        stop_location_gradient=not args.location_gradient_to_core,
        seed=args.seed)
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate,
                                                  clipnorm=5.0))
    model.fit(train.images, train.labels, batch_size=args.batch_size,
              epochs=args.epochs, verbose=2 if args.verbose else 0)
    return model


"""
## The convolutional baseline

Three 3x3 convolutions (16, 32, 32 filters), each followed by 2x2 max
pooling, then a hidden layer of 64 and the classifier: about as many
weights as the RAM, but it reads every pixel of the canvas.
"""


def cnn(canvas_size):
    layers = keras.layers
    return keras.Sequential([
        keras.Input((canvas_size, canvas_size, 1)),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10),
    ], name="cnn")


def train_cnn(args, train):
    keras.utils.set_random_seed(args.seed)
    model = cnn(args.canvas_size)
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.fit(train.images[..., None], train.labels,
              batch_size=args.batch_size, epochs=args.epochs,
              verbose=2 if args.verbose else 0)
    return model


"""
## A ceiling: one glimpse where the digit is

How much could a good policy give? A small MLP reads one glimpse (the
same sensor) centred on the digit's true box, a location no model is
told: what a single well-placed look is worth.
"""


def oracle_glimpses(model, data):
    """The sensor's patches at each digit's centre, flattened."""
    centres = data.boxes[:, :2] + data.boxes[:, 2:] / 2  # (N, 2) pixels
    locations = (centres / data.images.shape[1] * 2 - 1).astype("float32")
    sensor = GlimpseSensor(model.glimpse_size, model.num_scales, model.scale)
    patches = [np.asarray(sensor(data.images[i:i + 1000],
                                 locations[i:i + 1000]))
               for i in range(0, len(locations), 1000)]
    return np.concatenate(patches).reshape(len(locations), -1)


def train_oracle(args, model, train, test):
    keras.utils.set_random_seed(args.seed)
    inputs = oracle_glimpses(model, train)
    mlp = keras.Sequential([
        keras.Input(inputs.shape[1:]),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ], name="oracle_mlp")
    mlp.compile(optimizer=keras.optimizers.Adam(args.learning_rate),
                loss=keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True))
    mlp.fit(inputs, train.labels, batch_size=args.batch_size,
            epochs=args.epochs, verbose=0)
    logits = mlp.predict(oracle_glimpses(model, test), verbose=0)
    return mlp, logits


def parameters(model):
    """Trainable weights (the RAM's noise seed is not one)."""
    return int(sum(np.prod(weight.shape) for weight in
                   model.trainable_weights))


def accuracy(logits, labels):
    return float(np.mean(np.argmax(logits, axis=-1) == labels))


"""
## Pictures: where it looks

For a few test canvases, each glimpse's three patches are drawn as
rectangles (one colour per glimpse, numbered in order), with the
model's answer in the title.
"""


def most_common_class(train_labels, test_labels):
    """Held-out accuracy of naming the most common training class: the
    rule with no weights that every model must beat."""
    common = collections.Counter(int(x) for x in train_labels).most_common(1)
    return sum(int(x) == common[0][0] for x in test_labels) / len(test_labels)


def draw(model, test, count, path):
    outputs = model.predict(test.images[:count], verbose=0)
    predicted = np.argmax(outputs["logits"], axis=-1)
    sizes = [str(model.glimpse_size * model.scale**level)
             for level in range(model.num_scales)]
    plot_glimpses(
        test.images[:count], outputs["locations"], model.glimpse_size,
        model.num_scales, model.scale,
        titles=[f"digit {label}, read {guess}"
                for label, guess in zip(test.labels[:count], predicted)],
        title=f"RAM, {model.num_glimpses} glimpses: where it looks "
              f"(patches of {', '.join(sizes)} pixels)",
        path=path)
    return path


def arguments():
    """The command line's parser (a benchmark parses the same options)."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--train-size", type=int, default=24000)
    parser.add_argument("--test-size", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--glimpses", default="1,2,4,6",
                        help="numbers of glimpses, one model each")
    parser.add_argument("--location-std", type=float, default=0.2)
    parser.add_argument("--location-gradient-to-core", action="store_true",
                        help="let REINFORCE train the core and glimpse "
                             "network too (the paper's gradient)")
    parser.add_argument("--canvas-size", type=int, default=40)
    parser.add_argument("--clutter", type=int, default=4)
    parser.add_argument("--no-cnn", action="store_true")
    parser.add_argument("--oracle", type=int, default=1,
                        help="also the MLP told where the digit is (0: no)")
    parser.add_argument("--pictures", type=int, default=5)
    parser.add_argument("--output-dir", default="recurrent_attention_output")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--results", metavar="FILE",
                        help="also write the table's figures to FILE (JSON)")
    return parser


def main(argv=None):
    args = arguments().parse_args(argv)
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    train, test = load(args)
    results = {NO_WEIGHTS: {
        "accuracy": most_common_class(train.labels, test.labels),
        "parameters": 0, "seconds": 0.0}}
    models = {}
    for glimpses in (int(x) for x in args.glimpses.split(",")):
        start = time.perf_counter()
        model = train_ram(args, train, glimpses)
        logits = model.predict(test.images, verbose=0)["logits"]
        results[f"RAM, {glimpses} glimpse{'s' * (glimpses > 1)}"] = {
            "accuracy": accuracy(logits, test.labels),
            "parameters": parameters(model),
            "seconds": time.perf_counter() - start}
        models[glimpses] = model
    if not args.no_cnn:
        start = time.perf_counter()
        model = train_cnn(args, train)
        logits = model.predict(test.images[..., None], verbose=0)
        results["CNN, 3 conv layers"] = {
            "accuracy": accuracy(logits, test.labels),
            "parameters": parameters(model),
            "seconds": time.perf_counter() - start}

    if args.oracle and models:
        start = time.perf_counter()
        mlp, logits = train_oracle(args, next(iter(models.values())), train,
                                   test)
        results["MLP, 1 glimpse at the digit"] = {
            "accuracy": accuracy(logits, test.labels),
            "parameters": parameters(mlp),
            "seconds": time.perf_counter() - start}

    print(f"\nheld-out canvases ({len(test.labels)}), {args.epochs} epochs on "
          f"{len(train.labels)}:")
    print(f"{'model':<28} {'accuracy':>8} {'parameters':>10} {'seconds':>7}")
    for name, figures in results.items():
        print(f"{name:<28} {figures['accuracy']:>8.1%} "
              f"{figures['parameters']:>10,} {figures['seconds']:>7.0f}")
    if args.pictures and models:
        most = max(models)
        path = draw(models[most], test, args.pictures,
                    output_dir / "glimpses.png")
        print(f"glimpse paths ({most} glimpses): {path}")
    if args.results:
        pathlib.Path(args.results).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
