"""Memory compression (Liu et al., 2018): positions in groups of `factor`,
one compressed slot per group, and which slots a query may see.

Letters: B batch, T length, M slots (ceil(T / factor)), c factor,
F features.
"""

from keras import ops


def _length(x, axis=1):
    return x.shape[axis] if x.shape[axis] is not None else ops.shape(x)[axis]


def group_positions(x, factor):
    """`(B, T, F)` to `(B, M, c·F)`: the end padded with zeros to a
    multiple of `factor`, then each group of `factor` consecutive positions
    flattened, position-major (position 0's features first).

    A dense layer over the last axis is then the strided convolution of
    Liu et al. (kernel size and stride `factor`, no padding): its kernel
    `(c·F, F')` is `keras.layers.Conv1D`'s `(c, F, F')` reshaped.

    Example:

    >>> import numpy as np
    >>> from keras_attention.ops import group_positions
    >>> x = np.arange(5, dtype="float32").reshape(1, 5, 1)
    >>> np.asarray(group_positions(x, 2))[0]
    array([[0., 1.],
           [2., 3.],
           [4., 0.]], dtype=float32)
    """
    length = _length(x)
    features = x.shape[-1]
    pad = (-length) % factor
    x = ops.pad(x, [[0, 0], [0, pad], [0, 0]])
    slots = (length + pad) // factor
    return ops.reshape(x, (ops.shape(x)[0], slots, factor * features))


def group_validity(padding_mask, factor):
    """`(B, T)` boolean to `(B, M)`: a slot is valid when any position it
    summarises is (positions past the end count as padding).

    >>> import numpy as np
    >>> from keras_attention.ops import group_validity
    >>> np.asarray(group_validity(np.array([[1, 1, 1, 1, 0, 0, 0]], bool), 3))
    array([[ True,  True, False]])
    """
    valid = ops.cast(padding_mask, "float32")[..., None]  # (B, T, 1)
    grouped = group_positions(valid, factor)  # (B, M, c)
    return ops.any(grouped > 0, axis=-1)


def compressed_causal_mask(query_length, slots, factor, query_offset=0):
    """`(T, M)` boolean: query `t` (at position `query_offset + t`) may
    see slot `m` when every position the slot summarises is at or before
    it, `m·c + c − 1 <= query_offset + t`; a slot that summarises a later
    position is never seen. The first `c − 1` positions see no slot.

    >>> import numpy as np
    >>> from keras_attention.ops import compressed_causal_mask
    >>> np.asarray(compressed_causal_mask(7, 3, 3)).astype(int)
    array([[0, 0, 0],
           [0, 0, 0],
           [1, 0, 0],
           [1, 0, 0],
           [1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    """
    queries = ops.arange(query_length, dtype="int32") + ops.cast(
        query_offset, "int32")  # (T,)
    last = ops.arange(slots, dtype="int32") * factor + (factor - 1)  # (M,)
    return last[None, :] <= queries[:, None]
