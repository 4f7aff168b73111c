"""
Title: BLEU against sentence length, with and without attention
Description: trained translators side by side: sacreBLEU of the same test
sentences by source length, a table and a figure with bootstrap intervals
(Bahdanau et al. 2015, Fig. 2).

Bahdanau et al. drew the argument for attention as one figure: the
encoder-decoder that squeezes the source into one vector loses BLEU as the
sentences grow, the one that attends does not. This script draws it for
any translators the package trained (`keras-attention train`, or
`benchmarks/translator_multi30k.py`, whose `--model rnn --attention none`,
`--model rnn` and `--model transformer` runs are the three of the docs):
each translates the same sentences, `Translator.evaluate(pairs,
by_length=EDGES)` scores each source-length bucket with sacreBLEU, and
the figure puts one line per model over the buckets. A bucket's interval
is the 2.5th-97.5th percentile of its BLEU over `--bootstrap` resamples
of its sentences (with replacement): Multi30k's test sentences are short,
so its longest buckets hold a few dozen sentences and their BLEU moves a
lot with which ones they are.

Run: `python examples/bleu_by_length.py none=runs/rnn-none
bahdanau=runs/rnn transformer=runs/transformer --data-dir
../shared/data/multi30k --output bleu_by_length.png` (the folder also
comes from `$MULTI30K_DIR`; `--corpus synthetic` scores the package's
embedded corpus instead).
"""

import argparse

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import numpy as np

from keras_attention.text import load_corpus
from keras_attention.training import corpus_bleu
from keras_attention.translator import Translator

"""
## Models and sentences
"""


def model_argument(text):
    """`LABEL=DIR` -> `(label, dir)`; a one-line error otherwise.

    >>> model_argument("bahdanau=runs/rnn")
    ('bahdanau', 'runs/rnn')
    """
    label, separator, directory = text.partition("=")
    if not separator or not label or not directory:
        raise argparse.ArgumentTypeError(
            f"a model is LABEL=DIR (e.g. bahdanau=runs/rnn), received: "
            f"{text!r}")
    return label, directory


# The buckets `keras-attention evaluate --by-length` uses: 1-10, 11-15,
# 16-20, 21-25 and 26+ source words.
DEFAULT_EDGES = (10, 15, 20, 25)


def edges_argument(text):
    """`"10,15,20,25"` -> `(10, 15, 20, 25)`: positive, strictly
    increasing ints, else a one-line error."""
    try:
        edges = tuple(int(part) for part in text.split(","))
    except ValueError:
        edges = ()
    if not edges or edges[0] <= 0 or any(
            low >= high for low, high in zip(edges, edges[1:])):
        raise argparse.ArgumentTypeError(
            "--edges must be positive, strictly increasing, comma-separated "
            f"ints, e.g. 10,15,20,25, received: {text!r}")
    return edges


def bucket_index(length, edges):
    """The bucket of a sentence of `length` words, as `bleu_by_length`
    counts: the first edge at or above it, else the last bucket.

    >>> [bucket_index(length, (10, 15)) for length in (0, 10, 11, 15, 16)]
    [0, 0, 1, 1, 2]
    """
    return int(np.searchsorted(edges, length, side="left"))


"""
## Bootstrap intervals
"""


def bucket_intervals(pairs, hypotheses, edges, resamples, seed=0):
    """For each source-length bucket, the 2.5th and 97.5th percentiles of
    its corpus sacreBLEU over `resamples` resamples (with replacement) of
    its sentences; `(None, None)` for an empty bucket or `resamples=0`.
    The same resampled indices serve every model (seeded by `seed`), so
    intervals of different models on the same sentences are comparable."""
    buckets = [[] for _ in range(len(edges) + 1)]
    for index, (source, _) in enumerate(pairs):
        buckets[bucket_index(len(source.split()), edges)].append(index)
    rng = np.random.default_rng(seed)
    intervals = []
    for members in buckets:
        if not members or resamples == 0:
            intervals.append((None, None))
            continue
        scores = []
        for _ in range(resamples):
            chosen = rng.choice(members, size=len(members))
            scores.append(corpus_bleu([hypotheses[i] for i in chosen],
                                      [pairs[i][1] for i in chosen])[0])
        low, high = np.percentile(scores, [2.5, 97.5])
        intervals.append((float(low), float(high)))
    return intervals


"""
## The table and the figure
"""


def table_lines(results):
    """One line per bucket: its words, its sentence count and each model's
    BLEU (`-` for an empty bucket), then each model's BLEU on all of
    them.

    >>> rows = [{"words": "1-10", "sentences": 3, "bleu": 40.0},
    ...         {"words": "11+", "sentences": 0, "bleu": None}]
    >>> for line in table_lines({"a": {"by_length": rows, "bleu": 40.0},
    ...                          "b": {"by_length": rows, "bleu": 40.0}}):
    ...     print(line)
    source words  sentences      a      b
    1-10                  3  40.00  40.00
    11+                   0      -      -
    all                   3  40.00  40.00
    """
    labels = list(results)
    first = results[labels[0]]["by_length"]
    header = ["source words", "sentences", *labels]
    lines = [header]
    for bucket, row in enumerate(first):
        scores = [results[label]["by_length"][bucket]["bleu"]
                  for label in labels]
        lines.append([row["words"], str(row["sentences"]),
                      *("-" if s is None else f"{s:.2f}" for s in scores)])
    lines.append(["all", str(sum(row["sentences"] for row in first)),
                  *(f"{results[label]['bleu']:.2f}" for label in labels)])
    widths = [max(len(line[column]) for line in lines)
              for column in range(len(header))]
    return ["  ".join(cell.ljust(width) if column == 0 else
                      cell.rjust(width)
                      for column, (cell, width) in enumerate(
                          zip(line, widths)))
            for line in lines]


def plot(results, path, title):
    """One line per model over the buckets (x: the bucket's words and its
    sentence count; y: its BLEU), with the bootstrap intervals as error
    bars where they were computed."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.2))
    axes = figure.add_subplot()
    first = next(iter(results.values()))["by_length"]
    positions = np.arange(len(first))
    for label, result in results.items():
        scores = [np.nan if row["bleu"] is None else row["bleu"]
                  for row in result["by_length"]]
        intervals = result.get("intervals") or [(None, None)] * len(scores)
        errors = np.array([
            [0.0, 0.0] if low is None else [score - low, high - score]
            for score, (low, high) in zip(scores, intervals)]).T
        axes.errorbar(positions, scores, yerr=errors, marker="o",
                      capsize=3, label=f"{label} ({result['bleu']:.1f})")
    axes.set_xticks(positions, [f"{row['words']}\n({row['sentences']})"
                                for row in first])
    axes.set_xlabel("source words (sentences)")
    axes.set_ylabel("sacreBLEU")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(title="model (all sentences)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.strip().splitlines()[0].removeprefix("Title: "))
    parser.add_argument("models", nargs="+", type=model_argument,
                        metavar="LABEL=DIR",
                        help="a label and a trained translator's folder")
    parser.add_argument("--corpus", choices=["multi30k", "synthetic"],
                        default="multi30k")
    parser.add_argument("--data-dir", default=None,
                        help="Multi30k's folder (or $MULTI30K_DIR)")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--limit", type=int, default=None,
                        help="score the first LIMIT pairs only")
    parser.add_argument("--edges", type=edges_argument,
                        default=DEFAULT_EDGES,
                        help="the buckets' last lengths, e.g. 10,15,20,25")
    parser.add_argument("--beam-size", type=int, default=1)
    parser.add_argument("--alpha", type=float, default=0.6,
                        help="beam search's length penalty")
    parser.add_argument("--bootstrap", type=int, default=200,
                        help="resamples per bucket for the intervals "
                             "(0: none)")
    parser.add_argument("--output", default="bleu_by_length.png")
    args = parser.parse_args(argv)
    labels = [label for label, _ in args.models]
    if len(set(labels)) != len(labels):
        parser.error(f"each model needs a label of its own, received: "
                     f"{labels}")
    corpus = load_corpus(args.corpus, args.data_dir)
    if args.split not in corpus:
        parser.error(f"--split must be one of {sorted(corpus)}, received: "
                     f"{args.split!r}")
    pairs = corpus[args.split][: args.limit]
    results = {}
    for label, directory in args.models:
        translator = Translator.load(directory, beam_size=args.beam_size,
                                     alpha=args.alpha)
        result = translator.evaluate(pairs, by_length=args.edges)
        result["intervals"] = bucket_intervals(
            pairs, result["hypotheses"], args.edges, args.bootstrap)
        results[label] = result
        print(f"{label}: BLEU {result['bleu']:.2f} on {len(pairs)} "
              f"sentences, {result['sentences_per_second']:.1f} "
              "sentences/s")
    print("\n".join(table_lines(results)))
    decoding = ("greedy" if args.beam_size == 1 else
                f"beam {args.beam_size}, alpha {args.alpha}")
    plot(results, args.output,
         f"{args.corpus} {args.split}, {decoding}")
    print(f"figure: {args.output}")
    return results


if __name__ == "__main__":
    main()
