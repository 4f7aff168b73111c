"""SequentialLocalAttention2D: LocalAttention2D in generation order, and its
cached steps against the full pass."""

import numpy as np
import pytest

from keras_attention.layers.local_attention_2d import LocalAttention2D
from keras_attention.layers.sequential_local_attention_2d import (
    SequentialLocalAttention2D,
)
from keras_attention.ops.image_order import generation_order_2d
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.harness import run_layer_test

RNG = np.random.default_rng(7)
BATCH, CHANNELS, HEADS, KEY = 2, 5, 2, 4
SHAPE, BLOCK, FLANGE = (5, 6), (2, 4), (1, 2)  # 5x6: blocks pad the image


def _layer(**kwargs):
    options = dict(num_heads=HEADS, key_dim=KEY, image_shape=SHAPE,
                   query_block=BLOCK, memory_flange=FLANGE)
    return SequentialLocalAttention2D(**{**options, **kwargs})


def _sequence(length=SHAPE[0] * SHAPE[1]):
    return RNG.normal(size=(BATCH, length, CHANNELS)).astype("float32")


def _padding():
    padding = np.ones((BATCH, SHAPE[0] * SHAPE[1]), bool)
    padding[1, -4:] = False
    return padding


def _empty_cache(value_dim=KEY):
    length = SHAPE[0] * SHAPE[1]
    return (np.zeros((BATCH, length, HEADS, KEY), "float32"),
            np.zeros((BATCH, length, HEADS, value_dim), "float32"))


def test_equals_local_attention_2d_on_the_image():
    """The sequence in generation order, put in place, through the parent
    layer with the same weights; padding masks put in place too."""
    layer = _layer()
    sequence, padding = _sequence(), _padding()
    output = as_numpy(layer(sequence, padding_mask=padding))
    image_layer = LocalAttention2D(num_heads=HEADS, key_dim=KEY,
                                   query_block=BLOCK, memory_flange=FLANGE)
    order = generation_order_2d(SHAPE, BLOCK)
    place = np.argsort(order)  # raster pixel -> position
    image = sequence[:, place].reshape(BATCH, *SHAPE, CHANNELS)
    image_layer(image)
    image_layer.set_weights(layer.get_weights())
    want = as_numpy(image_layer(
        image, padding_mask=padding[:, place].reshape(BATCH, *SHAPE)))
    assert_allclose(output, want.reshape(BATCH, -1, CHANNELS)[:, order],
                    atol=1e-6)


@pytest.mark.parametrize("chunk", [1, 3])
def test_cached_steps_equal_the_full_pass(chunk):
    layer = _layer(value_dim=3)
    sequence = _sequence()
    full = as_numpy(layer(sequence))
    cache, steps = _empty_cache(value_dim=3), []
    for index in range(0, sequence.shape[1], chunk):
        step, weights, cache = layer(
            sequence[:, index:index + chunk], cache=cache,
            cache_update_index=index, return_attention_scores=True)
        steps.append(as_numpy(step))
    # Only the memory block is scored: (B, N, t, M) with M = (1+2)·(2+4+2).
    assert tuple(weights.shape) == (BATCH, HEADS, chunk, 24)
    assert_allclose(np.sum(as_numpy(weights), -1), 1.0, atol=1e-5)
    assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)
    # The cache holds every position's keys: the full projections.
    keys, values = layer.compute_key_value(sequence)
    assert_allclose(cache[0], keys, atol=1e-6)
    assert_allclose(cache[1], values, atol=1e-6)


def test_a_step_reads_only_what_it_may_see():
    """Garbage in the cache at later positions, or outside the memory
    block, does not change a step."""
    layer = _layer()
    sequence = _sequence()
    full = as_numpy(layer(sequence))
    keys, values = (as_numpy(x) for x in layer.compute_key_value(sequence))
    index = 17
    garbage = RNG.normal(size=keys.shape).astype("float32") * 100
    keys[:, index + 1:] = garbage[:, index + 1:]
    values[:, index + 1:] = garbage[:, index + 1:]
    keys[:, 0], values[:, 0] = garbage[:, 0], garbage[:, 0]  # far above
    step, _ = layer(sequence[:, index:index + 1], cache=(keys, values),
                    cache_update_index=index)
    assert_allclose(step[:, 0], full[:, index], atol=1e-5)


@pytest.mark.parametrize(
    "init_kwargs",
    [{"dropout": 0.1}, {"value_dim": 3, "output_dim": 6, "head_merge": "mean",
                        "diversity_penalty": 0.1}],
    ids=["dropout", "mean_penalty"],
)
def test_harness(init_kwargs):
    run_layer_test(
        SequentialLocalAttention2D,
        {"num_heads": HEADS, "key_dim": KEY, "image_shape": SHAPE,
         "query_block": BLOCK, "memory_flange": FLANGE, **init_kwargs},
        expected_num_trainable_weights=8,  # MultiHeadSelfAttention's
        expected_num_losses=int("diversity_penalty" in init_kwargs),
        inputs={"inputs": _sequence(), "padding_mask": _padding()},
        expected_output_shape=(BATCH, 30, init_kwargs.get("output_dim",
                                                         CHANNELS)),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"masked": False}, "masked=False"),
        ({"image_shape": (0, 4)}, r"image_shape=\(0, 4\)"),
        ({"image_shape": 8}, "image_shape=8"),
        ({"query_block": (2, 0)}, r"query_block=\(2, 0\)"),
    ],
)
def test_argument_errors_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _layer(**kwargs)


def test_call_errors_name_the_argument():
    layer = _layer()
    with pytest.raises(ValueError, match="use_causal_mask=False"):
        layer(_sequence(), use_causal_mask=False)
    with pytest.raises(ValueError, match=r"inputs.shape=\(2, 29, 5\)"):
        layer(_sequence(29))
    with pytest.raises(ValueError, match="cache_update_index=None"):
        layer(_sequence(1), cache=_empty_cache())
    with pytest.raises(ValueError, match="cache_update_index=30"):
        layer(_sequence(1), cache=_empty_cache(), cache_update_index=30)
