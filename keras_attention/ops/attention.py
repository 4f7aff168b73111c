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
        key: `(B, S, N, H)`.
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
    # (B, T, N, H) x (B, S, N, H) -> (B, N, T, S)
    return ops.cast(ops.einsum("btnh,bsnh->bnts", query, key), "float32")


def fused_attention(query, key, value, mask=None, scale=None):
    """`weighted_sum(masked_softmax(scaled_dot_product_scores(q, k), mask),
    v)` in one `keras.ops.dot_product_attention` call (the backend's fused
    kernel where it has one: cuDNN or flash attention on GPUs).

    Args:
        query: `(B, T, N, H)`.
        key: `(B, S, N, H)`.
        value: `(B, S, N, H)`.
        mask: boolean, broadcastable to `(B, N, T, S)`, or `None`.
        scale: a float; defaults to `1 / sqrt(H)`.

    Returns:
        `(B, T, N, H)` in the query's dtype. A query row whose keys are all
        masked gets a zero context, as with `masked_softmax`.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if mask is not None:
        mask = ops.cast(mask, "bool")
    context = ops.dot_product_attention(query, key, value, mask=mask,
                                        scale=scale)
    if mask is None:
        return context
    # (B|1, N|1, T, S) -> (B|1, T, N|1, 1): rows with a key to attend
    attends = ops.transpose(ops.any(mask, axis=-1, keepdims=True),
                            (0, 2, 1, 3))
    return context * ops.cast(attends, context.dtype)


def weighted_sum(weights, value):
    """Per-head context vectors `sum_s weights[..., s] * value[s]`.

    Args:
        weights: `(B, N, T, S)`.
        value: `(B, S, N, D)`.

    Returns:
        `(B, T, N, D)`.
    """
    # (B, N, T, S) x (B, S, N, D) -> (B, T, N, D)
    return ops.einsum("bnts,bsnd->btnd", weights, value)


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
