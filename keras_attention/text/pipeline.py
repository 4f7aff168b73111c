"""tf.data pipelines for translation pairs.

Each element is `({"encoder_tokens": (B, S), "decoder_tokens": (B, T)},
labels (B, T))`, padded with 0: the decoder input is the target behind BOS
and the label is the target followed by EOS.
"""

import dataclasses

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import numpy as np
import tensorflow as tf

from keras_attention import _validation


@dataclasses.dataclass
class PipelineReport:
    """What the pipeline did with the pairs it was given."""

    pairs: int
    kept: int
    dropped: int
    truncated: int
    max_length: int
    target_tokens: int = 0  # label tokens (with EOS) in one epoch
    batches: int = 0  # batches in one epoch
    empty: int = 0  # pairs with an empty side (blank lines), skipped

    def __str__(self):
        empty = (f"{self.empty} skipped as empty on a side, "
                 if self.empty else "")
        return (f"{self.pairs} pairs: {self.kept} kept, {empty}{self.dropped} "
                f"dropped and {self.truncated} truncated as longer than "
                f"{self.max_length} tokens; {self.batches} batches, "
                f"{self.target_tokens} target tokens per epoch")


def tokenize_pairs(pairs, source_tokenizer, target_tokenizer, chunk=4096):
    """Tokenize (source, target) string pairs with the in-graph tokenizers.

    Returns two lists of int32 NumPy arrays (no BOS/EOS).
    """
    sources, targets = [], []
    for start in range(0, len(pairs), chunk):
        batch = pairs[start:start + chunk]
        for tokenizer, texts, out in (
            (source_tokenizer, [p[0] for p in batch], sources),
            (target_tokenizer, [p[1] for p in batch], targets),
        ):
            ragged = tokenizer.tokenize(tf.constant(texts))
            out.extend(np.asarray(row, "int32") for row in ragged.to_list())
    return sources, targets


def make_dataset(
    pairs,
    source_tokenizer,
    target_tokenizer,
    batch_size=64,
    tokens_per_batch=None,
    max_length=128,
    overlong="drop",
    shuffle=True,
    seed=0,
    bucket_width=8,
    replicas=1,
):
    """A batched, bucketed, shuffled, prefetched dataset of pairs.

    Args:
        pairs: list of (source text, target text).
        source_tokenizer, target_tokenizer: `SubwordTokenizer`s.
        batch_size: sentences per batch (the global batch under a
            strategy); ignored when `tokens_per_batch` is given.
        tokens_per_batch: batch by token count instead: each length bucket
            gets `tokens_per_batch // bucket_length` sentences per replica.
        replicas: with `tokens_per_batch`, every batch holds that many
            sentences per replica, so it splits evenly between replicas.
        max_length: the longest sequence kept, counting BOS/EOS.
        overlong: `"drop"` or `"truncate"` pairs longer than `max_length`.
        shuffle: shuffle pairs every epoch (seeded).
        seed: the shuffle seed.
        bucket_width: length buckets are this many tokens wide.

    Returns:
        `(dataset, report)`: the `tf.data.Dataset` and a `PipelineReport`
        counting dropped and truncated pairs.
    """
    max_length = _validation.positive_int("max_length", max_length)
    batch_size = _validation.positive_int("batch_size", batch_size)
    _validation.choice("overlong", overlong, ("drop", "truncate"))
    bucket_width = _validation.positive_int("bucket_width", bucket_width)
    if tokens_per_batch is not None:
        tokens_per_batch = _validation.positive_int("tokens_per_batch",
                                                    tokens_per_batch)
    if max_length < 2:
        raise ValueError(f"`max_length` must be >= 2, received: "
                         f"max_length={max_length}")
    sources, targets = tokenize_pairs(pairs, source_tokenizer,
                                      target_tokenizer)
    limit = max_length - 1  # room for BOS / EOS
    kept_sources, kept_targets, dropped, truncated, empty = [], [], 0, 0, 0
    for source, target in zip(sources, targets):
        if len(source) == 0 or len(target) == 0:  # nothing to learn from
            empty += 1
            continue
        if len(source) > max_length or len(target) > limit:
            if overlong == "drop":
                dropped += 1
                continue
            truncated += 1
            source, target = source[:max_length], target[:limit]
        kept_sources.append(source)
        kept_targets.append(target)
    report = PipelineReport(len(pairs), len(kept_sources), dropped, truncated,
                            max_length, empty=empty)
    if not kept_sources:
        raise ValueError(f"No pair left to train on: {report}")

    def ragged(rows):
        return tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1)

    dataset = tf.data.Dataset.from_tensor_slices(
        (ragged(kept_sources), ragged(kept_targets))
    )
    if shuffle:
        dataset = dataset.shuffle(len(kept_sources), seed=seed,
                                  reshuffle_each_iteration=True)

    def shift(source, target):
        bos = tf.constant([target_tokenizer.bos_id], tf.int32)
        eos = tf.constant([target_tokenizer.eos_id], tf.int32)
        return source, tf.concat([bos, target], 0), tf.concat([target, eos], 0)

    dataset = dataset.map(shift, num_parallel_calls=tf.data.AUTOTUNE)
    boundaries = list(range(bucket_width, max_length + 1, bucket_width))
    replicas = _validation.positive_int("replicas", replicas)
    if tokens_per_batch:
        sizes = [max(1, tokens_per_batch // length) * replicas
                 for length in boundaries + [max_length + 1]]
    else:
        sizes = [batch_size] * (len(boundaries) + 1)

    def longest(source, decoder_tokens, labels):
        return tf.maximum(tf.shape(source)[0], tf.shape(labels)[0])

    dataset = dataset.bucket_by_sequence_length(
        longest, boundaries, sizes, pad_to_bucket_boundary=False,
    )
    dataset = dataset.map(
        lambda s, d, y: ({"encoder_tokens": s, "decoder_tokens": d}, y)
    )
    report.target_tokens = sum(len(t) + 1 for t in kept_targets)
    report.batches = int(dataset.reduce(0, lambda count, _: count + 1))
    # The same count every epoch (each bucket yields ceil(pairs / size)
    # batches whatever the order): told to the dataset, so that `fit`
    # knows an epoch's length and a progress bar its end.
    dataset = dataset.apply(
        tf.data.experimental.assert_cardinality(report.batches))
    return dataset.prefetch(tf.data.AUTOTUNE), report
