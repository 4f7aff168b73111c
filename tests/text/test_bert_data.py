"""BERT inputs: packing, masked-language-model masking, next-sentence pairs."""

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.text.bert_data import IS_NEXT
from keras_attention.text.bert_data import NOT_NEXT
from keras_attention.text.bert_data import mask_tokens
from keras_attention.text.bert_data import next_sentence_pairs
from keras_attention.text.bert_data import pack_segments
from keras_attention.text.bert_data import pretraining_batch

CLS, SEP, PAD, MASK, VOCABULARY = 2, 3, 0, 999, 1000


def bound(probability, draws, sigmas=5.0):
    """`sigmas` standard deviations of a binomial share of `draws`."""
    return sigmas * np.sqrt(probability * (1.0 - probability) / draws)


# Packing.


def test_pack_two_segments_golden():
    packed = pack_segments([[10, 11, 12], [10, 11, 12, 13, 14, 15]],
                           [[20, 21], [20, 21, 22, 23, 24, 25]],
                           sequence_length=10)
    # Row 2: 7 places for 12 tokens; round robin gives A 4, B 3.
    np.testing.assert_array_equal(packed["token_ids"], [
        [CLS, 10, 11, 12, SEP, 20, 21, SEP, PAD, PAD],
        [CLS, 10, 11, 12, 13, SEP, 20, 21, 22, SEP],
    ])
    np.testing.assert_array_equal(packed["segment_ids"], [
        [0, 0, 0, 0, 0, 1, 1, 1, 0, 0],
        [0, 0, 0, 0, 0, 0, 1, 1, 1, 1],
    ])
    np.testing.assert_array_equal(packed["padding_mask"],
                                  [[1] * 8 + [0] * 2, [1] * 10])
    assert packed["token_ids"].dtype == tf.int32
    assert packed["padding_mask"].dtype == tf.bool


def test_round_robin_keeps_a_short_segment():
    packed = pack_segments([list(range(10, 30))], [[50, 51]],
                           sequence_length=8)
    np.testing.assert_array_equal(packed["token_ids"],
                                  [[CLS, 10, 11, 12, SEP, 50, 51, SEP]])


def test_pack_one_segment_with_other_ids():
    packed = pack_segments(tf.ragged.constant([[5, 6, 7], [8]]),
                           sequence_length=6, cls_id=101, sep_id=102,
                           pad_id=7)
    np.testing.assert_array_equal(packed["token_ids"], [
        [101, 5, 6, 7, 102, 7], [101, 8, 102, 7, 7, 7]])
    np.testing.assert_array_equal(packed["segment_ids"], np.zeros((2, 6)))
    np.testing.assert_array_equal(packed["padding_mask"],
                                  [[1] * 5 + [0], [1] * 3 + [0] * 3])


def test_pack_in_tf_data_equals_eager():
    first = tf.ragged.constant([[10, 11, 12], [13], [14, 15, 16, 17, 18]])
    second = tf.ragged.constant([[20], [21, 22, 23, 24], [25, 26]])
    dataset = tf.data.Dataset.from_tensor_slices((first, second)).batch(3)
    graph = next(iter(dataset.map(
        lambda a, b: pack_segments(a, b, sequence_length=7))))
    eager = pack_segments(first, second, sequence_length=7)
    for key in eager:
        np.testing.assert_array_equal(graph[key], eager[key])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: pack_segments([[1]], [[2]], sequence_length=3),
         "sequence_length=3"),
        (lambda: pack_segments([[1]], sequence_length=0), "sequence_length=0"),
        (lambda: pack_segments([[[1]]], sequence_length=5), "rank 3"),
        (lambda: pack_segments([[1]], sequence_length=5, cls_id=-1),
         "cls_id=-1"),
    ],
)
def test_pack_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Masking.


def sequences(batch, tokens, padding=2, seed=0):
    """`[CLS] tokens [SEP] pad...` rows of random ids in [10, 900)."""
    rng = np.random.default_rng(seed)
    body = rng.integers(10, 900, size=(batch, tokens))
    ids = np.concatenate([np.full((batch, 1), CLS), body,
                          np.full((batch, 1), SEP),
                          np.full((batch, padding), PAD)], axis=1)
    return ids.astype("int32")


def corrupt(ids, **options):
    options = dict(vocabulary_size=VOCABULARY, mask_id=MASK,
                   max_selections=8) | options
    return [np.asarray(t) for t in mask_tokens(ids, ids != PAD, **options)]


def test_masking_statistics():
    tf.random.set_seed(3)
    batch, tokens = 2000, 20
    ids = sequences(batch, tokens)
    masked, positions, original, weights = corrupt(ids)
    # ceil(0.15 * 20) = 3 chosen in every row, in the 8 slots.
    np.testing.assert_array_equal(weights.sum(1), 3)
    chosen = np.zeros(ids.shape, bool)
    rows = np.repeat(np.arange(batch), 8)
    chosen[rows[weights.ravel() > 0], positions.ravel()[weights.ravel() > 0]] \
        = True
    assert chosen.sum() == 3 * batch
    # [CLS], [SEP] and padding are never chosen; the tokens uniformly.
    assert not chosen[:, 0].any() and not chosen[:, tokens + 1:].any()
    share = chosen[:, 1:tokens + 1].mean(0)  # per position, 0.15 each
    assert np.abs(share - 0.15).max() < bound(0.15, batch)
    # The labels are the original ids; unchosen tokens are unchanged.
    np.testing.assert_array_equal(
        original[weights > 0], ids[chosen.nonzero()])
    np.testing.assert_array_equal(masked[~chosen], ids[~chosen])
    # 80% [MASK], 10% random, 10% unchanged (a random id may repeat it).
    draws = chosen.sum()
    new, old = masked[chosen], ids[chosen]
    random_share = 0.1 * (1 - 1 / VOCABULARY)
    assert abs((new == MASK).mean() - 0.8) < bound(0.8, draws)
    assert abs((new == old).mean() - (0.1 + 0.1 / VOCABULARY)) < bound(
        0.1, draws)
    replaced = (new != MASK) & (new != old)
    assert abs(replaced.mean() - random_share) < bound(0.1, draws)
    # The random ids cover the vocabulary, not only the inputs' range.
    assert new[replaced].min() < 10 or new[replaced].max() >= 900


def test_masking_cap_and_padding():
    tf.random.set_seed(4)
    ids = np.concatenate([sequences(1, 40, padding=0),
                          sequences(1, 6, padding=34)])
    masked, positions, original, weights = corrupt(ids, max_selections=4)
    # Row 0: ceil(6.0) = 6, capped at 4; row 1: ceil(0.9) = 1.
    np.testing.assert_array_equal(weights, [[1, 1, 1, 1], [1, 0, 0, 0]])
    np.testing.assert_array_equal(positions[1, 1:], 0)
    np.testing.assert_array_equal(original[1, 1:], 0)
    assert 1 <= positions[1, 0] <= 6
    np.testing.assert_array_equal(masked[1, 8:], PAD)


def test_masking_never_chooses_unselectable_ids():
    tf.random.set_seed(5)
    ids = sequences(200, 10)
    ids[:, 1::2] = 7  # every other token is unselectable
    masked, positions, _, weights = corrupt(ids, unselectable_ids=(CLS, SEP,
                                                                   PAD, 7))
    chosen_ids = np.take_along_axis(ids, positions, 1)[weights > 0]
    assert chosen_ids.size == 200 and not np.isin(chosen_ids,
                                                  [CLS, SEP, PAD, 7]).any()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"mask_token_rate": 0.95, "random_token_rate": 0.1},
         "mask_token_rate=0.95, random_token_rate=0.1"),
        ({"selection_rate": 1.5}, "selection_rate=1.5"),
        ({"max_selections": 0}, "max_selections=0"),
        ({"vocabulary_size": 0}, "vocabulary_size=0"),
        ({"mask_id": -1}, "mask_id=-1"),
    ],
)
def test_masking_bad_arguments(options, message):
    with pytest.raises(ValueError, match=message):
        corrupt(sequences(1, 4), **options)


# Next-sentence pairs.


def documents(count=200, length=6):
    return [[f"d{d}s{s}" for s in range(length)] for d in range(count)]


def test_next_sentence_pairs_keep_document_order():
    docs = documents()
    firsts, seconds, labels = next_sentence_pairs(docs, seed=0)
    assert firsts == [s for doc in docs for s in doc[:-1]]
    for first, second, label in zip(firsts, seconds, labels):
        document, sentence = first[1:].split("s")
        if label == IS_NEXT:
            assert second == f"d{document}s{int(sentence) + 1}"
        else:
            assert label == NOT_NEXT
            assert not second.startswith(f"d{document}s")
    # 50/50, within a binomial bound over 1000 pairs.
    assert abs((labels == IS_NEXT).mean() - 0.5) < bound(0.5, len(labels))
    # Random seconds come from many documents, not one.
    assert len({s.split("s")[0] for s in np.array(seconds)[labels == 1]}) > 100


def test_next_sentence_pairs_seed_and_rate():
    docs = documents(10, 4)
    assert next_sentence_pairs(docs, seed=1)[1] == next_sentence_pairs(
        docs, seed=1)[1]
    _, _, labels = next_sentence_pairs(docs, seed=1, next_rate=0.0)
    np.testing.assert_array_equal(labels, NOT_NEXT)


@pytest.mark.parametrize(
    "docs, options, message",
    [
        ([["a", "b"]], {}, "at least two non-empty documents"),
        ([["a", "b"], []], {}, "received: 2 documents"),
        ([["a", "b"], ["c"]], {"next_rate": 1.5}, "next_rate=1.5"),
    ],
)
def test_next_sentence_pairs_bad_arguments(docs, options, message):
    with pytest.raises(ValueError, match=message):
        next_sentence_pairs(docs, **options)


# Together.


def test_pretraining_batch_in_tf_data():
    tf.random.set_seed(6)
    first = tf.ragged.constant([[10, 11, 12, 13], [14, 15], [16]])
    second = tf.ragged.constant([[20, 21], [22, 23, 24, 25, 26], [27]])
    dataset = tf.data.Dataset.from_tensor_slices(
        (first, second, [IS_NEXT, NOT_NEXT, IS_NEXT])).batch(3).map(
        lambda a, b, label: pretraining_batch(
            a, b, label, sequence_length=10, vocabulary_size=VOCABULARY,
            mask_id=MASK, max_selections=3))
    features, labels = next(iter(dataset))
    packed = pack_segments(first, second, sequence_length=10)
    assert set(features) == {"token_ids", "segment_ids", "padding_mask",
                             "mask_positions"}
    np.testing.assert_array_equal(features["segment_ids"],
                                  packed["segment_ids"])
    np.testing.assert_array_equal(labels["next_sentence_labels"], [0, 1, 0])
    # ceil(0.15 * n) chosen of n = 6, 7, 2 tokens.
    np.testing.assert_array_equal(labels["mask_weights"].numpy().sum(1),
                                  [1, 2, 1])
    gathered = np.take_along_axis(packed["token_ids"].numpy(),
                                  features["mask_positions"].numpy(), 1)
    chosen = labels["mask_weights"].numpy() > 0
    np.testing.assert_array_equal(gathered[chosen],
                                  labels["mask_ids"].numpy()[chosen])
    assert not np.isin(gathered[chosen], [CLS, SEP, PAD]).any()
