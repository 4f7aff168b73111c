"""`TransformerTranslator`: the encoder-decoder of Vaswani et al. (2017).

Letters: B batch, S source length, T target length, L cache length (or
layers, in the attention of every block), N heads, D model size,
V vocabulary size.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from keras_attention.layers import SinusoidalPositionEmbedding
from keras_attention.layers import TransformerDecoder
from keras_attention.layers import TransformerEncoder
from keras_attention.layers.quantization import quantized_dtype_config
from keras_attention.models._lora import LoRAMixin
from keras_attention.models._tied_logits import tied_logits

PRESETS = {
    # The `make demo` model: learns the embedded corpus in minutes on 2 cores.
    "tiny": dict(num_layers=2, hidden_dim=128, num_heads=4,
                 intermediate_dim=256, dropout=0.1),
    # Multi30k on CPU.
    "small": dict(num_layers=3, hidden_dim=256, num_heads=4,
                  intermediate_dim=1024, dropout=0.1),
    # The paper's base model.
    "base": dict(num_layers=6, hidden_dim=512, num_heads=8,
                 intermediate_dim=2048, dropout=0.1),
}
"""`TransformerTranslator`'s presets (`--preset`): name -> constructor
arguments. `tiny` (N=2, d=128, h=4, d_ff=256), `small` (N=3, d=256, h=4,
d_ff=1024) and `base` (the paper's: N=6, d=512, h=8, d_ff=2048)."""


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerTranslator(LoRAMixin, keras.Model):
    """A Transformer translator built from the package's layers.

    Token embeddings scaled by √D plus sinusoidal positions (or relative
    self-attention or RoPE: see `max_relative_position` and
    `rope_max_wavelength`), `num_layers`
    `TransformerEncoder` and `TransformerDecoder` blocks, and an output
    projection that is, with `tie_embeddings=True`, the transpose of the
    target embedding matrix (Press & Wolf, 2017; the paper also shares it).
    With `share_embeddings=True` (a joint source/target vocabulary) the
    source and target embeddings are one matrix.

    Args:
        source_vocabulary_size, target_vocabulary_size: ints.
        num_layers: blocks in the encoder and in the decoder (N).
        hidden_dim: model size D.
        num_heads: attention heads.
        intermediate_dim: feed-forward size.
        dropout: dropout rate (embeddings, attention, sub-layers).
        pad_id: the padding token id; padded positions are masked.
        tie_embeddings: output projection = target embeddings transposed.
        share_embeddings: one embedding matrix for source and target
            (requires equal vocabulary sizes).
        normalize_first: pre-norm blocks instead of the paper's post-norm.
        max_relative_position: `None` for the paper's sinusoidal positions;
            an int δ makes every self-attention (encoder and decoder) a
            `RelativeAttention` over clipped distances (Shaw et al., 2018)
            and drops the sinusoids, as in their relative-only model (they
            found that adding absolute positions gave no further gain). The
            cross-attention stays plain.
        relative_values: with `max_relative_position`, also add relative
            embeddings to the values.
        rope_max_wavelength: `None`, or rotary position embeddings in
            every self-attention instead of the sinusoids (see
            `MultiHeadAttention`; 10000 is the paper's).
            One position scheme at a time: the sinusoids, relative or
            RoPE. (Not ALiBi: its bias `-slope |i - j|` is symmetric, so a
            bidirectional encoder with it alone maps a reversed source to
            reversed states and cannot tell word order's direction; the
            paper's setting is a causal language model.)
        num_key_value_heads: `None`, or fewer key/value heads than
            `num_heads` in every self-attention (grouped-query attention:
            the decoder's cache shrinks by the group factor).

    Call arguments:
        inputs: dict with `"encoder_tokens"` `(batch, source_len)` and
            `"decoder_tokens"` `(batch, target_len)` int tensors.
        training: bool.

    Returns:
        float32 logits `(batch, target_len, target_vocabulary_size)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import TransformerTranslator
    >>> model = TransformerTranslator.from_preset(
    ...     "tiny", source_vocabulary_size=50, target_vocabulary_size=50)
    >>> logits = model({"encoder_tokens": np.ones((2, 7), "int32"),
    ...                 "decoder_tokens": np.ones((2, 5), "int32")})
    >>> tuple(logits.shape)
    (2, 5, 50)
    """

    # Decoding protocol: cache entries no step changes (encoder keys, values).
    constant_cache_keys = ("cross_attention",)

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        num_layers=6,
        hidden_dim=512,
        num_heads=8,
        intermediate_dim=2048,
        dropout=0.1,
        pad_id=0,
        tie_embeddings=True,
        share_embeddings=False,
        normalize_first=False,
        max_relative_position=None,
        relative_values=False,
        rope_max_wavelength=None,
        num_key_value_heads=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.source_vocabulary_size = _validation.positive_int(
            "source_vocabulary_size", source_vocabulary_size
        )
        self.target_vocabulary_size = _validation.positive_int(
            "target_vocabulary_size", target_vocabulary_size
        )
        self.num_layers = _validation.positive_int("num_layers", num_layers)
        self.hidden_dim = _validation.positive_int("hidden_dim", hidden_dim)
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        self.intermediate_dim = _validation.positive_int(
            "intermediate_dim", intermediate_dim
        )
        self.dropout = _validation.rate("dropout", dropout)
        self.pad_id = int(pad_id)
        self.tie_embeddings = bool(tie_embeddings)
        self.share_embeddings = bool(share_embeddings)
        self.normalize_first = bool(normalize_first)
        self.max_relative_position = _validation.optional_positive_int(
            "max_relative_position", max_relative_position
        )
        self.relative_values = bool(relative_values)
        self.rope_max_wavelength = rope_max_wavelength
        self.num_key_value_heads = num_key_value_heads
        schemes = {name: value for name, value in (
            ("max_relative_position", max_relative_position),
            ("rope_max_wavelength", rope_max_wavelength)) if value is not None}
        if len(schemes) > 1:
            raise ValueError(
                "Choose one position scheme (relative or RoPE), received: "
                + ", ".join(f"{name}={value!r}"
                            for name, value in schemes.items())
            )
        if share_embeddings and source_vocabulary_size != target_vocabulary_size:
            raise ValueError(
                "`share_embeddings=True` needs equal vocabulary sizes, "
                f"received: source_vocabulary_size={source_vocabulary_size}, "
                f"target_vocabulary_size={target_vocabulary_size}"
            )

        initializer = keras.initializers.RandomNormal(
            stddev=hidden_dim**-0.5
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocabulary_size, hidden_dim,
            embeddings_initializer=initializer, name="target_embedding",
            dtype=self.dtype_policy,
        )
        self.source_embedding = (
            self.target_embedding if share_embeddings
            else keras.layers.Embedding(
                source_vocabulary_size, hidden_dim,
                embeddings_initializer=initializer, name="source_embedding",
                dtype=self.dtype_policy,
            )
        )
        self.positions = None
        if not schemes:
            self.positions = SinusoidalPositionEmbedding(
                name="positions", dtype=self.dtype_policy
            )
        self.embedding_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy
        )
        block = dict(
            intermediate_dim=intermediate_dim, num_heads=num_heads,
            dropout=dropout, normalize_first=normalize_first,
            dtype=self.dtype_policy,
        )
        plain = not schemes and num_key_value_heads is None
        if not plain and hidden_dim % num_heads:
            raise ValueError(
                "`hidden_dim` must be divisible by `num_heads`, received: "
                f"hidden_dim={hidden_dim}, num_heads={num_heads}"
            )

        def self_attention():
            """A new self-attention per block with the position scheme and
            key/value heads (`None`: the blocks' default
            `MultiHeadSelfAttention`)."""
            if plain:
                return None
            options = dict(
                num_heads=num_heads, key_dim=hidden_dim // num_heads,
                num_key_value_heads=num_key_value_heads, dropout=dropout,
                dtype=self.dtype_policy, name="self_attention",
            )
            if max_relative_position is not None:
                return RelativeAttention(
                    max_relative_position=max_relative_position,
                    relative_values=relative_values, **options)
            return MultiHeadSelfAttention(
                rope_max_wavelength=rope_max_wavelength, **options)

        self.encoder_blocks = [
            TransformerEncoder(**block, self_attention=self_attention(),
                               name=f"encoder_{i}")
            for i in range(num_layers)
        ]
        self.decoder_blocks = [
            TransformerDecoder(**block, self_attention=self_attention(),
                               name=f"decoder_{i}")
            for i in range(num_layers)
        ]
        self.final_norms = None
        if normalize_first:
            self.final_norms = [
                keras.layers.LayerNormalization(
                    epsilon=1e-5, dtype=self.dtype_policy, name=name
                )
                for name in ("encoder_norm", "decoder_norm")
            ]
        self.output_projection = None
        if not tie_embeddings:
            self.output_projection = keras.layers.Dense(
                target_vocabulary_size, dtype=self.dtype_policy,
                name="output_projection",
            )

    @classmethod
    def from_preset(cls, preset, source_vocabulary_size,
                    target_vocabulary_size, **overrides):
        """A model of a named size: `"tiny"`, `"small"` or `"base"`."""
        _validation.choice("preset", preset, PRESETS)
        config = {**PRESETS[preset], **overrides}
        return cls(source_vocabulary_size=source_vocabulary_size,
                   target_vocabulary_size=target_vocabulary_size, **config)

    def _embed(self, embedding, tokens, start_index=0, training=None):
        # An int8 embedding returns float32 under a mixed policy.
        x = ops.cast(embedding(tokens), self.compute_dtype)  # (B, T, D)
        x = x * ops.cast(self.hidden_dim**0.5, x.dtype)
        if self.positions is not None:
            x = x + self.positions(x, start_index=start_index)
        return self.embedding_dropout(x, training=training)

    def encode(self, encoder_tokens, training=None):
        """Encoder states `(B, S, D)` and the source padding mask `(B, S)`."""
        x, source_mask, _ = self._encode_blocks(encoder_tokens, training)
        return x, source_mask

    def _encode_blocks(self, encoder_tokens, training=None, scores=False):
        """Encoder states `(B, S, D)`, the source padding mask `(B, S)` and,
        if `scores`, every block's self-attention `(B, N, S, S)` (else no
        block is asked for its weights)."""
        source_mask = ops.not_equal(encoder_tokens, self.pad_id)
        x = self._embed(self.source_embedding, encoder_tokens,
                        training=training)
        block_scores = []
        for block in self.encoder_blocks:
            x = block(x, padding_mask=source_mask,
                      return_attention_scores=scores, training=training)
            if scores:
                x, attention = x
                block_scores.append(attention)
        if self.final_norms is not None:
            x = self.final_norms[0](x)
        return x, source_mask, block_scores

    def _logits(self, x):
        if self.final_norms is not None:
            x = self.final_norms[1](x)
        if self.output_projection is not None:
            logits = self.output_projection(x)
        else:
            logits = tied_logits(x, self.target_embedding)  # (B, T, V)
        return ops.cast(logits, "float32")

    def decode(self, decoder_tokens, memory, source_mask, training=None,
               return_attention_scores=False):
        """Logits `(B, T, V)` for a whole target prefix (teacher forcing),
        and, if asked, the last block's cross-attention `(B, N, T, S)`."""
        x, scores = self._decode_blocks(
            decoder_tokens, memory, source_mask, training,
            scores="last" if return_attention_scores else None,
        )
        logits = self._logits(x)
        return (logits, scores[-1]) if return_attention_scores else logits

    def _decode_blocks(self, decoder_tokens, memory, source_mask,
                       training=None, scores=None, attention="cross"):
        """The last block's states `(B, T, D)` and the weights of the
        blocks `scores` names (`None`, `"last"` or `"all"`), teacher
        forced: the cross-attention `(B, N, T, S)`, or with
        `attention="self"` the causal self-attention `(B, N, T, T)`. Blocks
        not named are not asked for theirs."""
        target_mask = ops.not_equal(decoder_tokens, self.pad_id)
        x = self._embed(self.target_embedding, decoder_tokens,
                        training=training)
        block_scores = []
        last = len(self.decoder_blocks) - 1
        for index, block in enumerate(self.decoder_blocks):
            wanted = scores == "all" or (scores == "last" and index == last)
            x = block(
                x, memory, decoder_padding_mask=target_mask,
                encoder_padding_mask=source_mask,
                return_attention_scores=wanted and attention == "cross",
                return_self_attention_scores=wanted and attention == "self",
                training=training,
            )
            if wanted:
                x, weights = x
                block_scores.append(weights)
        return x, block_scores

    def cross_attention(self, encoder_tokens, decoder_tokens):
        """Every decoder block's cross-attention, every head: float32
        `(B, L, N, T, S)`, teacher forced on `decoder_tokens (B, T)` (BOS,
        then the output but its last token). `[:, -1].mean(1)` is what
        `decode_step` reports."""
        memory, source_mask = self.encode(encoder_tokens)
        _, scores = self._decode_blocks(decoder_tokens, memory, source_mask,
                                        scores="all")
        return ops.cast(ops.stack(scores, axis=1), "float32")

    def encoder_self_attention(self, encoder_tokens):
        """Every encoder block's self-attention, every head: float32
        `(B, L, N, S, S)` over `encoder_tokens (B, S)`; padded keys get 0."""
        _, _, scores = self._encode_blocks(encoder_tokens, scores=True)
        return ops.cast(ops.stack(scores, axis=1), "float32")

    def decoder_self_attention(self, encoder_tokens, decoder_tokens):
        """Every decoder block's causal self-attention, every head: float32
        `(B, L, N, T, T)`, teacher forced on `decoder_tokens (B, T)` as
        `cross_attention` is (row `t` is the position that predicts output
        `t`; column `j` is the decoder input at `j`, BOS first). Zero above
        the diagonal and at padded keys."""
        memory, source_mask = self.encode(encoder_tokens)
        _, scores = self._decode_blocks(decoder_tokens, memory, source_mask,
                                        scores="all", attention="self")
        return ops.cast(ops.stack(scores, axis=1), "float32")

    def call(self, inputs, training=None):
        memory, source_mask = self.encode(inputs["encoder_tokens"], training)
        return self.decode(inputs["decoder_tokens"], memory, source_mask,
                           training)

    def initial_cache(self, memory, source_mask, max_length):
        """Per-block decoder caches for `max_length` target positions: the
        cross-attention keys/values of `memory` are computed here, once.
        (`source_mask` is part of the decoding protocol; the steps take it
        again.)"""
        return {
            block.name: block.initial_cache(memory, max_length=max_length)
            for block in self.decoder_blocks
        }

    def decode_step(self, tokens, index, cache, source_mask):
        """One incremental step.

        Args:
            tokens: `(B, 1)` the tokens at position `index`.
            index: scalar int, the position (cache index).
            cache: from `initial_cache` or the previous step.
            source_mask: `(B, S)` from `encode`.

        Returns:
            `(logits (B, V), cache, cross_attention (B, S))`: the last
            block's cross-attention weights averaged over heads, float32.
        """
        x = self._embed(self.target_embedding, tokens, start_index=index)
        new_cache = {}
        last = self.decoder_blocks[-1]
        for block in self.decoder_blocks:
            outputs = block(
                x, encoder_padding_mask=source_mask, cache=cache[block.name],
                cache_update_index=index,
                return_attention_scores=block is last,
            )
            if block is last:
                x, scores, new_cache[block.name] = outputs
            else:
                x, new_cache[block.name] = outputs
        attention = ops.mean(ops.cast(scores[:, :, 0], "float32"), axis=1)
        return self._logits(x)[:, 0], new_cache, attention

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_vocabulary_size": self.source_vocabulary_size,
                "target_vocabulary_size": self.target_vocabulary_size,
                "num_layers": self.num_layers,
                "hidden_dim": self.hidden_dim,
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "pad_id": self.pad_id,
                "tie_embeddings": self.tie_embeddings,
                "share_embeddings": self.share_embeddings,
                "normalize_first": self.normalize_first,
                "max_relative_position": self.max_relative_position,
                "relative_values": self.relative_values,
                "rope_max_wavelength": self.rope_max_wavelength,
                "num_key_value_heads": self.num_key_value_heads,
            }
        )
        return quantized_dtype_config(self, config)
