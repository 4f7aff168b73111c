"""`DotAttention`: Luong et al. (2015) "dot" score."""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers.score_attention import ScoreAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class DotAttention(ScoreAttention):
    """Attention with the dot-product score `e(q, k) = q . k`.

    Query and key must have the same feature size. It is a drop-in
    replacement for `keras.layers.Attention()` (`use_scale=False`): it takes
    Keras's call form, `layer([query, value], mask=[query_mask,
    value_mask])`, as well as ours. See `ScoreAttention` for the call
    arguments, masks, returns and the differences from Keras.

    Args:
        dropout: float in [0, 1), dropout rate on the attention weights.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import DotAttention
    >>> layer = DotAttention()
    >>> context = layer(np.ones((2, 4), "float32"), np.ones((2, 5, 4), "float32"))
    >>> tuple(context.shape)
    (2, 4)

    Reference:
        Luong, Pham, Manning. "Effective Approaches to Attention-based Neural
        Machine Translation", EMNLP 2015.
    """

    def build_scorer(self, query_shape, key_shape):
        _validation.same_dim(
            "key", key_shape, -1, query_shape[-1], "the query's feature size"
        )

    def score(self, query, key):
        # (B, T, D) x (B, S, D) -> (B, T, S)
        return ops.einsum("btd,bsd->bts", query, key)
