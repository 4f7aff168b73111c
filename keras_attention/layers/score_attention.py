"""`ScoreAttention`: the base of the single-head score-function family.

Letters: B batch, T query length, S key length, Dq/Dk/Dv feature sizes.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops


@keras.saving.register_keras_serializable(package="keras_attention")
class ScoreAttention(keras.layers.Layer):
    """Single-head attention with a pluggable score function.

    This base class owns everything but the scores: mask merging, the masked
    softmax (scores and softmax in float32 under any dtype policy), dropout
    on the weights and the weighted sum of the values. A variant overrides
    `score(query, key)` (and `build_scorer` when it has weights, and
    `prepare_key` when part of the score depends on the keys alone, so a
    decoder that attends the same memory at every step computes it once:
    pass `prepared_key=layer.prepare_key(key)` to each call). The
    variants in this package are `DotAttention`, `ScaledDotAttention`,
    `GeneralAttention` and `AdditiveAttention`.

    Args:
        dropout: float in [0, 1), dropout rate on the attention weights.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(batch, query_len, query_dim)`, or `(batch, query_dim)` for
            one query vector per example (the RNN decoder case).
        value: `(batch, key_len, value_dim)`.
        key: `(batch, key_len, key_dim)`; defaults to `value`.
        prepared_key: the result of `prepare_key(key)`, computed once and
            reused across calls over the same keys (an RNN decoder's steps);
            given, `key` is not used.
        padding_mask: `(batch, query_len)` boolean; False query rows attend
            to nothing and return zeros. Defaults to the Keras implicit mask
            of `query`.
        key_padding_mask: `(batch, key_len)` boolean; False keys are never
            attended. Defaults to the Keras implicit mask of `value`.
        attention_mask: `(batch, query_len, key_len)` boolean, or
            `(batch, key_len)` for a vector query.
        use_causal_mask: bool; query `i` attends only to keys `j <= i`.
        return_attention_scores: bool; also return the weights.
        training: bool; enables dropout.

    Returns:
        The context vectors `(batch, query_len, value_dim)` (or
        `(batch, value_dim)` for a vector query) and, if
        `return_attention_scores`, the weights `(batch, query_len, key_len)`
        (or `(batch, key_len)`). Masks: True means "may attend"; a query whose
        keys are all masked gets zero weights and a zero context vector.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import DotAttention
    >>> layer = DotAttention()
    >>> query = np.ones((2, 3, 4), "float32")
    >>> value = np.ones((2, 5, 4), "float32")
    >>> context, weights = layer(query, value, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 4), (2, 3, 5))
    """

    def __init__(self, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.dropout = _validation.rate("dropout", dropout)
        self.supports_masking = True

    def _check_inputs(self, query_shape, value_shape, key_shape):
        """Ranks, key/value lengths and, once built, the feature sizes."""
        _validation.rank(
            "query", query_shape, (2, 3),
            "(batch, query_len, query_dim) or (batch, query_dim)",
        )
        _validation.rank(
            "value", value_shape, (3,), "(batch, key_len, value_dim)"
        )
        _validation.rank("key", key_shape, (3,), "(batch, key_len, key_dim)")
        _validation.same_length(key_shape, value_shape)
        if self.built:
            for name, shape, size in (
                ("query", query_shape, self._query_dim),
                ("key", key_shape, self._key_dim),
            ):
                _validation.same_dim(
                    name, shape, -1, size,
                    f"the `{name}_dim` it was built with",
                )

    def _check_prepared(self, query_shape, value_shape, prepared_shape):
        """The inputs of a call with `prepared_key` (the layer is built)."""
        _validation.rank("prepared_key", prepared_shape, (3,),
                         "(batch, key_len, prepared_dim)")
        self._check_inputs(query_shape, value_shape,
                           tuple(prepared_shape[:-1]) + (self._key_dim,))
        _validation.same_dim(
            "prepared_key", prepared_shape, -1, self._prepared_dim,
            "the size `prepare_key` returns",
        )

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        self._check_inputs(query_shape, value_shape, key_shape)
        self._query_dim, self._key_dim = query_shape[-1], key_shape[-1]
        self._prepared_dim = key_shape[-1]  # what `prepare_key` returns
        self.build_scorer(query_shape, key_shape)
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )

    def build_scorer(self, query_shape, key_shape):
        """Check the shapes and create the score function's weights.

        Override when the score has weights or constraints; the shapes are
        `(B, T, Dq)` (or `(B, Dq)`) and `(B, S, Dk)`. A `prepare_key` that
        changes the key size sets `self._prepared_dim` here.
        """

    def prepare_key(self, key):
        """The part of the score that depends on the keys alone, in float32
        (identity by default): `(B, S, Dk)` -> `(B, S, K)`."""
        return ops.cast(key, "float32")

    def score(self, query, key):
        """The logits `(B, T, S)` for `query (B, T, Dq)` and the prepared
        `key (B, S, K)` (see `prepare_key`)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement `score(query, key)`."
        )

    def call(
        self,
        query,
        value,
        key=None,
        padding_mask=None,
        key_padding_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        prepared_key=None,
    ):
        key = value if key is None else key
        if prepared_key is None:
            self._check_inputs(query.shape, value.shape, key.shape)
        else:
            self._check_prepared(query.shape, value.shape, prepared_key.shape)
        if padding_mask is None:
            padding_mask = attention_ops.implicit_mask(query)
        if key_padding_mask is None:
            key_padding_mask = attention_ops.implicit_mask(value)

        batch, key_len = value.shape[0], value.shape[1]
        single_query = len(query.shape) == 2
        if single_query:
            if use_causal_mask:
                raise ValueError(
                    "`use_causal_mask=True` needs a query sequence, received "
                    f"a single query vector: query.shape={tuple(query.shape)}"
                )
            if padding_mask is not None:
                raise ValueError(
                    "`padding_mask` is for a query sequence, received a "
                    f"single query vector: query.shape={tuple(query.shape)}"
                )
            attention_mask = attention_ops.check_mask_shape(
                "attention_mask", attention_mask, (batch, key_len),
                "(batch, key_len)",
            )
            query = ops.expand_dims(query, 1)  # (B, 1, Dq)
            if attention_mask is not None:
                attention_mask = ops.expand_dims(attention_mask, 1)
        mask = attention_ops.resolve_attention_mask(
            query,
            key_len or ops.shape(key)[1],
            padding_mask=padding_mask,
            key_padding_mask=key_padding_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
        )
        # Scores in float32: half-precision dot products overflow easily.
        if prepared_key is None:
            prepared_key = self.prepare_key(ops.cast(key, "float32"))
        scores = self.score(
            ops.cast(query, "float32"), ops.cast(prepared_key, "float32")
        )  # (B, T, S)
        weights = attention_ops.masked_softmax(scores, mask)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = self.dropout_layer(weights, training=training)
        # (B, T, S) x (B, S, Dv) -> (B, T, Dv)
        context = ops.einsum("bts,bsd->btd", dropped, value)
        if single_query:
            context = ops.squeeze(context, 1)  # (B, Dv)
            weights = ops.squeeze(weights, 1)  # (B, S)
        if return_attention_scores:
            return context, weights
        return context

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout})
        return config
