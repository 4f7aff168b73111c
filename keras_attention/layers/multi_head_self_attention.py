"""`MultiHeadSelfAttention`: multi-head attention of a sequence to itself."""

import keras

from keras_attention.layers.multi_head_attention import MultiHeadAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHeadSelfAttention(MultiHeadAttention):
    """Multi-head self-attention: query, key and value are one sequence.

    Takes the constructor arguments of `MultiHeadAttention` (`num_heads`,
    `key_dim`, `value_dim`, `dropout`, `use_bias`, `output_dim`,
    `head_merge`, `diversity_penalty`, initializers and regularizers, and
    the variants: `num_key_value_heads` for grouped-query attention,
    `sliding_window`, `rope_max_wavelength` for rotary embeddings,
    `alibi_bias_max` for ALiBi).

    Call arguments:
        inputs: `(batch, seq_len, dim)`.
        padding_mask: `(batch, seq_len)` boolean; masks the padded keys and
            gives the padded query rows zero weights. Defaults to the Keras
            implicit mask of `inputs`. With a `cache`, it applies to the new
            query positions only; mask cached keys with `attention_mask`.
        attention_mask: `(batch, seq_len, key_len)` boolean.
        use_causal_mask: bool; position `i` attends to positions `j <= i`.
        return_attention_scores: bool; also return the weights
            `(batch, num_heads, seq_len, key_len)`.
        training: bool; enables dropout.
        cache: optional `(key_cache, value_cache)`, each
            `(batch, max_len, key_value_heads, head_size)`, for incremental
            decoding; requires `cache_update_index`.
        cache_update_index: where `inputs` starts in the cache.
        attention_bias: float `(batch|1, num_heads|1, seq_len, key_len)`
            added to the scaled logits, or None.

    Returns:
        As `MultiHeadAttention`: the output `(batch, seq_len, output_dim)`,
        then the weights if asked, then the updated cache if given.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import MultiHeadSelfAttention
    >>> layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    >>> tokens = np.random.rand(2, 5, 8).astype("float32")
    >>> padding = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    >>> output = layer(tokens, padding_mask=padding, use_causal_mask=True)
    >>> tuple(output.shape)
    (2, 5, 8)

    Reference:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017.
    """

    def build(self, inputs_shape):
        super().build(inputs_shape, inputs_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        cache=None,
        cache_update_index=None,
        attention_bias=None,
    ):
        if cache is not None and cache_update_index is None:
            raise ValueError(
                "Self-attention with a `cache` needs `cache_update_index`, "
                "received: cache_update_index=None"
            )
        # `MultiHeadAttention.call` adds the implicit mask of `inputs` (as
        # the query's and, without a cache, the keys').
        return super().call(
            inputs,
            inputs,
            padding_mask=padding_mask,
            key_padding_mask=padding_mask if cache is None else None,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
            cache=cache,
            cache_update_index=cache_update_index,
            attention_bias=attention_bias,
        )
