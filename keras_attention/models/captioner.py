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
from keras_attention.models import caption_losses
from keras_attention.models.caption_losses import doubly_stochastic_penalty

ATTENTIONS = ("soft", "hard")
# How a hard-attention model reads the annotations when it does not train:
# the expected context (soft attention with the same weights) or the most
# likely location.
HARD_DECODINGS = ("expectation", "argmax")

PRESETS = {
    # Tests.
    "tiny": dict(filters=(8, 16), feature_dim=16, embedding_dim=16,
                 units=24, attention_units=16, dropout=0.0),
    # Digit scenes on CPU.
    "small": dict(filters=(32, 64), feature_dim=64, embedding_dim=64,
                  units=128, attention_units=64, dropout=0.1),
}


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

    With `attention="hard"` (Xu et al.'s stochastic attention, section
    4.1), training draws one location per step, `s_t ~ Multinoulli(α_t)`,
    and reads `z_t = a_{s_t}`; with probability `expectation_probability`
    (0.5, per batch, as the authors' code does) the batch reads the
    expected context `Σ_i α_ti a_i` instead. The sampled steps are trained
    with REINFORCE (equation 12): the loss adds
    `λ_r Σ_b (NLL_b − b) Σ_t log α_t[s_t] − λ_e Σ_b Σ_t H(α_t)`, divided by
    the batch's real steps, where `NLL_b = −log p(y_b | s̃_b, a)` is the
    caption's negative log-likelihood under the sampled locations (held
    constant), `b` a moving average of it (`baseline_decay` 0.9,
    bias-corrected), `λ_r = reinforce_weight` and
    `λ_e = entropy_weight`. The reward needs the caption: a hard model's
    training inputs carry `"targets"`. Out of training it reads the
    expected context (`hard_decoding="expectation"`, what the authors'
    sampler does by default) or the most likely location (`"argmax"`).

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
        attention: `"soft"` (deterministic, the default) or `"hard"`
            (stochastic, trained with REINFORCE).
        expectation_probability: hard: the chance that a training batch
            reads the expected context instead of samples.
        reinforce_weight: hard: λ_r, the REINFORCE term's weight.
        entropy_weight: hard: λ_e, the entropy bonus's weight.
        baseline_decay: hard: the moving average's decay.
        hard_decoding: hard: `"expectation"` or `"argmax"` out of training.
        seed: hard: seeds the location and expectation draws.

    Call arguments:
        inputs: dict with `"images"` `(batch, H, W)` or `(batch, H, W, C)`
            floats and `"decoder_tokens"` `(batch, caption_len)` ints (BOS,
            then the caption but its last token); a hard model in training
            also needs `"targets"` `(batch, caption_len)` (the caption,
            then EOS: the labels).
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
        attention="soft",
        expectation_probability=0.5,
        reinforce_weight=0.1,
        entropy_weight=0.002,
        baseline_decay=0.9,
        hard_decoding="expectation",
        seed=None,
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
        self.attention = _validation.choice("attention", attention,
                                            ATTENTIONS)
        self.expectation_probability = _validation.probability(
            "expectation_probability", expectation_probability)
        self.reinforce_weight = _validation.non_negative_float(
            "reinforce_weight", reinforce_weight)
        self.entropy_weight = _validation.non_negative_float(
            "entropy_weight", entropy_weight)
        self.baseline_decay = _validation.rate("baseline_decay",
                                               baseline_decay)
        self.hard_decoding = _validation.choice("hard_decoding",
                                                hard_decoding, HARD_DECODINGS)
        self.seed = seed
        if self.attention == "hard":
            self.seed_generator = keras.random.SeedGenerator(
                seed, name="seed_generator")
            # The REINFORCE baseline: a moving average of the captions'
            # NLL, with the number of updates for its bias correction.
            self.baseline = self.add_weight(
                shape=(), initializer="zeros", trainable=False,
                name="baseline", dtype="float32")
            self.baseline_updates = self.add_weight(
                shape=(), initializer="zeros", trainable=False,
                name="baseline_updates", dtype="float32")

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

    def _reads_argmax(self):
        return self.attention == "hard" and self.hard_decoding == "argmax"

    def decode(self, decoder_tokens, memory, source_mask, training=None,
               return_attention_scores=False, location_noise=None,
               expectation=None):
        """Logits `(B, T, V)` of a whole caption prefix (teacher forcing),
        and, if asked, the attention weights `(B, T, L)`. Hard attention
        reads the locations `location_noise` `(B, T)` draws (rows where
        `expectation` `(B,)` is True read the expected context), or, without
        noise, as `hard_decoding` says."""
        cache = self.initial_cache(memory, source_mask)
        embedded = self.embedding(decoder_tokens)  # (B, T, E)
        states, contexts, weights = self.decoder(
            embedded, memory, cache["states"], memory_mask=source_mask,
            prepared_memory=cache["keys"], return_attention_scores=True,
            training=training, location_noise=location_noise,
            argmax_location=location_noise is None and self._reads_argmax(),
            expectation=expectation,
        )  # (B, T, U), (B, T, F), (B, T, L)
        logits = self._logits(embedded, states, contexts, training)
        return (logits, weights) if return_attention_scores else logits

    def attention_penalty(self, weights, decoder_tokens):
        """`λ Σ_b penalty_b / (real steps)`: what `call` adds to the loss."""
        step_mask = ops.not_equal(decoder_tokens, self.pad_id)  # (B, T)
        steps = ops.maximum(ops.sum(ops.cast(step_mask, "float32")), 1.0)
        return self.doubly_stochastic * ops.sum(
            doubly_stochastic_penalty(weights, step_mask)) / steps

    def reinforce_terms(self, logits, weights, targets, location_noise,
                        expectation, baseline):
        """Hard attention's learning rule for one batch, with this model's
        `pad_id`, λ_r and λ_e: see `caption_losses.reinforce_terms`."""
        return caption_losses.reinforce_terms(
            logits, weights, targets, location_noise, expectation, baseline,
            pad_id=self.pad_id, reinforce_weight=self.reinforce_weight,
            entropy_weight=self.entropy_weight)

    def corrected_baseline(self):
        """Hard attention: the baseline `b` the next batch is scored
        against, the moving average divided by `1 − decay^updates` (0
        before the first update)."""
        updates = self.baseline_updates
        correction = 1.0 - ops.power(self.baseline_decay, updates)
        return ops.where(updates > 0,
                         self.baseline / ops.maximum(correction, 1e-8), 0.0)

    def call(self, inputs, training=None):
        memory, source_mask = self.encode(inputs["images"], training)
        tokens = inputs["decoder_tokens"]
        if self.attention == "hard" and training:
            return self._hard_training_call(inputs, memory, source_mask)
        logits, weights = self.decode(tokens, memory, source_mask, training,
                                      return_attention_scores=True)
        if self.doubly_stochastic > 0:
            self.add_loss(self.attention_penalty(weights, tokens))
        return logits

    def _hard_training_call(self, inputs, memory, source_mask):
        if "targets" not in inputs:
            raise ValueError(
                "A hard-attention Captioner trains with REINFORCE, whose "
                "reward is the caption's likelihood: its training inputs "
                "need 'targets' (the labels), received the keys: "
                f"{sorted(inputs)}")
        tokens, targets = inputs["decoder_tokens"], inputs["targets"]
        batch = ops.shape(tokens)[0]
        noise = keras.random.uniform(ops.shape(tokens), seed=self.seed_generator)
        draw = keras.random.uniform((), seed=self.seed_generator)
        expectation = ops.broadcast_to(draw < self.expectation_probability,
                                       (batch,))  # one draw per batch
        logits, weights = self.decode(
            tokens, memory, source_mask, True, return_attention_scores=True,
            location_noise=noise, expectation=expectation)
        terms = self.reinforce_terms(logits, weights, targets, noise,
                                     expectation, self.corrected_baseline())
        self.add_loss(terms["reinforce"] + terms["entropy"])
        if self.doubly_stochastic > 0:
            self.add_loss(self.attention_penalty(weights, tokens))
        # b <- decay b + (1 - decay) mean_b NLL_b, after its use.
        mean_nll = ops.mean(ops.stop_gradient(terms["nll"]))
        self.baseline.assign(self.baseline_decay * self.baseline
                             + (1.0 - self.baseline_decay) * mean_nll)
        self.baseline_updates.assign(self.baseline_updates + 1.0)
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
            source_mask, argmax_location=self._reads_argmax(),
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
                "attention": self.attention,
                "expectation_probability": self.expectation_probability,
                "reinforce_weight": self.reinforce_weight,
                "entropy_weight": self.entropy_weight,
                "baseline_decay": self.baseline_decay,
                "hard_decoding": self.hard_decoding,
                "seed": self.seed,
            }
        )
        return config
