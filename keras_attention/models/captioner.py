"""`Captioner`: Show, Attend and Tell (Xu et al. 2015), an LSTM that
attends over the locations of a CNN feature map while it writes a caption.

Letters: B batch, H, W image height and width, h, w feature-map height and
width, L = h * w locations, F feature size, T caption length, E embedding
size, U decoder units, V vocabulary size.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import AttentionRNNDecoder

PRESETS = {
    # Tests.
    "tiny": dict(filters=(8, 16), feature_dim=16, embedding_dim=16,
                 units=24, attention_units=16, dropout=0.0),
    # Digit scenes on CPU.
    "small": dict(filters=(32, 64), feature_dim=64, embedding_dim=64,
                  units=128, attention_units=64, dropout=0.1),
}


def doubly_stochastic_penalty(attention, step_mask=None):
    """Xu et al.'s doubly stochastic attention penalty per example,
    `Σ_i (1 − Σ_t α_ti)²`: each location should get, over the caption, a
    total weight of about one.

    Args:
        attention: `(B, T, L)` the weights `α_ti` of each step.
        step_mask: `(B, T)` boolean, True at the caption's real steps
            (padded steps add nothing); None counts every step.

    Returns:
        `(B,)` float32.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.captioner import doubly_stochastic_penalty
    >>> alpha = np.array([[[0.5, 0.5], [1.0, 0.0]]], "float32")  # (1, 2, 2)
    >>> float(doubly_stochastic_penalty(alpha)[0])  # (1 - 1.5)² + (1 - 0.5)²
    0.5
    """
    attention = ops.cast(attention, "float32")
    if step_mask is not None:
        attention = attention * ops.cast(step_mask, "float32")[:, :, None]
    coverage = ops.sum(attention, axis=1)  # (B, T, L) -> (B, L)
    return ops.sum(ops.square(1.0 - coverage), axis=-1)  # (B,)


@keras.saving.register_keras_serializable(package="keras_attention")
class Captioner(keras.Model):
    """An image captioner with soft attention (Show, Attend and Tell).

    Encoder: `len(filters)` stages of a 3x3 ReLU convolution and 2x2 max
    pooling, then a 3x3 ReLU convolution to `feature_dim`; its `(h, w)` map
    is flattened to the annotations `a_i`, `(B, L, F)`.
    Decoder (`AttentionRNNDecoder`, LSTM, additive attention):
    `α_ti = softmax_i(vᵀ tanh(W h_{t-1} + U a_i))`, `z_t = Σ_i α_ti a_i`,
    `(h_t, c_t) = LSTM([E y_{t-1}; z_t], h_{t-1}, c_{t-1})`, from
    `h_0 = tanh(f_h(mean_i a_i))` and `c_0 = tanh(f_c(mean_i a_i))`.
    Deep output: `p(y_t) = softmax(L_o(E y_{t-1} + L_h h_t + L_z z_t))`.
    (The paper's gating scalar `β_t` on `z_t` is left out.)

    Training loss: the cross-entropy plus the doubly stochastic penalty
    `λ Σ_i (1 − Σ_t α_ti)²` (`doubly_stochastic`, λ; 0 turns it off), added
    with `add_loss` in `call` over the real steps (`decoder_tokens` not
    `pad_id`). The paper's per-caption objective is divided by the number
    of tokens, as a per-token cross-entropy is: the model adds
    `λ Σ_b penalty_b / (real steps in the batch)`.

    The model follows the package's decoding protocol (`encode`,
    `initial_cache`, `decode_step`; `keras_attention.decoding`), with the
    images as encoder inputs and the L locations as the source: decode it
    with `greedy_decode(model, images, ..., output_lengths=n)` or
    `beam_search_decode` (images carry no length, so the caller gives it).

    Args:
        vocabulary_size: V.
        filters: the convolution sizes of the pooled stages (each halves
            the map: `h = H / 2**len(filters)`).
        feature_dim: F.
        embedding_dim: E.
        units: U, the LSTM's size.
        attention_units: the additive score's hidden size (default `units`).
        dropout: on the deep output's hidden layer.
        doubly_stochastic: λ >= 0.
        pad_id: the padding token id.

    Call arguments:
        inputs: dict with `"images"` `(batch, H, W)` or `(batch, H, W, C)`
            floats and `"decoder_tokens"` `(batch, caption_len)` ints (BOS,
            then the caption but its last token).
        training: bool.

    Returns:
        float32 logits `(batch, caption_len, vocabulary_size)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.captioner import Captioner
    >>> model = Captioner.from_preset("tiny", vocabulary_size=21)
    >>> logits = model({"images": np.zeros((2, 16, 16), "float32"),
    ...                 "decoder_tokens": np.ones((2, 5), "int32")})
    >>> tuple(logits.shape)
    (2, 5, 21)

    References:
        Xu, Ba, Kiros, Cho, Courville, Salakhutdinov, Zemel, Bengio. "Show,
        Attend and Tell: Neural Image Caption Generation with Visual
        Attention", ICML 2015 (sections 3.1.2, 4.2.1; equation 7, 14).
    """

    # Decoding protocol: cache entries no step changes (annotations, keys).
    constant_cache_keys = ("memory", "keys")

    def __init__(
        self,
        vocabulary_size,
        filters=(32, 64),
        feature_dim=64,
        embedding_dim=64,
        units=128,
        attention_units=None,
        dropout=0.1,
        doubly_stochastic=1.0,
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
        self.embedding_dim = _validation.positive_int("embedding_dim",
                                                      embedding_dim)
        self.units = _validation.positive_int("units", units)
        self.attention_units = _validation.optional_positive_int(
            "attention_units", attention_units)
        self.dropout = _validation.rate("dropout", dropout)
        self.doubly_stochastic = _validation.non_negative_float(
            "doubly_stochastic", doubly_stochastic)
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
        self.features = keras.layers.Conv2D(
            feature_dim, 3, padding="same", activation="relu",
            dtype=self.dtype_policy, name="features")
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=self.dtype_policy,
            name="embedding")
        self.init_hidden = dense(units, "init_hidden", activation="tanh")
        self.init_memory_cell = dense(units, "init_memory_cell",
                                      activation="tanh")
        self.decoder = AttentionRNNDecoder(
            units, cell="lstm", attention="additive",
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

    def encode(self, images, training=None):
        """The annotations `(B, L, F)` and an all-True location mask
        `(B, L)`."""
        x = ops.convert_to_tensor(images)
        _validation.rank("images", x.shape, (3, 4),
                         "(batch, height, width) or (batch, H, W, channels)")
        if len(x.shape) == 3:
            x = ops.expand_dims(x, -1)  # (B, H, W, 1)
        x = ops.cast(x, self.compute_dtype)
        for convolution in self.convolutions:
            x = self.pooling(convolution(x))  # halves H and W
        x = self.features(x)  # (B, h, w, F)
        memory = ops.reshape(x, (ops.shape(x)[0], -1, self.feature_dim))
        mask = ops.ones(ops.shape(memory)[:2], "bool")  # (B, L)
        return memory, mask

    def initial_cache(self, memory, source_mask, max_length=None):
        """The decoder's starting cache: `[h_0, c_0]` from the mean
        annotation, the memory and its prepared keys. (`max_length` is
        not needed: the state does not grow.)"""
        if not self.decoder.built:
            self.decoder.build((None, None, self.embedding_dim), memory.shape)
        weights = ops.cast(ops.expand_dims(source_mask, -1), "float32")
        count = ops.maximum(ops.sum(weights, axis=1), 1)  # (B, 1)
        mean = ops.sum(ops.cast(memory, "float32") * weights, axis=1) / count
        return {
            "states": [self.init_hidden(mean), self.init_memory_cell(mean)],
            "memory": memory,  # (B, L, F)
            "keys": self.decoder.prepare_memory(memory),  # (B, L, K)
        }

    def _logits(self, embedded, states, contexts, training=None):
        """`L_o(E y_{t-1} + L_h h_t + L_z z_t)`: `(..., E), (..., U),
        (..., F)` -> `(..., V)` float32."""
        dtype = self.compute_dtype
        hidden = (ops.cast(embedded, dtype) + self.output_state(states)
                  + self.output_context(ops.cast(contexts, dtype)))  # (..., E)
        hidden = self.output_dropout(hidden, training=training)
        return ops.cast(self.output_projection(hidden), "float32")

    def decode(self, decoder_tokens, memory, source_mask, training=None,
               return_attention_scores=False):
        """Logits `(B, T, V)` of a whole caption prefix (teacher forcing),
        and, if asked, the attention weights `(B, T, L)`."""
        cache = self.initial_cache(memory, source_mask)
        embedded = self.embedding(decoder_tokens)  # (B, T, E)
        states, contexts, weights = self.decoder(
            embedded, memory, cache["states"], memory_mask=source_mask,
            prepared_memory=cache["keys"], return_attention_scores=True,
            training=training,
        )  # (B, T, U), (B, T, F), (B, T, L)
        logits = self._logits(embedded, states, contexts, training)
        return (logits, weights) if return_attention_scores else logits

    def attention_penalty(self, weights, decoder_tokens):
        """`λ Σ_b penalty_b / (real steps)`: what `call` adds to the loss."""
        step_mask = ops.not_equal(decoder_tokens, self.pad_id)  # (B, T)
        steps = ops.maximum(ops.sum(ops.cast(step_mask, "float32")), 1.0)
        return self.doubly_stochastic * ops.sum(
            doubly_stochastic_penalty(weights, step_mask)) / steps

    def call(self, inputs, training=None):
        memory, source_mask = self.encode(inputs["images"], training)
        tokens = inputs["decoder_tokens"]
        logits, weights = self.decode(tokens, memory, source_mask, training,
                                      return_attention_scores=True)
        if self.doubly_stochastic > 0:
            self.add_loss(self.attention_penalty(weights, tokens))
        return logits

    def decode_step(self, tokens, index, cache, source_mask):
        """One incremental step (see `keras_attention.decoding`).

        Args:
            tokens: `(B, 1)` the previous tokens.
            index: the position (unused: the state carries the history).
            cache: from `initial_cache` or the previous step.
            source_mask: `(B, L)` from `encode`.

        Returns:
            `(logits (B, V), cache, attention (B, L))`.
        """
        embedded = self.embedding(tokens[:, 0])  # (B, E)
        state, context, weights, states = self.decoder.step(
            embedded, cache["states"], cache["memory"], cache["keys"],
            source_mask,
        )
        logits = self._logits(embedded, state, context)
        return logits, dict(cache, states=states), ops.cast(weights,
                                                            "float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "filters": list(self.filters),
                "feature_dim": self.feature_dim,
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "attention_units": self.attention_units,
                "dropout": self.dropout,
                "doubly_stochastic": self.doubly_stochastic,
                "pad_id": self.pad_id,
            }
        )
        return config
