"""The Image Transformer's generation order as index tables.

`LocalAttention2D(masked=True)` is causal in one order of the pixels: query
blocks in raster order, pixels in raster order inside a block. A model that
generates an image one pixel at a time works on the image flattened in that
order; these tables map between that sequence and the image, and list,
for each position of the sequence, the earlier positions its local
attention may see. They depend on sizes only and are computed once, from
the same `split_blocks_2d` / `memory_blocks_2d` / `raster_mask_2d` the
layer uses, so they agree with it by construction.

Letters: H/W image height/width, T = H·W positions, M pixels per memory
block.
"""

import numpy as np
from keras import ops

from keras_attention.ops.local import memory_blocks_2d
from keras_attention.ops.local import raster_mask_2d
from keras_attention.ops.local import split_blocks_2d


def _raster_ids(image_shape):
    """`(1, H, W)` int32: 1 + the raster index of each pixel (0 = none)."""
    height, width = image_shape
    return np.arange(1, height * width + 1, dtype="int32").reshape(
        1, height, width
    )


def generation_order_2d(image_shape, query_block):
    """The raster index of the pixel at each position of the generation
    order.

    Args:
        image_shape: `(H, W)` ints.
        query_block: `(h, w)` ints, as in `LocalAttention2D`.

    Returns:
        `(T,)` int32 NumPy array, a permutation of `range(H·W)`; the
        image flattened in raster order is `sequence[argsort(order)]`.

    Example:

    >>> from keras_attention.ops.image_order import generation_order_2d
    >>> generation_order_2d((2, 4), (2, 2)).tolist()
    [0, 1, 4, 5, 2, 3, 6, 7]
    """
    # (1, G, Q): raster ids in block order, 0 where a block pads the image.
    blocks = ops.convert_to_numpy(split_blocks_2d(_raster_ids(image_shape),
                                                  query_block))
    ids = blocks.reshape(-1)
    return (ids[ids > 0] - 1).astype("int32")


def local_memory_2d(image_shape, query_block, memory_flange):
    """What each position may attend under masked local 2-D attention.

    Args:
        image_shape: `(H, W)` ints.
        query_block: `(h, w)` ints.
        memory_flange: `(fh, fw)` ints.

    Returns:
        `(index, allowed)`, `(T, M)` NumPy arrays: `index[t, m]` (int32) is
        the generation-order position of memory pixel `m` of position `t`
        (in `LocalAttention2D`'s memory order; 0 where there is no pixel)
        and `allowed[t, m]` (bool) says whether `t` attends it: inside the
        image and not after `t` in the generation order.

    Example:

    >>> from keras_attention.ops.image_order import local_memory_2d
    >>> index, allowed = local_memory_2d((1, 4), (1, 2), (0, 1))
    >>> index.tolist()
    [[0, 0, 1, 2], [0, 0, 1, 2], [1, 2, 3, 0], [1, 2, 3, 0]]
    >>> allowed.astype(int).tolist()
    [[0, 1, 0, 0], [0, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    """
    order = generation_order_2d(image_shape, query_block)
    position = np.zeros(len(order) + 1, "int32")  # raster id -> position
    position[order + 1] = np.arange(len(order), dtype="int32")
    ids = _raster_ids(image_shape)
    # (1, G, Q) and (1, G, M) raster ids; (Q, M) geometry.
    queries = ops.convert_to_numpy(split_blocks_2d(ids, query_block))[0]
    memory = ops.convert_to_numpy(memory_blocks_2d(
        ids, query_block, memory_flange, below=False
    ))[0]
    geometry = ops.convert_to_numpy(
        raster_mask_2d(query_block, memory_flange, masked=True)
    )
    # (G, Q, M): each query's memory and mask, padded queries dropped.
    real = queries > 0
    memory_ids = np.broadcast_to(
        memory[:, None, :], queries.shape + memory.shape[-1:]
    )[real]
    allowed = np.logical_and(geometry[None], memory[:, None, :] > 0)[real]
    return position[memory_ids], allowed
