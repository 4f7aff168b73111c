"""`VideoCaptioner`: an LSTM that describes a clip, reading per-frame CNN
features (and, optionally, local features of a 3-D convolution over
neighbouring frames) through soft attention over time (Yao et al. 2015),
or, without attention, their mean.

Letters: B batch, T frames, H, W frame height and width, C channels, h, w
the pooled map's height and width, c its channels, F feature size, N
caption length, E embedding size, U decoder units, V vocabulary size.
"""

import math

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import AttentionRNNDecoder
from keras_attention.layers import SinusoidalPositionEmbedding

PRESETS = {
    # Tests.
    "tiny": dict(filters=(4, 8), feature_dim=8, local_filters=4,
                 embedding_dim=8, units=16, attention_units=8, dropout=0.0),
    # Digit clips on CPU.
    "small": dict(filters=(8, 32), feature_dim=64, local_filters=8,
                  embedding_dim=32, units=96, attention_units=32,
                  dropout=0.1),
}


def uniform_weights(source_mask):
    """The weights of a mean over the real frames, `1 / (real frames)`:
    `(B, T)` boolean -> `(B, T)` float32 (what a decoder without attention
    reads, as attention weights)."""
    weights = ops.cast(source_mask, "float32")
    return weights / ops.maximum(ops.sum(weights, axis=-1, keepdims=True), 1)


@keras.saving.register_keras_serializable(package="keras_attention")
class VideoCaptioner(keras.Model):
    """A video captioner with soft attention over frames (Yao et al. 2015).

    Encoder: each frame goes through `len(filters)` stages of a 3x3 ReLU
    convolution and 2x2 max pooling, to an `(h, w)` map; a ReLU dense layer
    projects the flattened map (where) and its maximum over the locations
    (what, wherever it is) to `feature_dim`: the frame features `v_t`,
    `(B, T, F)`. With `local`, a 3x3x3 ReLU convolution over (frames,
    height, width) sees frames `t - 1, t, t + 1`; max-pooled to the same
    `(h, w)` grid, its map is concatenated to the frame's map, location by
    location, before the projection (so the projection sees what moved
    where it sees which strokes). With `frame_positions`, the sinusoidal
    encoding of the frame index `t` is added to `v_t`.
    Decoder (`AttentionRNNDecoder`, LSTM), with `temporal_attention`:
    `α_ti = softmax_i(wᵀ tanh(W_a h_{t-1} + U_a v_i + b_a))`,
    `φ_t = Σ_i α_ti v_i`; without it (the paper's "Basic" encoder-decoder)
    `φ_t = (1 / T) Σ_i v_i` at every step.
    `(h_t, c_t) = LSTM([E y_{t-1}; φ_t], h_{t-1}, c_{t-1})`, from
    `h_0 = tanh(f_h(mean_i v_i))` and `c_0 = tanh(f_c(mean_i v_i))`.
    Deep output: `p(y_t) = softmax(L_o(E y_{t-1} + L_h h_t + L_z φ_t))`.

    The model follows the package's decoding protocol (`encode`,
    `initial_cache`, `decode_step`; `keras_attention.decoding`), with the
    videos as encoder inputs and the T frames as the source: decode it with
    `greedy_decode(model, videos, ..., output_lengths=n)` or
    `beam_search_decode`. Without temporal attention the step's weights
    are the mean's, `1 / T` on every frame.

    Frame positions are not in the paper, whose features of a real video's
    frames (GoogLeNet's) carry the time in their content. A composed clip
    played backwards is another clip, with another caption ("a three
    moves right then a seven appears" backwards is "a seven disappears
    then a three moves left"), so without a time signal the per-frame
    features of the two are the same bag: neither their mean nor an
    attention over them can tell the order of the events. (The local
    features tell the direction of a change, and the 3-D convolution's
    zero padding marks the first and last frames.)

    Args:
        vocabulary_size: V.
        filters: the per-frame convolution sizes (each stage halves the
            frame: `h = H / 2**len(filters)`).
        feature_dim: F.
        local: add the 3-D convolution's local features.
        local_filters: the 3-D convolution's size.
        temporal_attention: attend over the frames (else read their mean).
        frame_positions: add the frames' sinusoidal position encodings to
            their features.
        embedding_dim: E.
        units: U, the LSTM's size.
        attention_units: the additive score's hidden size (default `units`).
        dropout: on the deep output's hidden layer.
        pad_id: the padding token id.

    Call arguments:
        inputs: dict with `"videos"` `(batch, frames, H, W)` or
            `(batch, frames, H, W, C)` floats and `"decoder_tokens"`
            `(batch, caption_len)` ints (BOS, then the caption but its last
            token).
        training: bool.

    Returns:
        float32 logits `(batch, caption_len, vocabulary_size)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.video_captioner import VideoCaptioner
    >>> model = VideoCaptioner.from_preset("tiny", vocabulary_size=23,
    ...                                    local=True)
    >>> logits = model({"videos": np.zeros((2, 8, 16, 16), "float32"),
    ...                 "decoder_tokens": np.ones((2, 5), "int32")})
    >>> tuple(logits.shape)
    (2, 5, 23)
    >>> memory, mask = model.encode(np.zeros((2, 8, 16, 16), "float32"))
    >>> tuple(memory.shape)  # T frames of F features
    (2, 8, 8)

    References:
        Yao, Torabi, Cho, Ballas, Pal, Larochelle, Courville. "Describing
        Videos by Exploiting Temporal Structure", ICCV 2015.
        Xu et al. "Show, Attend and Tell", ICML 2015 (initial state, deep
        output).
    """

    # Decoding protocol: cache entries no step changes (features, keys).
    constant_cache_keys = ("memory", "keys")

    def __init__(
        self,
        vocabulary_size,
        filters=(8, 32),
        feature_dim=64,
        local=False,
        local_filters=8,
        temporal_attention=True,
        frame_positions=True,
        embedding_dim=32,
        units=96,
        attention_units=None,
        dropout=0.1,
        pad_id=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = _validation.positive_int("vocabulary_size",
                                                        vocabulary_size)
        if isinstance(filters, int) or not filters:
            raise ValueError("`filters` must be a non-empty list of positive "
                             f"ints, received: filters={filters!r}")
        self.filters = tuple(_validation.positive_int("filters", f)
                             for f in filters)
        self.feature_dim = _validation.positive_int("feature_dim", feature_dim)
        self.local = _boolean("local", local)
        self.local_filters = _validation.positive_int("local_filters",
                                                      local_filters)
        self.temporal_attention = _boolean("temporal_attention",
                                           temporal_attention)
        self.frame_positions = _boolean("frame_positions", frame_positions)
        self.embedding_dim = _validation.positive_int("embedding_dim",
                                                      embedding_dim)
        self.units = _validation.positive_int("units", units)
        self.attention_units = _validation.optional_positive_int(
            "attention_units", attention_units)
        self.dropout = _validation.rate("dropout", dropout)
        self.pad_id = _validation.non_negative_int("pad_id", pad_id)

        def dense(size, name, **options):
            return keras.layers.Dense(size, dtype=self.dtype_policy, name=name,
                                      **options)

        self.convolutions = [
            keras.layers.Conv2D(size, 3, padding="same", activation="relu",
                                dtype=self.dtype_policy, name=f"conv_{i}")
            for i, size in enumerate(self.filters)
        ]
        self.pooling = keras.layers.MaxPooling2D(2, dtype=self.dtype_policy)
        self.frame_features = dense(feature_dim, "frame_features",
                                    activation="relu")
        self.local_convolution = self.local_pooling = None
        if self.local:
            pool = 2 ** len(self.filters)
            self.local_convolution = keras.layers.Conv3D(
                local_filters, 3, padding="same", activation="relu",
                dtype=self.dtype_policy, name="local_convolution")
            self.local_pooling = keras.layers.MaxPooling3D(
                (1, pool, pool), dtype=self.dtype_policy)
        self.position_embedding = None
        if self.frame_positions:
            self.position_embedding = SinusoidalPositionEmbedding(
                max_wavelength=100.0, dtype=self.dtype_policy,
                name="position_embedding")
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=self.dtype_policy,
            name="embedding")
        self.init_hidden = dense(units, "init_hidden", activation="tanh")
        self.init_memory_cell = dense(units, "init_memory_cell",
                                      activation="tanh")
        self.decoder = AttentionRNNDecoder(
            units, cell="lstm",
            attention="additive" if self.temporal_attention else None,
            attention_units=attention_units, dtype=self.dtype_policy,
            name="decoder")
        self.output_state = dense(embedding_dim, "output_state")  # L_h
        self.output_context = dense(embedding_dim, "output_context",
                                    use_bias=False)  # L_z
        self.output_dropout = keras.layers.Dropout(dropout,
                                                   dtype=self.dtype_policy)
        self.output_projection = dense(vocabulary_size, "output_projection")

    @property
    def target_vocabulary_size(self):
        """V (the decoding protocol's name)."""
        return self.vocabulary_size

    @classmethod
    def from_preset(cls, preset, vocabulary_size, **overrides):
        """A model of a named size: `"tiny"` or `"small"`."""
        _validation.choice("preset", preset, PRESETS)
        return cls(vocabulary_size=vocabulary_size,
                   **{**PRESETS[preset], **overrides})

    def encode(self, videos, training=None):
        """The frame features `(B, T, F)` and an all-True frame mask
        `(B, T)`."""
        x = ops.convert_to_tensor(videos)
        _validation.rank("videos", x.shape, (4, 5),
                         "(batch, frames, height, width) or (batch, frames, "
                         "H, W, channels)")
        if len(x.shape) == 4:
            x = ops.expand_dims(x, -1)  # (B, T, H, W, 1)
        x = ops.cast(x, self.compute_dtype)
        batch, frames = ops.shape(x)[0], ops.shape(x)[1]
        # Global: every frame alone, (B * T, H, W, C).
        frame = ops.reshape(x, (-1,) + tuple(x.shape[2:]))
        for convolution in self.convolutions:
            frame = self.pooling(convolution(frame))  # halves H and W
        frame = ops.reshape(frame, (batch, frames) + tuple(frame.shape[1:]))
        if self.local:
            # Local: frames t - 1, t, t + 1 (zeros past the ends).
            local = self.local_pooling(self.local_convolution(x))
            frame = ops.concatenate([frame, local], axis=-1)
        # Where (the flattened map) and what, wherever it is (the map's
        # maximum over locations): (B, T, h * w * c + c).
        frame = ops.concatenate([
            ops.reshape(frame, (batch, frames, math.prod(frame.shape[2:]))),
            ops.max(frame, axis=(2, 3))], axis=-1)
        features = self.frame_features(frame)  # (B, T, F)
        if self.frame_positions:
            features = features + self.position_embedding(features)
        mask = ops.ones((batch, frames), "bool")  # (B, T)
        return features, mask

    def initial_cache(self, memory, source_mask, max_length=None):
        """The decoder's starting cache: `[h_0, c_0]` from the mean frame
        feature; with temporal attention the memory and its prepared keys,
        without it the mean as the memory. (`max_length` is not needed:
        the state does not grow.)"""
        weights = uniform_weights(source_mask)[:, :, None]  # (B, T, 1)
        mean = ops.sum(ops.cast(memory, "float32") * weights, axis=1)  # (B, F)
        states = [self.init_hidden(mean), self.init_memory_cell(mean)]
        if not self.temporal_attention:
            if not self.decoder.built:
                self.decoder.build((None, None, self.embedding_dim),
                                   mean.shape)
            return {"states": states, "memory": mean}  # φ (B, F)
        if not self.decoder.built:
            self.decoder.build((None, None, self.embedding_dim), memory.shape)
        return {
            "states": states,
            "memory": memory,  # (B, T, F)
            "keys": self.decoder.prepare_memory(memory),  # (B, T, K)
        }

    def _logits(self, embedded, states, contexts, training=None):
        """`L_o(E y_{t-1} + L_h h_t + L_z φ_t)`: `(..., E), (..., U),
        (..., F)` -> `(..., V)` float32."""
        dtype = self.compute_dtype
        hidden = (ops.cast(embedded, dtype) + self.output_state(states)
                  + self.output_context(ops.cast(contexts, dtype)))  # (..., E)
        hidden = self.output_dropout(hidden, training=training)
        return ops.cast(self.output_projection(hidden), "float32")

    def decode(self, decoder_tokens, memory, source_mask, training=None,
               return_attention_scores=False):
        """Logits `(B, N, V)` of a whole caption prefix (teacher forcing),
        and, if asked, the attention weights over the frames `(B, N, T)`
        (the uniform `1 / T` without temporal attention)."""
        cache = self.initial_cache(memory, source_mask)
        embedded = self.embedding(decoder_tokens)  # (B, N, E)
        if self.temporal_attention:
            states, contexts, weights = self.decoder(
                embedded, memory, cache["states"], memory_mask=source_mask,
                prepared_memory=cache["keys"], return_attention_scores=True,
                training=training,
            )  # (B, N, U), (B, N, F), (B, N, T)
        else:
            states, contexts = self.decoder(
                embedded, cache["memory"], cache["states"], training=training)
            steps = ops.shape(decoder_tokens)[1]
            weights = ops.repeat(uniform_weights(source_mask)[:, None], steps,
                                 axis=1)  # (B, N, T)
        logits = self._logits(embedded, states, contexts, training)
        return (logits, weights) if return_attention_scores else logits

    def call(self, inputs, training=None):
        memory, source_mask = self.encode(inputs["videos"], training)
        return self.decode(inputs["decoder_tokens"], memory, source_mask,
                           training)

    def decode_step(self, tokens, index, cache, source_mask):
        """One incremental step (see `keras_attention.decoding`).

        Args:
            tokens: `(B, 1)` the previous tokens.
            index: the position (unused: the state carries the history).
            cache: from `initial_cache` or the previous step.
            source_mask: `(B, T)` from `encode`.

        Returns:
            `(logits (B, V), cache, attention (B, T))`; without temporal
            attention, the attention is the mean's `1 / T`.
        """
        embedded = self.embedding(tokens[:, 0])  # (B, E)
        state, context, weights, states = self.decoder.step(
            embedded, cache["states"], cache["memory"], cache.get("keys"),
            source_mask,
        )
        logits = self._logits(embedded, state, context)
        if weights is None:  # the mean of the frames
            weights = uniform_weights(source_mask)
        return logits, dict(cache, states=states), ops.cast(weights,
                                                            "float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "filters": list(self.filters),
                "feature_dim": self.feature_dim,
                "local": self.local,
                "local_filters": self.local_filters,
                "temporal_attention": self.temporal_attention,
                "frame_positions": self.frame_positions,
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "attention_units": self.attention_units,
                "dropout": self.dropout,
                "pad_id": self.pad_id,
            }
        )
        return config


def _boolean(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"`{name}` must be a bool, received: "
                         f"{name}={value!r}")
    return value
