"""The learning test of SAGAN's recipe (`keras_attention.models.SAGAN`
trained by `keras_attention.training.gan`, as the example and the
benchmark train it): the hinge losses, one training step per backend and
`SelfAttention2D` in both networks, on 28x28 toy images of two white squares at opposite
corners (top-left with bottom-right, or top-right with bottom-left).

Each check is judged by something the loss does not define: a
discriminator trained against a frozen generator must score held-out
real images above the generator's; the GAN's samples must come close to
the data in a Fréchet distance on pooled pixels; and both blocks' γ must
leave 0. A hinge loss with a flipped or swapped sign, or a block whose γ
gets no gradient, cannot pass."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.models import SAGAN
from keras_attention.training.frechet import frechet_distance
from keras_attention.training.gan import discriminator_hinge
from keras_attention.training.gan import generator_hinge
from keras_attention.training.gan import hinge_gan_trainer
from keras_attention.training.gan import sagan_optimizers

SQUARE = 8
PAIRS = [((2, 2), (18, 18)), ((2, 18), (18, 2))]  # opposite corners


def _squares(count, rng):
    """`(N, 28, 28, 1)` in [-1, 1]: black, two white squares."""
    images = -np.ones((count, 28, 28, 1), "float32")
    for image, pair in zip(images, rng.integers(0, 2, count)):
        for top, left in PAIRS[pair]:
            image[top:top + SQUARE, left:left + SQUARE] = 1.0
    return images


def _pooled_distance(images, reference):
    """The Fréchet distance of 4x4-average-pooled pixels (49 numbers)."""
    def pooled(x):
        return x[..., 0].reshape(-1, 7, 4, 7, 4).mean((2, 4)).reshape(-1, 49)

    return frechet_distance(pooled(images).astype("float64"),
                                  pooled(reference).astype("float64"))


def _gan(generator_rate, discriminator_rate, seed=0):
    keras.utils.set_random_seed(seed)
    gan = SAGAN(image_size=28, latent_dim=16, width=8)
    step, sync = hinge_gan_trainer(
        gan.generator, gan.discriminator,
        *sagan_optimizers(generator_rate, discriminator_rate))
    return gan, step, sync


def _train(step, gan, data, steps, rng, batch=32):
    for _ in range(steps):
        real = data[rng.integers(0, len(data), batch)]
        step(real, rng.normal(size=(batch, gan.latent_dim)).astype("float32"),
             rng.normal(size=(batch, gan.latent_dim)).astype("float32"))


def test_hinge_losses_golden_values():
    real = np.array([[2.0], [0.5], [-1.0]], "float32")
    fake = np.array([[-2.0], [0.0], [0.5]], "float32")
    # mean(relu(1 - real)) = (0 + 0.5 + 2) / 3; mean(relu(1 + fake)) =
    # (0 + 1 + 1.5) / 3.
    assert float(discriminator_hinge(real, fake)) == pytest.approx(
        2.5 / 3 + 2.5 / 3)
    assert float(generator_hinge(fake)) == pytest.approx(0.5)


def test_discriminator_learns_against_a_frozen_generator():
    rng = np.random.default_rng(0)
    data, held_out = _squares(512, rng), _squares(128, rng)
    gan, step, sync = _gan(0.0, 4e-4)
    _train(step, gan, data, 40, rng)
    sync()
    noise = rng.normal(size=(128, gan.latent_dim)).astype("float32")
    fake = gan.predict(noise, verbose=0)
    real_score = float(ops.mean(gan.discriminator(held_out)))
    fake_score = float(ops.mean(gan.discriminator(fake)))
    # The hinge wants real >= 1 and fake <= -1; this reached +1.0 / -1.0
    # (TensorFlow, 2026-11-27). A flipped or swapped loss ranks them
    # the other way.
    print(f"real {real_score:+.3f}, fake {fake_score:+.3f}")
    assert real_score - fake_score > 1.0, (real_score, fake_score)


def test_gan_learns_the_squares_and_its_blocks_open():
    rng = np.random.default_rng(1)
    data, held_out = _squares(1024, rng), _squares(256, rng)
    gan, step, sync = _gan(1e-3, 2e-3)
    noise = rng.normal(size=(256, gan.latent_dim)).astype("float32")
    before = _pooled_distance(gan.predict(noise, verbose=0), held_out)
    _train(step, gan, data, 250, rng)
    sync()
    after = _pooled_distance(gan.predict(noise, verbose=0), held_out)
    floor = _pooled_distance(data[:256], held_out)
    gammas = tuple(gan.attention_gammas().values())
    print(f"distance {before:.2f} -> {after:.2f} (floor {floor:.3f}); "
          f"gamma G {gammas[0]:+.4f}, D {gammas[1]:+.4f}")
    assert after < 0.2 * before, (before, after)
    assert min(abs(g) for g in gammas) > 1e-3, gammas
