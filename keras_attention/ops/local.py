"""Local (blocked) attention as pure functions: 1-D bands and 2-D blocks.

A sequence is cut into blocks of `b` positions (the end padded); each query
block attends to a memory made of its own block and a few neighbouring
blocks, so scores are `(B, N, G, Q, K)` with `K` keys per query instead of
`(B, N, T, T)`. Within the memory, which pairs may attend is a mask that
depends only on the block geometry (a band, a causal band, a raster order),
AND the validity of each key (inside the sequence or image, not padded).

Letters: B batch, T length, G blocks, b block size, Q positions per query
block, K keys per memory block, N heads, H head size, V value size,
L/R blocks of memory before/after a query block.
"""

from keras import ops


def blocks_needed(flange, block_size):
    """How many neighbouring blocks cover `flange` positions: ceil(f / b)."""
    return -(-flange // block_size)


def _dims(x):
    """The shape of `x`, static ints where known, scalar tensors elsewhere
    (so reshapes keep every static size for shape inference)."""
    dynamic = ops.shape(x)
    return [
        static if static is not None else dynamic[axis]
        for axis, static in enumerate(x.shape)
    ]


def _slice_axis(x, axis, start, size):
    """`x` sliced to `[start, start + size)` along `axis`. `ops.slice`, not
    `[]`: on TensorFlow a strided slice's gradient is several times slower
    on CPU (fwd+bwd of the neighbour blocks at n=8192: ~120-190 ms with
    `[]`, ~30 ms with `ops.slice`)."""
    starts = [0] * len(x.shape)
    starts[axis] = start
    # Static sizes where known (not -1), so shape inference keeps them even
    # when `size` is a tensor.
    sizes = _dims(x)
    sizes[axis] = size
    return ops.slice(x, starts, sizes)


def split_blocks(x, block_size, axis=1):
    """Cut `axis` into blocks, padding its end with zeros.

    Args:
        x: a tensor, e.g. `(B, T, ...)`.
        block_size: b, an int.
        axis: the (non-negative) axis to cut.

    Returns:
        `x` with `axis` of length T replaced by `(G, b)`, G = ceil(T / b),
        e.g. `(B, G, b, ...)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import split_blocks
    >>> ops.convert_to_numpy(split_blocks(np.arange(1, 6)[None], 2))
    array([[[1, 2],
            [3, 4],
            [5, 0]]])
    """
    shape = _dims(x)
    length = shape[axis]
    padding = [[0, 0]] * len(x.shape)
    padding[axis] = [0, (-length) % block_size]
    x = ops.pad(x, padding)
    blocks = -(-length // block_size) if isinstance(length, int) else -1
    # (..., T + pad, ...) -> (..., G, b, ...)
    new_shape = shape[:axis] + [blocks, block_size] + shape[axis + 1:]
    return ops.reshape(x, new_shape)


def merge_blocks(blocks, length, axis=1):
    """Undo `split_blocks`: `(..., G, b, ...)` at `axis` to `(..., T, ...)`."""
    shape = _dims(blocks)
    size = shape[axis] * shape[axis + 1]
    size = size if isinstance(size, int) else -1
    # (..., G, b, ...) -> (..., G * b, ...)
    new_shape = shape[:axis] + [size] + shape[axis + 2:]
    merged = ops.reshape(blocks, new_shape)
    return _slice_axis(merged, axis, 0, length)


def neighbour_blocks(blocks, before, after, axis=1):
    """Each block with its `before` left and `after` right neighbours.

    Missing neighbours (past either end) are zeros. Slices with static
    bounds only, so the number of blocks may be unknown.

    Args:
        blocks: `(..., G, b, ...)` with G at `axis`, b at `axis + 1`.
        before: L, an int >= 0.
        after: R, an int >= 0.
        axis: the blocks axis.

    Returns:
        `(..., G, (L + 1 + R) * b, ...)`: along `axis + 1`, the blocks
        `g - L, ..., g + R` of block `g`, in order.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import neighbour_blocks
    >>> blocks = np.arange(1, 7).reshape(1, 3, 2)  # (B, G, b)
    >>> ops.convert_to_numpy(neighbour_blocks(blocks, 1, 0))
    array([[[0, 0, 1, 2],
            [1, 2, 3, 4],
            [3, 4, 5, 6]]])
    """
    padding = [[0, 0]] * len(blocks.shape)
    padding[axis] = [before, after]
    padded = ops.pad(blocks, padding)  # (..., L + G + R, b, ...)
    count = blocks.shape[axis] or ops.shape(blocks)[axis]  # G
    pieces = [
        _slice_axis(padded, axis, shift, count)  # (..., G, b, ...)
        for shift in range(before + after + 1)
    ]
    return ops.concatenate(pieces, axis=axis + 1)


def local_band_mask(block_size, window, before, after, causal=False):
    """`(b, K)` mask of the band inside a blocked memory, K = (L+1+R)·b.

    Query `i` of a block meets memory key `k` of its neighbourhood at
    distance `i - k + L·b` (the same for every block): allowed when it is
    at most `window` in size, and not negative when `causal`.

    Example:

    >>> from keras import ops
    >>> from keras_attention.ops import local_band_mask
    >>> ops.convert_to_numpy(local_band_mask(2, 1, 1, 0, causal=True))
    array([[False,  True,  True, False],
           [False, False,  True,  True]])
    """
    memory = (before + 1 + after) * block_size
    query = ops.arange(block_size, dtype="int32")  # (b,)
    key = ops.arange(memory, dtype="int32")  # (K,)
    # (b, 1) - (1, K) -> (b, K)
    distance = (
        ops.expand_dims(query, 1) - ops.expand_dims(key, 0)
        + before * block_size
    )
    allowed = ops.abs(distance) <= window
    if causal:
        allowed = ops.logical_and(allowed, distance >= 0)
    return allowed


def blocked_validity(valid, block_size, before, after):
    """Query and key validity of blocked self-attention over a sequence.

    Args:
        valid: `(B, T)`, True at real positions.
        block_size, before, after: as in `neighbour_blocks`.

    Returns:
        `(query (B, G, b), key (B, G, K))` booleans; the padding at the end
        and the missing neighbours are False.
    """
    valid = ops.cast(valid, "float32")
    query = split_blocks(valid, block_size)  # (B, G, b)
    key = neighbour_blocks(query, before, after)  # (B, G, K)
    return query > 0.5, key > 0.5


# Added to the logits of pairs that may not attend. Finite, so a row with
# every key masked (a padded query) stays finite; exp(-1e9 + s - max) is
# exactly 0 in float32 next to any attended key.
_MASKED_BIAS = -1e9


def local_bias(key_valid, geometry):
    """An additive `(B, 1, G, Q, K)` float32 mask: 0 where a query may
    attend a key (allowed by `geometry`, the key valid), -1e9 elsewhere.

    One add on the logits instead of the select, product and cast of a
    boolean mask; the bias has no head axis, so it is N times smaller than
    the logits. Query validity is not in it: the caller zeroes the
    contexts (and returned weights) of invalid queries.

    Args:
        key_valid: `(B, G, K)` booleans.
        geometry: `(Q, K)` booleans, e.g. `local_band_mask(...)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import local_bias
    >>> bias = local_bias(np.array([[[True, False]]]),
    ...                   np.array([[True, True], [False, True]]))
    >>> ops.convert_to_numpy(bias)[0, 0, 0]
    array([[ 0.e+00, -1.e+09],
           [-1.e+09, -1.e+09]], dtype=float32)
    """
    # (B, G, 1, K) & (1, 1, Q, K) -> (B, G, Q, K)
    allowed = ops.logical_and(
        ops.expand_dims(key_valid, -2),
        ops.expand_dims(ops.expand_dims(geometry, 0), 0),
    )
    bias = ops.where(allowed, 0.0, _MASKED_BIAS)
    return ops.expand_dims(ops.cast(bias, "float32"), 1)  # (B, 1, G, Q, K)


def local_scores(query, key, scale):
    """Logits of each query block against its memory, in float32.

    Heads first, so the products are batched matrix products with no
    transposition of the (large) logits.

    Args:
        query: `(B, N, G, Q, H)`.
        key: `(B, N, G, K, H)`.
        scale: a float, e.g. `1 / sqrt(H)`.

    Returns:
        `(B, N, G, Q, K)` float32.
    """
    query = ops.cast(query, "float32") * scale
    key = ops.cast(key, "float32")
    # (B, N, G, Q, H) x (B, N, G, K, H) -> (B, N, G, Q, K)
    return ops.einsum("bngqh,bngkh->bngqk", query, key)


def local_weighted_sum(weights, value):
    """Context of each query: `(B, N, G, Q, K)` x `(B, N, G, K, V)` ->
    `(B, N, G, Q, V)`."""
    return ops.einsum("bngqk,bngkv->bngqv", weights, value)


# 2-D: an image `(B, H, W, ...)` in query blocks `(h, w)` taken in raster
# order, G = ceil(H/h)·ceil(W/w) blocks of Q = h·w pixels; each block's
# memory extends it by `fh` rows above (and below, unless masked) and `fw`
# columns on each side: M = (fh + h [+ fh])·(fw + w + fw) pixels.


def _blocks_first(x):
    """`(B, gh, h, gw, w, ...)` -> `(B, gh·gw, h·w, ...)`."""
    order = list(range(len(x.shape)))
    order[2], order[3] = 3, 2
    x = ops.transpose(x, order)  # (B, gh, gw, h, w, ...)
    shape = _dims(x)
    grid, size = shape[1] * shape[2], shape[3] * shape[4]
    grid = grid if isinstance(grid, int) else -1
    return ops.reshape(x, [shape[0], grid, size] + shape[5:])


def split_blocks_2d(x, query_block):
    """`(B, H, W, ...)` -> `(B, G, Q, ...)`: query blocks in raster order,
    pixels in raster order inside each (the image padded with zeros)."""
    height, width = query_block
    x = split_blocks(x, height, axis=1)  # (B, gh, h, W, ...)
    x = split_blocks(x, width, axis=3)  # (B, gh, h, gw, w, ...)
    return _blocks_first(x)


def merge_blocks_2d(blocks, image_shape, query_block):
    """Undo `split_blocks_2d`: `(B, G, Q, ...)` -> `(B, H, W, ...)`.

    `image_shape` is `(H, W)` (ints or scalar tensors)."""
    height, width = query_block
    image_height, image_width = image_shape
    shape = _dims(blocks)
    grid_width = (image_width + width - 1) // width
    # (B, G, Q, ...) -> (B, gh, gw, h, w, ...)
    blocks = ops.reshape(
        blocks, [shape[0], -1, grid_width, height, width] + shape[3:]
    )
    order = list(range(len(blocks.shape)))
    order[2], order[3] = 3, 2
    blocks = ops.transpose(blocks, order)  # (B, gh, h, gw, w, ...)
    blocks = merge_blocks(blocks, image_width, axis=3)  # (B, gh, h, W, ...)
    return merge_blocks(blocks, image_height, axis=1)  # (B, H, W, ...)


def memory_blocks_2d(x, query_block, memory_flange, below=True):
    """Each query block's memory: `(B, H, W, ...)` -> `(B, G, M, ...)`.

    Rows from `fh` above the block to `fh` below it (to its last row when
    `below=False`), columns from `fw` left to `fw` right; pixels outside
    the image are zeros. Memory pixels are in raster order.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import memory_blocks_2d
    >>> image = np.arange(1, 5).reshape(1, 1, 4)  # (B, H, W)
    >>> ops.convert_to_numpy(memory_blocks_2d(image, (1, 2), (0, 1)))
    array([[[0, 1, 2, 3],
            [2, 3, 4, 0]]])
    """
    height, width = query_block
    flange_height, flange_width = memory_flange
    flange_below = flange_height if below else 0
    up = blocks_needed(flange_height, height)
    down = blocks_needed(flange_below, height)
    x = split_blocks(x, height, axis=1)  # (B, gh, h, W, ...)
    x = neighbour_blocks(x, up, down, axis=1)  # (B, gh, (u+1+d)·h, W, ...)
    top = up * height - flange_height
    x = _slice_axis(x, 2, top, flange_height + height + flange_below)
    side = blocks_needed(flange_width, width)
    x = split_blocks(x, width, axis=3)  # (B, gh, mh, gw, w, ...)
    x = neighbour_blocks(x, side, side, axis=3)  # (B, gh, mh, gw, ·, ...)
    left = side * width - flange_width
    x = _slice_axis(x, 4, left, 2 * flange_width + width)
    return _blocks_first(x)  # (B, G, mh·mw, ...)


def raster_mask_2d(query_block, memory_flange, masked=True):
    """`(Q, M)` geometry mask of 2-D local attention.

    Unmasked, every memory pixel may be attended. Masked (generation), a
    pixel sees only pixels at or before it in the Image Transformer's
    generation order: query blocks in raster order, pixels in raster order
    inside a block. In the memory (which then has no rows below the block)
    that is the flange above, the flange on the left, and the query block's
    own pixels up to the query in raster order; not the right flange.

    Example:

    >>> from keras import ops
    >>> from keras_attention.ops import raster_mask_2d
    >>> ops.convert_to_numpy(raster_mask_2d((1, 2), (0, 1))).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0]])
    """
    height, width = query_block
    flange_height, flange_width = memory_flange
    memory_height = flange_height + height + (0 if masked else flange_height)
    memory_width = 2 * flange_width + width
    queries, memory = height * width, memory_height * memory_width
    if not masked:
        return ops.ones((queries, memory), "bool")
    query = ops.arange(queries, dtype="int32")  # (Q,) raster in the block
    key = ops.arange(memory, dtype="int32")  # (M,) raster in the memory
    row = key // memory_width - flange_height  # (M,) relative to the block
    column = key % memory_width - flange_width
    # (M,) above the block, or on its left
    earlier_block = ops.logical_or(row < 0, column < 0)
    inside = ops.logical_and(
        ops.logical_and(row >= 0, column >= 0), column < width
    )  # (M,) in the query block
    # (1, M) <= (Q, 1) -> (Q, M): at or before the query inside the block
    before = ops.expand_dims(row * width + column, 0) <= ops.expand_dims(
        query, 1
    )
    return ops.logical_or(
        ops.expand_dims(earlier_block, 0), ops.logical_and(
            ops.expand_dims(inside, 0), before
        )
    )
