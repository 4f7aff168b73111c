"""Greedy and beam-search decoding over any sequence-to-sequence model.

Both run inside the TensorFlow graph (they can be exported), use the
model's cache, and stop at EOS or at the maximum length
`ceil(length_ratio * source_length) + length_offset` (capped by
`max_length`). Beam search is tf-models-official's `sequence_beam_search`
(GNMT length penalty `((5 + |Y|) / 6)^alpha`); install the `official` extra.
Encoder inputs that are not token ids (a captioner's images) have no
source length: the caller passes `output_lengths`, each row's limit, and
the inputs go to `model.encode` as they are.

The decoding protocol: a model decodes here if it has

- `encode(encoder_tokens) -> (memory, source_mask)`: `(B, S)` int ids (or
  any batch-major input, e.g. images, with `output_lengths`) to whatever
  the decoder attends (`(B, S, M)`) and the source mask `(B, S)`;
- `initial_cache(memory, source_mask, max_length) -> cache`: a nested
  structure of tensors, each with a leading batch axis (beam search tiles
  and reorders them per beam): a Transformer's key/value cache, an RNN's
  recurrent state;
- `decode_step(tokens, index, cache, source_mask) -> (logits, cache,
  attention)`: the previous tokens `(B, 1)` at position `index` to float32
  logits `(B, V)`, the updated cache and the cross-attention weights
  `(B, S)` of this step (float32, summing to 1 over the real positions);
- `pad_id` and `target_vocabulary_size` attributes (the model masks `pad_id`
  in its inputs, so it is the model's; BOS and EOS are the tokenizer's and
  are passed in by the caller);
- optionally `constant_cache_keys`: the dict keys of the cache whose
  subtrees no step changes (a Transformer's cross-attention keys and
  values, an RNN's memory); beam search then tiles them once instead of
  reordering them with the beams at every step.

`TransformerTranslator`, `RNNTranslator` and `Captioner` (images in, S the
feature map's locations) follow it.

Letters: B batch, S source length, T output length, K beams.
"""

import numbers

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import tensorflow as tf

from keras_attention import _validation


def output_length(encoder_tokens, length_ratio=1.5, length_offset=10,
                  max_length=256, pad_id=0):
    """The longest output to decode for each source `(B,)` int32:
    `min(ceil(ratio * real source length) + offset, max_length)`.

    Each row's limit depends on its own length only, so a sentence decodes
    the same alone and in a batch."""
    source_length = tf.reduce_sum(
        tf.cast(tf.not_equal(encoder_tokens, pad_id), tf.float32), axis=1
    )
    length = tf.cast(tf.math.ceil(length_ratio * source_length), tf.int32)
    return tf.minimum(length + length_offset, max_length)


def _inputs_and_limits(encoder_inputs, output_lengths, length_ratio,
                       length_offset, max_length, pad_id):
    """`(encoder inputs, limits (B,) int32)`: token ids as int32 with the
    limits `output_length` gives them or, when `output_lengths` (an int or
    `(B,)` ints) is given, the inputs as they are (images, features) with
    those limits, capped by `max_length`."""
    if output_lengths is None:
        encoder_inputs = tf.convert_to_tensor(encoder_inputs, tf.int32)
        return encoder_inputs, output_length(
            encoder_inputs, length_ratio, length_offset, max_length, pad_id)
    if isinstance(output_lengths, numbers.Number):
        _validation.positive_int("output_lengths", output_lengths)
    encoder_inputs = tf.convert_to_tensor(encoder_inputs)
    batch = tf.shape(encoder_inputs)[0]
    limits = tf.broadcast_to(tf.cast(output_lengths, tf.int32), [batch])
    return encoder_inputs, tf.minimum(limits, max_length)


def _check(model, length_ratio, length_offset, max_length, bos_id, eos_id):
    for name in ("encode", "initial_cache", "decode_step"):
        if not callable(getattr(model, name, None)):
            raise ValueError(
                "`model` must follow the decoding protocol (encode, "
                f"initial_cache, decode_step), received a "
                f"{type(model).__name__} without `{name}`"
            )
    _validation.non_negative_int("bos_id", bos_id)
    _validation.non_negative_int("eos_id", eos_id)
    if not length_ratio > 0:
        raise ValueError(f"`length_ratio` must be > 0, received: "
                         f"length_ratio={length_ratio!r}")
    _validation.non_negative_int("length_offset", length_offset)
    _validation.positive_int("max_length", max_length)


def greedy_decode(model, encoder_tokens, *, bos_id, eos_id,
                  length_ratio=1.5, length_offset=10, max_length=256,
                  output_lengths=None):
    """Greedy decoding with the model's cache.

    Args:
        model: a model that follows the decoding protocol (module docstring).
        encoder_tokens: `(B, S)` int32 source ids (padded with `model.pad_id`),
            or, with `output_lengths`, any input `model.encode` takes.
        bos_id, eos_id: the target tokenizer's begin and end ids.
        length_ratio, length_offset, max_length: the output length limit.
        output_lengths: None (the limit comes from the source lengths), or
            an int or `(B,)` ints: the limit of each row, for inputs that
            are not token ids (capped by `max_length`; the ratio and offset
            are unused).

    Returns:
        `(tokens (B, T) int32, attention (B, T, S) float32)`: the output ids
        without BOS, `model.pad_id` after EOS; the cross-attention weights
        of each step (a Transformer's last block, heads averaged), zeros
        at the PAD positions.
    """
    _check(model, length_ratio, length_offset, max_length, bos_id, eos_id)
    pad_id = model.pad_id
    encoder_tokens, limits = _inputs_and_limits(
        encoder_tokens, output_lengths, length_ratio, length_offset,
        max_length, pad_id)  # limits (B,)
    batch = tf.shape(encoder_tokens)[0]
    limit = tf.reduce_max(limits)
    memory, source_mask = model.encode(encoder_tokens)
    source_length = tf.shape(source_mask)[1]
    cache = model.initial_cache(memory, source_mask, limit)

    def step(index, token, done, cache, tokens, attention):
        logits, cache, weights = model.decode_step(token[:, None], index,
                                                   cache, source_mask)
        chosen = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (B,)
        done = done | (index >= limits)  # each row stops at its own limit
        chosen = tf.where(done, pad_id, chosen)
        tokens = tokens.write(index, chosen)
        # Rows past their end (PAD outputs) get zero attention.
        weights = tf.cast(weights, tf.float32) * tf.cast(
            tf.logical_not(done), tf.float32)[:, None]
        attention = attention.write(index, weights)
        return (index + 1, chosen, done | tf.equal(chosen, eos_id), cache,
                tokens, attention)

    def unfinished(index, token, done, *rest):
        return tf.logical_and(index < limit, tf.logical_not(tf.reduce_all(done)))

    _, _, _, _, tokens, attention = tf.while_loop(
        unfinished,
        step,
        (
            tf.constant(0),
            tf.fill([batch], bos_id),
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


def forced_attention(model, encoder_tokens, tokens, *, bos_id,
                     token_inputs=True):
    """The cross-attention `(B, T, S)` of given outputs `tokens (B, T)`
    (e.g. beam search's), by running the protocol's steps on them; rows
    at `model.pad_id` positions are zeros. `token_inputs=False` passes
    encoder inputs that are not token ids (images) as they are."""
    encoder_tokens = (tf.convert_to_tensor(encoder_tokens, tf.int32)
                      if token_inputs else tf.convert_to_tensor(encoder_tokens))
    tokens = tf.convert_to_tensor(tokens, tf.int32)
    batch = tf.shape(tokens)[0]
    steps = tf.shape(tokens)[1]
    memory, source_mask = model.encode(encoder_tokens)
    cache = model.initial_cache(memory, source_mask, steps)
    previous = tf.concat([tf.fill([batch, 1], bos_id), tokens], axis=1)

    def step(index, cache, attention):
        _, cache, weights = model.decode_step(
            previous[:, index:index + 1], index, cache, source_mask)
        return index + 1, cache, attention.write(index,
                                                 tf.cast(weights, tf.float32))

    _, _, attention = tf.while_loop(
        lambda index, *_: index < steps, step,
        (tf.constant(0), cache,
         tf.TensorArray(tf.float32, size=steps, element_shape=[None, None])),
    )
    attention = tf.transpose(attention.stack(), [1, 0, 2])  # (B, T, S)
    attention = tf.reshape(attention, [batch, steps, tf.shape(source_mask)[1]])
    real = tf.cast(tf.not_equal(tokens, model.pad_id), tf.float32)
    return attention * real[:, :, None]


def _cast_floats(structure, dtype):
    """Cast the floating-point tensors of a nested structure (no-op casts
    when the dtype already matches)."""
    return tf.nest.map_structure(
        lambda t: tf.cast(t, dtype) if t.dtype.is_floating else t, structure
    )


def _partition(cache, keys):
    """Split a nested cache into `(constant, varying)`: the subtrees under
    dict keys in `keys`, and the rest (nested dicts of the same shape)."""
    if not isinstance(cache, dict):
        return {}, cache
    constant, varying = {}, {}
    for key, value in cache.items():
        if key in keys:
            constant[key] = value
        elif isinstance(value, dict):
            constant[key], varying[key] = _partition(value, keys)
        else:
            varying[key] = value
    return constant, varying


def _merge(constant, varying):
    """The inverse of `_partition`."""
    if not isinstance(varying, dict):
        return varying
    merged = dict(varying)
    for key, value in constant.items():
        merged[key] = (_merge(value, varying[key])
                       if key in varying and isinstance(value, dict) else value)
    return merged


def beam_search_decode(model, encoder_tokens, *, bos_id, eos_id,
                       beam_size=4, alpha=0.6, length_ratio=1.5,
                       length_offset=10, max_length=256, output_lengths=None):
    """Beam search with the GNMT length penalty, using the cache.

    The whole batch is searched at once (`B * beam_size` rows per step)
    and every sentence gets what it would get alone: its own length limit
    (a row past it continues with PAD at no cost, so it can neither finish
    nor change), and the same search as tf-models' per-sentence call.

    Args:
        model: a model that follows the decoding protocol (module docstring).
        encoder_tokens: `(B, S)` int32 source ids, or, with
            `output_lengths`, any input `model.encode` takes.
        bos_id, eos_id: the target tokenizer's begin and end ids.
        beam_size: beams K.
        alpha: length penalty exponent (0 = none; 0.6 in GNMT).
        length_ratio, length_offset, max_length: the output length limit.
        output_lengths: as in `greedy_decode`.

    Returns:
        `(B, T)` int32 ids of the best beam, without BOS, PAD after EOS.
    """
    from official.nlp.modeling.ops import beam_search

    _check(model, length_ratio, length_offset, max_length, bos_id, eos_id)
    beam_size = _validation.positive_int("beam_size", beam_size)
    pad_id = model.pad_id
    encoder_tokens, limits = _inputs_and_limits(
        encoder_tokens, output_lengths, length_ratio, length_offset,
        max_length, pad_id)  # limits (B,)
    batch = tf.shape(encoder_tokens)[0]
    limit = tf.maximum(tf.reduce_max(limits), 1)
    memory, source_mask = model.encode(encoder_tokens)
    initial = model.initial_cache(memory, source_mask, limit)
    # The parts of the cache no step changes (`constant_cache_keys`: e.g.
    # the cross-attention keys and values) stay out of the search's state,
    # which it reorders at every step: they are tiled once per beam, in
    # the search's row order (sentence-major, `b * K + k`).
    constant_keys = getattr(model, "constant_cache_keys", ())
    constant, varying = _partition(initial, constant_keys)
    per_beam = lambda t: tf.repeat(t, beam_size, axis=0)  # noqa: E731
    constant = tf.nest.map_structure(per_beam, constant)
    source_mask = per_beam(source_mask)  # (B * K, S)
    row_limits = per_beam(limits)  # (B * K,)
    # The search's state is float32 (it scores beams in float32 and
    # requires it); each step gets every leaf back in its own dtype (a
    # mixed policy's bfloat16 keys/values, an RNN's float32 state), so
    # beam search computes what greedy does.
    dtypes = tf.nest.map_structure(lambda t: t.dtype, varying)
    cache = {"decoder": _cast_floats(varying, tf.float32)}
    # Past its limit a row's only continuation is PAD with log-probability
    # 0: its beams keep their scores and order, no new hypothesis finishes
    # (EOS ranks below every other token), and what it returns is what a
    # search stopped at its own limit returns, followed by PAD.
    vocabulary = tf.range(model.target_vocabulary_size)
    frozen = tf.where(
        tf.equal(vocabulary, pad_id), 0.0,
        tf.where(tf.equal(vocabulary, eos_id), -2e9, -1e9),
    )[None]  # (1, V)

    def symbols_to_logits(ids, index, cache):
        varying = tf.nest.map_structure(tf.cast, cache["decoder"], dtypes)
        logits, decoder_cache, _ = model.decode_step(
            ids[:, -1:], index, _merge(constant, varying), source_mask,
        )  # (B * K, V)
        past_limit = tf.greater_equal(index, row_limits)[:, None]
        logits = tf.where(past_limit, frozen, logits)
        _, varying = _partition(decoder_cache, constant_keys)
        return logits, {"decoder": _cast_floats(varying, tf.float32)}

    sequences, _ = beam_search.sequence_beam_search(
        symbols_to_logits,
        initial_ids=tf.fill([batch], bos_id),
        initial_cache=cache,
        vocab_size=model.target_vocabulary_size,
        beam_size=beam_size,
        alpha=alpha,
        max_decode_length=limit,
        eos_id=eos_id,
        padded_decode=False,
        dtype="float32",
    )  # (B, K, 1 + T)
    tokens = sequences[:, 0, 1:]  # best beam, without BOS
    width = tf.reduce_max(
        tf.reduce_sum(tf.cast(tf.not_equal(tokens, pad_id), tf.int32), 1)
    )
    return tokens[:, :width]


def _beam_search_per_sentence(model, encoder_tokens, **options):
    """`beam_search_decode` of each sentence alone (`tf.map_fn`, its
    padding cut off), as the package searched before the search was
    batched: the reference the batched search is tested and benchmarked
    against. `options` are `beam_search_decode`'s."""
    encoder_tokens = tf.convert_to_tensor(encoder_tokens, tf.int32)
    max_length = options.get("max_length", 256)

    def search_one(source):
        real = tf.reduce_sum(tf.cast(tf.not_equal(source, model.pad_id),
                                     tf.int32))
        best = beam_search_decode(
            model, source[None, : tf.maximum(real, 1)], **options)[0]
        return tf.pad(best, [[0, max_length - tf.shape(best)[0]]],
                      constant_values=model.pad_id)

    tokens = tf.map_fn(
        search_one, encoder_tokens,
        fn_output_signature=tf.TensorSpec([max_length], tf.int32),
    )  # (B, max_length)
    width = tf.reduce_max(tf.reduce_sum(
        tf.cast(tf.not_equal(tokens, model.pad_id), tf.int32), 1))
    return tokens[:, :width]
