"""`MemoryCompressedAttention`: self-attention over keys and values
shortened by a strided convolution (Liu et al., 2018).

Letters: B batch, T length, M compressed slots (ceil(T / c)), c the
compression factor, L cache length, N heads, H key size per head, V value
size per head, D features.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers.multi_head_self_attention import MultiHeadSelfAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class MemoryCompressedAttention(MultiHeadSelfAttention):
    """Multi-head self-attention whose keys and values are compressed.

    After the query, key and value projections, the keys and the values
    are each shortened by a strided convolution (kernel size and stride
    `compression`, Liu et al. use 3): every group of `c` consecutive
    positions becomes one slot, so the `T` queries attend `ceil(T / c)`
    slots and the attention costs O(T²/c) instead of O(T²). The
    convolution is computed as a dense layer over each group's `c·N·H`
    projected features (`key_compression` and `value_compression`; their
    kernels are `keras.layers.Conv1D(kernel_size=c, strides=c)`'s
    `(c, N·H, N·H)` reshaped to `(c·N·H, N·H)`). Groups start at position
    0 and the last one is padded with zeros.

    Causal (`causal=True`, or `use_causal_mask`): a query never sees a
    slot that summarises a later position; query `i` sees slot `m` when
    `m·c + c − 1 <= i`. The first `c − 1` positions see no slot, so their
    context is zero (in the paper's T-DMCA stack, local-attention layers
    carry them). Padding: padded positions are zeroed before the
    compression, a slot is attended when any of its positions is real,
    and padded queries get zero weights; so padding a sequence with
    masked positions changes nothing at its real positions.

    The attention over the slots is computed as `MultiHeadSelfAttention`
    computes its own (`attention_impl`): `"dense"` materialises the
    `(B, N, T, M)` weights; `"blockwise"` is `ops.blockwise_attention`
    with `key_stride=c` (slot `m` stands for positions `m·c .. m·c + c −
    1`, so the causal rule above is the op's), on TensorFlow exact
    attention over blocks of queries in memory linear in the length,
    causal blocks skipping the slots they never see; `"auto"` takes it
    when no weights are needed (no `return_attention_scores`, diversity
    penalty, or dropout in training) and either the backend is JAX or
    PyTorch (their fused kernels) or the sequence (the cache when
    decoding) has at least 1,024 positions and the queries more than
    one. The rule counts positions, not slots, so that the layer goes
    block-wise wherever `MultiHeadSelfAttention` over the same sequence
    does, and its memory stays at or below exact attention's at every
    length.

    Incremental decoding (`cache`, `cache_update_index`, as
    `MultiHeadSelfAttention`): the cache holds the uncompressed projected
    keys and values `(B, L, N, H)` (padded new positions written as
    zeros), and each step compresses the cache again (slots not yet
    complete are masked), so a step costs O(L·N·H·N·H) for the
    compression; decoding is causal only. The cache carries no key mask:
    a slot of padding only is attended there, where a full pass masks it.

    Args:
        num_heads: int, number of heads N.
        key_dim: int, size H of each head's queries and keys.
        compression: int c >= 1, the convolution's kernel size and stride
            (1: no compression, plain self-attention through a dense
            mixing of each position's keys and values).
        causal: bool, attend only to complete slots at or before the
            query.
        **kwargs: the other arguments of `MultiHeadSelfAttention`
            (`value_dim`, `dropout`, `use_bias`, `output_dim`,
            `head_merge`, `diversity_penalty`, `attention_impl`,
            initializers, regularizers);
            grouped heads, RoPE, ALiBi and sliding windows are not taken.

    Call arguments:
        inputs: `(batch, seq_len, dim)`.
        padding_mask: `(batch, seq_len)` boolean; defaults to the Keras
            implicit mask of `inputs`. With a cache it applies to the new
            query positions only.
        use_causal_mask: bool; `True` makes this call causal even if the
            layer is not.
        return_attention_scores: bool; also return the weights over the
            slots `(batch, num_heads, seq_len, slots)`.
        training: bool; enables dropout.
        cache: optional `(key_cache, value_cache)`, each `(batch, max_len,
            num_heads, head_size)`; requires `cache_update_index`.
        cache_update_index: where `inputs` starts in the cache.

    Returns:
        The output `(batch, seq_len, output_dim)`, then the weights if
        asked, then the updated cache if given. The input mask is
        propagated.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import MemoryCompressedAttention
    >>> layer = MemoryCompressedAttention(num_heads=2, key_dim=4,
    ...                                   compression=3, causal=True)
    >>> tokens = np.random.rand(2, 10, 8).astype("float32")
    >>> output, weights = layer(tokens, return_attention_scores=True)
    >>> tuple(output.shape), tuple(weights.shape)
    ((2, 10, 8), (2, 2, 10, 4))
    >>> float(np.abs(np.asarray(output)[:, :2]).max())  # no complete slot yet
    0.0

    The block-wise core computes the same attention over the slots:

    >>> blockwise = MemoryCompressedAttention(
    ...     num_heads=2, key_dim=4, compression=3, causal=True,
    ...     attention_impl="blockwise")
    >>> _ = blockwise(tokens)
    >>> _ = blockwise.set_weights(layer.get_weights())
    >>> bool(np.allclose(blockwise(tokens), output, atol=1e-5))
    True

    References:
        Liu et al. "Generating Wikipedia by Summarizing Long Sequences",
        ICLR 2018, section 3.2 (memory-compressed attention).
    """

    # The compressed core is its own: no grouped heads, window, RoPE or
    # ALiBi.
    _takes_position_options = False

    def __init__(self, num_heads, key_dim, compression=3, causal=False,
                 **kwargs):
        super().__init__(num_heads=num_heads, key_dim=key_dim, **kwargs)
        self.compression = _validation.positive_int("compression",
                                                    compression)
        self.causal = bool(causal)

    def build(self, inputs_shape):
        _validation.rank("inputs", inputs_shape, (3,), "(batch, seq_len, dim)")
        super().build(inputs_shape)
        value_dim = self.value_dim or self.key_dim
        self.key_compression = self._compression_dense(
            "key_compression", self.num_heads * self.key_dim)
        self.value_compression = self._compression_dense(
            "value_compression", self.num_heads * value_dim)

    def _compression_dense(self, name, features):
        layer = keras.layers.Dense(
            features,
            use_bias=self.use_bias,
            kernel_initializer=keras.initializers.get(
                keras.initializers.serialize(self.kernel_initializer)),
            bias_initializer=keras.initializers.get(
                keras.initializers.serialize(self.bias_initializer)),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            dtype=self.dtype_policy,
            name=name,
        )
        layer.build((None, None, self.compression * features))
        return layer

    def compress(self, projected, dense):
        """Projected keys or values `(B, T, N, H)` to slots `(B, M, N, H)`
        (the end zero-padded to a multiple of the compression)."""
        heads, size = projected.shape[2], projected.shape[3]
        flat = ops.reshape(projected, (ops.shape(projected)[0], -1,
                                       heads * size))  # (B, T, N·H)
        grouped = attention_ops.group_positions(
            flat, self.compression)  # (B, M, c·N·H)
        slots = dense(grouped)  # (B, M, N·H)
        return ops.reshape(slots, (ops.shape(slots)[0], -1, heads, size))

    def call(
        self,
        inputs,
        padding_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        cache=None,
        cache_update_index=None,
    ):
        _validation.rank("inputs", inputs.shape, (3,), "(batch, seq_len, dim)")
        self._check_inputs(inputs.shape, inputs.shape, inputs.shape)
        causal = self.causal or bool(use_causal_mask)
        if cache is not None:
            if cache_update_index is None:
                raise ValueError(
                    "Self-attention with a `cache` needs "
                    "`cache_update_index`, received: cache_update_index=None"
                )
            if not causal:
                raise ValueError(
                    "MemoryCompressedAttention decodes with a `cache` only "
                    "causally (`causal=True` or `use_causal_mask=True`), "
                    "received: causal=False, use_causal_mask=False"
                )
            self._check_cache(cache, cache_update_index, inputs.shape[1])
        if padding_mask is None:
            padding_mask = attention_ops.implicit_mask(inputs)
        padding_mask = attention_ops.check_mask_shape(
            "padding_mask", padding_mask, inputs.shape[:2],
            "(batch, seq_len)",
        )
        if padding_mask is None:
            padding_mask = ops.ones(ops.shape(inputs)[:2], "bool")
        offset = 0 if cache is None else cache_update_index

        query = self.query_dense(inputs)  # (B, T, N, H)
        key, value = self.compute_key_value(inputs)  # (B, T, N, H|V)
        # Padded positions are left out of the slots they fall in.
        keep = ops.cast(padding_mask, key.dtype)[:, :, None, None]
        key, value = key * keep, value * keep
        if cache is None:
            slot_valid = attention_ops.group_validity(
                padding_mask, self.compression)  # (B, M)
        else:
            key = attention_ops.update_cache(cache[0], key, offset)
            value = attention_ops.update_cache(cache[1], value, offset)
            cache = (key, value)  # (B, L, N, H|V)
            slot_valid = None  # the causal mask alone: no padding in a cache
        slot_key = self.compress(key, self.key_compression)  # (B, M, N, H)
        slot_value = self.compress(value, self.value_compression)

        # "auto" decides on the positions `key` holds (T, or the cache's
        # L), not the M slots: block-wise where exact attention would be.
        if self._blockwise_core(return_attention_scores, training, key,
                                inputs.shape[1]):
            context = attention_ops.blockwise_attention(
                query, slot_key, slot_value, key_padding_mask=slot_valid,
                query_padding_mask=padding_mask, causal=causal,
                query_offset=offset,
                key_stride=self.compression)  # (B, T, N, V)
            output = self._merge_heads(context)  # (B, T, D)
            return output if cache is None else (output, cache)

        mask = ops.expand_dims(padding_mask, -1)  # (B, T, 1)
        if slot_valid is not None:
            mask = ops.logical_and(mask, slot_valid[:, None, :])  # (B, T, M)
        if causal:
            length = inputs.shape[1] or ops.shape(inputs)[1]
            slots = slot_key.shape[1] or ops.shape(slot_key)[1]
            mask = ops.logical_and(mask, attention_ops.compressed_causal_mask(
                length, slots, self.compression, offset)[None])
        mask = ops.expand_dims(mask, 1)  # (B, 1, T, M) over heads
        scores = attention_ops.scaled_dot_product_scores(
            query, slot_key)  # (B, N, T, M)
        weights = attention_ops.masked_softmax(scores, mask)
        self._add_penalty(weights, padding_mask)
        weights, dropped = self._drop(weights, training)
        context = attention_ops.weighted_sum(dropped, slot_value)  # (B,T,N,V)
        output = self._merge_heads(context)  # (B, T, D)

        results = (output,)
        if return_attention_scores:
            results += (weights,)
        if cache is not None:
            results += (cache,)
        return results[0] if len(results) == 1 else results

    def get_config(self):
        config = super().get_config()
        config.update({"compression": self.compression,
                       "causal": self.causal})
        return config

