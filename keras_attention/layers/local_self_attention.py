"""`LocalSelfAttention`: restricted self-attention (Vaswani et al., 2017),
computed in blocks.

Letters: B batch, T length, G blocks, b block size, K keys per query
block, N heads, H key size per head, V value size per head, D features.
"""

import math

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers.multi_head_self_attention import MultiHeadSelfAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class LocalSelfAttention(MultiHeadSelfAttention):
    """Multi-head self-attention restricted to a window of neighbours.

    Position `i` attends only to positions `j` with `|i - j| <= window`
    (`i - window <= j <= i` when `causal`), the "restricted self-attention"
    of Vaswani et al. (2017), Table 1. It is computed in blocks: the
    sequence is cut into blocks of `block_size` positions (the end padded),
    and each query block attends to its own block and the
    `ceil(window / block_size)` blocks on each side (on the left only when
    causal), with the band mask inside. Time and memory grow as
    O(T·(window + block_size)·H) instead of O(T²·H); each query scores
    `K = (2m+1)·block_size` keys (`(m+1)·block_size` when causal),
    m = ceil(window / block_size).

    The weights are those of `MultiHeadSelfAttention` (same names and
    shapes), and the output equals `MultiHeadSelfAttention` given the band
    as `attention_mask`.

    Args:
        num_heads: int, number of heads N.
        key_dim: int, size H of each head's queries and keys.
        window: int r >= 1, the largest distance attended.
        causal: bool, attend only to the window on the left (and self).
        block_size: int >= 1, positions per block; defaults to `window`.
        **kwargs: the other arguments of `MultiHeadSelfAttention`
            (`value_dim`, `dropout`, `use_bias`, `output_dim`,
            `head_merge`, `diversity_penalty`, initializers, regularizers).

    Call arguments:
        inputs: `(batch, seq_len, dim)`; `seq_len` may be unknown.
        padding_mask: `(batch, seq_len)` boolean; defaults to the Keras
            implicit mask of `inputs`. Padded keys are never attended and
            padded query positions get zero weights (so a zero context).
        use_causal_mask: bool; `True` makes this call causal even if the
            layer is not (`causal=True` always is).
        return_attention_scores: bool; also return the blocked weights
            `(batch, num_heads, seq_len, K)`: entry `k` of query `i` is the
            weight of key `(i // block_size - m) * block_size + k`; keys
            outside the band or the sequence have weight 0.
        training: bool; enables dropout.

    Returns:
        The output `(batch, seq_len, output_dim)`, and the weights if
        `return_attention_scores`. Masks are boolean, True meaning "may
        attend"; the input mask is propagated.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import LocalSelfAttention
    >>> layer = LocalSelfAttention(num_heads=2, key_dim=4, window=2,
    ...                            causal=True)
    >>> tokens = np.random.rand(2, 7, 8).astype("float32")
    >>> output, weights = layer(tokens, return_attention_scores=True)
    >>> tuple(output.shape), tuple(weights.shape)
    ((2, 7, 8), (2, 2, 7, 4))

    References:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017, Table 1
        and section 4 (restricted self-attention).
        Parmar et al. "Image Transformer", ICML 2018 (local 1-D blocks).
    """

    # The local core is its own: no grouped heads, window, RoPE or ALiBi.
    _takes_position_options = False

    def __init__(self, num_heads, key_dim, window, causal=False,
                 block_size=None, **kwargs):
        super().__init__(num_heads=num_heads, key_dim=key_dim, **kwargs)
        self.window = _validation.positive_int("window", window)
        self.causal = bool(causal)
        self.block_size = _validation.optional_positive_int(
            "block_size", block_size
        )

    def build(self, inputs_shape):
        _validation.rank("inputs", inputs_shape, (3,), "(batch, seq_len, dim)")
        super().build(inputs_shape)

    def _geometry(self, causal):
        """Block size b and the blocks of memory before/after each block."""
        block = self.block_size or self.window
        before = attention_ops.blocks_needed(self.window, block)
        return block, before, 0 if causal else before

    def call(
        self,
        inputs,
        padding_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        _validation.rank("inputs", inputs.shape, (3,), "(batch, seq_len, dim)")
        self._check_inputs(inputs.shape, inputs.shape, inputs.shape)
        if padding_mask is None:
            padding_mask = attention_ops.implicit_mask(inputs)
        padding_mask = attention_ops.check_mask_shape(
            "padding_mask", padding_mask, inputs.shape[:2],
            "(batch, seq_len)",
        )
        causal = self.causal or bool(use_causal_mask)
        block, before, after = self._geometry(causal)
        length = inputs.shape[1] or ops.shape(inputs)[1]
        if padding_mask is None:
            padding_mask = ops.ones(ops.shape(inputs)[:2], "bool")

        def to_blocks(projected):  # (B, T, N, H) -> (B, N, G, b, H)
            heads_first = ops.transpose(projected, (0, 2, 1, 3))  # (B,N,T,H)
            return attention_ops.split_blocks(heads_first, block, axis=2)

        def to_memory(projected):  # (B, T, N, H) -> (B, N, G, K, H)
            return attention_ops.neighbour_blocks(
                to_blocks(projected), before, after, axis=2
            )

        query = to_blocks(self.query_dense(inputs))  # (B, N, G, b, H)
        key, value = self.compute_key_value(inputs)
        key, value = to_memory(key), to_memory(value)  # (B, N, G, K, H|V)
        query_valid, key_valid = attention_ops.blocked_validity(
            padding_mask, block, before, after
        )  # (B, G, b), (B, G, K)
        band = attention_ops.local_band_mask(
            block, self.window, before, after, causal
        )  # (b, K)
        scores = attention_ops.local_scores(
            query, key, 1.0 / math.sqrt(self.key_dim)
        )  # (B, N, G, b, K)
        # An additive mask: one add, no select; padded queries are
        # zeroed below instead of in the weights.
        weights = ops.softmax(
            scores + attention_ops.local_bias(key_valid, band), axis=-1
        )
        merged = None
        if self.diversity_penalty > 0.0 or return_attention_scores:
            # Padded queries attend to nothing. (B, N, G, b, K) -> (B, N, T, K)
            valid_rows = ops.cast(query_valid, weights.dtype)[:, None, :, :, None]
            merged = attention_ops.merge_blocks(
                weights * valid_rows, length, axis=2
            )
        self._add_penalty(merged, padding_mask)
        _, dropped = self._drop(weights, training)
        context = attention_ops.local_weighted_sum(dropped, value)
        # (B, N, G, b, V) -> (B, N, T, V) -> (B, T, N, V)
        context = attention_ops.merge_blocks(context, length, axis=2)
        context = ops.transpose(context, (0, 2, 1, 3))
        # A padded query's context is zero, as if it attended to nothing.
        context = context * ops.cast(padding_mask, context.dtype)[:, :, None, None]
        output = self._merge_heads(context)  # (B, T, D)
        if return_attention_scores:
            return output, ops.cast(merged, self.compute_dtype)
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "window": self.window,
                "causal": self.causal,
                "block_size": self.block_size,
            }
        )
        return config
