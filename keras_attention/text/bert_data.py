"""BERT's inputs: segment packing, masked-language-model masking and
next-sentence pairs.

`pack_segments` and `mask_tokens` are TensorFlow graph ops (tensorflow-text's
trimmer, `combine_segments`, `RandomItemSelector` and `MaskValuesChooser`),
so they run inside `tf.data` and an exported graph. `next_sentence_pairs`
prepares the sentence pairs on the host, from ordered documents.

The `SubwordTokenizer` reserves ids 0-3 for pad/unk/bos/eos; BERT's
`[CLS]` and `[SEP]` default to its BOS and EOS ids. The `[MASK]` id is the
caller's: e.g. `tokenizer.vocabulary_size`, one past the tokenizer's pieces,
with an encoder of `vocabulary_size + 1` tokens.

Letters: B batch, L packed length, P masked positions per sequence.
"""

from keras_attention._extras import require

require(__name__, "translate", "tensorflow", "tensorflow_text")

import numpy as np
import tensorflow as tf
import tensorflow_text

from keras_attention import _validation
from keras_attention.text.tokenizer import BOS_ID
from keras_attention.text.tokenizer import EOS_ID
from keras_attention.text.tokenizer import PAD_ID

# `next_sentence_labels`: 0 when the second sentence follows the first
# (BERT's "IsNext"), 1 when it is a random sentence ("NotNext").
IS_NEXT, NOT_NEXT = 0, 1


def _ragged(name, ids):
    if isinstance(ids, tf.RaggedTensor):
        ragged = ids
    elif isinstance(ids, tf.Tensor):
        ragged = tf.RaggedTensor.from_tensor(ids)
    else:
        ragged = tf.ragged.constant(ids, dtype=tf.int32)
    if ragged.shape.rank != 2:
        raise ValueError(
            f"`{name}` must be a batch of id sequences (batch, None), "
            f"received: {name} of rank {ragged.shape.rank}"
        )
    return tf.cast(ragged, tf.int32)


def pack_segments(first, second=None, *, sequence_length, cls_id=BOS_ID,
                  sep_id=EOS_ID, pad_id=PAD_ID):
    """Pack one or two segments as `[CLS] A [SEP]` or `[CLS] A [SEP] B
    [SEP]`, truncated and padded to `sequence_length`.

    Truncation is round robin (tensorflow-text's `RoundRobinTrimmer`): the
    segments give up tokens from their ends in turn, so a long segment is
    cut first and a short one keeps its tokens.

    Args:
        first: `(B, None)` token ids: a `tf.RaggedTensor`, a dense tensor or
            nested lists (e.g. `SubwordTokenizer.tokenize`'s output).
        second: the same, or None for single segments.
        sequence_length: int, L, at least 3 (4 with `second`).
        cls_id, sep_id, pad_id: ints.

    Returns:
        dict with `"token_ids"` `(B, L)` int32, `"segment_ids"` `(B, L)`
        int32 (0 for `[CLS] A [SEP]`, 1 for `B [SEP]`, 0 at padding) and
        `"padding_mask"` `(B, L)` bool, the inputs of `BertEncoder`.

    Example:

    >>> from keras_attention.text.bert_data import pack_segments
    >>> packed = pack_segments([[10, 11, 12]], [[20, 21]], sequence_length=8)
    >>> packed["token_ids"].numpy().tolist()
    [[2, 10, 11, 12, 3, 20, 21, 3]]
    >>> packed["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1]]
    """
    segments = [_ragged("first", first)]
    if second is not None:
        segments.append(_ragged("second", second))
    minimum = len(segments) + 2
    sequence_length = _validation.positive_int(
        "sequence_length", sequence_length
    )
    if sequence_length < minimum:
        raise ValueError(
            f"`sequence_length` must leave room for [CLS], {len(segments)} "
            f"[SEP] and a token, at least {minimum}, received: "
            f"sequence_length={sequence_length}"
        )
    for name, value in (("cls_id", cls_id), ("sep_id", sep_id),
                        ("pad_id", pad_id)):
        _validation.non_negative_int(name, value)
    trimmer = tensorflow_text.RoundRobinTrimmer(
        max_seq_length=sequence_length - len(segments) - 1
    )
    token_ids, segment_ids = tensorflow_text.combine_segments(
        trimmer.trim(segments), start_of_sequence_id=cls_id,
        end_of_segment_id=sep_id,
    )
    token_ids, padding_mask = tensorflow_text.pad_model_inputs(
        token_ids, sequence_length, pad_value=pad_id
    )  # (B, L), (B, L)
    segment_ids, _ = tensorflow_text.pad_model_inputs(
        segment_ids, sequence_length
    )
    return {
        "token_ids": tf.cast(token_ids, tf.int32),
        "segment_ids": tf.cast(segment_ids, tf.int32),
        "padding_mask": tf.cast(padding_mask, tf.bool),
    }


def mask_tokens(token_ids, padding_mask, *, vocabulary_size, mask_id,
                max_selections, unselectable_ids=(PAD_ID, BOS_ID, EOS_ID),
                selection_rate=0.15, mask_token_rate=0.8,
                random_token_rate=0.1):
    """BERT's masked-language-model corruption of packed sequences.

    In each sequence, `ceil(selection_rate * n)` of its `n` selectable
    tokens (at most `max_selections`) are chosen uniformly at random;
    tokens in `unselectable_ids` (`[CLS]`, `[SEP]`, padding) and padded
    positions are never chosen. A chosen token becomes `mask_id` with
    probability `mask_token_rate`, a uniformly random id in `[0,
    vocabulary_size)` with probability `random_token_rate`, and stays
    unchanged otherwise (tensorflow-text's `RandomItemSelector` and
    `MaskValuesChooser`, seeded by `tf.random.set_seed`).

    Args:
        token_ids: `(B, L)` int, packed (see `pack_segments`).
        padding_mask: `(B, L)` bool, True at tokens; padding at the end.
        vocabulary_size: int, the range of the random replacements.
        mask_id: int, the `[MASK]` id.
        max_selections: int, P, the most positions chosen per sequence.
        unselectable_ids: ids never chosen.
        selection_rate, mask_token_rate, random_token_rate: floats in
            [0, 1]; `mask_token_rate + random_token_rate <= 1`.

    Returns:
        `(token_ids, mask_positions, mask_ids, mask_weights)`: the
        corrupted `(B, L)` int32 ids; `(B, P)` int32 positions of the chosen
        tokens and `(B, P)` int32 original ids there, zero-padded; `(B, P)`
        float32 weights, 1 at chosen positions and 0 at the padding slots.

    Example:

    >>> import tensorflow as tf
    >>> from keras_attention.text.bert_data import mask_tokens
    >>> tf.random.set_seed(0)
    >>> ids = tf.constant([[2, 10, 11, 12, 13, 3, 0, 0]])
    >>> masked, positions, original, weights = mask_tokens(
    ...     ids, ids != 0, vocabulary_size=20, mask_id=19, max_selections=2,
    ...     mask_token_rate=1.0, random_token_rate=0.0)
    >>> weights.numpy().tolist()  # ceil(0.15 * 4) = 1 of 4 tokens
    [[1.0, 0.0]]
    >>> int(masked[0, positions[0, 0]]), int(original[0, 0]) in (10, 11, 12, 13)
    (19, True)
    """
    vocabulary_size = _validation.positive_int(
        "vocabulary_size", vocabulary_size
    )
    mask_id = _validation.non_negative_int("mask_id", mask_id)
    max_selections = _validation.positive_int("max_selections", max_selections)
    for name, value in (("selection_rate", selection_rate),
                        ("mask_token_rate", mask_token_rate),
                        ("random_token_rate", random_token_rate)):
        if not 0.0 <= _validation.non_negative_float(name, value) <= 1.0:
            raise ValueError(f"`{name}` must be a float in [0, 1], "
                             f"received: {name}={value!r}")
    if mask_token_rate + random_token_rate > 1.0:
        raise ValueError(
            "`mask_token_rate + random_token_rate` must be at most 1, "
            f"received: mask_token_rate={mask_token_rate}, "
            f"random_token_rate={random_token_rate}"
        )
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    padding_mask = tf.cast(padding_mask, tf.bool)
    length = tf.shape(token_ids)[1]
    lengths = tf.reduce_sum(tf.cast(padding_mask, tf.int32), axis=1)
    ragged = tf.RaggedTensor.from_tensor(token_ids, lengths=lengths)
    masked, positions, original = tensorflow_text.mask_language_model(
        ragged,
        item_selector=tensorflow_text.RandomItemSelector(
            max_selections_per_batch=max_selections,
            selection_rate=selection_rate,
            unselectable_ids=list(unselectable_ids),
        ),
        mask_values_chooser=tensorflow_text.MaskValuesChooser(
            vocabulary_size, mask_id, mask_token_rate=mask_token_rate,
            random_token_rate=random_token_rate,
        ),
    )
    # Padding keeps its ids: the corrupted tokens, then the original tail.
    masked = masked.to_tensor(shape=tf.stack([tf.shape(token_ids)[0],
                                              length]))
    masked = tf.where(padding_mask, masked, token_ids)  # (B, L)
    positions, weights = tensorflow_text.pad_model_inputs(
        tf.cast(positions, tf.int32), max_selections
    )  # (B, P)
    original, _ = tensorflow_text.pad_model_inputs(original, max_selections)
    return (masked, positions, tf.cast(original, tf.int32),
            tf.cast(weights, tf.float32))


def next_sentence_pairs(documents, *, seed=None, next_rate=0.5):
    """Sentence pairs for next-sentence prediction, in document order.

    For each pair of consecutive sentences `(a, b)` of a document, in the
    order of the documents and of their sentences: with probability
    `next_rate` the pair is `(a, b)` with label `IS_NEXT` (0); otherwise
    `b` is replaced by a sentence drawn uniformly from another document,
    with label `NOT_NEXT` (1).

    Args:
        documents: a sequence of documents, each a sequence of sentences
            (strings, or token-id lists) in their order.
        seed: seed of the NumPy generator (int, or None for a fresh one).
        next_rate: float in [0, 1], the share of true next sentences.

    Returns:
        `(firsts, seconds, labels)`: two lists of sentences and an int32
        array of labels, one entry per consecutive pair.

    Example:

    >>> from keras_attention.text.bert_data import next_sentence_pairs
    >>> docs = [["a1", "a2", "a3"], ["b1", "b2"]]
    >>> firsts, seconds, labels = next_sentence_pairs(docs, next_rate=1.0)
    >>> list(zip(firsts, seconds)), labels.tolist()
    ([('a1', 'a2'), ('a2', 'a3'), ('b1', 'b2')], [0, 0, 0])
    """
    documents = [list(document) for document in documents]
    if sum(1 for document in documents if document) < 2:
        raise ValueError(
            "`documents` must hold at least two non-empty documents, so a "
            "random sentence comes from another one, received: "
            f"{len(documents)} documents"
        )
    if not 0.0 <= _validation.non_negative_float("next_rate", next_rate) <= 1:
        raise ValueError("`next_rate` must be a float in [0, 1], received: "
                         f"next_rate={next_rate!r}")
    rng = np.random.default_rng(seed)
    firsts, seconds, labels = [], [], []
    for index, document in enumerate(documents):
        others = [i for i, other in enumerate(documents)
                  if other and i != index]
        for first, following in zip(document, document[1:]):
            firsts.append(first)
            if rng.random() < next_rate:
                seconds.append(following)
                labels.append(IS_NEXT)
            else:
                other = documents[others[rng.integers(len(others))]]
                seconds.append(other[rng.integers(len(other))])
                labels.append(NOT_NEXT)
    return firsts, seconds, np.asarray(labels, np.int32)


def pretraining_batch(first, second, next_sentence_labels, *,
                      sequence_length, vocabulary_size, mask_id,
                      max_selections, cls_id=BOS_ID, sep_id=EOS_ID,
                      pad_id=PAD_ID, **masking):
    """Pack, mask and label a batch of sentence pairs for `BertPretrainer`.

    Args:
        first, second: `(B, None)` token ids (see `pack_segments`).
        next_sentence_labels: `(B,)` ints, `IS_NEXT` or `NOT_NEXT`.
        sequence_length, cls_id, sep_id, pad_id: as `pack_segments`.
        vocabulary_size, mask_id, max_selections, **masking: as
            `mask_tokens` (`[CLS]`, `[SEP]` and padding are never chosen).

    Returns:
        `(features, labels)`: `features` holds `"token_ids"` (masked),
        `"segment_ids"`, `"padding_mask"` and `"mask_positions"`;
        `labels` holds `"mask_ids"`, `"mask_weights"` and
        `"next_sentence_labels"`, the `x` and `y` of `BertPretrainer.fit`.
    """
    packed = pack_segments(first, second, sequence_length=sequence_length,
                           cls_id=cls_id, sep_id=sep_id, pad_id=pad_id)
    masking.setdefault("unselectable_ids", (cls_id, sep_id, pad_id))
    token_ids, positions, mask_ids, weights = mask_tokens(
        packed["token_ids"], packed["padding_mask"],
        vocabulary_size=vocabulary_size, mask_id=mask_id,
        max_selections=max_selections, **masking,
    )
    features = dict(packed, token_ids=token_ids, mask_positions=positions)
    labels = {
        "mask_ids": mask_ids,
        "mask_weights": weights,
        "next_sentence_labels": tf.cast(next_sentence_labels, tf.int32),
    }
    return features, labels
