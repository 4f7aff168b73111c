"""`TransformerDecoder`: one decoder block of Vaswani et al. (2017).

Letters: B batch, T target length, S source length, L cache length,
N heads, H head size, D model size.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers._transformer_block import TransformerBlock
from keras_attention.layers.multi_head_attention import MultiHeadAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerDecoder(TransformerBlock):
    """Causal self-attention, cross-attention over the encoder output and a
    position-wise feed-forward network, each with dropout, a residual
    connection and layer normalization (after, or before with
    `normalize_first=True`).

    The cross-attention sub-layer exists when the layer is built with an
    encoder sequence; without one the block is a decoder-only (GPT-style)
    block. With the same weights it computes what
    `keras_hub.layers.TransformerDecoder` computes at unpadded positions, and
    it can also return the cross-attention weights.

    Incremental decoding: start from `initial_cache(...)`, which holds the
    self-attention keys/values (zeros, to be filled) and the cross-attention
    keys/values of the encoder output (computed once). Each call with
    `cache` and `cache_update_index=t` projects only the new positions,
    writes them at `t` and attends the cache, so a step costs one position's
    projections and one row of attention instead of re-running the prefix.

    The arguments are those of `TransformerEncoder`: `intermediate_dim`,
    `num_heads`, `key_dim`,
    `dropout`, `activation`, `layer_norm_epsilon`, `normalize_first`,
    `kernel_initializer`, `bias_initializer` and `self_attention` (the
    causal self-attention: `None` for a `MultiHeadSelfAttention`, or a
    layer such as `RelativeAttention`, or its config dict). The
    cross-attention is always a `MultiHeadAttention` from `num_heads`,
    `key_dim`, `dropout` and the initializers. Incremental decoding
    needs a self-attention that takes `cache` and `cache_update_index`
    and has `num_heads` and `key_dim` (and `value_dim`) attributes, as
    `MultiHeadSelfAttention` and `RelativeAttention` do;
    `LocalSelfAttention` decodes full passes only.

    Call arguments:
        decoder_sequence: `(batch, target_len, dim)`.
        encoder_sequence: `(batch, source_len, encoder_dim)`; may be `None`
            when the cache holds the cross-attention keys/values.
        decoder_padding_mask: `(batch, target_len)` boolean; defaults to the
            Keras implicit mask of `decoder_sequence`.
        decoder_attention_mask: `(batch, target_len, key_len)` boolean, for
            the self-attention.
        encoder_padding_mask: `(batch, source_len)` boolean; defaults to the
            Keras implicit mask of `encoder_sequence`.
        encoder_attention_mask: `(batch, target_len, source_len)` boolean.
        use_causal_mask: bool, True by default.
        cache: the dict from `initial_cache` (or from the previous step).
        cache_update_index: int or scalar tensor, where `decoder_sequence`
            starts in the cache.
        return_attention_scores: bool; also return the cross-attention
            weights `(batch, num_heads, target_len, source_len)`.
        return_self_attention_scores: bool; also return the
            self-attention weights as the layer gives them, `(batch,
            num_heads, target_len, key_len)` for the default and
            `RelativeAttention` (key_len is target_len in a full pass, the
            cache length with a cache). Off by default: the weights are
            then not asked for.
        training: bool; enables dropout.

    Returns:
        `outputs (batch, target_len, dim)`; then the cross-attention weights
        if `return_attention_scores`; then the self-attention weights if
        `return_self_attention_scores`; then the updated cache if `cache`
        was given (a tuple when there is more than one item).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import TransformerDecoder
    >>> decoder = TransformerDecoder(intermediate_dim=32, num_heads=2)
    >>> target = np.random.rand(2, 4, 16).astype("float32")
    >>> source = np.random.rand(2, 6, 16).astype("float32")
    >>> outputs, cross = decoder(target, source, return_attention_scores=True)
    >>> tuple(outputs.shape), tuple(cross.shape)
    ((2, 4, 16), (2, 2, 4, 6))
    >>> cache = decoder.initial_cache(source, max_length=4)
    >>> step, cache = decoder(target[:, :1], cache=cache, cache_update_index=0)
    >>> bool(np.allclose(step[:, 0], outputs[:, 0], atol=1e-5))
    True

    A relative-position self-attention (the cross-attention stays plain),
    here over an encoder of another size:

    >>> from keras_attention.layers import RelativeAttention
    >>> relative = TransformerDecoder(
    ...     intermediate_dim=32, num_heads=2,
    ...     self_attention=RelativeAttention(num_heads=2, key_dim=8,
    ...                                      max_relative_position=4))
    >>> wide_source = np.random.rand(2, 6, 24).astype("float32")
    >>> outputs = relative(target, wide_source)
    >>> cache = relative.initial_cache(wide_source, max_length=4)
    >>> step, cache = relative(target[:, :1], cache=cache,
    ...                        cache_update_index=0)
    >>> bool(np.allclose(step[:, 0], outputs[:, 0], atol=1e-5))
    True

    References:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017, 3.1.
        Shaw et al. "Self-Attention with Relative Position
        Representations", NAACL 2018.
    """

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        _validation.rank(
            "decoder_sequence", decoder_sequence_shape, (3,),
            "(batch, target_len, dim)",
        )
        hidden_dim = decoder_sequence_shape[-1]
        self._build_self_attention(decoder_sequence_shape)
        self.cross_attention = None
        if encoder_sequence_shape is not None:
            _validation.rank(
                "encoder_sequence", encoder_sequence_shape, (3,),
                "(batch, source_len, dim)",
            )
            self.cross_attention = self._attention(
                MultiHeadAttention, "cross_attention", hidden_dim
            )
            self.cross_attention.build(
                decoder_sequence_shape, encoder_sequence_shape
            )
            self.cross_attention_layer_norm = self._layer_norm(
                "cross_attention_layer_norm", decoder_sequence_shape
            )
            self.cross_attention_dropout = self._dropout(
                "cross_attention_dropout"
            )
        self._build_feedforward(decoder_sequence_shape)

    def initial_cache(self, encoder_sequence=None, max_length=None,
                      batch_size=None):
        """The cache to start incremental decoding with.

        Args:
            encoder_sequence: `(batch, source_len, encoder_dim)`, required
                when the block has cross-attention; its keys/values are
                computed here once.
            max_length: int, the number of target positions to decode.
            batch_size: needed only without `encoder_sequence`.

        Returns:
            A dict: `"self_attention"`: `(key, value)` zeros
            `(B, max_length, K, H)` and `(B, max_length, K, V)`, with the
            self-attention layer's key/value heads `K` (`num_heads`, or
            `num_key_value_heads` when it has fewer), `key_dim` and
            `value_dim`;
            `"cross_attention"`: `(key, value)` `(B, S, N, H)` (absent
            without cross-attention).

        Raises:
            ValueError: if the self-attention layer cannot decode with a
                cache (its `call` takes no `cache`, e.g.
                `LocalSelfAttention`).
        """
        if not self.built:
            raise ValueError(
                "Call the layer once (or `build` it) before `initial_cache`."
            )
        max_length = _validation.positive_int_or_tensor("max_length", max_length)
        cache = {}
        if self.cross_attention is not None:
            if encoder_sequence is None:
                raise ValueError(
                    "This decoder has cross-attention, so `initial_cache` "
                    "needs `encoder_sequence`, received: encoder_sequence=None"
                )
            _validation.rank(
                "encoder_sequence", encoder_sequence.shape, (3,),
                "(batch, source_len, encoder_dim)",
            )
            _validation.same_dim(
                "encoder_sequence", encoder_sequence.shape, -1,
                self.cross_attention.key_dense.kernel.shape[0],
                "the `encoder_dim` the decoder was built with",
            )
            cache["cross_attention"] = self.cross_attention.compute_key_value(
                encoder_sequence
            )
            batch_size = ops.shape(encoder_sequence)[0]
        else:
            batch_size = _validation.positive_int_or_tensor("batch_size", batch_size)
        num_heads, key_dim, value_dim = self._self_attention_cache_sizes()
        keys = ops.zeros((batch_size, max_length, num_heads, key_dim),
                         dtype=self.compute_dtype)  # (B, L, K, H)
        values = ops.zeros((batch_size, max_length, num_heads, value_dim),
                           dtype=self.compute_dtype)  # (B, L, K, V)
        cache["self_attention"] = (keys, values)
        return cache

    def _self_attention_cache_sizes(self):
        """`(num_heads, key_dim, value_dim)` of the self-attention cache,
        read from the layer (the `MultiHeadSelfAttention` attributes)."""
        self._require("cache", "Incremental decoding (`initial_cache`)")
        sizes = [getattr(self.self_attention, name, None)
                 for name in ("num_heads", "key_dim", "value_dim")]
        # grouped-query attention caches its key/value heads only
        sizes[0] = getattr(self.self_attention, "key_value_heads", sizes[0])
        if sizes[0] is None or sizes[1] is None:
            raise ValueError(
                "Incremental decoding (`initial_cache`) reads the cache "
                "shape from the self-attention's `num_heads` and `key_dim` "
                "(and `value_dim`), received: self_attention of type "
                f"{type(self.self_attention).__name__} with "
                f"num_heads={sizes[0]!r}, key_dim={sizes[1]!r}"
            )
        return sizes[0], sizes[1], sizes[2] or sizes[1]

    def _check_masks(self, decoder_sequence, encoder_sequence, cache,
                     **masks):
        """Name the decoder's own mask arguments in shape errors."""
        batch, target_len = decoder_sequence.shape[0], decoder_sequence.shape[1]
        key_len = target_len
        if cache is not None:
            key_len = cache["self_attention"][0].shape[1]
        source_len = None
        if cache is not None and "cross_attention" in cache:
            source_len = cache["cross_attention"][0].shape[1]
        elif encoder_sequence is not None:
            source_len = encoder_sequence.shape[1]
        expected = {
            "decoder_padding_mask": ((batch, target_len),
                                     "(batch, target_len)"),
            "decoder_attention_mask": ((batch, target_len, key_len),
                                       "(batch, target_len, target_len)"),
            "encoder_padding_mask": ((batch, source_len),
                                     "(batch, source_len)"),
            "encoder_attention_mask": ((batch, target_len, source_len),
                                       "(batch, target_len, source_len)"),
        }
        for name, mask in masks.items():
            shape, text = expected[name]
            attention_ops.check_mask_shape(name, mask, shape, text)

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        decoder_attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        use_causal_mask=True,
        cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        return_self_attention_scores=False,
        training=None,
    ):
        cross_cache = None if cache is None else cache.get("cross_attention")
        has_encoder = encoder_sequence is not None or cross_cache is not None
        if self.cross_attention is None and has_encoder:
            raise ValueError(
                "This decoder was built without an encoder sequence, so it "
                "has no cross-attention, received an `encoder_sequence` (or "
                "a cross-attention cache)."
            )
        if self.cross_attention is not None and not has_encoder:
            raise ValueError(
                "This decoder has cross-attention and needs "
                "`encoder_sequence` (or a cache from `initial_cache`), "
                "received: encoder_sequence=None"
            )
        if return_attention_scores and self.cross_attention is None:
            raise ValueError(
                "`return_attention_scores=True` returns the cross-attention "
                "weights, but this decoder has no cross-attention."
            )
        if cache is not None and cache_update_index is None:
            raise ValueError(
                "Decoding with a `cache` needs `cache_update_index`, "
                "received: cache_update_index=None"
            )
        if decoder_padding_mask is None:
            decoder_padding_mask = attention_ops.implicit_mask(
                decoder_sequence
            )
        if encoder_padding_mask is None and encoder_sequence is not None:
            encoder_padding_mask = attention_ops.implicit_mask(
                encoder_sequence
            )

        self._check_masks(
            decoder_sequence, encoder_sequence, cache,
            decoder_padding_mask=decoder_padding_mask,
            decoder_attention_mask=decoder_attention_mask,
            encoder_padding_mask=encoder_padding_mask,
            encoder_attention_mask=encoder_attention_mask,
        )

        # Causal self-attention, incremental when a cache is given.
        x = self._pre_norm(decoder_sequence, self.self_attention_layer_norm)
        attended = self._call_self_attention(
            x, decoder_padding_mask, decoder_attention_mask, use_causal_mask,
            return_self_attention_scores, training,
            cache=None if cache is None else cache["self_attention"],
            cache_update_index=cache_update_index,
        )  # output[, weights][, cache]
        self_scores = None
        if return_self_attention_scores:
            attended, self_scores, *self_cache = attended
        elif cache is not None:
            attended, *self_cache = attended
        if cache is not None:
            cache = dict(cache, self_attention=self_cache[0])
        x = self._residual(
            decoder_sequence, attended, self.self_attention_layer_norm,
            self.self_attention_dropout, training,
        )

        # Cross-attention over the encoder output (keys computed once).
        scores = None
        if self.cross_attention is not None:
            y = self._pre_norm(x, self.cross_attention_layer_norm)
            # With a cache, the keys/values are the cached projections of
            # the encoder output: there is no value sequence to pass.
            attended = self.cross_attention(
                y,
                value=encoder_sequence if cross_cache is None else None,
                padding_mask=decoder_padding_mask,
                key_padding_mask=encoder_padding_mask,
                attention_mask=encoder_attention_mask,
                return_attention_scores=return_attention_scores,
                training=training,
                cache=cross_cache,
            )  # output[, weights][, cache as given]
            if return_attention_scores:
                attended, scores = attended[:2]
            elif cross_cache is not None:
                attended = attended[0]
            x = self._residual(
                x, attended, self.cross_attention_layer_norm,
                self.cross_attention_dropout, training,
            )

        outputs = self._feedforward(x, training)
        results = (outputs,)
        if return_attention_scores:
            results += (scores,)
        if return_self_attention_scores:
            results += (self_scores,)
        if cache is not None:
            results += (cache,)
        return results[0] if len(results) == 1 else results
