"""`TranslatorModule`: tokenizers + model + decoding in one graph.

The same object translates in memory and is what `export_translator`
saves, so the exported SavedModel computes exactly what the in-memory
translator computes. It holds only TensorFlow and tensorflow-text ops.

Letters: B batch, S source length, T output length.
"""

import tensorflow as tf

from keras_attention import _validation
from keras_attention import decoding
from keras_attention.text.tokenizer import BOS_ID
from keras_attention.text.tokenizer import PAD_ID

TEXT_SIGNATURE = [tf.TensorSpec([None], tf.string, name="text")]


class TranslatorModule(tf.Module):
    """Raw strings in, translations out.

    Args:
        model: a trained `TransformerTranslator`.
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
    last decoder block's cross-attention `attention` `(B, T, S)` (heads
    averaged) and `truncated` `(B,)`.
    """

    def __init__(self, model, source_tokenizer, target_tokenizer,
                 max_source_length=128, beam_size=1, alpha=0.6,
                 length_ratio=1.5, length_offset=10, max_output_length=256,
                 name=None):
        super().__init__(name=name)
        self.model = model
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

    def encode_text(self, text):
        """`(encoder_tokens (B, S) int32, truncated (B,) bool)`; at least
        one column, so a batch of empty strings still has a shape."""
        ids = self.source_tokenizer.tokenize(text)
        truncated = ids.row_lengths() > self.max_source_length
        ids = ids[:, : self.max_source_length]
        dense = tf.cast(ids.to_tensor(default_value=PAD_ID), tf.int32)
        missing = tf.maximum(1 - tf.shape(dense)[1], 0)
        dense = tf.pad(dense, [[0, 0], [0, missing]])  # (B, max(S, 1))
        return dense, truncated

    def _decode(self, encoder_tokens):
        limits = dict(length_ratio=self.length_ratio,
                      length_offset=self.length_offset,
                      max_length=self.max_output_length)
        if self.beam_size == 1:
            tokens, _ = decoding.greedy_decode(self.model, encoder_tokens,
                                               **limits)
            return tokens
        return decoding.beam_search_decode(
            self.model, encoder_tokens, beam_size=self.beam_size,
            alpha=self.alpha, **limits,
        )

    @tf.function(input_signature=TEXT_SIGNATURE)
    def translate(self, text):
        encoder_tokens, _ = self.encode_text(text)
        tokens = self._decode(encoder_tokens)
        return {"translation": self.target_tokenizer.detokenize(tokens)}

    @tf.function(input_signature=TEXT_SIGNATURE)
    def translate_with_attention(self, text):
        encoder_tokens, truncated = self.encode_text(text)
        tokens = self._decode(encoder_tokens)
        # Cross-attention of the chosen output, by one teacher-forced pass.
        batch = tf.shape(tokens)[0]
        decoder_tokens = tf.concat(
            [tf.fill([batch, 1], BOS_ID), tokens[:, :-1]], axis=1
        )
        memory, source_mask = self.model.encode(encoder_tokens)
        _, scores = self.model.decode(decoder_tokens, memory, source_mask,
                                      return_attention_scores=True)
        return {
            "translation": self.target_tokenizer.detokenize(tokens),
            "tokens": tokens,
            "pieces": self.target_tokenizer.id_to_piece(tokens),
            "source_pieces": self.source_tokenizer.id_to_piece(encoder_tokens),
            # float32 under any policy: (B, N, T, S) -> (B, T, S)
            "attention": tf.reduce_mean(tf.cast(scores, tf.float32), axis=1),
            "truncated": truncated,
        }
