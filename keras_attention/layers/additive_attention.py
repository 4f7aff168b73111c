"""`AdditiveAttention`: Bahdanau et al. (2015) with learned projections."""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers.score_attention import ScoreAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class AdditiveAttention(ScoreAttention):
    """Bahdanau attention: `e(q, k) = v^T tanh(W q + U k + b)`.

    `W (query_dim, units)`, `U (key_dim, units)`, `b (units,)` and
    `v (units,)` are learned. (Keras's `AdditiveAttention` has no `W`, `U`:
    it scores `sum(tanh(q + k))` and needs equal sizes; this layer takes its
    call form, `layer([query, value], mask=[query_mask, value_mask])`, so it
    can replace it, with other numbers.) The query may be one vector per
    example, as in an RNN decoder step, or a sequence. See `ScoreAttention`
    for the call arguments, masks and returns.

    Args:
        units: int, the size of the hidden layer of the score network.
        use_bias: bool, whether to learn `b`.
        kernel_initializer: initializer of `W`, `U` and `v`.
        bias_initializer: initializer of `b`.
        kernel_regularizer: optional regularizer of `W`, `U` and `v`.
        dropout: float in [0, 1), dropout rate on the attention weights.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import AdditiveAttention
    >>> layer = AdditiveAttention(units=8)
    >>> decoder_state = np.ones((2, 6), "float32")      # (batch, query_dim)
    >>> annotations = np.ones((2, 5, 4), "float32")     # (batch, S, dim)
    >>> context, weights = layer(decoder_state, annotations,
    ...                          return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 4), (2, 5))

    Reference:
        Bahdanau, Cho, Bengio. "Neural Machine Translation by Jointly Learning
        to Align and Translate", ICLR 2015, appendix A.1.2.
    """

    def __init__(
        self,
        units,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(dropout=dropout, **kwargs)
        self.units = _validation.positive_int("units", units)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build_scorer(self, query_shape, key_shape):
        def kernel(name, shape):
            return self.add_weight(
                name=name,
                shape=shape,
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
            )

        self.query_kernel = kernel(
            "query_kernel", (query_shape[-1], self.units)
        )
        self.key_kernel = kernel("key_kernel", (key_shape[-1], self.units))
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias", shape=(self.units,),
                initializer=self.bias_initializer,
            )
        self.score_kernel = kernel("score_kernel", (self.units,))
        self._prepared_dim = self.units  # prepare_key returns U k + b

    def prepare_key(self, key):
        # U k (+ b), once per memory: (B, S, Dk) -> (B, S, A), float32.
        key = ops.cast(key, "float32")
        key_part = ops.matmul(key, ops.cast(self.key_kernel, "float32"))
        if self.bias is not None:
            key_part = key_part + ops.cast(self.bias, "float32")
        return key_part

    def score(self, query, key):
        dtype = query.dtype  # float32: the base class scores in float32

        def weight(variable):
            return ops.cast(variable, dtype)

        # (B, T, Dq) -> (B, T, 1, A); the prepared keys (B, S, A) -> (B, 1, S, A)
        query_part = ops.expand_dims(
            ops.matmul(query, weight(self.query_kernel)), 2
        )
        hidden = query_part + ops.expand_dims(key, 1)  # (B, T, S, A)
        # (B, T, S, A) . (A,) -> (B, T, S)
        return ops.einsum(
            "btsa,a->bts", ops.tanh(hidden), weight(self.score_kernel)
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
            }
        )
        return config
