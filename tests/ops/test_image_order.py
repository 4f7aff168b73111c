"""The generation-order tables against a brute-force reading of the Image
Transformer's order and local 2-D memory."""

import numpy as np
import pytest

from keras_attention.ops.image_order import generation_order_2d
from keras_attention.ops.image_order import local_memory_2d

CASES = [
    ((8, 8), (2, 4), (2, 2)),
    ((5, 7), (2, 4), (1, 2)),  # not multiples of the block: padded
    ((6, 6), (2, 2), (3, 3)),  # flanges wider than the block
    ((3, 5), (4, 4), (0, 1)),  # image smaller than a block
    ((4, 6), (4, 6), (0, 0)),  # one block: plain raster order
]


def brute_force_order(image_shape, query_block):
    """Pixels sorted by (block row, block column, row, column in block)."""
    height, width = image_shape
    block_height, block_width = query_block
    pixels = [(r, c) for r in range(height) for c in range(width)]
    key = {
        (r, c): (r // block_height, c // block_width, r % block_height,
                 c % block_width)
        for r, c in pixels
    }
    return [r * width + c for r, c in sorted(pixels, key=key.get)]


def brute_force_sees(image_shape, query_block, memory_flange):
    """`(T, T)`: position t may attend position s (both in order)."""
    height, width = image_shape
    block_height, block_width = query_block
    flange_height, flange_width = memory_flange
    order = brute_force_order(image_shape, query_block)
    sees = np.zeros((len(order), len(order)), bool)
    for t, pixel in enumerate(order):
        row, column = divmod(pixel, width)
        top = row // block_height * block_height
        left = column // block_width * block_width
        for s, other in enumerate(order[:t + 1]):
            other_row, other_column = divmod(other, width)
            sees[t, s] = (
                top - flange_height <= other_row < top + block_height
                and left - flange_width <= other_column
                < left + block_width + flange_width
            )
    return sees


@pytest.mark.parametrize("image_shape, query_block, memory_flange", CASES)
def test_order_and_memory_match_brute_force(image_shape, query_block,
                                            memory_flange):
    order = generation_order_2d(image_shape, query_block)
    assert order.tolist() == brute_force_order(image_shape, query_block)
    index, allowed = local_memory_2d(image_shape, query_block, memory_flange)
    length = len(order)
    flange_height, flange_width = memory_flange
    memory = (flange_height + query_block[0]) * (
        2 * flange_width + query_block[1])
    assert index.shape == allowed.shape == (length, memory)
    sees = np.zeros((length, length), bool)
    rows = np.repeat(np.arange(length), memory)
    sees[rows[allowed.reshape(-1)], index[allowed]] = True
    # Each allowed key listed once: the count equals the set's size.
    assert allowed.sum() == sees.sum()
    np.testing.assert_array_equal(
        sees, brute_force_sees(image_shape, query_block, memory_flange))
