"""Writing new positions into a key/value cache with plain gathers.

`keras.ops.slice_update` lowers to `XlaDynamicUpdateSlice` on TensorFlow,
which runs only under XLA: a SavedModel that uses it cannot be served by
stock TensorFlow Serving. This version uses `take` and `where` only.

Letters: B batch, L cache length, T new positions, N heads, H head size.
"""

from keras import ops


def update_cache(cache, update, index):
    """`cache` with `update` written at positions `index .. index + T - 1`.

    Args:
        cache: `(B, L, ...)`.
        update: `(B, T, ...)`, T <= L.
        index: int or scalar int tensor, `0 <= index <= L - T`.

    Returns:
        A tensor like `cache`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import update_cache
    >>> cache = np.zeros((1, 4), "float32")
    >>> ops.convert_to_numpy(update_cache(cache, np.array([[7., 8.]]), 1))
    array([[0., 7., 8., 0.]], dtype=float32)
    """
    update = ops.cast(update, cache.dtype)
    positions = ops.arange(ops.shape(cache)[1], dtype="int32")  # (L,)
    offsets = positions - ops.cast(index, "int32")  # row of `update` per slot
    count = ops.shape(update)[1]
    inside = ops.logical_and(offsets >= 0, offsets < count)  # (L,)
    # (B, T, ...) gathered to (B, L, ...): slot p takes update[p - index].
    spread = ops.take(update, ops.clip(offsets, 0, count - 1), axis=1)
    inside = ops.reshape(inside, (1, -1) + (1,) * (len(cache.shape) - 2))
    return ops.where(inside, spread, cache)
