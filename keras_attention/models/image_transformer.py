"""`ImageTransformer`: an autoregressive model of small images (Parmar et
al., 2018), with local 2-D or full causal self-attention.

Letters: B batch, H/W image height/width, T = H·W positions (the pixels in
generation order), t positions of one step, D model size, C intensity
levels.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_attention import _validation
from keras_attention.layers.sequential_local_attention_2d import (
    SequentialLocalAttention2D,
)
from keras_attention.layers.transformer_decoder import TransformerDecoder
from keras_attention.ops.image_order import generation_order_2d

ATTENTIONS = ("local", "full")

PRESETS = {
    # scikit-learn's 8x8 digits (17 levels): trains in minutes on 2 cores.
    "digits_local": dict(
        image_shape=(8, 8), num_levels=17, attention="local",
        query_block=(2, 4), memory_flange=(2, 2), num_layers=2, num_heads=4,
        hidden_dim=64, intermediate_dim=128, dropout=0.1,
    ),
    "digits_full": dict(
        image_shape=(8, 8), num_levels=17, attention="full",
        query_block=(2, 4), num_layers=2, num_heads=4, hidden_dim=64,
        intermediate_dim=128, dropout=0.1,
    ),
}


@keras.saving.register_keras_serializable(package="keras_attention")
class ImageTransformer(keras.Model):
    """A decoder-only Transformer over the pixels of an image, each pixel
    one of `num_levels` intensities (a token).

    The pixels are taken in the Image Transformer's generation order, query
    blocks of `query_block` pixels in raster order and pixels in raster
    order inside a block (`keras_attention.ops.image_order`), the order in
    which `LocalAttention2D(masked=True)` is causal. The sequence is shifted
    right behind a learned start token, so the logits of a pixel depend only
    on the pixels before it. Each input is the sum of a token embedding and
    learned row and column embeddings of the pixel being predicted; then
    `num_layers` `TransformerDecoder` blocks (no cross-attention) and a
    softmax over the levels. The self-attention is
    `SequentialLocalAttention2D` (`attention="local"`: each pixel attends its
    memory block, `memory_flange` around its query block) or the causal
    `MultiHeadSelfAttention` over all earlier pixels (`attention="full"`,
    where `query_block` sets the order only).

    Args:
        image_shape: pair of ints >= 1, `(H, W)`.
        num_levels: int >= 2, C: pixel values are `0 .. C - 1`.
        attention: `"local"` or `"full"`.
        query_block: pair of ints >= 1, `(h, w)`; `(H, W)` is raster order.
        memory_flange: pair of ints >= 0, `(fh, fw)` (local attention).
        num_layers, num_heads, hidden_dim, intermediate_dim: the blocks'
            sizes; `hidden_dim` divisible by `num_heads`.
        dropout: float in [0, 1), in the blocks.

    Call arguments:
        images: `(B, H, W)` ints in `[0, num_levels)`.
        training: bool; enables dropout.

    Returns:
        Logits `(B, H, W, num_levels)`: at each pixel, the distribution of
        its value given the pixels before it in the generation order. Train
        with `SparseCategoricalCrossentropy(from_logits=True)` on
        `(images, images)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.image_transformer import ImageTransformer
    >>> model = ImageTransformer(image_shape=(4, 4), num_levels=3,
    ...                          query_block=(2, 2), memory_flange=(1, 1),
    ...                          num_layers=1, num_heads=2, hidden_dim=8,
    ...                          intermediate_dim=16)
    >>> images = np.random.default_rng(0).integers(0, 3, (2, 4, 4))
    >>> tuple(model(images).shape)
    (2, 4, 4, 3)
    >>> bool(model.bits_per_dim(images) > 0)
    True
    >>> samples = model.sample(2, seed=0)
    >>> bool((samples == model.sample(2, seed=0, use_cache=False)).all())
    True

    Reference:
        Parmar et al. "Image Transformer", ICML 2018.
    """

    def __init__(self, image_shape=(8, 8), num_levels=17, attention="local",
                 query_block=(2, 4), memory_flange=(2, 2), num_layers=2,
                 num_heads=4, hidden_dim=64, intermediate_dim=128,
                 dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.image_shape = _validation.pair("image_shape", image_shape, 1)
        self.num_levels = _validation.positive_int("num_levels", num_levels)
        if self.num_levels < 2:
            raise ValueError(
                "`num_levels` must be an int >= 2, received: "
                f"num_levels={num_levels!r}"
            )
        self.attention = _validation.choice("attention", attention,
                                            ATTENTIONS)
        self.query_block = _validation.pair("query_block", query_block, 1)
        self.memory_flange = _validation.pair("memory_flange", memory_flange, 0)
        self.num_layers = _validation.positive_int("num_layers", num_layers)
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        self.hidden_dim = _validation.positive_int("hidden_dim", hidden_dim)
        if hidden_dim % num_heads:
            raise ValueError(
                "`hidden_dim` must be divisible by `num_heads`, received: "
                f"hidden_dim={hidden_dim}, num_heads={num_heads}"
            )
        self.intermediate_dim = _validation.positive_int(
            "intermediate_dim", intermediate_dim
        )
        self.dropout = _validation.rate("dropout", dropout)

        height, width = self.image_shape
        # (T,) raster index of each position, and its inverse.
        self._order = generation_order_2d(self.image_shape, self.query_block)
        self._raster_to_position = self._order.argsort().astype("int32")
        self._rows = (self._order // width).astype("int32")  # (T,)
        self._columns = (self._order % width).astype("int32")  # (T,)
        policy = self.dtype_policy
        # The last row is the start token.
        self.token_embedding = keras.layers.Embedding(
            self.num_levels + 1, hidden_dim, dtype=policy,
            name="token_embedding",
        )
        self.row_embedding = keras.layers.Embedding(
            height, hidden_dim, dtype=policy, name="row_embedding"
        )
        self.column_embedding = keras.layers.Embedding(
            width, hidden_dim, dtype=policy, name="column_embedding"
        )
        self.blocks = [
            TransformerDecoder(
                intermediate_dim=self.intermediate_dim,
                num_heads=self.num_heads, dropout=self.dropout,
                self_attention=self._self_attention(number),
                dtype=policy, name=f"decoder_{number}",
            )
            for number in range(self.num_layers)
        ]
        self.output_dense = keras.layers.Dense(
            self.num_levels, dtype=policy, name="logits"
        )

    def _self_attention(self, number):
        if self.attention == "full":
            return None  # the block's causal MultiHeadSelfAttention
        return SequentialLocalAttention2D(
            num_heads=self.num_heads,
            key_dim=self.hidden_dim // self.num_heads,
            image_shape=self.image_shape, query_block=self.query_block,
            memory_flange=self.memory_flange, dropout=self.dropout,
            dtype=self.dtype_policy, name=f"local_attention_{number}",
        )

    @classmethod
    def from_preset(cls, preset, **overrides):
        """A model of a named configuration: see `PRESETS`."""
        _validation.choice("preset", preset, PRESETS)
        return cls(**{**PRESETS[preset], **overrides})

    @property
    def num_pixels(self):
        """T = H·W."""
        return self.image_shape[0] * self.image_shape[1]

    @property
    def generation_order(self):
        """`(T,)` NumPy ints: the raster index of the pixel at each step."""
        return self._order.copy()

    def to_sequence(self, images):
        """`(B, H, W, ...)` -> `(B, T, ...)` in generation order."""
        shape = ops.shape(images)
        flat = ops.reshape(images, (shape[0], -1) + tuple(images.shape[3:]))
        return ops.take(flat, self._order, axis=1)

    def to_image(self, sequence):
        """Undo `to_sequence`: `(B, T, ...)` -> `(B, H, W, ...)`."""
        pixels = ops.take(sequence, self._raster_to_position, axis=1)
        return ops.reshape(
            pixels, (ops.shape(sequence)[0],) + self.image_shape
            + tuple(sequence.shape[2:])
        )

    def _embed(self, tokens, start):
        """Tokens `(B, t)` at positions `start ..` to `(B, t, D)`."""
        positions = ops.cast(start, "int32") + ops.arange(
            ops.shape(tokens)[1], dtype="int32"
        )  # (t,)
        rows = ops.take(self._rows, positions)  # (t,)
        columns = ops.take(self._columns, positions)
        places = self.row_embedding(rows) + self.column_embedding(columns)
        return self.token_embedding(tokens) + places[None]  # (B, t, D)

    def call(self, images, training=None):
        tokens = ops.cast(self.to_sequence(images), "int32")  # (B, T)
        start = ops.full((ops.shape(tokens)[0], 1), self.num_levels, "int32")
        # Shifted right: position i sees the tokens before it only.
        x = self._embed(ops.concatenate([start, tokens[:, :-1]], 1), 0)
        for block in self.blocks:
            x = block(x, training=training)  # (B, T, D), causal
        return self.to_image(self.output_dense(x))  # (B, H, W, C)

    def initial_cache(self, batch_size):
        """Empty key/value caches of every block, for `step`."""
        if not self.built:
            self(np.zeros((1,) + self.image_shape, "int32"))
        return [block.initial_cache(max_length=self.num_pixels,
                                    batch_size=batch_size)
                for block in self.blocks]

    def step(self, previous, index, cache):
        """One position with the cache.

        Args:
            previous: `(B,)` ints, the value of the pixel at position
                `index - 1` (`num_levels`, the start token, at 0).
            index: int, the position in the generation order.
            cache: from `initial_cache` or the previous step.

        Returns:
            `(logits (B, C), cache)`: the logits of the pixel at `index`.
        """
        tokens = ops.reshape(ops.cast(previous, "int32"), (-1, 1))  # (B, 1)
        x = self._embed(tokens, index)  # (B, 1, D)
        updated = []
        for block, block_cache in zip(self.blocks, cache):
            x, block_cache = block(x, cache=block_cache,
                                   cache_update_index=index)
            updated.append(block_cache)
        return self.output_dense(x)[:, 0], updated

    def _check_images(self, images):
        images = np.asarray(images)
        if (images.ndim != 3 or images.shape[1:] != self.image_shape
                or not np.issubdtype(images.dtype, np.integer)
                or images.min() < 0 or images.max() >= self.num_levels):
            raise ValueError(
                "`images` must be ints in [0, num_levels) of shape "
                f"(batch, {self.image_shape[0]}, {self.image_shape[1]}), "
                f"num_levels={self.num_levels}, received: images of shape "
                f"{images.shape} and dtype {images.dtype}"
            )
        return images.astype("int32")

    def log_likelihood(self, images, batch_size=256):
        """`(B,)` float64: the log-probability (nats) of each image."""
        images = self._check_images(images)
        totals = []
        for begin in range(0, len(images), batch_size):
            batch = images[begin:begin + batch_size]
            logits = ops.convert_to_numpy(self(batch, training=False))
            logits = logits.astype("float64")  # (B, H, W, C)
            peak = logits.max(-1, keepdims=True)
            log_norm = peak[..., 0] + np.log(np.exp(logits - peak).sum(-1))
            chosen = np.take_along_axis(logits, batch[..., None], -1)[..., 0]
            totals.append((chosen - log_norm).sum(axis=(1, 2)))
        return np.concatenate(totals)

    def bits_per_dim(self, images, batch_size=256):
        """The negative log-likelihood of `images` in bits per pixel."""
        nats = -self.log_likelihood(images, batch_size).mean()
        return float(nats / (self.num_pixels * math.log(2.0)))

    def sample(self, num, seed=0, temperature=1.0, use_cache=True):
        """Draw `num` images, pixel by pixel in the generation order.

        The randomness is fixed by `seed` (Gumbel noise drawn up front, one
        per pixel and level, and `argmax(logits / temperature + noise)`),
        so the cached and uncached paths draw the same images.

        Args:
            num: int >= 1.
            seed: int, of the noise.
            temperature: float > 0.
            use_cache: bool: each step projects only the new pixel and
                attends the cached keys it may see; without it, each step
                re-runs the whole model on the image so far.

        Returns:
            `(num, H, W)` int32 NumPy array.
        """
        num = _validation.positive_int("num", num)
        temperature = _validation.positive_float("temperature", temperature)
        rng = np.random.default_rng(seed)
        uniform = rng.uniform(size=(num, self.num_pixels, self.num_levels))
        noise = -np.log(-np.log(np.maximum(uniform, 1e-12)))  # (B, T, C)
        tokens = np.zeros((num, self.num_pixels), "int32")  # (B, T)
        cache = self.initial_cache(num) if use_cache else None
        previous = np.full((num,), self.num_levels, "int32")
        for index in range(self.num_pixels):
            if use_cache:
                logits, cache = self.step(previous, index, cache)
            else:
                images = self.to_image(tokens)
                logits = self.to_sequence(self(images))[:, index]
            logits = ops.convert_to_numpy(logits).astype("float64")
            previous = np.argmax(logits / temperature + noise[:, index], -1)
            tokens[:, index] = previous
        return ops.convert_to_numpy(self.to_image(tokens)).astype("int32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "image_shape": self.image_shape,
                "num_levels": self.num_levels,
                "attention": self.attention,
                "query_block": self.query_block,
                "memory_flange": self.memory_flange,
                "num_layers": self.num_layers,
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
            }
        )
        return config


def independent_pixel_model(images, num_levels, smoothing=1.0):
    """The baseline: each pixel's value drawn independently, from counts.

    Args:
        images: `(B, H, W)` ints in `[0, num_levels)`, the training set.
        num_levels: int, C.
        smoothing: float > 0, added to every count (add-one by default).

    Returns:
        `(H, W, C)` float64 probabilities.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.image_transformer import (
    ...     independent_pixel_model)
    >>> independent_pixel_model(np.array([[[0, 1]], [[0, 0]]]), 2)[0]
    array([[0.75, 0.25],
           [0.5 , 0.5 ]])
    """
    smoothing = _validation.positive_float("smoothing", smoothing)
    images = np.asarray(images)
    # (B, H, W) -> (B, H, W, C) one-hot, summed over the batch.
    counts = (images[..., None] == np.arange(num_levels)).sum(0) + smoothing
    return counts / counts.sum(-1, keepdims=True)


def independent_pixel_bits_per_dim(probabilities, images):
    """Bits per pixel of `images` `(B, H, W)` under `probabilities`
    `(H, W, C)` from `independent_pixel_model`."""
    images = np.asarray(images)
    chosen = np.take_along_axis(
        np.broadcast_to(probabilities, images.shape + probabilities.shape[-1:]),
        images[..., None], -1,
    )  # (B, H, W, 1)
    return float(-np.log2(chosen).mean())
