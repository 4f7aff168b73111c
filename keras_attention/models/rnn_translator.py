"""`RNNTranslator`: the RNN encoder-decoder with attention of Bahdanau et
al. (2015), with Luong et al.'s (2015) scores and query as options, and
without attention (Cho et al. 2014) as the baseline.

Letters: B batch, S source length, T target length, E embedding size,
H encoder units per direction, M = 2H memory size, U decoder units,
V vocabulary size.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import AttentionRNNDecoder
from keras_attention.layers.attention_rnn_decoder import serialize_attention
from keras_attention.layers.quantization import quantized_dtype_config
from keras_attention.models._lora import enable_dense_lora
from keras_attention.models._tied_logits import tied_logits

PRESETS = {
    # Tests and quick looks.
    "tiny": dict(embedding_dim=64, encoder_units=64, decoder_units=128,
                 attention_units=64, num_layers=1, dropout=0.1),
    # Multi30k on CPU.
    "small": dict(embedding_dim=256, encoder_units=256, decoder_units=512,
                  attention_units=256, num_layers=1, dropout=0.3),
    # RNNsearch of the paper: 620-d embeddings, 1000 units.
    "base": dict(embedding_dim=620, encoder_units=1000, decoder_units=1000,
                 attention_units=1000, num_layers=1, dropout=0.0),
}
RNN_LAYERS = {"gru": keras.layers.GRU, "lstm": keras.layers.LSTM}


@keras.saving.register_keras_serializable(package="keras_attention")
class RNNTranslator(keras.Model):
    """An RNN encoder-decoder translator, with attention or without.

    Encoder: embeddings and `num_layers` bidirectional GRU (or LSTM)
    layers; the annotations are `h_i = [h→_i; h←_i]` `(B, S, 2H)`.
    Decoder (`AttentionRNNDecoder`): `s_t = f(s_{t-1}, y_{t-1}, c_t)` with
    `c_t = Σ_i α_ti h_i` from the attention layer chosen by `attention`
    (additive by default), starting from `s_0 = tanh(W_s mean_i h_i)` over
    the unpadded annotations. Output: `g(y_{t-1}, s_t, c_t)`, a tanh layer
    of size E on the three, followed by the transpose of the target
    embedding matrix (`tie_embeddings=True`) or a projection to V.

    With `query="current"` the decoder is Luong et al.'s: the state the
    step computes is the query and `s_t` above is the attentional state
    `h̃_t = tanh(W_c [c_t; h_t])`, fed back into the next step
    (`input_feeding`).

    With `attention=None` (the encoder-decoder of Cho et al. 2014, the
    baseline attention is measured against) the decoder's only view of
    the source is one vector, the encoder's final states
    `c = [h→_last; h←_1]` (the forward RNN at the last real position, the
    backward RNN at the first), which replaces `c_t` at every step and
    the mean in `s_0 = tanh(W_s c)`. The encoder is the same, so the two
    differ only by the attention (and the summary `s_0` starts from).

    The model follows the package's decoding protocol (`encode`,
    `initial_cache`, `decode_step`; see `keras_attention.decoding`): its
    cache is the recurrent state with the memory and its prepared keys, so
    greedy and beam search, export and serving work as for the Transformer.

    Args:
        source_vocabulary_size, target_vocabulary_size: ints.
        embedding_dim: E.
        encoder_units: H, per direction.
        decoder_units: U.
        num_layers: stacked bidirectional encoder layers.
        cell: `"gru"` or `"lstm"`, for the encoder and the decoder.
        attention: `"additive"`, `"dot"`, `"general"`, `"scaled_dot"`, a
            `ScoreAttention` layer or its config (dot scores need
            `decoder_units == 2 * encoder_units`), or None (no attention).
        attention_units: the additive score's hidden size.
        query: `"previous"` (Bahdanau) or `"current"` (Luong); see
            `AttentionRNNDecoder`.
        input_feeding: Luong's input feeding (default: on with
            `query="current"`).
        dropout: dropout on the embeddings, the annotations and the output
            layer.
        pad_id: the padding token id; padded positions are masked.
        tie_embeddings: the output matrix is the target embeddings'.
        share_embeddings: one embedding matrix for source and target.

    Call arguments:
        inputs: dict with `"encoder_tokens"` `(batch, source_len)` and
            `"decoder_tokens"` `(batch, target_len)` int tensors.
        training: bool.

    Returns:
        float32 logits `(batch, target_len, target_vocabulary_size)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import RNNTranslator
    >>> model = RNNTranslator.from_preset(
    ...     "tiny", source_vocabulary_size=50, target_vocabulary_size=50)
    >>> logits = model({"encoder_tokens": np.ones((2, 7), "int32"),
    ...                 "decoder_tokens": np.ones((2, 5), "int32")})
    >>> tuple(logits.shape)
    (2, 5, 50)

    References:
        Bahdanau, Cho, Bengio. "Neural Machine Translation by Jointly Learning
        to Align and Translate", ICLR 2015.
        Luong, Pham, Manning. "Effective Approaches to Attention-based Neural
        Machine Translation", EMNLP 2015.
        Cho et al. "Learning Phrase Representations using RNN
        Encoder-Decoder for Statistical Machine Translation", EMNLP 2014.
        Sennrich et al. "Nematus: a Toolkit for Neural Machine Translation",
        EACL 2017 (mean-annotation initial state, tied output embeddings).
    """

    # Decoding protocol: cache entries no step changes (annotations, keys).
    constant_cache_keys = ("memory", "keys")

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        embedding_dim=256,
        encoder_units=256,
        decoder_units=512,
        num_layers=1,
        cell="gru",
        attention="additive",
        attention_units=None,
        query="previous",
        input_feeding=None,
        dropout=0.1,
        pad_id=0,
        tie_embeddings=True,
        share_embeddings=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.source_vocabulary_size = _validation.positive_int(
            "source_vocabulary_size", source_vocabulary_size
        )
        self.target_vocabulary_size = _validation.positive_int(
            "target_vocabulary_size", target_vocabulary_size
        )
        self.embedding_dim = _validation.positive_int(
            "embedding_dim", embedding_dim
        )
        self.encoder_units = _validation.positive_int(
            "encoder_units", encoder_units
        )
        self.decoder_units = _validation.positive_int(
            "decoder_units", decoder_units
        )
        self.num_layers = _validation.positive_int("num_layers", num_layers)
        self.cell = _validation.choice("cell", cell, RNN_LAYERS)
        self.attention_units = _validation.optional_positive_int(
            "attention_units", attention_units
        )
        self.dropout = _validation.rate("dropout", dropout)
        self.pad_id = int(pad_id)
        self.tie_embeddings = bool(tie_embeddings)
        self.share_embeddings = bool(share_embeddings)
        if share_embeddings and source_vocabulary_size != target_vocabulary_size:
            raise ValueError(
                "`share_embeddings=True` needs equal vocabulary sizes, "
                f"received: source_vocabulary_size={source_vocabulary_size}, "
                f"target_vocabulary_size={target_vocabulary_size}"
            )
        memory_dim = 2 * encoder_units
        if attention in ("dot", "scaled_dot") and decoder_units != memory_dim:
            raise ValueError(
                f"The {attention!r} score needs `decoder_units` equal to "
                "2 * `encoder_units` (the annotation size), received: "
                f"decoder_units={decoder_units}, encoder_units={encoder_units}"
            )

        def embedding(size, name):
            return keras.layers.Embedding(
                size, embedding_dim, name=name, dtype=self.dtype_policy,
                embeddings_initializer=keras.initializers.RandomNormal(
                    stddev=embedding_dim**-0.5),
            )

        self.target_embedding = embedding(target_vocabulary_size,
                                          "target_embedding")
        self.source_embedding = (
            self.target_embedding if share_embeddings
            else embedding(source_vocabulary_size, "source_embedding")
        )
        self.embedding_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy
        )
        self.encoder_layers = [
            keras.layers.Bidirectional(
                RNN_LAYERS[cell](encoder_units, return_sequences=True,
                                 dtype=self.dtype_policy),
                dtype=self.dtype_policy, name=f"encoder_{i}",
            )
            for i in range(num_layers)
        ]
        self.memory_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy
        )
        self.bridge = keras.layers.Dense(
            decoder_units, activation="tanh", dtype=self.dtype_policy,
            name="bridge",
        )
        self.decoder = AttentionRNNDecoder(
            decoder_units, cell=cell, attention=attention,
            attention_units=attention_units, query=query,
            input_feeding=input_feeding, dtype=self.dtype_policy,
            name="decoder",
        )
        self.attention = self.decoder.attention
        self.query = self.decoder.query
        self.input_feeding = self.decoder.input_feeding
        self.output_hidden = keras.layers.Dense(
            embedding_dim, activation="tanh", dtype=self.dtype_policy,
            name="output_hidden",
        )
        self.output_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy
        )
        self.output_projection = None
        if not tie_embeddings:
            self.output_projection = keras.layers.Dense(
                target_vocabulary_size, dtype=self.dtype_policy,
                name="output_projection",
            )

    def enable_lora(self, rank, lora_alpha=None, projections=None):
        """Fine-tune with LoRA: freeze every weight and add Keras's
        trainable rank-`rank` adapters (`keras.layers.Dense.enable_lora`,
        scaled by `lora_alpha / rank`) to the Dense `projections`:
        "bridge" (encoder state to the decoder's first state),
        "attentional" (Luong's `W_c`, with `query="current"`),
        "output_hidden" and "output_projection" (without tied
        embeddings). By default the decoder's projections the model has,
        "attentional" and "output_hidden". The recurrent cells and the
        score function's weights stay frozen (Keras's cells have no LoRA).
        Build the model first. Saving merges the adapters into the
        kernels (Keras's own `Dense` saving).

        Example:

        >>> import numpy as np
        >>> from keras_attention.models import RNNTranslator
        >>> model = RNNTranslator.from_preset("tiny", 50, 50,
        ...                                   query="current")
        >>> _ = model({"encoder_tokens": np.ones((1, 3), "int32"),
        ...            "decoder_tokens": np.ones((1, 2), "int32")})
        >>> [layer.name for layer in model.enable_lora(2)]
        ['attentional', 'output_hidden']
        >>> all("lora" in w.path for w in model.trainable_weights)
        True
        """
        named = {"bridge": self.bridge,
                 "attentional": getattr(self.decoder, "attentional", None),
                 "output_hidden": self.output_hidden,
                 "output_projection": self.output_projection}
        if projections is None:
            projections = tuple(name for name in ("attentional",
                                                  "output_hidden")
                                if named[name] is not None)
        return enable_dense_lora(self, rank, lora_alpha, named, projections)

    @property
    def hidden_dim(self):
        """The decoder size (what the learning-rate schedule scales by)."""
        return self.decoder_units

    @classmethod
    def from_preset(cls, preset, source_vocabulary_size,
                    target_vocabulary_size, **overrides):
        """A model of a named size: `"tiny"`, `"small"` or `"base"`."""
        _validation.choice("preset", preset, PRESETS)
        config = {**PRESETS[preset], **overrides}
        return cls(source_vocabulary_size=source_vocabulary_size,
                   target_vocabulary_size=target_vocabulary_size, **config)

    def encode(self, encoder_tokens, training=None):
        """Annotations `(B, S, 2H)` and the source padding mask `(B, S)`."""
        source_mask = ops.not_equal(encoder_tokens, self.pad_id)
        x = self.embedding_dropout(self.source_embedding(encoder_tokens),
                                   training=training)  # (B, S, E)
        for layer in self.encoder_layers:
            x = layer(x, mask=source_mask, training=training)  # (B, S, 2H)
        x = self.memory_dropout(x, training=training)
        # Padded positions hold zeros, whatever the RNN left there.
        x = x * ops.cast(ops.expand_dims(source_mask, -1), x.dtype)
        return x, source_mask

    def final_states(self, memory, source_mask):
        """The encoder's final states `c = [h→_last; h←_1]` `(B, 2H)`, read
        from the annotations `(B, S, 2H)`: the forward half at each
        sequence's last real position, the backward half at position 0."""
        half = self.encoder_units
        length = ops.sum(ops.cast(source_mask, "int32"), axis=1)  # (B,)
        last = ops.maximum(length - 1, 0)[:, None, None]  # (B, 1, 1)
        forward = ops.take_along_axis(memory[..., :half], last, axis=1)
        return ops.concatenate([forward[:, 0], memory[:, 0, half:]], axis=-1)

    def initial_cache(self, memory, source_mask, max_length=None):
        """The decoder's starting cache: the recurrent state
        `s_0 = tanh(W_s mean_i h_i)`, the memory and its prepared keys;
        without attention, `s_0 = tanh(W_s c)` and the context `c`
        `(B, 2H)` as the memory. (`max_length` is not needed: the state
        does not grow.)"""
        if self.attention is None:
            memory = self.final_states(memory, source_mask)  # c (B, 2H)
            summary = ops.cast(memory, "float32")
        else:
            # The mean of the real annotations, summed in float32.
            weights = ops.cast(ops.expand_dims(source_mask, -1), "float32")
            count = ops.maximum(ops.sum(weights, axis=1), 1)  # (B, 1)
            summary = ops.sum(ops.cast(memory, "float32") * weights,
                              axis=1) / count  # (B, 2H)
        if not self.decoder.built:
            self.decoder.build((None, None, self.embedding_dim), memory.shape)
        states = self.decoder.states_from(self.bridge(summary))
        return {
            "states": states,
            "memory": memory,
            "keys": self.decoder.prepare_memory(memory),  # (B, S, K)
        }

    def _logits(self, embedded, states, contexts, training=None):
        """g(y_{t-1}, s_t, c_t): `(..., E), (..., U), (..., M)` -> `(..., V)`."""
        dtype = self.compute_dtype
        hidden = self.output_hidden(ops.concatenate(
            [ops.cast(embedded, dtype), ops.cast(states, dtype),
             ops.cast(contexts, dtype)], axis=-1,
        ))  # (..., E)
        hidden = self.output_dropout(hidden, training=training)
        if self.output_projection is not None:
            logits = self.output_projection(hidden)
        else:
            logits = tied_logits(hidden, self.target_embedding)  # (..., V)
        return ops.cast(logits, "float32")

    def decode(self, decoder_tokens, memory, source_mask, training=None,
               return_attention_scores=False):
        """Logits `(B, T, V)` for a whole target prefix (teacher forcing),
        and, if asked, the attention weights `(B, T, S)`."""
        self._check_attends(return_attention_scores)
        cache = self.initial_cache(memory, source_mask)
        embedded = self.embedding_dropout(
            self.target_embedding(decoder_tokens), training=training
        )  # (B, T, E)
        outputs = self.decoder(
            embedded, cache["memory"], cache["states"],
            memory_mask=source_mask, prepared_memory=cache["keys"],
            return_attention_scores=return_attention_scores,
            training=training,
        )  # (B, T, U), (B, T, M)[, (B, T, S)]
        logits = self._logits(embedded, outputs[0], outputs[1], training)
        return (logits, outputs[2]) if return_attention_scores else logits

    def _check_attends(self, asked=True):
        if asked and self.attention is None:
            raise ValueError(
                "This translator has no attention to show (it was built "
                "with attention=None: the encoder-decoder without "
                "attention)"
            )

    def cross_attention(self, encoder_tokens, decoder_tokens):
        """The attention weights as `(B, L=1, N=1, T, S)` float32, teacher
        forced on `decoder_tokens (B, T)` (BOS, then the output but its
        last token): the shape `TransformerTranslator` gives, one layer and
        one head."""
        self._check_attends()
        memory, source_mask = self.encode(encoder_tokens)
        _, weights = self.decode(decoder_tokens, memory, source_mask,
                                 return_attention_scores=True)  # (B, T, S)
        return ops.cast(weights, "float32")[:, None, None]

    def call(self, inputs, training=None):
        memory, source_mask = self.encode(inputs["encoder_tokens"], training)
        return self.decode(inputs["decoder_tokens"], memory, source_mask,
                           training)

    def decode_step(self, tokens, index, cache, source_mask):
        """One incremental step (see `keras_attention.decoding`).

        Args:
            tokens: `(B, 1)` the previous tokens.
            index: the position (unused: the state carries the history).
            cache: from `initial_cache` or the previous step.
            source_mask: `(B, S)` from `encode`.

        Returns:
            `(logits (B, V), cache, attention (B, S))`; without attention,
            the attention is zeros.
        """
        embedded = self.target_embedding(tokens[:, 0])  # (B, E)
        state, context, weights, states = self.decoder.step(
            embedded, cache["states"], cache["memory"], cache["keys"],
            source_mask,
        )
        logits = self._logits(embedded, state, context)
        cache = dict(cache, states=states)
        if weights is None:  # no attention
            weights = ops.zeros(ops.shape(source_mask), "float32")
        return logits, cache, ops.cast(weights, "float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_vocabulary_size": self.source_vocabulary_size,
                "target_vocabulary_size": self.target_vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "encoder_units": self.encoder_units,
                "decoder_units": self.decoder_units,
                "num_layers": self.num_layers,
                "cell": self.cell,
                "attention": serialize_attention(self.attention),
                "attention_units": self.attention_units,
                "query": self.query,
                "input_feeding": self.input_feeding,
                "dropout": self.dropout,
                "pad_id": self.pad_id,
                "tie_embeddings": self.tie_embeddings,
                "share_embeddings": self.share_embeddings,
            }
        )
        return quantized_dtype_config(self, config)
