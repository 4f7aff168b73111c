"""`SequentialLocalAttention2D`: `LocalAttention2D` over an image flattened
in its generation order, with incremental (cached) decoding.

Letters: B batch, T positions given, L = H·W positions of the image (the
cache length), M pixels per memory block, N heads, K key size per head,
V value size per head, D features.
"""

import math

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers.local_attention_2d import LocalAttention2D
from keras_attention.ops.image_order import generation_order_2d
from keras_attention.ops.image_order import local_memory_2d


@keras.saving.register_keras_serializable(package="keras_attention")
class SequentialLocalAttention2D(LocalAttention2D):
    """Masked local 2-D self-attention of a sequence that is an image in
    the Image Transformer's generation order.

    The generation order of `LocalAttention2D(masked=True)` is query blocks
    in raster order, pixels in raster order inside a block (see
    `keras_attention.ops.image_order.generation_order_2d`). This layer
    takes the image as a sequence `(batch, H·W, dim)` in that order, so it
    plugs into `TransformerDecoder(self_attention=...)` like any causal
    self-attention: a full pass puts the pixels back in place, runs
    `LocalAttention2D` and returns the sequence in the same order.

    Incremental decoding: with `cache=(key_cache, value_cache)`, each
    `(batch, H·W, num_heads, head_size)`, and `cache_update_index=t`, the
    inputs are positions `t, t + 1, ...`; only their projections are
    computed and written into the cache, and each attends only the `M`
    cached keys of its memory block (gathered, not the whole cache), the
    ones it sees in the full pass. A step costs O(M) scores, and its output
    equals the full pass's at that position.

    Args:
        num_heads: int, number of heads N.
        key_dim: int, size K of each head's queries and keys.
        image_shape: pair of ints >= 1, `(H, W)`.
        query_block: pair of ints >= 1, `(h, w)`.
        memory_flange: pair of ints >= 0, `(fh, fw)`.
        masked: must be True (the generation order needs it); kept for the
            config of `LocalAttention2D`.
        **kwargs: the other arguments of `MultiHeadSelfAttention`.

    Call arguments:
        inputs: `(batch, seq_len, dim)`, seq_len = H·W without a cache.
        padding_mask: `(batch, seq_len)` boolean, True at real pixels;
            defaults to the Keras implicit mask. With a cache it zeroes the
            new positions' contexts only (cached keys are all attended).
        use_causal_mask: must be True (the attention is always causal in
            the generation order); `TransformerDecoder` passes True.
        return_attention_scores: bool; also return the weights: without a
            cache the blocked weights of `LocalAttention2D`
            `(batch, num_heads, G, Q, M)`, with one `(batch, num_heads,
            seq_len, M)` over each position's memory block.
        training: bool; enables dropout.
        cache: optional `(key_cache, value_cache)`; needs
            `cache_update_index`.
        cache_update_index: int or scalar tensor, where `inputs` starts.

    Returns:
        The output `(batch, seq_len, output_dim)`; then the weights if
        asked; then the updated cache if given.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_attention.layers.sequential_local_attention_2d import (
    ...     SequentialLocalAttention2D)
    >>> layer = SequentialLocalAttention2D(
    ...     num_heads=2, key_dim=4, image_shape=(4, 4), query_block=(2, 2),
    ...     memory_flange=(1, 1))
    >>> pixels = np.random.rand(1, 16, 8).astype("float32")
    >>> full = layer(pixels)
    >>> cache = (np.zeros((1, 16, 2, 4), "float32"),) * 2
    >>> steps = []
    >>> for index in range(16):
    ...     step, cache = layer(pixels[:, index:index + 1], cache=cache,
    ...                         cache_update_index=index)
    ...     steps.append(keras.ops.convert_to_numpy(step))
    >>> full = keras.ops.convert_to_numpy(full)
    >>> bool(np.allclose(np.concatenate(steps, 1), full, atol=1e-5))
    True

    References:
        Parmar et al. "Image Transformer", ICML 2018, section 3.2.
    """

    def __init__(self, num_heads, key_dim, image_shape, query_block=(8, 8),
                 memory_flange=(4, 4), masked=True, **kwargs):
        if masked is not True:
            raise ValueError(
                "`SequentialLocalAttention2D` attends in the generation "
                "order and needs masked=True, received: "
                f"masked={masked!r}"
            )
        super().__init__(num_heads=num_heads, key_dim=key_dim,
                         query_block=query_block,
                         memory_flange=memory_flange, masked=True, **kwargs)
        self.image_shape = _validation.pair("image_shape", image_shape, 1)
        order = generation_order_2d(self.image_shape, self.query_block)
        index, allowed = local_memory_2d(
            self.image_shape, self.query_block, self.memory_flange
        )
        # Constants: (L,) raster index per position and its inverse;
        # (L, M) memory positions and mask per position.
        self._order = order
        self._raster_to_position = order.argsort().astype("int32")
        self._memory_index = index
        self._memory_allowed = allowed

    @property
    def sequence_length(self):
        """L = H·W, the length of the sequence (and of a cache)."""
        return self.image_shape[0] * self.image_shape[1]

    def build(self, inputs_shape):
        _validation.rank("inputs", inputs_shape, (3,), "(batch, seq_len, dim)")
        height, width = self.image_shape
        super().build((inputs_shape[0], height, width, inputs_shape[-1]))

    def call(self, inputs, padding_mask=None, use_causal_mask=True,
             return_attention_scores=False, training=None, cache=None,
             cache_update_index=None):
        _validation.rank("inputs", inputs.shape, (3,), "(batch, seq_len, dim)")
        if use_causal_mask is not True:
            raise ValueError(
                "`SequentialLocalAttention2D` is always causal in the "
                "generation order, so `use_causal_mask` must be True, "
                f"received: use_causal_mask={use_causal_mask!r}"
            )
        if padding_mask is None:
            padding_mask = attention_ops.implicit_mask(inputs)
        padding_mask = attention_ops.check_mask_shape(
            "padding_mask", padding_mask, inputs.shape[:2],
            "(batch, seq_len)",
        )
        if cache is not None:
            if cache_update_index is None:
                raise ValueError(
                    "Self-attention with a `cache` needs "
                    "`cache_update_index`, received: cache_update_index=None"
                )
            self._check_cache(cache, cache_update_index, inputs.shape[1])
            return self._step(inputs, padding_mask, return_attention_scores,
                              training, cache, cache_update_index)
        length = inputs.shape[1]
        if length is not None and length != self.sequence_length:
            raise ValueError(
                "Without a cache, `inputs` must hold the whole image, "
                f"H·W = {self.sequence_length} positions, received: "
                f"inputs.shape={tuple(inputs.shape)}"
            )
        batch = ops.shape(inputs)[0]
        height, width = self.image_shape
        # (B, L, D) in generation order -> (B, H, W, D) in place.
        image = ops.reshape(
            ops.take(inputs, self._raster_to_position, axis=1),
            (batch, height, width, inputs.shape[-1]),
        )
        image_mask = None
        if padding_mask is not None:
            image_mask = ops.reshape(
                ops.take(padding_mask, self._raster_to_position, axis=1),
                (batch, height, width),
            )
        outputs = super().call(
            image, padding_mask=image_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        output = outputs[0] if return_attention_scores else outputs
        # (B, H, W, D) -> (B, H·W, D) -> (B, L, D) in generation order.
        output = ops.take(
            ops.reshape(output, (batch, -1, output.shape[-1])),
            self._order, axis=1,
        )
        if return_attention_scores:
            return output, outputs[1]
        return output

    def _step(self, inputs, padding_mask, return_attention_scores, training,
              cache, index):
        """Positions `index ..` attend their memory blocks in the cache."""
        key_cache, value_cache = cache
        key, value = self.compute_key_value(inputs)  # (B, T, N, K|V)
        key_cache = attention_ops.update_cache(key_cache, key, index)
        value_cache = attention_ops.update_cache(value_cache, value, index)
        query = self.query_dense(inputs)  # (B, T, N, K)
        positions = ops.cast(index, "int32") + ops.arange(
            ops.shape(inputs)[1], dtype="int32"
        )  # (T,)
        memory = ops.take(self._memory_index, positions, axis=0)  # (T, M)
        allowed = ops.take(self._memory_allowed, positions, axis=0)
        keys = ops.take(key_cache, memory, axis=1)  # (B, T, M, N, K)
        values = ops.take(value_cache, memory, axis=1)  # (B, T, M, N, V)
        query = ops.cast(query, "float32") / math.sqrt(self.key_dim)
        # (B, T, N, K) x (B, T, M, N, K) -> (B, N, T, M)
        scores = ops.einsum("btnk,btmnk->bntm", query,
                            ops.cast(keys, "float32"))
        bias = ops.where(allowed, 0.0, -1e9)  # (T, M), as `local_bias`
        weights = ops.softmax(scores + ops.cast(bias, "float32"), axis=-1)
        self._add_penalty(weights, padding_mask)
        weights, dropped = self._drop(weights, training)
        # (B, N, T, M) x (B, T, M, N, V) -> (B, T, N, V)
        context = ops.einsum("bntm,btmnv->btnv", dropped, values)
        if padding_mask is not None:
            valid = ops.reshape(padding_mask, (ops.shape(inputs)[0], -1, 1, 1))
            context = context * ops.cast(valid, context.dtype)
        output = self._merge_heads(context)  # (B, T, D)
        results = (output,)
        if return_attention_scores:
            results += (weights,)
        return results + ((key_cache, value_cache),)

    def get_config(self):
        config = super().get_config()
        config["image_shape"] = self.image_shape
        return config
