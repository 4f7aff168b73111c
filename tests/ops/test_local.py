"""The local-attention core: blocking, neighbours and masks against NumPy."""

import numpy as np
import pytest
from keras import ops

from keras_attention.ops import blocked_validity
from keras_attention.ops import blocks_needed
from keras_attention.ops import local_band_mask
from keras_attention.ops import local_bias
from keras_attention.ops import local_scores
from keras_attention.ops import masked_softmax
from keras_attention.ops import memory_blocks_2d
from keras_attention.ops import merge_blocks
from keras_attention.ops import merge_blocks_2d
from keras_attention.ops import neighbour_blocks
from keras_attention.ops import raster_mask_2d
from keras_attention.ops import split_blocks
from keras_attention.ops import split_blocks_2d
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import tensorflow_only

RNG = np.random.default_rng(3)


def reference_neighbours(blocks, before, after):
    """`(B, G, b, ...)` -> `(B, G, (L+1+R)·b, ...)` by indexing."""
    count = blocks.shape[1]
    pieces = []
    for block in range(count):
        parts = []
        for other in range(block - before, block + after + 1):
            inside = 0 <= other < count
            parts.append(blocks[:, other] if inside
                         else np.zeros_like(blocks[:, 0]))
        pieces.append(np.concatenate(parts, axis=1))
    return np.stack(pieces, axis=1)


@pytest.mark.parametrize("length", [1, 3, 4, 7])
@pytest.mark.parametrize("block", [1, 2, 3, 5])
def test_split_merge_round_trip(length, block):
    x = RNG.normal(size=(2, length, 3)).astype("float32")
    blocks = as_numpy(split_blocks(x, block))
    count = -(-length // block)
    assert blocks.shape == (2, count, block, 3)
    padded = np.concatenate(
        [x, np.zeros((2, count * block - length, 3), "float32")], 1)
    assert_array_equal(blocks.reshape(2, -1, 3), padded)
    assert_array_equal(merge_blocks(blocks, length), x)


@pytest.mark.parametrize("before, after", [(0, 0), (1, 0), (1, 1), (2, 1),
                                           (0, 3)])
@pytest.mark.parametrize("count", [1, 2, 4])
def test_neighbour_blocks_equal_indexing(count, before, after):
    blocks = RNG.normal(size=(2, count, 3, 2)).astype("float32")
    assert_array_equal(
        neighbour_blocks(blocks, before, after),
        reference_neighbours(blocks, before, after))


def test_neighbour_blocks_on_another_axis():
    blocks = RNG.normal(size=(2, 3, 4, 2, 5)).astype("float32")
    moved = np.moveaxis(blocks, (2, 3), (1, 2))  # blocks axis 2 -> 1
    want = np.moveaxis(reference_neighbours(moved, 1, 1), (1, 2), (2, 3))
    assert_array_equal(
        neighbour_blocks(blocks, 1, 1, axis=2), want)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("window, block", [(1, 1), (2, 2), (3, 2), (2, 5)])
def test_band_mask_is_the_distance_rule(window, block, causal):
    before = blocks_needed(window, block)
    after = 0 if causal else before
    band = as_numpy(local_band_mask(block, window, before, after, causal))
    assert band.shape == (block, (before + 1 + after) * block)
    for query in range(block):
        for key in range(band.shape[1]):
            distance = query - (key - before * block)
            allowed = abs(distance) <= window and (distance >= 0
                                                   or not causal)
            assert band[query, key] == allowed
    # Every in-window key of every query is somewhere in its memory.
    assert band.sum(-1).min() == (window + 1 if causal else 2 * window + 1)


def test_blocked_validity_marks_padding_and_missing_neighbours():
    valid = np.array([[1, 1, 1, 0, 0]], bool)
    query, key = blocked_validity(valid, 2, 1, 1)
    assert_array_equal(query, [[[1, 1], [1, 0], [0, 0]]])
    assert_array_equal(
        key, [[[0, 0, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]]])


def test_local_scores_equal_dense_scores_in_the_memory():
    query = RNG.normal(size=(2, 6, 3, 4)).astype("float32")  # (B, T, N, H)
    key = RNG.normal(size=(2, 6, 3, 4)).astype("float32")
    dense = np.einsum("btnh,bsnh->bnts", query, key) * 0.5
    query_heads = np.transpose(query, (0, 2, 1, 3))  # (B, N, T, H)
    key_heads = np.transpose(key, (0, 2, 1, 3))
    blocked = as_numpy(local_scores(
        split_blocks(query_heads, 2, axis=2),
        neighbour_blocks(split_blocks(key_heads, 2, axis=2), 1, 1, axis=2),
        0.5))  # (B, N, G, b, K)
    for position in range(6):
        block, row = divmod(position, 2)
        for k in range(6):
            other = (block - 1) * 2 + k
            if 0 <= other < 6:
                assert_allclose(
                    blocked[:, :, block, row, k],
                    dense[:, :, position, other], atol=1e-5)


def test_local_bias_is_zero_exactly_where_attending_is_allowed():
    key_valid = RNG.random((2, 3, 6)) > 0.3  # (B, G, K)
    geometry = RNG.random((4, 6)) > 0.5  # (Q, K)
    bias = as_numpy(local_bias(key_valid, geometry))
    assert bias.shape == (2, 1, 3, 4, 6) and bias.dtype == np.float32
    allowed = key_valid[:, None, :, None, :] & geometry[None, None, None]
    assert_array_equal(bias == 0, allowed)
    assert_array_equal(bias[~allowed], -1e9)
    # Added to the logits, masked keys get exactly zero weight, and a row
    # with every key masked stays finite.
    scores = RNG.normal(size=(2, 5, 3, 4, 6)).astype("float32") * 30
    weights = as_numpy(ops.softmax(scores + bias, axis=-1))
    assert np.isfinite(weights).all()
    rows = allowed.any(-1, keepdims=True)
    assert_array_equal(weights[np.broadcast_to(
        ~allowed & rows, weights.shape)], 0.0)
    # Rows with an allowed key: the masked softmax of the boolean mask.
    reference = as_numpy(masked_softmax(scores, allowed))
    keep = np.broadcast_to(rows, weights.shape)
    assert_allclose(weights[keep], reference[keep], atol=1e-6)


@tensorflow_only("tf.TensorSpec: unknown sequence length")
def test_unknown_length_in_tf_function():
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec((None, None, 2))])
    def blocked(x):
        memory = neighbour_blocks(split_blocks(x, 3), 1, 0)
        return merge_blocks(memory, ops.shape(x)[1])

    for length in (1, 5, 9):
        x = RNG.normal(size=(2, length, 2)).astype("float32")
        want = reference_neighbours(as_numpy(split_blocks(x, 3)), 1, 0)
        want = want.reshape(2, -1, 2)[:, :length]
        assert_array_equal(blocked(x), want)


def reference_memory_2d(image, query_block, flange, below):
    """`(B, H, W, C)` -> `(B, G, M, C)` by indexing, zeros outside."""
    (height, width), (flange_height, flange_width) = query_block, flange
    rows = -(-image.shape[1] // height)
    columns = -(-image.shape[2] // width)
    memories = []
    for block_row in range(rows):
        for block_column in range(columns):
            pixels = []
            top, left = block_row * height, block_column * width
            bottom = top + height + (flange_height if below else 0)
            for row in range(top - flange_height, bottom):
                for column in range(left - flange_width,
                                    left + width + flange_width):
                    inside = (0 <= row < image.shape[1]
                              and 0 <= column < image.shape[2])
                    pixels.append(image[:, row, column] if inside
                                  else np.zeros_like(image[:, 0, 0]))
            memories.append(np.stack(pixels, 1))
    return np.stack(memories, 1)


@pytest.mark.parametrize("size", [(4, 6), (5, 7), (1, 2)])
@pytest.mark.parametrize("query_block", [(2, 3), (1, 1), (3, 4)])
def test_split_merge_2d_round_trip(size, query_block):
    image = RNG.normal(size=(2,) + size + (3,)).astype("float32")
    blocks = as_numpy(split_blocks_2d(image, query_block))
    reference = reference_memory_2d(image, query_block, (0, 0), False)
    assert_array_equal(blocks, reference)
    assert_array_equal(
        merge_blocks_2d(blocks, size, query_block), image)


@pytest.mark.parametrize("below", [False, True])
@pytest.mark.parametrize("query_block, flange",
                         [((2, 3), (1, 1)), ((2, 2), (3, 3)), ((1, 4), (0, 2))])
def test_memory_blocks_2d_equal_indexing(query_block, flange, below):
    image = RNG.normal(size=(2, 5, 7, 3)).astype("float32")
    assert_array_equal(
        memory_blocks_2d(image, query_block, flange, below),
        reference_memory_2d(image, query_block, flange, below))


@pytest.mark.parametrize("query_block, flange",
                         [((2, 3), (1, 1)), ((2, 2), (3, 3)), ((1, 4), (0, 2))])
def test_raster_mask_2d_is_the_generation_order(query_block, flange):
    (height, width), (flange_height, flange_width) = query_block, flange
    mask = as_numpy(raster_mask_2d(query_block, flange, masked=True))
    memory_width = width + 2 * flange_width
    for query in range(height * width):
        row, column = divmod(query, width)
        for key in range(mask.shape[1]):
            other_row = key // memory_width - flange_height
            other_column = key % memory_width - flange_width
            order = (other_row // height, other_column // width,
                     other_row % height, other_column % width)
            assert mask[query, key] == (order <= (0, 0, row, column))
    assert np.all(as_numpy(raster_mask_2d(query_block, flange, masked=False)))
