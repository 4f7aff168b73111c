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
digits (no download), upsampled to 16×16 and scaled to [-1, 1]: a
generator 4×4 → 8×8 → 16×16, a discriminator 16×16 → 8×8 → 4×4 → 2×2,
and, with attention, `SelfAttention2D(spectral_normalization=True)` on the
8×8 feature maps of both. It judges samples with a Fréchet distance
(Heusel et al., 2017) computed on the penultimate features of a small
digit classifier trained here (on the training digits), between 1,000
samples and the held-out digits; the distance between the training and
the held-out digits is the floor. For each seed it writes a grid of
samples, and for the attention model the attention map of three query
pixels of one sample.

Run: `python examples/sagan_digits.py [--seeds 0,1,2] [--steps 3000]
[--output-dir runs/sagan]` (TensorFlow backend).
"""

import argparse
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np
import tensorflow as tf
from scipy import linalg

from keras_attention.layers import SelfAttention2D
from keras_attention.text.digit_scenes import load_digit_images
from keras_attention.text.digit_scenes import resize
from keras_attention.text.digit_scenes import split_indices

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
## The networks

Every convolution and dense layer is wrapped in
`keras.layers.SpectralNormalization` (one power iteration per training
call). Keras's wrapper rescales the kernel in place, W ← W/σ(W), before
each training call rather than differentiating through σ as Miyato et
al. do; the constraint is the same.
"""


def spectral(layer):
    return keras.layers.SpectralNormalization(layer)


def generator(latent, attention):
    z = keras.Input((latent,))
    x = spectral(keras.layers.Dense(4 * 4 * 64))(z)
    x = keras.layers.Reshape((4, 4, 64))(x)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    x = keras.layers.UpSampling2D()(x)  # 8×8
    x = spectral(keras.layers.Conv2D(32, 3, padding="same"))(x)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    weights = None
    if attention:
        x, weights = SelfAttention2D(spectral_normalization=True,
                                     name="attention")(
            x, return_attention_scores=True)
    x = keras.layers.UpSampling2D()(x)  # 16×16
    x = spectral(keras.layers.Conv2D(16, 3, padding="same"))(x)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    image = keras.layers.Conv2D(1, 3, padding="same", activation="tanh")(x)
    model = keras.Model(z, image, name="generator")
    looking = (keras.Model(z, [image, weights], name="generator_attention")
               if attention else None)
    return model, looking


def discriminator(attention):
    image = keras.Input((SIZE, SIZE, 1))
    x = spectral(keras.layers.Conv2D(32, 3, strides=2, padding="same"))(image)
    x = keras.layers.LeakyReLU(0.1)(x)  # 8×8
    if attention:
        x = SelfAttention2D(spectral_normalization=True)(x)
    x = spectral(keras.layers.Conv2D(64, 3, strides=2, padding="same"))(x)
    x = keras.layers.LeakyReLU(0.1)(x)  # 4×4
    x = spectral(keras.layers.Conv2D(128, 3, strides=2, padding="same"))(x)
    x = keras.layers.LeakyReLU(0.1)(x)  # 2×2
    score = spectral(keras.layers.Dense(1))(keras.layers.Flatten()(x))
    return keras.Model(image, score, name="discriminator")


"""
## Training: hinge loss, two time scales
"""


def train_gan(images, args, seed, attention):
    keras.utils.set_random_seed(seed)
    make, looking = generator(args.latent, attention)
    judge = discriminator(attention)
    make_optimizer = keras.optimizers.Adam(args.generator_rate, beta_1=0.0,
                                           beta_2=0.9)
    judge_optimizer = keras.optimizers.Adam(args.discriminator_rate,
                                            beta_1=0.0, beta_2=0.9)
    data = tf.data.Dataset.from_tensor_slices(images).shuffle(
        len(images), seed=seed).repeat().batch(args.batch_size,
                                               drop_remainder=True)

    @tf.function
    def step(real):
        noise = tf.random.normal((args.batch_size, args.latent))
        with tf.GradientTape() as tape:
            fake = make(noise, training=True)
            loss = (tf.reduce_mean(tf.nn.relu(1.0 - judge(real,
                                                          training=True)))
                    + tf.reduce_mean(tf.nn.relu(1.0 + judge(fake,
                                                            training=True))))
        judge_optimizer.apply_gradients(zip(
            tape.gradient(loss, judge.trainable_variables),
            judge.trainable_variables))
        noise = tf.random.normal((args.batch_size, args.latent))
        with tf.GradientTape() as tape:
            generated = -tf.reduce_mean(judge(make(noise, training=True),
                                              training=True))
        make_optimizer.apply_gradients(zip(
            tape.gradient(generated, make.trainable_variables),
            make.trainable_variables))
        return loss, generated

    for number, real in enumerate(data.take(args.steps)):
        losses = step(real)
        if args.verbose and number % 500 == 0:
            print(f"    step {number}: D {float(losses[0]):.3f}, "
                  f"G {float(losses[1]):.3f}")
    return make, looking


"""
## The judge of samples: a Fréchet distance on a classifier's features
"""


def feature_classifier(images, labels, seed, epochs):
    """A small CNN trained on the training digits for `epochs`; returns
    `(the classifier, the model of its penultimate features)`."""
    keras.utils.set_random_seed(seed)
    image = keras.Input((SIZE, SIZE, 1))
    x = keras.layers.Conv2D(32, 3, activation="relu", padding="same")(image)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Flatten()(x)
    features = keras.layers.Dense(64, activation="relu", name="features")(x)
    logits = keras.layers.Dense(10)(features)
    model = keras.Model(image, logits)
    model.compile(optimizer="adam", metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.fit(images, labels, epochs=epochs, batch_size=64, verbose=0)
    return model, keras.Model(image, features)


def frechet_distance(features, reference):
    """`‖μ₁ − μ₂‖² + Tr(Σ₁ + Σ₂ − 2 (Σ₁Σ₂)^½)` of two sets of feature
    rows (Heusel et al., 2017)."""
    mean_a, mean_b = features.mean(0), reference.mean(0)
    cov_a = np.cov(features, rowvar=False)
    cov_b = np.cov(reference, rowvar=False)
    root = linalg.sqrtm(cov_a @ cov_b)
    root = root.real if np.iscomplexobj(root) else root
    return float(((mean_a - mean_b) ** 2).sum()
                 + np.trace(cov_a + cov_b - 2.0 * root))


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


def save_attention(looking, latent, path, seed, queries=((2, 2), (4, 5),
                                                          (6, 3))):
    """One sample and, for each query pixel of the 8×8 map (its 2×2
    patch marked on the sample), its attention over the pooled 4×4 keys
    drawn at full size."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    noise = np.random.default_rng(seed).normal(size=(1, latent))
    image, weights = looking(noise.astype("float32"), training=False)
    image = keras.ops.convert_to_numpy(image)[0, ..., 0]
    weights = keras.ops.convert_to_numpy(weights)[0]  # (64, 16)
    figure = Figure(figsize=(2.2 * (1 + len(queries)), 2.4))
    axes = figure.add_subplot(1, 1 + len(queries), 1)
    axes.imshow(image, cmap="gray_r", vmin=-1, vmax=1)
    axes.set_title("sample")
    for column, (row, col) in enumerate(queries, start=2):
        axes.add_patch(Rectangle((2 * col - 0.5, 2 * row - 0.5), 2, 2,
                                 fill=False, color="red"))
        where = weights[row * 8 + col].reshape(4, 4)
        panel = figure.add_subplot(1, 1 + len(queries), column)
        panel.imshow(np.kron(where, np.ones((4, 4))), cmap="viridis")
        panel.add_patch(Rectangle((2 * col - 0.5, 2 * row - 0.5), 2, 2,
                                  fill=False, color="red"))
        panel.set_title(f"query ({row}, {col})")
        panel.axis("off")
    axes.axis("off")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
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
    args = parser.parse_args(argv)
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds must be comma-separated ints, received: "
                     f"{args.seeds!r}")
    output = pathlib.Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    train_images, train_labels, test_images, test_labels = digits()
    classifier, features = feature_classifier(
        train_images, train_labels, 0, args.classifier_epochs)
    _, accuracy = classifier.evaluate(test_images, test_labels, verbose=0)
    reference = features.predict(test_images, verbose=0)
    floor = frechet_distance(features.predict(train_images, verbose=0),
                             reference)
    print(f"feature classifier: {accuracy:.1%} on {len(test_images)} held-out "
          f"digits; Fréchet distance train vs held-out digits {floor:.2f}")
    scores = {False: [], True: []}
    for seed in seeds:
        for attention in (False, True):
            started = time.perf_counter()
            make, looking = train_gan(train_images, args, seed, attention)
            noise = np.random.default_rng(1000 + seed).normal(
                size=(args.samples, args.latent)).astype("float32")
            samples = make.predict(noise, verbose=0)
            distance = frechet_distance(
                features.predict(samples, verbose=0), reference)
            scores[attention].append(distance)
            name = "attention" if attention else "plain"
            save_grid(samples[:50], output / f"{name}_seed{seed}.png")
            if attention:
                save_attention(looking, args.latent,
                               output / f"attention_map_seed{seed}.png", seed)
                gamma = [float(keras.ops.convert_to_numpy(layer.gamma))
                         for layer in make.layers
                         if isinstance(layer, SelfAttention2D)]
                extra = f", generator's gamma {gamma[0]:+.3f}"
            else:
                extra = ""
            print(f"seed {seed}, {name:<9}: Fréchet distance "
                  f"{distance:.2f}{extra} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    print("\nFréchet distance to the held-out digits (lower is better; "
          f"floor {floor:.2f}):")
    for attention in (False, True):
        values = np.array(scores[attention])
        spread = (f" ± {values.std(ddof=1):.2f}" if len(values) > 1 else "")
        print(f"  {'with' if attention else 'without'} self-attention: "
              f"{values.mean():.2f}{spread} over {len(values)} seed(s)")
    return {"floor": floor, "classifier_accuracy": float(accuracy),
            "plain": scores[False], "attention": scores[True]}


if __name__ == "__main__":
    main()
