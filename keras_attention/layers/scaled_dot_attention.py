"""`ScaledDotAttention`: Vaswani et al. (2017) scaled dot-product score."""

import math

import keras
from keras import ops

from keras_attention.layers.dot_attention import DotAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class ScaledDotAttention(DotAttention):
    """Attention with the score `e(q, k) = q . k / sqrt(d_k)`.

    Query and key must have the same feature size `d_k`. It computes what
    `keras.layers.Attention(use_scale=True)` computes with its learned scale
    fixed at `1 / sqrt(d_k)`, and takes Keras's call form too. See
    `ScoreAttention` for the call arguments, masks and returns.

    Args:
        dropout: float in [0, 1), dropout rate on the attention weights.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import ScaledDotAttention
    >>> layer = ScaledDotAttention()
    >>> query = np.ones((2, 3, 4), "float32")
    >>> value = np.ones((2, 5, 4), "float32")
    >>> tuple(layer(query, value, use_causal_mask=False).shape)
    (2, 3, 4)

    Reference:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017, eq. (1).
    """

    def score(self, query, key):
        scale = ops.cast(1.0 / math.sqrt(query.shape[-1]), query.dtype)
        return super().score(query * scale, key)
