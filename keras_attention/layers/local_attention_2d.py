"""`LocalAttention2D`: Image Transformer local 2-D attention (Parmar et al.,
2018).

Letters: B batch, H/W image height/width, G query blocks, Q pixels per query
block, M pixels per memory block, N heads, K key size per head, V value
size per head, D features.
"""

import math

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers.multi_head_self_attention import MultiHeadSelfAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class LocalAttention2D(MultiHeadSelfAttention):
    """Multi-head self-attention of an image over local 2-D blocks.

    The image is cut into query blocks of `query_block = (h, w)` pixels,
    taken in raster order (the image padded at the bottom and right when
    its size is not a multiple of the block). Each query block attends to
    a memory block that extends it by `memory_flange = (fh, fw)`: `fh` rows
    above, `fw` columns on the left and on the right, and, unless `masked`,
    `fh` rows below. Pixels outside the image are never attended. Each
    query scores `M = (fh + h [+ fh])·(fw + w + fw)` keys, so time and
    memory grow as O(H·W·M·K), not O((H·W)²·K).

    With `masked=True` (generation), a pixel sees only pixels at or before
    it in the Image Transformer's generation order, query blocks in raster
    order and pixels in raster order inside a block: the top flange, the
    left flange, and its own block up to itself (not the right flange).
    The weights are those of `MultiHeadSelfAttention` applied to the
    flattened image, and the output equals it given the equivalent
    `(H·W, H·W)` attention mask.

    Args:
        num_heads: int, number of heads N.
        key_dim: int, size K of each head's queries and keys.
        query_block: pair of ints >= 1, `(h, w)`.
        memory_flange: pair of ints >= 0, `(fh, fw)`.
        masked: bool, the generation mask above.
        **kwargs: the other arguments of `MultiHeadSelfAttention`
            (`value_dim`, `dropout`, `use_bias`, `output_dim`,
            `head_merge`, `diversity_penalty`, initializers, regularizers).

    Call arguments:
        inputs: `(batch, height, width, channels)`.
        padding_mask: `(batch, height, width)` boolean, True at real pixels;
            defaults to the Keras implicit mask of `inputs`. Masked pixels
            are never attended and get zero weights themselves.
        return_attention_scores: bool; also return the blocked weights
            `(batch, num_heads, G, Q, M)`: query block `g` (raster order),
            pixel `q` in it and memory pixel `m` (raster order in the memory
            block starting `fh` rows above and `fw` columns left of it).
        training: bool; enables dropout.

    Returns:
        The output `(batch, height, width, output_dim)`, and the weights if
        `return_attention_scores`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import LocalAttention2D
    >>> layer = LocalAttention2D(num_heads=2, key_dim=4, query_block=(2, 4),
    ...                          memory_flange=(1, 2))
    >>> image = np.random.rand(1, 6, 8, 3).astype("float32")
    >>> output, weights = layer(image, return_attention_scores=True)
    >>> tuple(output.shape), tuple(weights.shape)
    ((1, 6, 8, 3), (1, 2, 6, 8, 24))

    References:
        Parmar et al. "Image Transformer", ICML 2018, section 3.2
        ("Local Self-Attention", 2-D case) and figure 2.
    """

    # The local core is its own: no grouped heads, window, RoPE or ALiBi.
    _takes_position_options = False

    def __init__(self, num_heads, key_dim, query_block=(8, 8),
                 memory_flange=(4, 4), masked=True, **kwargs):
        super().__init__(num_heads=num_heads, key_dim=key_dim, **kwargs)
        self.query_block = _validation.pair("query_block", query_block, 1)
        self.memory_flange = _validation.pair("memory_flange", memory_flange, 0)
        self.masked = bool(masked)

    def build(self, inputs_shape):
        _validation.rank(
            "inputs", inputs_shape, (4,), "(batch, height, width, channels)"
        )
        height, width = inputs_shape[1], inputs_shape[2]
        pixels = None if None in (height, width) else height * width
        super().build((inputs_shape[0], pixels, inputs_shape[3]))

    def call(self, inputs, padding_mask=None, return_attention_scores=False,
             training=None):
        _validation.rank(
            "inputs", inputs.shape, (4,), "(batch, height, width, channels)"
        )
        if padding_mask is None:
            padding_mask = attention_ops.implicit_mask(inputs)
        padding_mask = attention_ops.check_mask_shape(
            "padding_mask", padding_mask, inputs.shape[:3],
            "(batch, height, width)",
        )
        dynamic = ops.shape(inputs)
        batch = dynamic[0]
        height = inputs.shape[1] or dynamic[1]
        width = inputs.shape[2] or dynamic[2]
        if padding_mask is None:
            padding_mask = ops.ones((batch, height, width), "bool")
        # (B, H, W, D) -> (B, H·W, D)
        flat = ops.reshape(inputs, (batch, -1, inputs.shape[-1]))
        key, value = self.compute_key_value(flat)  # (B, H·W, N, K|V)

        heads = self.num_heads

        def head_images(projected):  # (B, H·W, N, K) -> (B·N, H, W, K)
            size = projected.shape[-1]
            # Heads first before any block is expanded into its (larger)
            # memory, so the transposes move the projections only.
            projected = ops.transpose(projected, (0, 2, 1, 3))  # (B,N,H·W,K)
            return ops.reshape(projected, (batch * heads, height, width, size))

        def per_head(blocks):  # (B·N, G, Q|M, K) -> (B, N, G, Q|M, K)
            return ops.reshape(
                blocks, (batch, heads, -1) + tuple(blocks.shape[2:])
            )

        def memory(tensor):  # (B, H, W, ...) -> (B, G, M, ...)
            return attention_ops.memory_blocks_2d(
                tensor, self.query_block, self.memory_flange,
                below=not self.masked,
            )

        query = per_head(attention_ops.split_blocks_2d(
            head_images(self.query_dense(flat)), self.query_block
        ))  # (B, N, G, Q, K)
        key = per_head(memory(head_images(key)))  # (B, N, G, M, K)
        value = per_head(memory(head_images(value)))  # (B, N, G, M, V)
        valid = ops.cast(padding_mask, "float32")  # (B, H, W)
        query_valid = attention_ops.split_blocks_2d(valid, self.query_block)
        key_valid = memory(valid)  # (B, G, M)
        geometry = attention_ops.raster_mask_2d(
            self.query_block, self.memory_flange, self.masked
        )  # (Q, M)
        scores = attention_ops.local_scores(
            query, key, 1.0 / math.sqrt(self.key_dim)
        )  # (B, N, G, Q, M)
        weights = ops.softmax(
            scores + attention_ops.local_bias(key_valid > 0.5, geometry),
            axis=-1,
        )
        if self.diversity_penalty > 0.0 or return_attention_scores:
            # Padded query pixels attend to nothing: (B, 1, G, Q, 1). Only
            # for the weights shown or penalised; their contexts are zeroed
            # below, as in `LocalSelfAttention`.
            weights = weights * ops.cast(query_valid, weights.dtype)[
                :, None, :, :, None
            ]
        if self.diversity_penalty > 0.0:
            shape = ops.shape(weights)
            # (B, N, G, Q, M) -> (B, N, G·Q, M), the queries' pixels in
            # block order (the penalty sums over them).
            self._add_penalty(
                ops.reshape(weights, (shape[0], shape[1], -1, shape[4])),
                ops.reshape(query_valid > 0.5, (shape[0], -1)),
            )
        weights, dropped = self._drop(weights, training)
        # (B, N, G, Q, M) x (B, N, G, M, V) -> (B, N, G, Q, V)
        context = attention_ops.local_weighted_sum(dropped, value)
        # (B, N, G, Q, V) -> (B·N, G, Q, V) -> (B·N, H, W, V)
        context = attention_ops.merge_blocks_2d(
            ops.reshape(context, (batch * heads, -1) + tuple(context.shape[3:])),
            (height, width), self.query_block,
        )
        # (B·N, H, W, V) -> (B, N, H·W, V) -> (B, H·W, N, V)
        context = ops.reshape(context, (batch, heads, -1, context.shape[-1]))
        context = ops.transpose(context, (0, 2, 1, 3))
        # A padded pixel's context is zero, as if it attended to nothing.
        valid_pixels = ops.reshape(padding_mask, (batch, -1, 1, 1))
        context = context * ops.cast(valid_pixels, context.dtype)
        output = self._merge_heads(context)  # (B, H·W, D)
        output = ops.reshape(output, (batch, height, width, output.shape[-1]))
        if return_attention_scores:
            return output, weights
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "query_block": self.query_block,
                "memory_flange": self.memory_flange,
                "masked": self.masked,
            }
        )
        return config
