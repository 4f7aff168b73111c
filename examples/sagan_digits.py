"""
Title: Self-attention in a GAN (SAGAN) on handwritten digits
Description: a small spectrally normalized GAN with and without
`SelfAttention2D`, judged by a Fréchet distance on a digit classifier's
features, with the attention of a few query pixels.

Zhang et al. (2019) add a self-attention block to the generator and the
discriminator of a GAN, so that a pixel's features can depend on distant
pixels, not only on a convolution's neighbourhood; the block's residual
scale γ starts at 0, so the network first relies on local evidence. They
train with spectral normalization in both networks, the hinge loss and
two time-scale learning rates (the discriminator's 4× the generator's;
Adam with β₁ = 0, β₂ = 0.9).

This script trains that recipe at a small size on scikit-learn's 8×8
digits (no download), upsampled to 16×16 and scaled to [-1, 1], with the
package's `SAGAN` (a generator 4×4 → 8×8 → 16×16, a discriminator
16×16 → 8×8 → 4×4, and, with attention,
`SelfAttention2D(spectral_normalization=True)` on the 8×8 feature maps
of both). It judges samples with a Fréchet distance
(Heusel et al., 2017) computed on the penultimate features of a small
digit classifier trained here (on the training digits), between 1,000
samples and the held-out digits; the distance between the training and
the held-out digits is the floor. For each seed it writes a grid of
samples, and for the attention model the attention map of three query
pixels of one sample.

Run: `python examples/sagan_digits.py [--seeds 0,1,2] [--steps 3000]
[--output-dir runs/sagan] [--results FILE]` (TensorFlow or JAX:
`KERAS_BACKEND=jax`).
"""

import argparse
import json
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np

from keras_attention.models import SAGAN
from keras_attention.text.digit_scenes import load_digit_images
from keras_attention.text.digit_scenes import resize
from keras_attention.text.digit_scenes import split_indices
from keras_attention.training.frechet import feature_classifier
from keras_attention.training.frechet import frechet_distance
from keras_attention.training.gan import hinge_gan_trainer
from keras_attention.training.gan import sagan_optimizers

SIZE = 16

"""
## Data
"""


def digits():
    """`(train images, train labels, test images, test labels)`: 16×16
    in [-1, 1], the split the other digit examples use."""
    images, labels = load_digit_images()
    images = np.stack([resize(image, SIZE) for image in images])
    images = (2.0 * np.clip(images, 0.0, 1.0) - 1.0)[..., None]
    train, test = split_indices(len(images))
    return images[train], labels[train], images[test], labels[test]


"""
## The networks: `keras_attention.models.SAGAN`

`SAGAN(image_size=16, width=16)` builds both networks, every
convolution and dense layer wrapped in `keras.layers.SpectralNormalization`
(one power iteration per training call): a generator 4×4×64 → 8×8×32 →
16×16×16 → the image, a discriminator 16×16×16 → 8×8×32 → 4×4×64 → a
score, and with `attention=True` the block on the 8×8 maps of both.
Keras's wrapper rescales the kernel in place, W ← W/σ(W), before each
training call rather than differentiating through σ as Miyato et al.
do; the constraint is the same. The benchmark (`reproductions/systems/sagan_mnist.py`)
trains the same class at 28×28.

## Training: `keras_attention.training.gan`

The hinge loss, one discriminator update per generator update, two time
scales (Adam β₁ = 0, β₂ = 0.9): `hinge_gan_trainer` returns the step.
"""


def train_gan(images, args, seed, attention):
    keras.utils.set_random_seed(seed)
    gan = SAGAN(image_size=SIZE, latent_dim=args.latent, width=16,
                attention=attention)
    step, sync = hinge_gan_trainer(
        gan.generator, gan.discriminator,
        *sagan_optimizers(args.generator_rate, args.discriminator_rate))
    rng = np.random.default_rng(seed)
    noise_shape = (args.batch_size, args.latent)
    for number in range(args.steps):
        real = images[rng.integers(0, len(images), args.batch_size)]
        losses = step(real, rng.normal(size=noise_shape).astype("float32"),
                      rng.normal(size=noise_shape).astype("float32"))
        if args.verbose and number % 500 == 0:
            print(f"    step {number}: D {float(losses[0]):.3f}, "
                  f"G {float(losses[1]):.3f}")
    sync()
    return gan


"""
## The judge of samples: a Fréchet distance on a classifier's features

`keras_attention.training.frechet`: a small CNN trained here on the
training digits, and the distance between the Gaussians of its
penultimate features.
"""


def train_feature_classifier(images, labels, seed, epochs):
    """`(the classifier, the model of its penultimate features)`."""
    keras.utils.set_random_seed(seed)
    model, features = feature_classifier((SIZE, SIZE, 1))
    model.compile(optimizer="adam", metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.fit(images, labels, epochs=epochs, batch_size=64, verbose=0)
    return model, features


"""
## Pictures: samples, and where three query pixels look
"""


def save_grid(images, path, columns=10):
    from matplotlib.figure import Figure

    rows = -(-len(images) // columns)
    figure = Figure(figsize=(columns * 0.6, rows * 0.6))
    for index, image in enumerate(images):
        axes = figure.add_subplot(rows, columns, index + 1)
        axes.imshow(image[..., 0], cmap="gray_r", vmin=-1, vmax=1)
        axes.axis("off")
    figure.savefig(path, dpi=100)
    return path


def save_attention(gan, path, seed, queries=((2, 2), (4, 5), (6, 3))):
    """One sample and, for each query pixel of the 8×8 map, its attention
    over the pooled 4×4 keys, upsampled over the sample
    (`keras_attention.visualize.plot_image_attention`)."""
    from keras_attention.visualize import plot_image_attention

    probe, _ = gan.attention_probes()
    noise = np.random.default_rng(seed).normal(size=(1, gan.latent_dim))
    image, weights = probe(noise.astype("float32"), training=False)
    image = keras.ops.convert_to_numpy(image)[0, ..., 0]
    weights = keras.ops.convert_to_numpy(weights)[0]  # (64, 16)
    plot_image_attention(
        image, weights[[row * 8 + col for row, col in queries]],
        [f"query ({2 * row}, {2 * col})" for row, col in queries], (4, 4),
        title="where the generator's block looks (keys pooled to 4×4)",
        path=path)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.strip().splitlines()[0].removeprefix("Title: "))
    parser.add_argument("--seeds", default="0",
                        help="comma-separated seeds (each trains both GANs)")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--latent", type=int, default=32)
    parser.add_argument("--generator-rate", type=float, default=1e-4)
    parser.add_argument("--discriminator-rate", type=float, default=4e-4)
    parser.add_argument("--samples", type=int, default=1000,
                        help="samples per GAN for the Fréchet distance")
    parser.add_argument("--classifier-epochs", type=int, default=15)
    parser.add_argument("--output-dir", default="runs/sagan")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--results", metavar="FILE",
                        help="also write the figures printed to FILE (JSON)")
    args = parser.parse_args(argv)
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds must be comma-separated ints, received: "
                     f"{args.seeds!r}")
    output = pathlib.Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    train_images, train_labels, test_images, test_labels = digits()
    classifier, features = train_feature_classifier(
        train_images, train_labels, 0, args.classifier_epochs)
    _, accuracy = classifier.evaluate(test_images, test_labels, verbose=0)
    reference = features.predict(test_images, verbose=0)
    floor = frechet_distance(features.predict(train_images, verbose=0),
                             reference)
    print(f"feature classifier: {accuracy:.1%} on {len(test_images)} held-out "
          f"digits; Fréchet distance train vs held-out digits {floor:.2f}")
    scores = {False: [], True: []}
    runs = []  # one per GAN: seed, attention, distance, gammas, seconds
    for seed in seeds:
        for attention in (False, True):
            started = time.perf_counter()
            gan = train_gan(train_images, args, seed, attention)
            noise = np.random.default_rng(1000 + seed).normal(
                size=(args.samples, args.latent)).astype("float32")
            samples = gan.predict(noise, verbose=0)
            distance = frechet_distance(
                features.predict(samples, verbose=0), reference)
            scores[attention].append(distance)
            name = "attention" if attention else "plain"
            save_grid(samples[:50], output / f"{name}_seed{seed}.png")
            seconds = time.perf_counter() - started
            runs.append({"seed": seed, "attention": attention,
                         "distance": distance, "seconds": seconds})
            if attention:
                save_attention(gan, output / f"attention_map_seed{seed}.png",
                               seed)
                runs[-1]["gammas"] = gan.attention_gammas()
                extra = (f", generator's gamma "
                         f"{runs[-1]['gammas']['generator']:+.3f}")
            else:
                extra = ""
            print(f"seed {seed}, {name:<9}: Fréchet distance "
                  f"{distance:.2f}{extra} ({seconds:.0f} s)", flush=True)
    print("\nFréchet distance to the held-out digits (lower is better; "
          f"floor {floor:.2f}):")
    for attention in (False, True):
        values = np.array(scores[attention])
        spread = (f" ± {values.std(ddof=1):.2f}" if len(values) > 1 else "")
        print(f"  {'with' if attention else 'without'} self-attention: "
              f"{values.mean():.2f}{spread} over {len(values)} seed(s)")
    results = {"floor": floor, "classifier_accuracy": float(accuracy),
               "plain": scores[False], "attention": scores[True],
               "runs": runs}
    if args.results:
        pathlib.Path(args.results).write_text(
            json.dumps(results, indent=1, default=float))
    return results


if __name__ == "__main__":
    main()
