"""`TranslatorModule`: tokenizers + model + decoding in one graph.

The same object translates in memory and is what `export_translator`
saves, so the exported SavedModel computes exactly what the in-memory
translator computes. It holds only TensorFlow and tensorflow-text ops.

It knows no model class: any model that follows the decoding protocol of
`keras_attention.decoding` (the Transformer and RNN translators do) is
exported the same way.

Letters: B batch, S source length, T output length.
"""

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import tensorflow as tf

from keras_attention import _validation
from keras_attention import decoding
from keras_attention.export._held_model import hold_model

TEXT_SIGNATURE = [tf.TensorSpec([None], tf.string, name="text")]


class TranslatorModule(tf.Module):
    """Raw strings in, translations out.

    Args:
        model: a trained model that follows the decoding protocol
            (`TransformerTranslator`, `RNNTranslator`).
        source_tokenizer, target_tokenizer: `SubwordTokenizer`s.
        max_source_length: longer inputs are truncated to this many tokens
            (reported by `translate_with_attention` as `truncated`).
        beam_size: 1 decodes greedily; more uses beam search.
        alpha: beam search length penalty.
        length_ratio, length_offset, max_output_length: output length limit
            `min(ceil(ratio * S) + offset, max_output_length)`.

    `translate(text)` returns `{"translation": (B,) string}`;
    `translate_with_attention(text)` also returns the output `tokens`
    `(B, T)`, their `pieces`, the `source_pieces` `(B, S)`, the
    cross-attention `attention` `(B, T, S)` that decoding computed (a
    Transformer's last block, heads averaged) and `truncated` `(B,)`.
    """

    def __init__(self, model, source_tokenizer, target_tokenizer,
                 max_source_length=128, beam_size=1, alpha=0.6,
                 length_ratio=1.5, length_offset=10, max_output_length=256,
                 name=None):
        super().__init__(name=name)
        hold_model(self, "model", model)  # not its optimizer
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.max_source_length = _validation.positive_int(
            "max_source_length", max_source_length
        )
        self.beam_size = _validation.positive_int("beam_size", beam_size)
        self.alpha = float(alpha)
        self.length_ratio = float(length_ratio)
        self.length_offset = int(length_offset)
        self.max_output_length = _validation.positive_int(
            "max_output_length", max_output_length
        )
        if source_tokenizer.pad_id != model.pad_id:
            raise ValueError(
                "The model pads with the source tokenizer's pad id, "
                f"received: model.pad_id={model.pad_id}, "
                f"source_tokenizer.pad_id={source_tokenizer.pad_id}"
            )
        self.special_ids = dict(bos_id=target_tokenizer.bos_id,
                                eos_id=target_tokenizer.eos_id)

    def encode_text(self, text):
        """`(encoder_tokens (B, S) int32, truncated (B,) bool)`; at least
        one column, so a batch of empty strings still has a shape."""
        ids = self.source_tokenizer.tokenize(text)
        truncated = ids.row_lengths() > self.max_source_length
        ids = ids[:, : self.max_source_length]
        dense = tf.cast(
            ids.to_tensor(default_value=self.source_tokenizer.pad_id), tf.int32
        )
        missing = tf.maximum(1 - tf.shape(dense)[1], 0)
        dense = tf.pad(dense, [[0, 0], [0, missing]],
                       constant_values=self.source_tokenizer.pad_id)
        # (B, max(S, 1))
        return dense, truncated

    def _decode(self, encoder_tokens):
        """`(tokens (B, T), attention (B, T, S))`: greedy decoding returns
        the attention it computed; beam search's is that of its chosen
        output, from one pass of the steps over it."""
        limits = dict(length_ratio=self.length_ratio,
                      length_offset=self.length_offset,
                      max_length=self.max_output_length, **self.special_ids)
        if self.beam_size == 1:
            return decoding.greedy_decode(self.model, encoder_tokens, **limits)
        tokens = decoding.beam_search_decode(
            self.model, encoder_tokens, beam_size=self.beam_size,
            alpha=self.alpha, **limits,
        )
        return tokens, None

    @tf.function(input_signature=TEXT_SIGNATURE)
    def translate(self, text):
        encoder_tokens, _ = self.encode_text(text)
        tokens, _ = self._decode(encoder_tokens)
        return {"translation": self.target_tokenizer.detokenize(tokens)}

    @tf.function(input_signature=TEXT_SIGNATURE)
    def translate_with_attention(self, text):
        encoder_tokens, truncated = self.encode_text(text)
        tokens, attention = self._decode(encoder_tokens)
        if attention is None:
            attention = decoding.forced_attention(
                self.model, encoder_tokens, tokens,
                bos_id=self.special_ids["bos_id"],
            )
        return {
            "translation": self.target_tokenizer.detokenize(tokens),
            "tokens": tokens,
            "pieces": self.target_tokenizer.id_to_piece(tokens),
            "source_pieces": self.source_tokenizer.id_to_piece(encoder_tokens),
            "attention": attention,  # (B, T, S) float32 under any policy
            "truncated": truncated,
        }
