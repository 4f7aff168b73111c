"""Greedy and beam-search decoding over a translator's cached step.

Both run inside the TensorFlow graph (they can be exported), use the
decoder's key/value cache, and stop at EOS or at the maximum length
`ceil(length_ratio * source_length) + length_offset` (capped by
`max_length`). Beam search is tf-models-official's `sequence_beam_search`
(GNMT length penalty `((5 + |Y|) / 6)^alpha`); install the `official` extra.

Letters: B batch, S source length, T output length, K beams.
"""

import tensorflow as tf

from keras_attention import _validation
from keras_attention.text.tokenizer import BOS_ID
from keras_attention.text.tokenizer import EOS_ID
from keras_attention.text.tokenizer import PAD_ID


def output_length(encoder_tokens, length_ratio=1.5, length_offset=10,
                  max_length=256):
    """The longest output to decode for each source `(B,)` int32:
    `min(ceil(ratio * real source length) + offset, max_length)`.

    Each row's limit depends on its own length only, so a sentence decodes
    the same alone and in a batch."""
    source_length = tf.reduce_sum(
        tf.cast(tf.not_equal(encoder_tokens, PAD_ID), tf.float32), axis=1
    )
    length = tf.cast(tf.math.ceil(length_ratio * source_length), tf.int32)
    return tf.minimum(length + length_offset, max_length)


def _check(length_ratio, length_offset, max_length):
    if not length_ratio > 0:
        raise ValueError(f"`length_ratio` must be > 0, received: "
                         f"length_ratio={length_ratio!r}")
    _validation.non_negative_int("length_offset", length_offset)
    _validation.positive_int("max_length", max_length)


def greedy_decode(model, encoder_tokens, length_ratio=1.5, length_offset=10,
                  max_length=256):
    """Greedy decoding with the key/value cache.

    Args:
        model: a `TransformerTranslator`.
        encoder_tokens: `(B, S)` int32 source ids (0-padded).
        length_ratio, length_offset, max_length: the output length limit.

    Returns:
        `(tokens (B, T) int32, attention (B, T, S) float32)`: the output ids
        without BOS, PAD after EOS; the last decoder block's cross-attention
        averaged over heads.
    """
    _check(length_ratio, length_offset, max_length)
    encoder_tokens = tf.convert_to_tensor(encoder_tokens, tf.int32)
    batch = tf.shape(encoder_tokens)[0]
    source_length = tf.shape(encoder_tokens)[1]
    limits = output_length(encoder_tokens, length_ratio, length_offset,
                           max_length)  # (B,)
    limit = tf.reduce_max(limits)
    memory, source_mask = model.encode(encoder_tokens)
    cache = model.initial_cache(memory, limit)

    def step(index, token, done, cache, tokens, attention):
        logits, cache, scores = model.decode_step(token[:, None], index, cache,
                                                  source_mask)
        chosen = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (B,)
        done = done | (index >= limits)  # each row stops at its own limit
        chosen = tf.where(done, PAD_ID, chosen)
        tokens = tokens.write(index, chosen)
        attention = attention.write(  # float32 under any policy
            index, tf.reduce_mean(tf.cast(scores, tf.float32), axis=1))
        return (index + 1, chosen, done | tf.equal(chosen, EOS_ID), cache,
                tokens, attention)

    def unfinished(index, token, done, *rest):
        return tf.logical_and(index < limit, tf.logical_not(tf.reduce_all(done)))

    _, _, _, _, tokens, attention = tf.while_loop(
        unfinished,
        step,
        (
            tf.constant(0),
            tf.fill([batch], BOS_ID),
            tf.zeros([batch], tf.bool),
            cache,
            tf.TensorArray(tf.int32, size=0, dynamic_size=True,
                           element_shape=[None]),
            tf.TensorArray(tf.float32, size=0, dynamic_size=True,
                           element_shape=[None, None]),
        ),
    )
    tokens = tf.transpose(tokens.stack(), [1, 0])  # (B, T)
    attention = tf.transpose(attention.stack(), [1, 0, 2])  # (B, T, S)
    attention = tf.reshape(attention, [batch, -1, source_length])
    return tokens, attention


def _cast_floats(structure, dtype):
    """Cast the floating-point tensors of a nested structure (no-op casts
    when the dtype already matches)."""
    return tf.nest.map_structure(
        lambda t: tf.cast(t, dtype) if t.dtype.is_floating else t, structure
    )


def beam_search_decode(model, encoder_tokens, beam_size=4, alpha=0.6,
                       length_ratio=1.5, length_offset=10, max_length=256):
    """Beam search with the GNMT length penalty, using the cache.

    Args:
        model: a `TransformerTranslator`.
        encoder_tokens: `(B, S)` int32 source ids.
        beam_size: beams K.
        alpha: length penalty exponent (0 = none; 0.6 in GNMT).
        length_ratio, length_offset, max_length: the output length limit.

    Returns:
        `(B, T)` int32 ids of the best beam, without BOS, PAD after EOS.
    """
    from official.nlp.modeling.ops import beam_search

    _check(length_ratio, length_offset, max_length)
    beam_size = _validation.positive_int("beam_size", beam_size)
    encoder_tokens = tf.convert_to_tensor(encoder_tokens, tf.int32)
    limits = output_length(encoder_tokens, length_ratio, length_offset,
                           max_length)  # (B,)

    def search_one(args):
        """Beam search of one sentence with its own length limit, so the
        result does not depend on the rest of the batch."""
        source, limit = args
        real = tf.reduce_sum(tf.cast(tf.not_equal(source, PAD_ID), tf.int32))
        source = source[None, : tf.maximum(real, 1)]  # (1, S)
        memory, source_mask = model.encode(source)
        # Every cache leaf has a leading batch axis (beam search tiles and
        # reorders them per beam) and is float32, as the beam search (which
        # scores beams in float32) requires; under a mixed policy the
        # keys/values go back to the compute dtype for each step.
        cache = {
            "decoder": _cast_floats(model.initial_cache(memory, limit),
                                    tf.float32),
            "source_mask": tf.cast(source_mask, tf.float32),
        }

        def symbols_to_logits(ids, index, cache):
            source_mask = cache["source_mask"] > 0.5
            logits, decoder_cache, _ = model.decode_step(
                ids[:, -1:], index,
                _cast_floats(cache["decoder"], model.compute_dtype),
                source_mask,
            )
            return logits, {"decoder": _cast_floats(decoder_cache, tf.float32),
                            "source_mask": cache["source_mask"]}

        sequences, _ = beam_search.sequence_beam_search(
            symbols_to_logits,
            initial_ids=tf.fill([1], BOS_ID),
            initial_cache=cache,
            vocab_size=model.target_vocabulary_size,
            beam_size=beam_size,
            alpha=alpha,
            max_decode_length=limit,
            eos_id=EOS_ID,
            padded_decode=False,
            dtype="float32",
        )
        best = sequences[0, 0, 1:]  # best beam, without BOS
        return tf.pad(best, [[0, max_length - tf.shape(best)[0]]])

    tokens = tf.map_fn(
        search_one, (encoder_tokens, limits),
        fn_output_signature=tf.TensorSpec([max_length], tf.int32),
    )  # (B, max_length)
    width = tf.reduce_max(
        tf.reduce_sum(tf.cast(tf.not_equal(tokens, PAD_ID), tf.int32), 1)
    )
    return tokens[:, :width]
