"""ImageTransformer: generation-order causality, cached == full, sampling,
likelihood, serialization and argument errors."""

import math
import os
import tempfile

import keras
import numpy as np
import pytest

from keras_attention.models.image_transformer import PRESETS
from keras_attention.models.image_transformer import ImageTransformer
from keras_attention.models.image_transformer import independent_pixel_bits_per_dim
from keras_attention.models.image_transformer import independent_pixel_model
from keras_attention.ops.image_order import local_memory_2d

LEVELS, SHAPE = 5, (5, 6)  # 5x6 in (2, 4) blocks: padded blocks
TINY = dict(image_shape=SHAPE, num_levels=LEVELS, query_block=(2, 4),
            memory_flange=(1, 1), num_layers=2, num_heads=2, hidden_dim=8,
            intermediate_dim=16)
ATTENTIONS = ["local", "full"]


def _model(attention, **overrides):
    return ImageTransformer(**{**TINY, "attention": attention, **overrides})


def _images(count=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, LEVELS, (count,) + SHAPE).astype("int32")


def _logits_in_order(model, images):
    """`(B, T, C)` NumPy logits, positions in generation order."""
    return np.asarray(keras.ops.convert_to_numpy(
        model.to_sequence(model(images))))


def test_shapes_and_order():
    model = _model("local")
    assert tuple(model(_images()).shape) == (3,) + SHAPE + (LEVELS,)
    # Blocks (2, 4) in raster order; the last column pair of each block row
    # is a narrower block.
    assert model.generation_order[:12].tolist() == [
        0, 1, 2, 3, 6, 7, 8, 9, 4, 5, 10, 11]
    samples = model.sample(2, seed=3)
    assert samples.shape == (2,) + SHAPE and samples.dtype == np.int32
    assert samples.min() >= 0 and samples.max() < LEVELS


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_changing_a_later_pixel_changes_no_earlier_logits(attention):
    model = _model(attention)
    images = _images()
    before = _logits_in_order(model, images)
    order = model.generation_order
    for position in (0, 9, 21):
        changed = images.copy()
        row, column = divmod(order[position], SHAPE[1])
        changed[:, row, column] = (changed[:, row, column] + 1) % LEVELS
        after = _logits_in_order(model, changed)
        # Up to and including its own logits (shifted right), nothing moves.
        np.testing.assert_allclose(after[:, :position + 1],
                                   before[:, :position + 1], atol=1e-6)
        # The next position reads it directly.
        assert not np.allclose(after[:, position + 1], before[:, position + 1])


def test_one_local_layer_sees_exactly_its_memory_block():
    """With one layer, changing the pixel at position k changes the logits
    of exactly the positions whose memory block holds position k + 1 (where
    the shifted input carries it)."""
    model = _model("local", num_layers=1)
    images = _images()
    before = _logits_in_order(model, images)
    index, allowed = local_memory_2d(SHAPE, (2, 4), (1, 1))
    order = model.generation_order
    for position in (3, 12, 20):
        changed = images.copy()
        row, column = divmod(order[position], SHAPE[1])
        changed[:, row, column] = (changed[:, row, column] + 2) % LEVELS
        after = _logits_in_order(model, changed)
        moved = ~np.isclose(after, before, atol=1e-6).all(axis=(0, 2))
        sees = (allowed & (index == position + 1)).any(-1)
        np.testing.assert_array_equal(moved, sees)
        assert 0 < sees.sum() < len(order) - position - 1  # local, not full


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_cached_steps_equal_the_full_pass(attention):
    model = _model(attention)
    images = _images()
    full = _logits_in_order(model, images)
    tokens = np.asarray(keras.ops.convert_to_numpy(model.to_sequence(images)))
    cache = model.initial_cache(len(images))
    previous = np.full((len(images),), LEVELS, "int32")
    for position in range(full.shape[1]):
        logits, cache = model.step(previous, position, cache)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(logits),
                                   full[:, position], atol=1e-5)
        previous = tokens[:, position]


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_cached_sampling_equals_uncached(attention):
    model = _model(attention)
    cached = model.sample(3, seed=11, temperature=0.8)
    uncached = model.sample(3, seed=11, temperature=0.8, use_cache=False)
    np.testing.assert_array_equal(cached, uncached)
    assert not np.array_equal(cached, model.sample(3, seed=12))


def test_sampling_follows_the_model():
    """At a very low temperature a sample is the greedy choice: each pixel
    the argmax of its logits given the pixels before it."""
    model = _model("local")
    sample = model.sample(2, seed=0, temperature=1e-6)
    np.testing.assert_array_equal(
        sample, np.argmax(keras.ops.convert_to_numpy(model(sample)), -1))


def test_bits_per_dim_is_the_cross_entropy_in_bits():
    model = _model("full")
    images = _images(4)
    logits = keras.ops.convert_to_numpy(model(images)).astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    chosen = np.take_along_axis(log_probs, images[..., None], -1)[..., 0]
    np.testing.assert_allclose(model.log_likelihood(images, batch_size=3),
                               chosen.sum(axis=(1, 2)), rtol=1e-6)
    np.testing.assert_allclose(model.bits_per_dim(images),
                               -chosen.mean() / math.log(2), rtol=1e-6)


def test_training_lowers_bits_per_dim():
    model = _model("local")
    images = np.tile(_images(1), (16, 1, 1))  # one image: learnable fast
    before = model.bits_per_dim(images)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.fit(images, images, batch_size=16, epochs=15, verbose=0)
    assert model.bits_per_dim(images) < before - 1.0


def test_independent_pixel_baseline():
    train = np.array([[[0, 1]], [[0, 2]], [[0, 2]]])
    probabilities = independent_pixel_model(train, 3)
    # Pixel 0: counts (3, 0, 0) + 1; pixel 1: (0, 1, 2) + 1.
    np.testing.assert_allclose(probabilities[0],
                               [[4 / 6, 1 / 6, 1 / 6], [1 / 6, 2 / 6, 3 / 6]])
    bits = independent_pixel_bits_per_dim(probabilities, np.array([[[1, 2]]]))
    assert bits == pytest.approx(-(math.log2(1 / 6) + math.log2(3 / 6)) / 2)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_config_and_keras_round_trip(attention):
    model = _model(attention, dropout=0.1)
    images = _images()
    want = keras.ops.convert_to_numpy(model(images))
    config = model.get_config()
    clone = ImageTransformer.from_config(config)
    assert clone.get_config() == config
    clone(images)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(clone(images)),
                               want, atol=1e-6)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(restored(images)),
                               want, atol=1e-6)


def test_presets():
    assert set(PRESETS) == {"digits_local", "digits_full"}
    model = ImageTransformer.from_preset("digits_full", num_layers=1)
    assert (model.attention, model.num_layers, model.image_shape) == (
        "full", 1, (8, 8))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"attention": "dense"}, "attention='dense'"),
        ({"num_levels": 1}, "num_levels=1"),
        ({"image_shape": (8,)}, r"image_shape=\(8,\)"),
        ({"query_block": (0, 2)}, r"query_block=\(0, 2\)"),
        ({"memory_flange": (1, -1)}, r"memory_flange=\(1, -1\)"),
        ({"hidden_dim": 9}, "hidden_dim=9"),
        ({"dropout": 1.0}, "dropout=1.0"),
    ],
)
def test_argument_errors_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ImageTransformer(**{**TINY, **kwargs})


def test_call_argument_errors_name_the_argument():
    model = _model("local")
    with pytest.raises(ValueError, match="preset='huge'"):
        ImageTransformer.from_preset("huge")
    with pytest.raises(ValueError, match=r"images of shape \(1, 6, 5\)"):
        model.bits_per_dim(np.zeros((1, 6, 5), "int32"))
    too_bright = _images()
    too_bright[0, 0, 0] = LEVELS
    with pytest.raises(ValueError, match="images"):
        model.log_likelihood(too_bright)
    with pytest.raises(ValueError, match="temperature=0"):
        model.sample(1, temperature=0)
    with pytest.raises(ValueError, match="num=0"):
        model.sample(0)
