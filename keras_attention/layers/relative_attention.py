"""`RelativeAttention`: self-attention with relative position representations
(Shaw et al., 2018), computed with Music Transformer's skew (Huang et al.,
2018) where it applies.

Letters: B batch, T query length, S key length, N heads, H key size per
head, V value size per head, R = 2δ+1 table rows.
"""

import math

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers.multi_head_self_attention import MultiHeadSelfAttention

RELATIVE_LOGITS = ("auto", "skew", "gather")


@keras.saving.register_keras_serializable(package="keras_attention")
class RelativeAttention(MultiHeadSelfAttention):
    """Multi-head self-attention that sees how far apart two positions are.

    Every clipped distance `d = clip(j - i, -δ, δ)` has a learned key
    embedding `a^K_d` (and, with `relative_values=True`, a value embedding
    `a^V_d`); the logits and outputs become

        e_ij = q_i · (k_j + a^K_ij) / sqrt(H),   z_i = Σ_j α_ij (v_j + a^V_ij).

    Distances beyond δ share the edge embeddings, so the layer handles any
    length. The tables are `(2δ+1, H)` shared by the heads, or
    `(num_heads, 2δ+1, H)` with `per_head_tables=True`. Nothing of size
    `(B, N, T, S, H)` is built: the relative term comes either from the
    skew (pad, reshape, slice of `Q·Eᵀ`, dense operations and O(T·H) extra
    memory for the expanded table) or from a gather with one `(T, S)` index
    shared by the batch and heads. The skew applies to a whole sequence
    (queries and keys the same positions); cached decoding uses the gather
    with absolute positions, computing only the new positions' rows. From
    1,024 keys on TensorFlow (`attention_impl="auto"`, as
    `MultiHeadAttention`; with `"blockwise"` on every backend) the core is
    `ops.blockwise_attention` with the tables: on TensorFlow each block
    of queries meets only the table rows of its distances, so no `(T, S)`
    tensor is built and long sequences take memory linear in the length.

    Args:
        num_heads: int, number of heads N.
        key_dim: int, size H of each head's queries and keys.
        max_relative_position: int δ >= 1, the largest distance with its own
            embedding.
        relative_values: bool, also add relative embeddings to the values.
        per_head_tables: bool, one table per head instead of one shared.
        relative_logits: how the dense core computes the relative terms:
            `"auto"` (the skew for a whole sequence, the gather with a
            cache), `"skew"` (the same, but an error with a cache) or
            `"gather"` (always the gather). The block-wise core (see
            `attention_impl`) computes them block by block, in memory
            linear in the length.
        embeddings_initializer, embeddings_regularizer: for the tables.
        **kwargs: the other arguments of `MultiHeadSelfAttention`
            (`value_dim`, `dropout`, `use_bias`, `output_dim`,
            `head_merge`, `diversity_penalty`, initializers, regularizers).

    Call arguments:
        inputs: `(batch, seq_len, dim)`.
        padding_mask: `(batch, seq_len)` boolean; defaults to the Keras
            implicit mask of `inputs`.
        attention_mask: `(batch, seq_len, key_len)` boolean.
        use_causal_mask: bool; position `i` attends to positions `j <= i`.
        return_attention_scores: bool; also return the weights
            `(batch, num_heads, seq_len, key_len)`.
        training: bool; enables dropout.
        cache: optional `(key_cache, value_cache)`, each
            `(batch, max_len, key_value_heads, head_size)`, for incremental
            decoding; requires `cache_update_index`.
        cache_update_index: where `inputs` starts in the cache, which is
            also its absolute position for the relative distances.

    Returns:
        As `MultiHeadSelfAttention`: the output `(batch, seq_len,
        output_dim)`, then the weights if asked, then the updated cache if
        given. Masks are boolean, True meaning "may attend", and combine as
        in `MultiHeadSelfAttention`: padded keys are never attended and
        padded query rows get zero weights.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import RelativeAttention
    >>> layer = RelativeAttention(num_heads=2, key_dim=4,
    ...                           max_relative_position=3,
    ...                           relative_values=True)
    >>> tokens = np.random.rand(2, 5, 8).astype("float32")
    >>> full = layer(tokens, use_causal_mask=True)
    >>> tuple(full.shape), tuple(layer.key_relative_embeddings.shape)
    ((2, 5, 8), (7, 4))
    >>> zeros = np.zeros((2, 5, 2, 4), "float32")
    >>> first, cache = layer(tokens[:, :1], use_causal_mask=True,
    ...                      cache=(zeros, zeros), cache_update_index=0)
    >>> bool(np.allclose(first[:, 0], full[:, 0], atol=1e-5))
    True

    References:
        Shaw, Uszkoreit, Vaswani. "Self-Attention with Relative Position
        Representations", NAACL 2018.
        Huang et al. "Music Transformer: Generating Music with Long-Term
        Structure", 2018 (ICLR 2019), section 3.4.1 (the skew).
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        max_relative_position,
        relative_values=False,
        per_head_tables=False,
        relative_logits="auto",
        embeddings_initializer="glorot_uniform",
        embeddings_regularizer=None,
        **kwargs,
    ):
        super().__init__(num_heads=num_heads, key_dim=key_dim, **kwargs)
        self.max_relative_position = _validation.positive_int(
            "max_relative_position", max_relative_position
        )
        self.relative_values = bool(relative_values)
        self.per_head_tables = bool(per_head_tables)
        self.relative_logits = _validation.choice(
            "relative_logits", relative_logits, RELATIVE_LOGITS
        )
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
        )
        self.embeddings_regularizer = keras.regularizers.get(
            embeddings_regularizer
        )

    def _table(self, name, size):
        shape = (2 * self.max_relative_position + 1, size)  # (R, size)
        if self.per_head_tables:
            shape = (self.num_heads,) + shape  # (N, R, size)
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=keras.initializers.get(
                keras.initializers.serialize(self.embeddings_initializer)
            ),
            regularizer=self.embeddings_regularizer,
            # Cast explicitly: the key logits use the float32 table.
            autocast=False,
        )

    def build(self, inputs_shape):
        super().build(inputs_shape)
        self.key_relative_embeddings = self._table(
            "key_relative_embeddings", self.key_dim
        )
        self.value_relative_embeddings = None
        if self.relative_values:
            self.value_relative_embeddings = self._table(
                "value_relative_embeddings", self.value_dim or self.key_dim
            )

    def _use_skew(self, query_offset):
        """The skew needs queries and keys at the same positions."""
        if self.relative_logits == "gather":
            return False
        if query_offset is None:
            return True
        if self.relative_logits == "skew":
            raise ValueError(
                "`relative_logits='skew'` needs the queries and keys at the "
                "same positions, so it cannot decode with a cache; use "
                "'auto' or 'gather', received: "
                f"cache_update_index={query_offset!r}"
            )
        return False

    def _blockwise_supported(self):
        return True

    def _blockwise_options(self):
        """The tables, for the block-wise core's relative terms."""
        return {"relative_key_table": self.key_relative_embeddings,
                "relative_value_table": self.value_relative_embeddings}

    def _attention_scores(self, projected_query, projected_key,
                          query_offset=None, use_causal_mask=False):
        scores = super()._attention_scores(projected_query, projected_key)
        scale = 1.0 / math.sqrt(self.key_dim)
        query = ops.cast(projected_query, "float32") * scale  # (B, T, N, H)
        table = ops.cast(self.key_relative_embeddings, "float32")
        if self._use_skew(query_offset):
            relative = attention_ops.relative_logits_skew(
                query, table, causal=use_causal_mask
            )
        else:
            relative = attention_ops.relative_logits_gather(
                query, table, ops.shape(projected_key)[1],
                query_offset=0 if query_offset is None else query_offset,
            )
        return scores + relative  # (B, N, T, S)

    def _attend(self, weights, projected_value, query_offset=None,
                use_causal_mask=False):
        context = super()._attend(weights, projected_value)  # (B, T, N, V)
        if not self.relative_values:
            return context
        table = ops.cast(self.value_relative_embeddings, weights.dtype)
        if self._use_skew(query_offset):
            relative = attention_ops.relative_values_skew(
                weights, table, causal=use_causal_mask
            )
        else:
            relative = attention_ops.relative_values_gather(
                weights, table,
                query_offset=0 if query_offset is None else query_offset,
            )
        return context + ops.cast(relative, context.dtype)  # (B, T, N, V)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_relative_position": self.max_relative_position,
                "relative_values": self.relative_values,
                "per_head_tables": self.per_head_tables,
                "relative_logits": self.relative_logits,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "embeddings_regularizer": keras.regularizers.serialize(
                    self.embeddings_regularizer
                ),
            }
        )
        return config
