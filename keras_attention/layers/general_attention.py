"""`GeneralAttention`: Luong et al. (2015) "general" (bilinear) score."""

import keras
from keras import ops

from keras_attention.layers.score_attention import ScoreAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class GeneralAttention(ScoreAttention):
    """Attention with the bilinear score `e(q, k) = q^T W k`.

    `W` is a learned `(query_dim, key_dim)` matrix, so query and key may have
    different sizes. See `ScoreAttention` for the call arguments, masks and
    returns.

    Args:
        kernel_initializer: initializer of `W`.
        kernel_regularizer: optional regularizer of `W`.
        dropout: float in [0, 1), dropout rate on the attention weights.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import GeneralAttention
    >>> layer = GeneralAttention()
    >>> query = np.ones((2, 3, 6), "float32")
    >>> value = np.ones((2, 5, 4), "float32")
    >>> tuple(layer(query, value).shape)
    (2, 3, 4)

    Reference:
        Luong, Pham, Manning. "Effective Approaches to Attention-based Neural
        Machine Translation", EMNLP 2015.
    """

    def __init__(
        self,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(dropout=dropout, **kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build_scorer(self, query_shape, key_shape):
        self.kernel = self.add_weight(
            name="kernel",
            shape=(query_shape[-1], key_shape[-1]),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )

    def score(self, query, key):
        # (B, T, Dq) x (Dq, Dk) x (B, S, Dk) -> (B, T, S)
        kernel = ops.cast(self.kernel, query.dtype)
        projected = ops.einsum("btq,qk->btk", query, kernel)
        return ops.einsum("btk,bsk->bts", projected, key)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
            }
        )
        return config
