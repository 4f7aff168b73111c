"""Exact attention without the (T, S) score matrix: `blockwise_attention`.

On the TensorFlow backend it runs `keras_attention.ops._blockwise_tf`: the
queries in blocks, each block's softmax exact over the keys it may see, a
gradient that recomputes the scores block by block; memory linear in the
length, and causal or windowed attention skip the blocks they never see.
On JAX and PyTorch it is `keras.ops.dot_product_attention` (their fused
kernels, flash attention on GPUs) with the same masks, and so it is inside
a TensorFlow function compiled with XLA (`jit_compile=True`), whose static
shapes the blocks' loops cannot have.

Letters: B batch, N heads, T query length, S key length, H key size,
D value size.
"""

import math

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.ops.attention import fused_attention
from keras_attention.ops.attention import masked_softmax
from keras_attention.ops.attention import scaled_dot_product_scores
from keras_attention.ops.attention import weighted_sum
from keras_attention.ops.compression import compressed_causal_mask
from keras_attention.ops.masking import build_attention_mask
from keras_attention.ops.masking import check_head_shape
from keras_attention.ops.masking import check_mask_shape
from keras_attention.ops.positions import alibi_bias
from keras_attention.ops.relative import relative_logits_gather
from keras_attention.ops.relative import relative_values_gather

# A block's scores, (B, N, b, S) float32, are kept near this many bytes
# (at T = 8,192, 256 and 512 rows ran as fast; 64 rows 1.3x slower).
_BLOCK_BYTES = 128 * 2**20
_MIN_BLOCK, _MAX_BLOCK = 16, 512


def default_block_size(batch, heads, key_length, query_length=None):
    """Query rows per block: a power of two in [16, 512] whose float32
    scores `(batch, heads, rows, key_length)` take about 128 MiB (128 rows when a
    size is not known), and never more than `query_length` when known.

    >>> default_block_size(1, 8, 8192), default_block_size(1, 8, 65536)
    (512, 64)
    >>> default_block_size(16, 8, 256, query_length=256)
    256
    """
    # A dimension that is not a plain int (None, or JAX's symbolic batch
    # when Keras infers a functional model's shapes) is not known.
    batch, heads, key_length, query_length = (
        size if isinstance(size, int) else None
        for size in (batch, heads, key_length, query_length))
    if None in (batch, heads, key_length):
        rows = 128
    else:
        rows = _BLOCK_BYTES // max(1, 4 * batch * heads * key_length)
        rows = 2 ** int(math.floor(math.log2(max(rows, 1))))
        rows = min(_MAX_BLOCK, max(_MIN_BLOCK, rows))
    if query_length is not None:
        rows = min(rows, query_length)
    return int(max(rows, 1))


def blockwise_attention(query, key, value, *, key_padding_mask=None,
                        query_padding_mask=None, mask=None, causal=False,
                        window=None, query_offset=0, scale=None,
                        block_size=None, bias=None, alibi_slopes=None,
                        relative_key_table=None, relative_value_table=None,
                        key_stride=1):
    """Softmax attention, exact, in memory linear in the length.

    The masks are given as what they are, never expanded to `(T, S)`:
    padding vectors, causality, a window, and an explicit mask only when
    the caller has one. Query position `i` is `i + query_offset` (the
    cache index when decoding); it may attend key `j` when `j` is not
    padding, `j <= i + query_offset` if `causal`, `|i + query_offset - j|
    <= window` if a window is given, and `mask` allows it. A query with no
    key to attend (or itself padding) gets a zero output, never NaN.

    Keys may stand for groups of positions (`key_stride` s > 1: the
    compressed slots of `MemoryCompressedAttention`, key `j` summarising
    positions `j·s .. j·s + s − 1`); causal then means the group's last
    position is at or before the query, `j·s + s − 1 <= i + query_offset`,
    the rule of `ops.compressed_causal_mask`, and causal blocks still skip
    the keys they never see.

    Logit biases are given as what they are too: ALiBi's per-head slopes
    (the bias `-slope · |i + query_offset - j|` is made block by block),
    and a dense additive `bias` only when the caller has one.

    Args:
        query: `(B, T, N, H)`.
        key: `(B, S, K, H)`, `K` dividing `N`: grouped-query attention
            (query head `n` meets key and value head `n // (N / K)`).
        value: `(B, S, K, D)`.
        key_padding_mask: `(B, S)` bool, True for real keys, or None.
        query_padding_mask: `(B, T)` bool, True for real queries, or None.
        mask: `(B|1, N|1, T, S)` bool, True where a query may attend a
            key, or None.
        causal: whether query `i` sees only keys `j <= i + query_offset`.
        window: an int >= 0, the largest `|i + query_offset - j|`, or None.
        query_offset: an int >= 0 (or an int tensor).
        scale: the logits' factor; defaults to `1 / sqrt(H)`.
        block_size: query (and key) rows per block on TensorFlow; by
            default about 128 MiB of float32 scores per block
            (`default_block_size`).
        bias: `(B|1, N|1, T, S)` float added to the scaled logits (and
            differentiated), or None.
        alibi_slopes: `N` floats (e.g. `ops.alibi_slopes(N)`), constants
            (no gradient): adds `ops.alibi_bias`, or None.
        relative_key_table: `(R, H)`, or `(N, R, H)` per head, R = 2δ+1:
            Shaw et al.'s relative key term, the scaled query `i` times
            row `clip(j - i, -δ, δ) + δ` added to the logit of key `j`
            (as `RelativeAttention`; `ops.relative_logits_gather`); or
            None. Computed block by block on TensorFlow, differentiated.
        relative_value_table: `(R, D)` or `(N, R, D)`: the relative
            value term, each weight times its distance's row added to the
            output (`ops.relative_values_gather`); or None.
        key_stride: an int >= 1, the positions each key stands for (see
            above); 1, plain keys, by default. Above 1 it takes no
            `window`, ALiBi or relative tables (their distances are
            between positions, not groups).

    On TensorFlow outside XLA, the blocks; elsewhere the backend's fused
    attention with the mask expanded (see the module's docstring).

    Returns:
        `(B, T, N, D)` in the value's dtype. float16 inputs are computed
        in float32; bfloat16 products stay bfloat16 with the softmax's
        statistics in float32.

    Example:

    >>> import numpy as np
    >>> from keras_attention.ops import blockwise_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.normal(size=(1, 5, 2, 4)).astype("float32")
    ...            for _ in range(3))
    >>> out = blockwise_attention(q, k, v, causal=True, block_size=2)
    >>> tuple(out.shape)
    (1, 5, 2, 4)
    >>> first = np.asarray(out)[0, 0]   # query 0 sees key 0 only
    >>> bool(np.allclose(first, v[0, 0], atol=1e-6))
    True

    Keys for groups of 2 positions: query 1 is the first to see key 0.

    >>> slots = blockwise_attention(q, k[:, :3], v[:, :3], causal=True,
    ...                             key_stride=2, block_size=2)
    >>> out = np.asarray(slots)[0]   # (T, N, D)
    >>> float(np.abs(out[0]).max()), bool(np.allclose(out[1], v[0, 0]))
    (0.0, True)
    """
    query, key, value = (ops.convert_to_tensor(x) for x in (query, key, value))
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        _validation.rank(name, tensor.shape, (4,), "(batch, length, heads, dim)")
    batch, query_length, heads, key_dim = query.shape
    key_length = key.shape[1]
    _validation.same_length(key.shape, value.shape)
    _validation.same_dim("key", key.shape, -1, key_dim, "the query's dim")
    for name, tensor in (("key", key), ("value", value)):
        if None not in (tensor.shape[2], heads) and (
                heads % tensor.shape[2]
                or tensor.shape[2] != key.shape[2]):
            raise ValueError(
                f"`{name}` must have a number of heads in axis 2 that "
                f"divides the query's {heads} (the key's and the value's "
                f"the same), received: {name}.shape={tuple(tensor.shape)}")
    if not isinstance(causal, bool):
        raise ValueError(f"`causal` must be True or False, received: "
                         f"causal={causal!r}")
    if window is not None:
        window = _validation.non_negative_int("window", window)
    if isinstance(query_offset, int):
        query_offset = _validation.non_negative_int("query_offset",
                                                    query_offset)
    key_stride = _validation.positive_int("key_stride", key_stride)
    if key_stride > 1:
        for name, given in (("window", window),
                            ("alibi_slopes", alibi_slopes),
                            ("relative_key_table", relative_key_table),
                            ("relative_value_table", relative_value_table)):
            if given is not None:
                raise ValueError(
                    f"`{name}` measures distances between positions, which "
                    f"keys with key_stride={key_stride} are not; received: "
                    f"{name} with key_stride={key_stride}")
    block_size = (default_block_size(batch, heads, key_length, query_length)
                  if block_size is None
                  else _validation.positive_int("block_size", block_size))
    if scale is None:
        scale = 1.0 / math.sqrt(key_dim)
    key_padding_mask = check_mask_shape(
        "key_padding_mask", key_padding_mask, (batch, key_length),
        "(batch, key_len)")
    query_padding_mask = check_mask_shape(
        "query_padding_mask", query_padding_mask, (batch, query_length),
        "(batch, query_len)")
    if mask is not None:
        mask = check_head_shape("mask", mask, batch, heads,
                                    query_length, key_length)
    if bias is not None:
        bias = check_head_shape("bias", bias, batch, heads,
                                    query_length, key_length)
    for name, table, size in (
            ("relative_key_table", relative_key_table, key_dim),
            ("relative_value_table", relative_value_table, value.shape[-1])):
        if table is not None:
            _check_table(name, table, heads, size)
    if alibi_slopes is not None:
        alibi_slopes = ops.cast(ops.convert_to_tensor(alibi_slopes),
                                "float32")
        if tuple(alibi_slopes.shape) != (heads,):
            raise ValueError(
                f"`alibi_slopes` must hold one slope per head, shape "
                f"({heads},), received: alibi_slopes.shape="
                f"{tuple(alibi_slopes.shape)}")

    dtype = ops.dtype(value)
    if "float16" in (ops.dtype(query), ops.dtype(key), dtype):
        query, key, value = (ops.cast(x, "float32")
                             for x in (query, key, value))
    if _blockwise_kernel():
        from keras_attention.ops import _blockwise_tf

        shape = ops.shape(key)
        key_valid = (ops.ones((shape[0], shape[1]), "bool")
                     if key_padding_mask is None
                     else ops.cast(key_padding_mask, "bool"))
        qshape = ops.shape(query)
        query_valid = (ops.ones((qshape[0], qshape[1]), "bool")
                       if query_padding_mask is None
                       else ops.cast(query_padding_mask, "bool"))
        groups = heads // key.shape[2] if None not in (
            heads, key.shape[2]) else 1
        if groups > 1:  # (B, S, K, .) -> (B, S, N, .), head n = k G + g
            key, value = (ops.repeat(x, groups, axis=2) for x in (key, value))
        output = _blockwise_tf.blockwise_attention(
            query, key, value, key_valid=key_valid, query_valid=query_valid,
            mask=None if mask is None else ops.cast(mask, "bool"),
            causal=causal, window=window, query_offset=query_offset,
            scale=float(scale), block_size=block_size, bias=bias,
            alibi_slopes=alibi_slopes, relative_key_table=relative_key_table,
            relative_value_table=relative_value_table, key_stride=key_stride)
    else:
        query_length, key_length = ops.shape(query)[1], ops.shape(key)[1]
        dense = dense_mask(query_length, key_length,
                           key_padding_mask=key_padding_mask,
                           query_padding_mask=query_padding_mask, mask=mask,
                           causal=causal, window=window,
                           query_offset=query_offset, key_stride=key_stride)
        if alibi_slopes is not None:
            # (N, T, S) -> (1, N, T, S)
            alibi = alibi_bias(alibi_slopes, query_length, key_length,
                               query_offset)[None]
            bias = alibi if bias is None else ops.cast(bias, "float32") + alibi
        if relative_key_table is not None:
            scaled = ops.cast(query, "float32") * scale
            relative = relative_logits_gather(
                scaled, ops.cast(relative_key_table, "float32"), key_length,
                query_offset=query_offset)  # (B, N, T, S)
            bias = (relative if bias is None
                    else ops.cast(bias, "float32") + relative)
        if value.shape[-1] == key_dim and relative_value_table is None:
            output = fused_attention(query, key, value, mask=dense,
                                     scale=scale, bias=bias)
        else:  # the fused kernels want one size for keys and values
            scores = scaled_dot_product_scores(query, key, scale)
            if bias is not None:
                scores = scores + ops.cast(bias, "float32")
            weights = ops.cast(masked_softmax(scores, dense), value.dtype)
            output = weighted_sum(weights, value)
            if relative_value_table is not None:
                output = output + ops.cast(relative_values_gather(
                    weights, ops.cast(relative_value_table, value.dtype),
                    query_offset=query_offset), output.dtype)
    return ops.cast(output, dtype)


def _blockwise_kernel():
    """Whether the TensorFlow kernel runs: on TensorFlow, outside XLA."""
    if keras.backend.backend() != "tensorflow":
        return False
    from keras_attention.ops import _blockwise_tf

    return not _blockwise_tf.in_xla_context()


def _check_table(name, table, heads, size):
    shape = tuple(table.shape)
    rows = shape[-2] if len(shape) in (2, 3) else None
    if (rows is None or rows % 2 == 0 or shape[-1] != size
            or (len(shape) == 3 and shape[0] != heads)):
        raise ValueError(
            f"`{name}` must have shape (2δ+1, {size}) or ({heads}, 2δ+1, "
            f"{size}), received: {name}.shape={shape}")


def dense_mask(query_length, key_length, *, key_padding_mask=None,
               query_padding_mask=None, mask=None, causal=False, window=None,
               query_offset=0, key_stride=1):
    """The `(B|1, N|1, T, S)` boolean mask `blockwise_attention` applies,
    expanded (for the backends that take a dense mask, and for tests).

    >>> from keras import ops
    >>> m = dense_mask(3, 3, causal=True, window=1)
    >>> ops.convert_to_numpy(m)[0, 0].astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [0, 1, 1]])
    >>> m = dense_mask(4, 2, causal=True, key_stride=2)  # keys of 2 positions
    >>> ops.convert_to_numpy(m)[0, 0].astype(int)
    array([[0, 0],
           [1, 0],
           [1, 0],
           [1, 1]])
    """
    strided = causal and key_stride > 1
    allowed = build_attention_mask(
        query_length, key_length, padding_mask=query_padding_mask,
        key_padding_mask=key_padding_mask,
        use_causal_mask=causal and not strided,
        query_offset=query_offset, window=window)  # (B|1, T|1, S) or None
    everything = ops.ones((1, 1, query_length, key_length), "bool")
    # (B|1, T|1, S) -> (B|1, 1, T, S) over heads
    allowed = (everything if allowed is None
               else ops.logical_and(everything, allowed[:, None]))
    if strided:  # (T, S) -> (1, 1, T, S)
        allowed = ops.logical_and(allowed, compressed_causal_mask(
            query_length, key_length, key_stride, query_offset)[None, None])
    if mask is not None:
        allowed = ops.logical_and(allowed, ops.cast(mask, "bool"))
    return allowed
