"""Beam search batched across sentences against one sentence at a time.

Both are tf-models-official's `sequence_beam_search` over the decoding
protocol, compiled with `tf.function`:

- *batched* (`keras_attention.decoding.beam_search_decode`): one search
  over the batch, `B * K` rows per step, per-sentence length limits;
- *per sentence* (`decoding._beam_search_per_sentence`, how the package
  searched before): `tf.map_fn` over the batch, one search per sentence.

The test sentences are batched in order of length, as `Translator.translate`
and `evaluate` batch them (the per-sentence search does not depend on the
batching). For every batch, the two run interleaved (A B A B) after
warm-up; the script counts the sentences whose tokens are identical, prints
sentences per second for each and the ratio, and writes
`benchmarks/results/beam_search.json`.

Run: `python benchmarks/beam_search.py [--model-dir RUN]` with a translator
saved by `keras-attention train` or `benchmarks/translator_multi30k.py`
(its test sentences are Multi30k's `test_2016_flickr` when `$MULTI30K_DIR`
or `--data-dir` holds it); without one, a `tiny` Transformer is trained on
the synthetic corpus for about a minute first and decodes synthetic
sentences.
"""

import argparse
import os
import tempfile
import time

import harness  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention import decoding  # noqa: E402
from keras_attention.text import load_corpus  # noqa: E402
from keras_attention.translator import TrainingConfig  # noqa: E402
from keras_attention.translator import Translator  # noqa: E402
from keras_attention.translator import train  # noqa: E402


def searches(module, beam_size, alpha):
    """The two searches as compiled functions of `(B, S)` source ids."""
    limits = dict(length_ratio=module.length_ratio,
                  length_offset=module.length_offset,
                  max_length=module.max_output_length,
                  beam_size=beam_size, alpha=alpha, **module.special_ids)
    signature = [tf.TensorSpec([None, None], tf.int32)]
    return {
        "batched": tf.function(
            lambda source: decoding.beam_search_decode(module.model, source,
                                                       **limits),
            input_signature=signature),
        "per sentence": tf.function(
            lambda source: decoding._beam_search_per_sentence(
                module.model, source, **limits),
            input_signature=signature),
    }


def test_sentences(args, translator):
    """Multi30k's test set for a Multi30k model when the data is here, the
    synthetic test set otherwise."""
    data_dir = args.data_dir or os.environ.get("MULTI30K_DIR")
    if not args.data_dir and data_dir and not os.path.isdir(data_dir):
        data_dir = None  # e.g. the Makefile's default, not on this machine
    if args.model_dir and data_dir:
        pairs = load_corpus("multi30k", directory=data_dir)["test"]
        return "multi30k test_2016_flickr", [p[0] for p in pairs]
    return "synthetic test", [p[0] for p in load_corpus("synthetic")["test"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=None,
                        help="a saved translator (default: train a tiny one)")
    parser.add_argument("--data-dir", default=None,
                        help="Multi30k folder (default: $MULTI30K_DIR)")
    parser.add_argument("--sentences", type=int, default=1000,
                        help="test sentences to decode (default: 1000)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--unsorted", action="store_true",
                        help="batch the sentences in the test set's order, "
                             "not by length")
    parser.add_argument("--precision", default=None,
                        help="load the model with this Keras dtype policy "
                             "(default: the one it was trained with)")
    harness.add_results_arguments(
        parser, "beam_search(_PRECISION)(_unsorted)")
    args = parser.parse_args()

    if args.model_dir:
        translator = Translator.load(args.model_dir, dtype=args.precision)
    else:
        translator = train(TrainingConfig(
            output_dir=tempfile.mkdtemp(), train_size=4000, epochs=3,
            bleu_sentences=0, verbose=0, warmup_steps=200,
            learning_rate_scale=2.0,
        ))
    corpus, texts = test_sentences(args, translator)
    texts = texts[: args.sentences]
    module = translator.module
    contenders = searches(module, args.beam_size, args.alpha)
    lengths = module.source_tokenizer.tokenize(tf.constant(texts)
                                               ).row_lengths().numpy()
    if not args.unsorted:
        texts = [texts[i] for i in np.argsort(lengths, kind="stable")]
    batches = [module.encode_text(tf.constant(texts[i:i + args.batch_size]))[0]
               for i in range(0, len(texts), args.batch_size)]
    for search in contenders.values():  # warm-up: trace both
        search(batches[0])
    seconds = {name: 0.0 for name in contenders}
    differing = 0
    for source in batches:  # interleaved, batch by batch
        outputs = {}
        for name, search in contenders.items():
            started = time.perf_counter()
            outputs[name] = search(source).numpy()
            seconds[name] += time.perf_counter() - started
        new, old = outputs["batched"], outputs["per sentence"]
        width = max(new.shape[1], old.shape[1])
        new = np.pad(new, [(0, 0), (0, width - new.shape[1])])
        old = np.pad(old, [(0, 0), (0, width - old.shape[1])])
        differing += int((new != old).any(axis=1).sum())
    rates = {name: len(texts) / s for name, s in seconds.items()}
    ratio = rates["batched"] / rates["per sentence"]
    model_name = (f"{type(translator.model).__name__} "
                  f"({translator.model.dtype_policy.name})")
    print(f"{model_name}, beam {args.beam_size}, {len(texts)} sentences of "
          f"{corpus} in {'unsorted' if args.unsorted else 'length-sorted'} "
          f"batches of {args.batch_size}:")
    for name, rate in rates.items():
        print(f"  {name:<13} {rate:7.1f} sentences/s")
    print(f"  batched is {ratio:.2f}x the per-sentence search; "
          f"{len(texts) - differing} of {len(texts)} outputs identical")
    harness.write_results(
        args.results_name
        or "beam_search" + (f"_{args.precision}" if args.precision else "")
        + ("_unsorted" if args.unsorted else ""),
        [{"name": f"{model_name} beam {args.beam_size}, {corpus}",
          "ours": "batched", "reference": "per sentence (map_fn)",
          "ours_per_s": rates["batched"],
          "reference_per_s": rates["per sentence"],
          "unit": "sentences/s", "speedup": ratio,
          "identical": len(texts) - differing, "sentences": len(texts)}],
        directory=args.results_dir,
    )
    if differing:
        print(f"  {differing} outputs differ: bfloat16 rounding depends on "
              "the batch's shapes (each decodes as the per-sentence search "
              "does when alone); in float32 they agree")


if __name__ == "__main__":
    main()
