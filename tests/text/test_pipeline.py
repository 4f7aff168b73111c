"""make_dataset: decoder shift, padding, drop/truncate counts, batching.

Separate English and German tokenizers are used so that a swapped source and
target would show. Their SentencePiece models are trained once per module; the
`SubwordTokenizer`s are built per test (the in-graph resource does not survive
`keras.utils.set_random_seed`, as the SubwordTokenizer docstring says).
"""

import collections

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.text import BOS_ID
from keras_attention.text import EOS_ID
from keras_attention.text import PAD_ID
from keras_attention.text import PipelineReport
from keras_attention.text import SubwordTokenizer
from keras_attention.text import make_dataset
from keras_attention.text import train_sentencepiece
from keras_attention.text.synthetic import generate_pairs

TRAINING_PAIRS = generate_pairs(300, seed=0)
PAIRS = generate_pairs(160, seed=5)
SOURCES = [source for source, _ in PAIRS]
TARGETS = [target for _, target in PAIRS]


@pytest.fixture(scope="module")
def models():
    english = [source for source, _ in TRAINING_PAIRS + PAIRS]
    german = [target for _, target in TRAINING_PAIRS + PAIRS]
    return train_sentencepiece(english, 300), train_sentencepiece(german, 300)


@pytest.fixture
def tokenizers(models):
    return tuple(SubwordTokenizer(model) for model in models)


def token_ids(tokenizer, texts):
    return [tuple(row) for row in tokenizer.tokenize(tf.constant(texts)).to_list()]


def batches(dataset):
    """[(encoder_tokens, decoder_tokens, labels)] as NumPy arrays."""
    out = []
    for inputs, labels in dataset:
        assert set(inputs) == {"encoder_tokens", "decoder_tokens"}
        out.append((inputs["encoder_tokens"].numpy(),
                    inputs["decoder_tokens"].numpy(), labels.numpy()))
    return out


def real_rows(dataset):
    """[(source ids, target ids)] without BOS/EOS/padding, in dataset order."""
    rows = []
    for encoder, _, labels in batches(dataset):
        for source, label in zip(encoder, labels):
            source = tuple(int(i) for i in source if i != PAD_ID)
            label = [int(i) for i in label if i != PAD_ID]
            assert label[-1] == EOS_ID
            rows.append((source, tuple(label[:-1])))
    return rows


def make(tokenizers, pairs=PAIRS, **kwargs):
    source_tokenizer, target_tokenizer = tokenizers
    return make_dataset(pairs, source_tokenizer, target_tokenizer, **kwargs)


def check_row_layout(encoder, decoder, labels):
    """The invariants every batch satisfies; returns the real lengths."""
    assert encoder.dtype == decoder.dtype == labels.dtype == np.int32
    assert encoder.ndim == decoder.ndim == labels.ndim == 2
    assert encoder.shape[0] == decoder.shape[0] == labels.shape[0] > 0
    assert decoder.shape == labels.shape
    source_lengths, target_lengths = [], []
    for source, dec, label in zip(encoder, decoder, labels):
        # source: real ids then only padding
        s = int(np.count_nonzero(source))
        assert (source[:s] > EOS_ID).all()
        assert (source[s:] == PAD_ID).all()
        # labels: target ids, EOS, padding; decoder: BOS, target ids, padding
        n = int(np.count_nonzero(label))
        assert n >= 1
        assert label[n - 1] == EOS_ID
        assert (label[: n - 1] > EOS_ID).all()
        assert (label[n:] == PAD_ID).all()
        assert dec[0] == BOS_ID
        np.testing.assert_array_equal(dec[1:n], label[: n - 1])
        assert (dec[n:] == PAD_ID).all()
        assert np.count_nonzero(dec) == n
        source_lengths.append(s)
        target_lengths.append(n)
    # each batch is padded to its own longest row, not further
    assert encoder.shape[1] == max(source_lengths)
    assert labels.shape[1] == max(target_lengths)
    return source_lengths, target_lengths


# --------------------------------------------------------------------------
# element layout and content


def test_pairs_tokenize_without_unknown_ids(tokenizers):
    """Precondition of the checks below: real ids are all > EOS_ID."""
    for tokenizer, texts in zip(tokenizers, (SOURCES, TARGETS)):
        rows = token_ids(tokenizer, texts)
        assert all(rows) and min(min(row) for row in rows) > EOS_ID


def test_element_spec(tokenizers):
    dataset, _ = make(tokenizers)
    inputs, labels = dataset.element_spec
    for spec in (inputs["encoder_tokens"], inputs["decoder_tokens"], labels):
        assert spec.dtype == tf.int32
        assert spec.shape.as_list() == [None, None]


def test_every_batch_has_bos_shift_eos_and_zero_padding(tokenizers):
    dataset, report = make(tokenizers, batch_size=16)
    total = tokens = count = 0
    for encoder, decoder, labels in batches(dataset):
        check_row_layout(encoder, decoder, labels)
        total += encoder.shape[0]
        tokens += int((labels != 0).sum())
        count += 1
    assert total == report.kept == len(PAIRS)
    assert (report.batches, report.target_tokens) == (count, tokens)


def test_every_pair_appears_exactly_once_per_epoch(tokenizers):
    source_tokenizer, target_tokenizer = tokenizers
    dataset, report = make(tokenizers, batch_size=16, shuffle=True, seed=3)
    assert counts(report) == (len(PAIRS), len(PAIRS), 0, 0, 128)
    expected = collections.Counter(
        zip(token_ids(source_tokenizer, SOURCES),
            token_ids(target_tokenizer, TARGETS))
    )
    for _ in range(2):  # two epochs
        assert collections.Counter(real_rows(dataset)) == expected


def test_tokens_detokenize_to_the_pair_texts(tokenizers):
    """Encoder rows are the source tokenizer's ids of the source texts, label
    and decoder rows the target tokenizer's ids of the target texts."""
    source_tokenizer, target_tokenizer = tokenizers
    dataset, _ = make(tokenizers, batch_size=32)
    sources, targets, shifted = [], [], []
    for encoder, decoder, labels in batches(dataset):
        sources += source_tokenizer.detokenize(tf.constant(encoder)).numpy().tolist()
        targets += target_tokenizer.detokenize(tf.constant(labels)).numpy().tolist()
        shifted += target_tokenizer.detokenize(tf.constant(decoder)).numpy().tolist()
    sources = [s.decode() for s in sources]
    targets = [t.decode() for t in targets]
    assert collections.Counter(sources) == collections.Counter(SOURCES)
    assert collections.Counter(targets) == collections.Counter(TARGETS)
    # pairs stay aligned
    assert collections.Counter(zip(sources, targets)) == collections.Counter(PAIRS)
    assert [t.decode() for t in shifted] == targets


def test_source_and_target_tokenizers_are_not_swapped(tokenizers, models):
    english, german = tokenizers
    dataset, _ = make(tokenizers, pairs=PAIRS[:20], shuffle=False)
    swapped, _ = make((german, english), pairs=PAIRS[:20], shuffle=False)
    rows = collections.Counter(real_rows(dataset))
    assert rows == collections.Counter(
        zip(token_ids(english, SOURCES[:20]), token_ids(german, TARGETS[:20]))
    )
    assert rows != collections.Counter(real_rows(swapped))


# --------------------------------------------------------------------------
# overlong pairs


def lengths(tokenizers, pairs=PAIRS):
    source_tokenizer, target_tokenizer = tokenizers
    sources = token_ids(source_tokenizer, [s for s, _ in pairs])
    targets = token_ids(target_tokenizer, [t for _, t in pairs])
    return sources, targets


def test_length_distribution_allows_a_meaningful_cut(tokenizers):
    """Precondition: max_length=20 drops some pairs, but not all."""
    sources, targets = lengths(tokenizers)
    overlong = sum(len(s) > 20 or len(t) > 19 for s, t in zip(sources, targets))
    assert 10 < overlong < len(PAIRS) - 10
    # pairs long only on the source side exist, and on the target side only
    assert any(len(s) > 20 and len(t) <= 19 for s, t in zip(sources, targets))
    assert any(len(s) <= 20 and len(t) > 19 for s, t in zip(sources, targets))


@pytest.mark.parametrize("max_length", [20, 26])
def test_drop_counts_and_keeps_the_short_pairs(tokenizers, max_length):
    sources, targets = lengths(tokenizers)
    short = [(s, t) for s, t in zip(sources, targets)
             if len(s) <= max_length and len(t) <= max_length - 1]
    dropped = len(PAIRS) - len(short)
    dataset, report = make(tokenizers, max_length=max_length, overlong="drop",
                           batch_size=32)
    assert counts(report) == (len(PAIRS), len(short), dropped, 0, max_length)
    assert report.kept + report.dropped == report.pairs
    assert collections.Counter(real_rows(dataset)) == collections.Counter(short)
    for encoder, decoder, labels in batches(dataset):
        check_row_layout(encoder, decoder, labels)
        assert encoder.shape[1] <= max_length
        assert decoder.shape[1] <= max_length
        assert labels.shape[1] <= max_length


def test_sequences_of_exactly_max_length_are_kept(tokenizers):
    """The boundary: source of max_length ids, target of max_length - 1."""
    sources, targets = lengths(tokenizers)
    max_length = max(max(len(s) for s in sources), max(len(t) for t in targets) + 1)
    _, report = make(tokenizers, max_length=max_length)
    assert report.dropped == 0 and report.kept == len(PAIRS)
    _, report = make(tokenizers, max_length=max_length - 1)
    expected = sum(len(s) > max_length - 1 or len(t) > max_length - 2
                   for s, t in zip(sources, targets))
    assert report.dropped == expected >= 1


@pytest.mark.parametrize("max_length", [2, 20])
def test_truncate_keeps_every_pair_and_cuts_to_max_length(tokenizers, max_length):
    sources, targets = lengths(tokenizers)
    limit = max_length - 1
    overlong = sum(len(s) > max_length or len(t) > limit
                   for s, t in zip(sources, targets))
    expected = collections.Counter(
        (s[:max_length], t[:limit]) for s, t in zip(sources, targets)
    )
    dataset, report = make(tokenizers, max_length=max_length,
                           overlong="truncate", batch_size=32)
    assert counts(report) == (len(PAIRS), len(PAIRS), 0, overlong, max_length)
    assert overlong > 0
    rows = real_rows(dataset)
    assert collections.Counter(rows) == expected
    for encoder, decoder, labels in batches(dataset):
        source_lengths, target_lengths = check_row_layout(encoder, decoder,
                                                          labels)
        assert max(source_lengths) <= max_length
        assert max(target_lengths) <= max_length  # target ids + EOS
        assert decoder.shape[1] <= max_length  # BOS + target ids
    if max_length == 2:
        # one target id then EOS, even for truncated targets
        assert all(len(t) == 1 for _, t in rows)


def test_all_pairs_dropped_raises(tokenizers):
    with pytest.raises(ValueError, match="No pair left") as info:
        make(tokenizers, max_length=2, overlong="drop")
    assert f"{len(PAIRS)} dropped" in str(info.value)


def counts(report):
    return (report.pairs, report.kept, report.dropped, report.truncated,
            report.max_length)


def test_no_pairs_raises(tokenizers):
    with pytest.raises(ValueError, match="No pair left"):
        make(tokenizers, pairs=[])


def test_report_str():
    report = PipelineReport(pairs=10, kept=7, dropped=3, truncated=0,
                            max_length=16)
    assert str(report) == ("10 pairs: 7 kept, 3 dropped and 0 truncated as "
                           "longer than 16 tokens; 0 batches, 0 target "
                           "tokens per epoch")


# --------------------------------------------------------------------------
# batching


@pytest.mark.parametrize("batch_size", [1, 7, 16])
def test_batches_hold_at_most_batch_size_rows(tokenizers, batch_size):
    dataset, report = make(tokenizers, pairs=PAIRS[:60], batch_size=batch_size,
                           shuffle=False)
    sizes = [encoder.shape[0] for encoder, _, _ in batches(dataset)]
    assert max(sizes) <= batch_size
    assert sum(sizes) == report.kept == 60
    if batch_size > 1:
        assert max(sizes) == batch_size  # some bucket fills up


def bucket_upper_bound(length, max_length, bucket_width):
    """The exclusive upper length of the bucket `length` falls in."""
    for boundary in range(bucket_width, max_length + 1, bucket_width):
        if length < boundary:
            return boundary
    return max_length + 1


@pytest.mark.parametrize(
    "tokens_per_batch, max_length, bucket_width",
    [(200, 40, 8), (150, 45, 10), (64, 30, 4)],
)
def test_tokens_per_batch_bounds_the_padded_batch(
    tokenizers, tokens_per_batch, max_length, bucket_width
):
    """Each batch holds one length bucket [lo, hi) of max(source length,
    target length + 1) and at most tokens_per_batch // hi rows, so rows times
    the padded width stays within tokens_per_batch."""
    dataset, report = make(
        tokenizers, batch_size=2, tokens_per_batch=tokens_per_batch,
        max_length=max_length, bucket_width=bucket_width, overlong="truncate",
    )
    total, widest = 0, 0
    for encoder, decoder, labels in batches(dataset):
        source_lengths, target_lengths = check_row_layout(encoder, decoder,
                                                          labels)
        longest = [max(s, t) for s, t in zip(source_lengths, target_lengths)]
        bounds = {bucket_upper_bound(n, max_length, bucket_width)
                  for n in longest}
        assert len(bounds) == 1, "a batch mixes length buckets"
        (upper,) = bounds
        rows = encoder.shape[0]
        assert rows <= max(1, tokens_per_batch // upper)
        width = max(encoder.shape[1], labels.shape[1])
        assert width == max(longest) < upper
        assert rows * width <= tokens_per_batch
        total += rows
        widest = max(widest, rows)
    assert total == report.kept == len(PAIRS)
    assert widest > 2  # batch_size is ignored


def test_tokens_per_batch_smaller_than_a_sequence_gives_single_rows(tokenizers):
    dataset, _ = make(tokenizers, pairs=PAIRS[:30], tokens_per_batch=3,
                      max_length=64)
    sizes = [encoder.shape[0] for encoder, _, _ in batches(dataset)]
    assert sizes == [1] * 30


# --------------------------------------------------------------------------
# order and shuffling


def order(dataset):
    return real_rows(dataset)


def test_unshuffled_order_is_deterministic(tokenizers):
    first, _ = make(tokenizers, batch_size=8, shuffle=False)
    second, _ = make(tokenizers, batch_size=8, shuffle=False, seed=99)
    first_order = order(first)
    assert first_order == order(second)
    assert first_order == order(first)  # second epoch


def test_same_seed_gives_the_same_first_epoch(tokenizers):
    first, _ = make(tokenizers, batch_size=8, shuffle=True, seed=7)
    second, _ = make(tokenizers, batch_size=8, shuffle=True, seed=7)
    epoch = order(first)
    assert epoch == order(second)
    # the shuffle changes the order: against no shuffle, another seed and
    # the next epoch
    unshuffled, _ = make(tokenizers, batch_size=8, shuffle=False)
    other_seed, _ = make(tokenizers, batch_size=8, shuffle=True, seed=8)
    assert epoch != order(unshuffled)
    assert epoch != order(other_seed)
    assert epoch != order(first)
    assert sorted(epoch) == sorted(order(unshuffled))


# --------------------------------------------------------------------------
# argument errors


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(overlong="cut"), "overlong"),
        (dict(overlong=None), "overlong"),
        (dict(max_length=1), "max_length"),
        (dict(max_length=0), "max_length"),
        (dict(max_length=-4), "max_length"),
        (dict(max_length=2.5), "max_length"),
        (dict(batch_size=0), "batch_size"),
        (dict(batch_size=-1), "batch_size"),
        (dict(batch_size=True), "batch_size"),
    ],
)
def test_bad_arguments_raise_naming_the_argument(tokenizers, kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        make(tokenizers, pairs=PAIRS[:5], **kwargs)


@pytest.mark.parametrize("bucket_width", [0, -3])
def test_bad_bucket_width_raises_naming_it(tokenizers, bucket_width):
    with pytest.raises(ValueError, match="`bucket_width`"):
        make(tokenizers, pairs=PAIRS[:5], bucket_width=bucket_width)


def test_negative_tokens_per_batch_raises_naming_it(tokenizers):
    with pytest.raises(ValueError, match="`tokens_per_batch`"):
        make(tokenizers, pairs=PAIRS[:5], tokens_per_batch=-5)


def test_pairs_with_an_empty_side_are_skipped_and_counted(tokenizers):
    """Blank lines of a user's files arrive as pairs with an empty side
    (kept by the readers so line numbers stay aligned); the pipeline does
    not train on them, and says how many it skipped."""
    pairs = [PAIRS[0], ("", ""), (PAIRS[1][0], ""), ("", PAIRS[2][1]),
             PAIRS[3]]
    dataset, report = make_dataset(pairs, *tokenizers, batch_size=8,
                                   shuffle=False)
    assert (report.pairs, report.kept, report.empty) == (5, 2, 3)
    assert "3 skipped as empty on a side" in str(report)
    expected = [(token_ids(tokenizers[0], [s])[0],
                 token_ids(tokenizers[1], [t])[0])
                for s, t in (PAIRS[0], PAIRS[3])]
    assert sorted(real_rows(dataset)) == sorted(expected)


def test_the_dataset_knows_its_epoch_length(tokenizers):
    """`fit` reads the number of batches from the dataset (no "ran out of
    data" warning after the first epoch); it is the report's count, and
    each shuffled epoch yields exactly that many."""
    dataset, report = make(tokenizers, tokens_per_batch=40, seed=3)
    assert int(dataset.cardinality()) == report.batches > 1
    for _ in range(2):
        assert sum(1 for _ in dataset) == report.batches
