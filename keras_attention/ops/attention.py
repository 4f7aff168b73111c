"""The attention core as pure functions on tensors (no weights).

Letters: B batch, N heads, T query length, S key length, H head size,
D value size.
"""

import math

from keras import ops

# A large negative logit for masked positions. Logits are float32 before
# masking (`masked_softmax` casts them), so this value is representable.
_MASKED_LOGIT = -0.7 * 3.4028235e38


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax over `axis` in float32 that ignores masked positions.

    Masked positions get weight 0. A row whose positions are all masked gets
    all-zero weights (not a uniform distribution and never NaN), so a fully
    padded query contributes nothing.

    Args:
        scores: logits of any float dtype, e.g. `(B, N, T, S)`.
        mask: boolean, broadcastable to `scores`; True means "may attend".
        axis: the axis to normalise over.

    Returns:
        float32 weights with the shape of `scores`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import masked_softmax
    >>> weights = masked_softmax(
    ...     np.zeros((2, 3), "float32"),
    ...     np.array([[True, True, False], [False, False, False]]))
    >>> ops.convert_to_numpy(weights)
    array([[0.5, 0.5, 0. ],
           [0. , 0. , 0. ]], dtype=float32)
    """
    scores = ops.cast(scores, "float32")
    if scores.shape[axis] == 1:
        # One key (the first decoding step): weight 1 unless masked.
        ones = ops.ones_like(scores)
        return ones if mask is None else ones * ops.cast(mask, "float32")
    if mask is None:
        return ops.softmax(scores, axis=axis)
    mask = ops.cast(mask, "bool")
    weights = ops.softmax(ops.where(mask, scores, _MASKED_LOGIT), axis=axis)
    # A fully masked row came out uniform: zero it (and every masked entry).
    return weights * ops.cast(mask, "float32")


def scaled_dot_product_scores(query, key, scale=None):
    """Per-head logits `q . k * scale`.

    Args:
        query: `(B, T, N, H)`.
        key: `(B, S, K, H)`, `K` dividing `N`: with fewer key heads than
            query heads (grouped-query attention), query head `n` meets
            key head `n // (N / K)`, as `keras.layers.GroupQueryAttention`
            pairs them.
        scale: a float; defaults to `1 / sqrt(H)`.

    Returns:
        `(B, N, T, S)` float32 logits. A float16 product is computed in
        float32 (a float16 dot product of moderately large vectors
        overflows to inf, and inf - inf in the softmax is NaN); a bfloat16
        one in bfloat16 (float32's range; the products accumulate in
        float32 on CPUs and GPUs), which is 1.6x faster on this CPU.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if "float16" in (ops.dtype(query), ops.dtype(key)):
        query, key = ops.cast(query, "float32"), ops.cast(key, "float32")
    query = ops.multiply(query, ops.cast(scale, ops.dtype(query)))
    groups = _groups(query, key)
    if groups == 1:
        # (B, T, N, H) x (B, S, N, H) -> (B, N, T, S)
        return ops.cast(ops.einsum("btnh,bsnh->bnts", query, key), "float32")
    batch, length, heads, size = ops.shape(query)
    # (B, T, N, H) -> (B, T, K, G, H), query head n = k * G + g
    query = ops.reshape(query, (batch, length, heads // groups, groups, size))
    # (B, T, K, G, H) x (B, S, K, H) -> (B, K, G, T, S) -> (B, N, T, S)
    scores = ops.einsum("btkgh,bskh->bkgts", query, key)
    scores = ops.reshape(scores, (batch, heads, length, ops.shape(key)[1]))
    return ops.cast(scores, "float32")


def _groups(query, key):
    """Query heads per key head, `N / K`, checked."""
    heads, key_heads = query.shape[2], key.shape[2]
    if heads is None or key_heads is None or heads == key_heads:
        return 1
    if heads % key_heads:
        raise ValueError(
            f"The key and value heads must divide the {heads} query heads, "
            f"received: key.shape={tuple(key.shape)}")
    return heads // key_heads


def fused_attention(query, key, value, mask=None, scale=None, bias=None):
    """`weighted_sum(masked_softmax(scaled_dot_product_scores(q, k) + bias,
    mask), v)` in one `keras.ops.dot_product_attention` call (the backend's
    fused kernel where it has one: cuDNN or flash attention on GPUs).

    Args:
        query: `(B, T, N, H)`.
        key: `(B, S, K, H)`, `K` dividing `N` (grouped-query attention).
        value: `(B, S, K, H)`.
        mask: boolean, broadcastable to `(B, N, T, S)`, or `None`.
        scale: a float; defaults to `1 / sqrt(H)`.
        bias: float, broadcastable to `(B, N, T, S)`, added to the scaled
            logits, or `None`.

    Returns:
        `(B, T, N, H)` in the query's dtype. A query row whose keys are all
        masked gets a zero context, as with `masked_softmax`.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if mask is not None:
        mask = ops.cast(mask, "bool")
    if bias is not None:
        bias = ops.cast(bias, query.dtype)
    allowed = mask
    if bias is not None and mask is not None:
        # PyTorch's kernel takes one of them: the mask folded into the
        # bias as a large finite negative (a row with no key is uniform
        # there and zeroed below, never NaN).
        blocked = -0.5 * _finite_max(ops.dtype(query))
        bias, mask = ops.where(mask, bias, ops.cast(blocked, bias.dtype)), None
    context = ops.dot_product_attention(query, key, value, bias=bias,
                                        mask=mask, scale=scale)
    if allowed is None:
        return context
    # (B|1, N|1, T, S) -> (B|1, T, N|1, 1): rows with a key to attend
    attends = ops.transpose(ops.any(allowed, axis=-1, keepdims=True),
                            (0, 2, 1, 3))
    return context * ops.cast(attends, context.dtype)


def _finite_max(dtype):
    """The largest finite value of a float dtype name."""
    return {"float16": 65504.0, "bfloat16": 3.38e38}.get(dtype, 3.4e38)


def weighted_sum(weights, value):
    """Per-head context vectors `sum_s weights[..., s] * value[s]`.

    Args:
        weights: `(B, N, T, S)`.
        value: `(B, S, K, D)`, `K` dividing `N` (grouped-query attention;
            head `n` reads value head `n // (N / K)`).

    Returns:
        `(B, T, N, D)`.
    """
    heads, value_heads = weights.shape[1], value.shape[2]
    if heads is None or value_heads is None or heads == value_heads:
        # (B, N, T, S) x (B, S, N, D) -> (B, T, N, D)
        return ops.einsum("bnts,bsnd->btnd", weights, value)
    if heads % value_heads:
        raise ValueError(
            f"The value heads must divide the {heads} heads of the weights, "
            f"received: value.shape={tuple(value.shape)}")
    groups = heads // value_heads
    batch, _, length, key_length = ops.shape(weights)
    # (B, N, T, S) -> (B, K, G, T, S)
    weights = ops.reshape(
        weights, (batch, value_heads, groups, length, key_length))
    # (B, K, G, T, S) x (B, S, K, D) -> (B, T, K, G, D) -> (B, T, N, D)
    context = ops.einsum("bkgts,bskd->btkgd", weights, value)
    return ops.reshape(context, (batch, length, heads, value.shape[-1]))


def head_diversity_penalty(weights, padding_mask=None):
    """The penalty ||A A^T - I||_F^2 of Lin et al. (2017), averaged.

    For every query position, `A` is the `(N, S)` matrix whose rows are the
    heads' attention distributions. The penalty is 0 when the heads attend to
    disjoint keys with one-hot rows, and grows as heads attend alike.

    Args:
        weights: `(B, N, T, S)` attention weights.
        padding_mask: optional `(B, T)` boolean; padded query positions are
            left out of the mean.

    Returns:
        A float32 scalar: the mean over the unmasked (batch, query) positions.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import head_diversity_penalty
    >>> same = np.full((1, 2, 1, 2), 0.5, "float32")  # two identical heads
    >>> float(head_diversity_penalty(same))  # ||[[.5,.5],[.5,.5]] - I||^2
    1.0
    """
    weights = ops.cast(weights, "float32")
    # (B, N, T, S) x (B, M, T, S) -> (B, T, N, M)
    gram = ops.einsum("bnts,bmts->btnm", weights, weights)
    identity = ops.eye(ops.shape(weights)[1], dtype="float32")
    # (B, T)
    per_position = ops.sum(ops.square(gram - identity), axis=(-2, -1))
    if padding_mask is None:
        return ops.mean(per_position)
    keep = ops.cast(padding_mask, "float32")
    return ops.sum(per_position * keep) / ops.maximum(ops.sum(keep), 1.0)
