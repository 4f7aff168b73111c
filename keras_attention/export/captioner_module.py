"""`CaptionerModule`: images in, caption strings out, in one graph.

The same object captions in memory and is what `export_captioner` saves,
so the SavedModel computes what the in-memory module computes. Decoding
is `keras_attention.decoding`'s (greedy, or beam search), with the length
limit given (images carry none).

Letters: B batch, H, W image height and width, T caption length, L
locations.
"""

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import tensorflow as tf

from keras_attention import _validation
from keras_attention import decoding
from keras_attention.export._held_model import hold_model
from keras_attention.export.saved_model import save_version


class CaptionerModule(tf.Module):
    """Images `(B, H, W)` float32 in, captions out.

    Args:
        model: a trained `Captioner` (any model that follows the decoding
            protocol with images as its encoder inputs).
        words: the vocabulary, id order (`CaptionVocabulary.words`).
        image_shape: `(H, W)`, the signature's image size.
        bos_id, eos_id: the vocabulary's begin and end ids.
        max_words: the longest caption decoded (the end token excluded).
        beam_size: 1 decodes greedily; more uses beam search.
        alpha: beam search length penalty.

    `caption(images)` returns `{"caption": (B,) string, "tokens": (B, T)
    int32}` and, when decoding greedily, `"attention"` `(B, T, L)`.
    """

    def __init__(self, model, words, image_shape, *, bos_id, eos_id,
                 max_words=8, beam_size=1, alpha=0.6, name=None):
        super().__init__(name=name)
        hold_model(self, "model", model)  # not its optimizer
        self.words = tf.constant(list(words), tf.string)  # (V,)
        if len(words) != model.target_vocabulary_size:
            raise ValueError(
                "`words` must have one word per id of the model, received: "
                f"len(words)={len(words)}, vocabulary size "
                f"{model.target_vocabulary_size}")
        self.special_ids = dict(
            bos_id=_validation.non_negative_int("bos_id", bos_id),
            eos_id=_validation.non_negative_int("eos_id", eos_id))
        self.max_words = _validation.positive_int("max_words", max_words)
        self.beam_size = _validation.positive_int("beam_size", beam_size)
        self.alpha = float(alpha)
        image_shape = [_validation.positive_int("image_shape", size)
                       for size in image_shape]
        self.caption = tf.function(
            self._caption,
            input_signature=[tf.TensorSpec([None] + image_shape, tf.float32,
                                           name="images")])

    def _caption(self, images):
        options = dict(output_lengths=self.max_words + 1, **self.special_ids)
        outputs = {}
        if self.beam_size == 1:
            tokens, outputs["attention"] = decoding.greedy_decode(
                self.model, images, **options)
        else:
            tokens = decoding.beam_search_decode(
                self.model, images, beam_size=self.beam_size,
                alpha=self.alpha, **options)
        outputs["tokens"] = tokens
        outputs["caption"] = self.detokenize(tokens)
        return outputs

    def detokenize(self, tokens):
        """`(B, T)` ids to `(B,)` strings: the words before the end token,
        joined by spaces (padding and the begin token dropped)."""
        tokens = tf.convert_to_tensor(tokens, tf.int32)
        ended = tf.cumsum(tf.cast(
            tf.equal(tokens, self.special_ids["eos_id"]), tf.int32), axis=1)
        keep = ((ended == 0) & tf.not_equal(tokens, self.model.pad_id)
                & tf.not_equal(tokens, self.special_ids["bos_id"]))
        words = tf.ragged.boolean_mask(tf.gather(self.words, tokens), keep)
        return tf.strings.reduce_join(words, axis=1, separator=" ")  # (B,)


def export_captioner(module, base_path, name="captioner", version=None):
    """Save a `CaptionerModule` as a SavedModel at `BASE/NAME/VERSION/`
    (`version` None: one more than the newest), `caption` as its
    `serving_default` signature (`images` -> `caption`, `tokens` and, for
    greedy decoding, `attention`); returns the path written."""
    if not isinstance(module, CaptionerModule):
        raise ValueError("`module` must be a CaptionerModule, received: "
                         f"{type(module).__name__}")
    return save_version(module, base_path, name, version,
                        {"serving_default": module.caption})
