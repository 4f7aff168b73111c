"""`DecoderOnlyTranslator`: Liu et al.'s T-D, the source, a separator and
the target read as one sequence by a decoder-only Transformer.

Letters: B batch, S source length (padded), T target length, L cache
length (S + the longest output), N heads, D model size, V vocabulary,
K blocks.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.models._lora import LoRAMixin
from keras_attention.models.transformer_language_model import TransformerLanguageModel

PRESETS = {
    # The `make demo` size.
    "tiny": dict(num_layers=2, hidden_dim=128, num_heads=4,
                 intermediate_dim=256, dropout=0.1),
    # The Transformer `small`'s 3 + 3 blocks as 6 decoder-only blocks.
    "small": dict(num_layers=6, hidden_dim=256, num_heads=4,
                  intermediate_dim=1024, dropout=0.1),
    # The Transformer `base`'s 6 + 6 blocks as 12.
    "base": dict(num_layers=12, hidden_dim=512, num_heads=8,
                 intermediate_dim=2048, dropout=0.1),
}
"""`DecoderOnlyTranslator`'s presets (`--preset`): `tiny` (K=2, d=128,
h=4, d_ff=256), `small` (K=6, d=256, h=4, d_ff=1024: the Transformer
`small`'s block count) and `base` (K=12, d=512, h=8, d_ff=2048)."""


def _real_positions(mask):
    """`(B, L)` positions counting the True entries of `mask` only (a
    False entry repeats the position before it; leading ones get 0)."""
    return ops.maximum(ops.cumsum(ops.cast(mask, "int32"), axis=1) - 1, 0)


@keras.saving.register_keras_serializable(package="keras_attention")
class DecoderOnlyTranslator(LoRAMixin, keras.Model):
    """A translator without an encoder: Liu et al.'s T-D (2018, section
    4.2.3). The source, then `<s>` (the separator) and the target are one
    sequence read by a `TransformerLanguageModel` (causal full
    self-attention, sinusoidal positions); the loss is taken on the target
    positions only, as for the encoder-decoder translators, so it trains,
    decodes (greedy and beam search), exports and serves through the same
    path (`keras_attention.decoding`'s protocol).

    Padding: the source comes padded on the right, as the shared batches
    pad it. Its padding is masked as keys, and the positions count real
    tokens only (`position_ids`), so the separator sits at position
    `n` (the source's length) in every row whatever the batch's padding:
    what a packed sequence without padding would compute.

    Decoding: `initial_cache` runs the source through the blocks once,
    filling their key/value caches (slots `0 .. S - 1`; padding masked);
    each `decode_step` writes the next target token at slot `S + index`.
    The "cross-attention" a step reports is the last block's
    self-attention over the source slots, averaged over heads and
    renormalized over them.

    The source and target share one vocabulary (the training path's joint
    SentencePiece model) and one embedding: `source_vocabulary_size` must
    equal `target_vocabulary_size`, and `share_embeddings` can only be
    True.

    The blocks' sizes are `num_layers`, `hidden_dim`, `num_heads`,
    `intermediate_dim` and `dropout`, as for `TransformerLanguageModel`.

    Args:
        source_vocabulary_size: int, equal to `target_vocabulary_size`.
        target_vocabulary_size: int, V.
        num_layers: int, K.
        hidden_dim: int, D, divisible by `num_heads`.
        num_heads: int, N.
        intermediate_dim: int, the feed-forward width.
        dropout: float in [0, 1).
        pad_id: int, the padding token.
        share_embeddings: True (there is one embedding).

    Call arguments:
        inputs: dict with `"encoder_tokens"` `(B, S)` and
            `"decoder_tokens"` `(B, T)` ints (BOS, then the target but its
            last token).
        training: bool; enables dropout.

    Returns:
        Logits `(B, T, V)` float32 over the next target token.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import DecoderOnlyTranslator
    >>> model = DecoderOnlyTranslator(20, 20, num_layers=2, hidden_dim=16,
    ...                               num_heads=2, intermediate_dim=32)
    >>> source = np.array([[5, 6, 7, 2], [8, 9, 2, 0]])
    >>> target = np.array([[1, 10, 11], [1, 12, 0]])
    >>> logits = model({"encoder_tokens": source, "decoder_tokens": target})
    >>> tuple(logits.shape)
    (2, 3, 20)
    >>> memory, mask = model.encode(source)
    >>> cache = model.initial_cache(memory, mask, max_length=3)
    >>> step, cache, attention = model.decode_step(target[:, :1], 0, cache,
    ...                                            mask)
    >>> bool(np.allclose(step, logits[:, 0], atol=1e-4))
    True
    >>> np.asarray(attention).sum(-1).round(4)
    array([1., 1.], dtype=float32)

    References:
        Liu et al. "Generating Wikipedia by Summarizing Long Sequences",
        ICLR 2018 (T-D, section 4.2.3).
    """

    def __init__(self, source_vocabulary_size, target_vocabulary_size,
                 num_layers=6, hidden_dim=256, num_heads=4,
                 intermediate_dim=1024, dropout=0.1, pad_id=0,
                 share_embeddings=True, **kwargs):
        super().__init__(**kwargs)
        self.target_vocabulary_size = _validation.positive_int(
            "target_vocabulary_size", target_vocabulary_size)
        if source_vocabulary_size != target_vocabulary_size:
            raise ValueError(
                "A decoder-only translator reads source and target with one "
                "vocabulary: `source_vocabulary_size` must equal "
                "`target_vocabulary_size`, received: "
                f"source_vocabulary_size={source_vocabulary_size!r}, "
                f"target_vocabulary_size={target_vocabulary_size!r}")
        if share_embeddings is not True:
            raise ValueError(
                "A decoder-only translator has one embedding for source and "
                "target: `share_embeddings` must be True, received: "
                f"share_embeddings={share_embeddings!r}")
        self.source_vocabulary_size = self.target_vocabulary_size
        self.pad_id = pad_id
        self.language_model = TransformerLanguageModel(
            vocabulary_size=self.target_vocabulary_size,
            num_layers=num_layers, num_heads=num_heads,
            hidden_dim=hidden_dim, intermediate_dim=intermediate_dim,
            dropout=dropout, attention="full", positions="sinusoidal",
            padding_id=pad_id, dtype=self.dtype_policy,
            name="language_model")
        self.hidden_dim = self.language_model.hidden_dim

    @classmethod
    def from_preset(cls, preset, source_vocabulary_size,
                    target_vocabulary_size, **overrides):
        """A model of a named size: `"tiny"`, `"small"` or `"base"`."""
        _validation.choice("preset", preset, PRESETS)
        return cls(source_vocabulary_size, target_vocabulary_size,
                   **{**PRESETS[preset], **overrides})

    def _sequence(self, encoder_tokens, decoder_tokens):
        """The joint sequence `(B, S + T)`, its padding mask and the
        positions counting real source tokens only."""
        source = ops.cast(encoder_tokens, "int32")  # (B, S)
        target = ops.cast(decoder_tokens, "int32")  # (B, T)
        source_mask = ops.not_equal(source, self.pad_id)  # (B, S)
        tokens = ops.concatenate([source, target], axis=1)  # (B, S + T)
        mask = ops.concatenate(
            [source_mask, ops.not_equal(target, self.pad_id)], axis=1)
        real = ops.concatenate([source_mask, ops.ones_like(target, "bool")],
                               axis=1)
        return tokens, mask, _real_positions(real)  # positions (B, S + T)

    def call(self, inputs, training=None):
        source = inputs["encoder_tokens"]
        tokens, mask, positions = self._sequence(source,
                                                 inputs["decoder_tokens"])
        logits = self.language_model(tokens, padding_mask=mask,
                                     position_ids=positions,
                                     training=training)  # (B, S + T, V)
        return ops.cast(logits[:, ops.shape(source)[1]:], "float32")

    # The attention pictures (`Translator.attention`).

    def _scores(self, encoder_tokens, decoder_tokens):
        """Every block's self-attention over the joint sequence, float32
        `(B, K, N, S + T, S + T)`."""
        tokens, mask, positions = self._sequence(encoder_tokens,
                                                 decoder_tokens)
        return self.language_model.self_attention_scores(
            tokens, padding_mask=mask, position_ids=positions)

    def cross_attention(self, encoder_tokens, decoder_tokens):
        """The target rows' attention to the source columns, every block,
        every head: float32 `(B, K, N, T, S)`, teacher forced on
        `decoder_tokens (B, T)`. A row sums to the share of attention the
        position gives the source (the rest goes to the target so far);
        `decode_step` reports the last block's, averaged over heads and
        renormalized over the source."""
        width = ops.shape(encoder_tokens)[1]
        return self._scores(encoder_tokens, decoder_tokens)[
            :, :, :, width:, :width]

    def encoder_self_attention(self, encoder_tokens):
        """The source's own (causal) self-attention, every block, every
        head: float32 `(B, K, N, S, S)`."""
        empty = ops.zeros((ops.shape(encoder_tokens)[0], 0), "int32")
        return self._scores(encoder_tokens, empty)

    def decoder_self_attention(self, encoder_tokens, decoder_tokens):
        """The target rows' attention to the target columns (BOS first),
        every block, every head: float32 `(B, K, N, T, T)`."""
        width = ops.shape(encoder_tokens)[1]
        return self._scores(encoder_tokens, decoder_tokens)[
            :, :, :, width:, width:]

    # The decoding protocol (keras_attention.decoding).

    def encode(self, encoder_tokens, training=None):
        """The source ids themselves (the blocks read them in
        `initial_cache`) and the source padding mask `(B, S)`."""
        encoder_tokens = ops.cast(encoder_tokens, "int32")
        return encoder_tokens, ops.not_equal(encoder_tokens, self.pad_id)

    def _key_mask(self, source_mask, length):
        """`(B, L)`: the source's real slots, then every target slot (the
        causal mask hides those not written yet)."""
        batch, width = ops.shape(source_mask)[0], ops.shape(source_mask)[1]
        rest = ops.ones((batch, length - width), "bool")
        return ops.concatenate([source_mask, rest], axis=1)

    def initial_cache(self, memory, source_mask, max_length):
        """The blocks' key/value caches `(B, S + max_length, N, H)` with
        the source in slots `0 .. S - 1`."""
        batch, width = ops.shape(memory)[0], ops.shape(memory)[1]
        length = width + max_length
        cache = self.language_model.initial_cache(batch, length)
        _, cache = self.language_model.step(
            memory, 0, cache, position_ids=_real_positions(source_mask),
            key_mask=self._key_mask(source_mask, length))
        return cache

    def decode_step(self, tokens, index, cache, source_mask):
        """One target token `(B, 1)` at target position `index`:
        `(logits (B, V), cache, attention (B, S))`, the attention the last
        block's over the source, averaged over heads and renormalized."""
        width = ops.shape(source_mask)[1]
        length = ops.shape(cache[0]["self_attention"][0])[1]
        lengths = ops.sum(ops.cast(source_mask, "int32"), axis=1)  # (B,)
        positions = (lengths + ops.cast(index, "int32"))[:, None]  # (B, 1)
        logits, scores, cache = self.language_model.step(
            tokens, width + index, cache, position_ids=positions,
            key_mask=self._key_mask(source_mask, length),
            return_attention_scores=True)  # scores (B, N, 1, L)
        over_source = ops.mean(ops.cast(scores[:, :, 0, :width], "float32"),
                               axis=1)  # (B, S)
        total = ops.maximum(ops.sum(over_source, -1, keepdims=True), 1e-9)
        return ops.cast(logits[:, 0], "float32"), cache, over_source / total

    def get_config(self):
        config = super().get_config()
        model = self.language_model
        config.update({
            "source_vocabulary_size": self.source_vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "num_layers": model.num_layers, "hidden_dim": model.hidden_dim,
            "num_heads": model.num_heads,
            "intermediate_dim": model.intermediate_dim,
            "dropout": model.dropout, "pad_id": self.pad_id,
        })
        return config
