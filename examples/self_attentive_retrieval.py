"""
Title: Self-attentive sentence embeddings for English–German retrieval
Description: a dual encoder with structured self-attentive pooling (Lin et
al., 2017) learns one space for English and German sentences on Multi30k
and finds each English test sentence's translation among 1,000 German ones,
with and without the hop-diversity penalty.

Lin et al. (2017) embed a sentence as a matrix `M = A H`: a BiLSTM reads the
words into states `H`, and `num_hops` attention distributions (the rows of
`A = softmax(W2 tanh(W1 Hᵀ))`) each pool them into one vector. Nothing makes
the hops differ, so the paper adds the penalty `||A Aᵀ - I||_F^2`, which is 0
when the hops attend to disjoint single words and grows as they attend
alike.

This script trains `keras_attention.models.dual_encoder.DualEncoder` (one
such encoder per language, projected to a shared space and L2-normalised)
with the symmetric in-batch softmax loss on Multi30k's English–German
training pairs, once per coefficient of `--penalties` (0 and the paper's
1 by default). Each English
sentence of `test_2016_flickr` then ranks the 1,000 German sentences by
cosine similarity: recall@k is the share of English sentences whose German
translation is among the first k.

The hops' diversity is reported as their *overlap*: for one sentence, the
mean over hop pairs `i < j` of `sum_t min(A[i, t], A[j, t])`, the mass two
distributions share (1 for identical hops, 0 for hops on disjoint words),
averaged over the test sentences of both languages.

Run: `python examples/self_attentive_retrieval.py --data-dir
../shared/data/multi30k` (or set `MULTI30K_DIR`). The defaults (the 29,000
training pairs, 3 epochs per model, two models) take two and a half to
three and a half minutes on two CPU cores; `--train-size 8000` takes under one, and
`--penalties 0,0.1,1 --epochs 6` compares more.
"""

import argparse
import os
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np
from keras import ops

from keras_attention import visualize
from keras_attention.models.dual_encoder import DualEncoder
from keras_attention.text import load_multi30k

# The shared copy beside the clone (/work/shared/data/multi30k here).
DEFAULT_DATA = (pathlib.Path(__file__).resolve().parents[2] / "shared"
                / "data" / "multi30k")

"""
## Data: word ids per language

`TextVectorization` lower-cases, strips punctuation and maps the most
frequent words of the training sentences to ids (0 pads, 1 is unknown);
sentences are cut or padded to `--max-length` words.
"""


def vectorizer(sentences, vocabulary_size, max_length):
    layer = keras.layers.TextVectorization(
        max_tokens=vocabulary_size, output_sequence_length=max_length
    )
    layer.adapt(sentences)
    return layer


def token_ids(layer, sentences):
    return np.asarray(ops.convert_to_numpy(layer(sentences)), "int32")


"""
## Retrieval and hop overlap
"""


def recall_at(similarity, ks):
    """Share of rows whose diagonal entry is among the row's k largest."""
    correct = np.diag(similarity)[:, None]
    rank = (similarity > correct).sum(axis=1)  # 0 = ranked first
    return {k: float(np.mean(rank < k)) for k in ks}


def hop_overlap(weights):
    """Mean over sentences and hop pairs i < j of sum_t min(A_i, A_j)."""
    hops = weights.shape[1]
    if hops < 2:
        return float("nan")
    pairs = [
        np.minimum(weights[:, i], weights[:, j]).sum(-1)
        for i in range(hops) for j in range(i + 1, hops)
    ]
    return float(np.mean(pairs))


def encode(model, side, tokens, batch_size=250):
    """Unit vectors and attention of `tokens`, in batches, as NumPy."""
    encoder = model.encode_source if side == "source" else model.encode_target
    vectors, weights = [], []
    for start in range(0, len(tokens), batch_size):
        vector, weight = encoder(tokens[start:start + batch_size],
                                 return_attention_scores=True)
        vectors.append(ops.convert_to_numpy(vector))
        weights.append(ops.convert_to_numpy(weight))
    return np.concatenate(vectors), np.concatenate(weights)


"""
## Train and evaluate one model
"""


def train_and_evaluate(penalty, data, test, vocabulary_sizes, args):
    keras.utils.set_random_seed(args.seed)
    model = DualEncoder(
        *vocabulary_sizes, embedding_dim=args.embedding_dim,
        encoder_units=args.units, cell="lstm", attention_units=args.units,
        num_hops=args.num_hops, penalty=penalty,
        projection_dim=args.embedding_dim, temperature=0.05,
    )
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    start = time.perf_counter()
    model.fit(data, batch_size=args.batch_size, epochs=args.epochs,
              verbose=args.verbose)
    seconds = time.perf_counter() - start
    english, english_weights = encode(model, "source", test["source_tokens"])
    german, german_weights = encode(model, "target", test["target_tokens"])
    recall = recall_at(english @ german.T, (1, 5))
    overlap = np.mean([hop_overlap(english_weights),
                       hop_overlap(german_weights)])
    return model, english_weights, {
        "recall@1": recall[1], "recall@5": recall[5],
        "overlap": float(overlap), "train_seconds": seconds,
    }


"""
## Where the hops look

For one test sentence, each hop's three most attended words.
"""


def show_hops(weights, tokens, vocabulary):
    for hop, row in enumerate(weights):
        top = np.argsort(-row)[:3]
        words = ", ".join(f"{vocabulary[tokens[t]]} {row[t]:.2f}"
                          for t in top if tokens[t] > 0)
        print(f"    hop {hop}: {words}")


def plot_hops(path, penalty, weights, tokens, vocabulary):
    """The hops over the sentence's real tokens, one row each."""
    path = pathlib.Path(path)
    path = path.with_name(f"{path.stem}_penalty_{penalty:g}{path.suffix}")
    length = int(np.sum(tokens > 0))
    visualize.plot_pooling(
        weights[:, :length], [vocabulary[t] for t in tokens[:length]],
        title=f"self-attentive pooling, penalty {penalty:g}", path=path)
    print(f"  hops drawn to {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", default=None,
                        help="Multi30k folder (default: $MULTI30K_DIR, else "
                             f"{DEFAULT_DATA})")
    parser.add_argument("--train-size", type=int, default=None,
                        help="use the first N training pairs (29,000 in all)")
    parser.add_argument("--test-size", type=int, default=1000,
                        help="test pairs ranked (the first N of 1,000)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--penalties", default="0,1",
                        help="comma-separated penalty coefficients, one "
                             "model each")
    parser.add_argument("--num-hops", type=int, default=4)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--vocabulary-size", type=int, default=6000)
    parser.add_argument("--max-length", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=2)
    parser.add_argument("--plot", metavar="FILE", default=None,
                        help="draw the first test sentence's hops for each "
                        "penalty: FILE hops.png writes hops_penalty_0.png, "
                        "...")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        penalties = [float(value) for value in args.penalties.split(",")]
    except ValueError:
        penalties = [-1.0]
    if min(penalties) < 0:
        raise ValueError("`--penalties` must be floats >= 0, received: "
                         f"--penalties={args.penalties!r}")
    data_dir = (args.data_dir or os.environ.get("MULTI30K_DIR")
                or DEFAULT_DATA)

    train = load_multi30k("train", data_dir)[: args.train_size]
    test = load_multi30k("test_2016_flickr", data_dir)[: args.test_size]
    layers = [
        vectorizer([pair[side] for pair in train], args.vocabulary_size,
                   args.max_length)
        for side in (0, 1)
    ]

    def arrays(pairs):
        return {
            "source_tokens": token_ids(layers[0], [p[0] for p in pairs]),
            "target_tokens": token_ids(layers[1], [p[1] for p in pairs]),
        }

    data, test_data = arrays(train), arrays(test)
    vocabulary_sizes = [layer.vocabulary_size() for layer in layers]
    print(f"{len(train)} training pairs, {len(test)} test pairs, "
          f"vocabularies {vocabulary_sizes[0]} (en) / "
          f"{vocabulary_sizes[1]} (de)")

    """
    ## Penalty 0 against the paper's penalty
    """
    results = {}
    for penalty in penalties:
        print(f"\n--- penalty {penalty} ---")
        _, weights, results[penalty] = train_and_evaluate(
            penalty, data, test_data, vocabulary_sizes, args
        )
        print(f"  '{test[0][0]}'")
        show_hops(weights[0], test_data["source_tokens"][0],
                  layers[0].get_vocabulary())
        if args.plot:
            plot_hops(args.plot, penalty, weights[0],
                      test_data["source_tokens"][0],
                      layers[0].get_vocabulary())

    print(f"\nEnglish -> German retrieval among {len(test)} test sentences")
    print("  penalty  recall@1  recall@5  hop overlap  train s")
    for penalty, figures in results.items():
        print(f"  {penalty:7.2f}  {figures['recall@1']:8.1%}  "
              f"{figures['recall@5']:8.1%}  {figures['overlap']:11.3f}  "
              f"{figures['train_seconds']:7.0f}")
    print(f"wall time {time.perf_counter() - began:.0f} s")
    return results


if __name__ == "__main__":
    main()
