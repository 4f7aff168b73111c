"""`ScoreAttention`: the base of the single-head score-function family.

Letters: B batch, T query length, S key length, Dq/Dk/Dv feature sizes.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops


def _describe(item):
    """A short text for an input or a mask (or, in `build`, a shape) in
    error messages: `<shape (2, 3, 4)>`, `None`, or a list of those."""
    if item is None:
        return "None"
    if hasattr(item, "shape"):
        item = tuple(item.shape)
    if isinstance(item, (list, tuple)):
        if any(isinstance(entry, int) for entry in item) and all(
            entry is None or isinstance(entry, int) for entry in item
        ):
            return f"<shape {tuple(item)}>"
        return "[" + ", ".join(_describe(entry) for entry in item) + "]"
    return repr(item)


def _is_shape_list(shape):
    """Whether `shape` is a list of shapes (the list form), not one shape."""
    return (
        isinstance(shape, (list, tuple))
        and len(shape) > 0
        and all(isinstance(entry, (list, tuple)) for entry in shape)
    )


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

    The layers take their inputs in two forms: ours, `layer(query, value,
    key=key, padding_mask=..., key_padding_mask=...)`, and Keras's (that of
    `keras.layers.Attention` and `AdditiveAttention`), `layer([query, value])`
    or `layer([query, value, key], mask=[query_mask, value_mask])`, so they
    are drop-in replacements for the Keras layers.

    Args:
        dropout: float in [0, 1), dropout rate on the attention weights.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(batch, query_len, query_dim)`, or `(batch, query_dim)` for
            one query vector per example (the RNN decoder case). Or, in the
            Keras form, the list `[query, value]` or `[query, value, key]`;
            then `value` and `key` are not given separately.
        value: `(batch, key_len, value_dim)`.
        key: `(batch, key_len, key_dim)`; defaults to `value`.
        padding_mask: `(batch, query_len)` boolean; False query rows attend
            to nothing and return zeros.
        key_padding_mask: `(batch, key_len)` boolean; False keys are never
            attended.
        attention_mask: `(batch, query_len, key_len)` boolean, or
            `(batch, key_len)` for a vector query.
        use_causal_mask: bool; query `i` attends only to keys `j <= i`.
        return_attention_scores: bool; also return the weights.
        training: bool; enables dropout.
        prepared_key: the result of `prepare_key(key)`, computed once and
            reused across calls over the same keys (an RNN decoder's steps);
            given, `key` is not used.
        mask: Keras's mask list, one entry (a mask or `None`) per input:
            `[query_mask, value_mask]` or `[query_mask, value_mask,
            key_mask]`. Keras fills it from the inputs' implicit masks when
            the list form is called without it.
        query_mask: `(batch, query_len)`, Keras's name for `padding_mask`.
        value_mask, key_mask: `(batch, key_len)`, Keras's names for
            `key_padding_mask` (as in `keras.layers.MultiHeadAttention`).

    Masks: boolean, True means "may attend". Every mask given applies: the
    query side is the logical AND of `padding_mask`, `query_mask` and
    `mask[0]`; the key side that of `key_padding_mask`, `value_mask`,
    `key_mask`, `mask[1]` and `mask[2]`. Where neither `query_mask` nor
    `mask[0]` is given, the Keras implicit mask of `query` (e.g. from
    `Embedding(mask_zero=True)` or `Masking`) stands in for them, and
    likewise for `value` and `key`: so an implicit mask applies in both
    forms, together with our explicit masks. The output carries the query's
    mask (`mask[0]`, else the implicit mask of `query`) as its implicit mask.

    Returns:
        The context vectors `(batch, query_len, value_dim)` (or
        `(batch, value_dim)` for a vector query) and, if
        `return_attention_scores`, the weights `(batch, query_len, key_len)`
        (or `(batch, key_len)`). A masked query row, and a query whose keys
        are all masked, get zero weights and a zero context vector.

    Quantization: `model.quantize(...)` passes over these layers (they hold
    a dropout sublayer, and Keras quantizes leaf layers only) and the score
    weights of `GeneralAttention` and `AdditiveAttention` stay float32: the
    scores are computed in float32, like the softmax, and the weights are
    small beside a model's projections, which are quantized.

    Differences from `keras.layers.Attention`, whose outputs are otherwise
    the same (tested): for a masked query row Keras returns as weights the
    softmax over the unmasked keys, this layer zeros (the output row is zero
    in both). For a query whose keys are all masked, Keras returns
    near-uniform weights over every key (its mask is a -1e9 bias) and so the
    mean of the values, this layer zero weights and a zero output. A key's
    mask (`mask[2]`, which Keras fills from an implicit mask of `key`)
    applies here; Keras ignores it. The list is passed positionally: its
    argument is named `query` here and `inputs` in Keras.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import DotAttention
    >>> layer = DotAttention()
    >>> query = np.ones((2, 3, 4), "float32")
    >>> value = np.ones((2, 5, 4), "float32")
    >>> context, weights = layer(query, value, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 4), (2, 3, 5))

    Keras's form gives what `keras.layers.Attention` gives, and what our
    form gives with `padding_mask` and `key_padding_mask`:

    >>> import keras
    >>> rng = np.random.default_rng(0)
    >>> query = rng.normal(size=(2, 3, 4)).astype("float32")
    >>> value = rng.normal(size=(2, 5, 4)).astype("float32")
    >>> query_mask = np.array([[True, True, True], [True, True, False]])
    >>> value_mask = np.array([[True] * 5, [True, True, True, False, False]])
    >>> ours = layer([query, value], mask=[query_mask, value_mask])
    >>> theirs = keras.layers.Attention()([query, value],
    ...                                   mask=[query_mask, value_mask])
    >>> bool(np.allclose(ours, theirs, atol=1e-6))
    True
    >>> same = layer(query, value, padding_mask=query_mask,
    ...              key_padding_mask=value_mask)
    >>> bool(np.allclose(ours, same))
    True

    In a model, Keras fills `mask` from the implicit masks, here those of
    `Embedding(mask_zero=True)`, and the output carries the query's mask to
    the pooling, so padding changes nothing:

    >>> tokens = keras.Input((None,), dtype="int32")
    >>> embedded = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    >>> attended = DotAttention()([embedded, embedded])
    >>> pooled = keras.layers.GlobalAveragePooling1D()(attended)
    >>> model = keras.Model(tokens, pooled)
    >>> padded = model(np.array([[3, 1, 0, 0]]))
    >>> bool(np.allclose(padded, model(np.array([[3, 1]]))))
    True
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

    def _split_inputs(self, query, value, key, is_list):
        """`(query, value, key)` from either call form: the Keras list
        `[query, value(, key)]` as `query` (`is_list`), or the three
        arguments. Works on tensors and, in `build`, on shapes."""
        if not is_list:
            if value is None:
                raise ValueError(
                    f"{type(self).__name__} needs a `value`: call it as "
                    "`layer(query, value)` or `layer([query, value])`, "
                    f"received: query={_describe(query)}, value=None"
                )
            return query, value, key
        if value is not None or key is not None:
            raise ValueError(
                "Give the inputs either as a list, `layer([query, value, "
                "key])` (the Keras form), or as arguments, `layer(query, "
                "value, key=key)`, not both: received a list as `query` and "
                f"value={_describe(value)}, key={_describe(key)}"
            )
        if len(query) not in (2, 3):
            raise ValueError(
                "The inputs list must be `[query, value]` or `[query, value, "
                f"key]`, received a list of {len(query)}: "
                f"query={_describe(query)}"
            )
        return (*query, None) if len(query) == 2 else tuple(query)

    def build(self, query_shape, value_shape=None, key_shape=None):
        # Keras passes the list form's shapes as one list in `query_shape`.
        query_shape, value_shape, key_shape = self._split_inputs(
            query_shape, value_shape, key_shape, _is_shape_list(query_shape)
        )
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

    def _mask_entries(self, mask, num_inputs):
        """Keras's `mask` list as `[query_mask, value_mask, key_mask]`."""
        if mask is None:
            return [None, None, None]
        if not isinstance(mask, (list, tuple)) or len(mask) not in (
            2, num_inputs,
        ):
            expected = "`[query_mask, value_mask]`"
            if num_inputs == 3:
                expected += " or `[query_mask, value_mask, key_mask]`"
            raise ValueError(
                f"`mask` must be a list {expected}, a mask or None per "
                f"input, received: mask={_describe(mask)}"
            )
        return list(mask) + [None] * (3 - len(mask))

    def call(
        self,
        query,
        value=None,
        key=None,
        padding_mask=None,
        key_padding_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        prepared_key=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
    ):
        is_list = isinstance(query, (list, tuple))
        if is_list and isinstance(query_mask, (list, tuple)):
            # Called with other tensor arguments, Keras fills `query_mask`
            # (not `mask`) with the list entries' implicit masks; they
            # apply below as the implicit masks of the entries.
            query_mask = None
        query, value, key = self._split_inputs(query, value, key, is_list)
        entry_masks = self._mask_entries(mask, 2 if key is None else 3)
        if query_mask is None and entry_masks[0] is None:
            query_mask = attention_ops.implicit_mask(query)
        if value_mask is None and entry_masks[1] is None:
            value_mask = attention_ops.implicit_mask(value)
        if key is not None and key_mask is None and entry_masks[2] is None:
            key_mask = attention_ops.implicit_mask(key)
        key = value if key is None else key
        if prepared_key is None:
            self._check_inputs(query.shape, value.shape, key.shape)
        else:
            self._check_prepared(query.shape, value.shape, prepared_key.shape)

        batch, key_len = value.shape[0], value.shape[1]
        query_masks = {
            "padding_mask": padding_mask,
            "query_mask": query_mask,
            "mask[0]": entry_masks[0],
        }
        key_padding_mask = attention_ops.merge_checked_masks(
            {
                "key_padding_mask": key_padding_mask,
                "value_mask": value_mask,
                "key_mask": key_mask,
                "mask[1]": entry_masks[1],
                "mask[2]": entry_masks[2],
            },
            (batch, key_len), "(batch, key_len)",
        )
        single_query = len(query.shape) == 2
        if single_query:
            if use_causal_mask:
                raise ValueError(
                    "`use_causal_mask=True` needs a query sequence, received "
                    f"a single query vector: query.shape={tuple(query.shape)}"
                )
            for name, given in query_masks.items():
                if given is not None:
                    raise ValueError(
                        f"`{name}` is for a query sequence, received a "
                        "single query vector: "
                        f"query.shape={tuple(query.shape)}"
                    )
            padding_mask = None
            attention_mask = attention_ops.check_mask_shape(
                "attention_mask", attention_mask, (batch, key_len),
                "(batch, key_len)",
            )
            query = ops.expand_dims(query, 1)  # (B, 1, Dq)
            if attention_mask is not None:
                attention_mask = ops.expand_dims(attention_mask, 1)
        else:
            padding_mask = attention_ops.merge_checked_masks(
                query_masks, tuple(query.shape[:2]), "(batch, query_len)"
            )
        attention = attention_ops.resolve_attention_mask(
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
        weights = attention_ops.masked_softmax(scores, attention)
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

    def compute_mask(self, inputs, mask=None):
        # Keras passes the `mask` list (given, or filled from the list
        # entries' implicit masks) or the implicit mask of `query`.
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        return None if mask is None else ops.convert_to_tensor(mask)

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout})
        return config
