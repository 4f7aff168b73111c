"""`translate_with_attention`: the attention greedy decoding computed,
against a second encode-and-decode pass for it (the signature before).

In one process, interleaved after warm-up, for the same batch of sentences:

- *reuse* (the package's signature): greedy decoding returns the
  cross-attention of each step, and the signature returns it;
- *second pass* (how the signature worked before): greedy decoding, then
  the source encoded again and the chosen output decoded again, teacher
  forced, for its cross-attention.

Both give the same tokens, and the same attention to 1e-5 (checked). The
script prints the medians, their interquartile range and the ratio, and
writes `benchmarks/results/attention_signature_MODEL.json` (MODEL:
transformer or rnn).

Run: `python benchmarks/attention_signature.py [--model rnn]
[--model-dir RUN]` (a translator saved by `keras-attention train`; without
one, a `tiny` model of `--model` is trained on the synthetic corpus for a
minute first). `--quick` trains briefly and times 8 sentences 3 times (a
smoke run, written as `..._quick.json`).
"""

import argparse
import tempfile

import harness  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention import decoding  # noqa: E402
from keras_attention.text import load_corpus  # noqa: E402
from keras_attention.translator import TrainingConfig  # noqa: E402
from keras_attention.translator import Translator  # noqa: E402
from keras_attention.translator import train  # noqa: E402


def second_pass(module):
    """The signature's attention computed the old way: decode, then encode
    and decode the chosen output again, teacher forced."""
    model, tokenizer = module.model, module.target_tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def translate_with_attention(text):
        encoder_tokens, _ = module.encode_text(text)
        tokens, _ = decoding.greedy_decode(
            model, encoder_tokens, bos_id=tokenizer.bos_id,
            eos_id=tokenizer.eos_id, length_ratio=module.length_ratio,
            length_offset=module.length_offset,
            max_length=module.max_output_length,
        )
        batch = tf.shape(tokens)[0]
        previous = tf.concat(
            [tf.fill([batch, 1], tokenizer.bos_id), tokens[:, :-1]], axis=1)
        memory, source_mask = model.encode(encoder_tokens)
        _, scores = model.decode(previous, memory, source_mask,
                                 return_attention_scores=True)
        scores = tf.cast(scores, tf.float32)
        if scores.shape.rank == 4:  # a Transformer's heads: (B, N, T, S)
            scores = tf.reduce_mean(scores, axis=1)
        real = tf.cast(tf.not_equal(tokens, model.pad_id), tf.float32)
        return {"tokens": tokens, "attention": scores * real[:, :, None]}

    return translate_with_attention


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=None,
                        help="a saved translator (default: train a tiny one)")
    parser.add_argument("--model", default="transformer",
                        choices=["transformer", "rnn"],
                        help="the model to train without --model-dir")
    parser.add_argument("--quick", action="store_true",
                        help="train on 500 pairs for one epoch, time 8 "
                             "sentences 3 times (a smoke run)")
    parser.add_argument("--sentences", type=int, default=None,
                        help="sentences per call (default: 64; quick 8)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs of each (default: 7; quick 3)")
    harness.add_results_arguments(
        parser, "attention_signature_MODEL, quick: + _quick")
    args = parser.parse_args()
    sentences = (args.sentences if args.sentences is not None
                 else 8 if args.quick else 64)
    repeats = (args.repeats if args.repeats is not None
               else 3 if args.quick else 7)
    for option, value in (("--sentences", sentences), ("--repeats", repeats)):
        if value < 1:
            parser.error(f"{option} must be >= 1, received: {value}")

    if args.model_dir:
        translator = Translator.load(args.model_dir)
    else:
        translator = train(TrainingConfig(
            output_dir=tempfile.mkdtemp(), model=args.model,
            train_size=500 if args.quick else 4000,
            epochs=1 if args.quick else 3,
            bleu_sentences=0, verbose=0, warmup_steps=200,
            learning_rate_scale=2.0,
        ))
    texts = [pair[0] for pair in load_corpus("synthetic")["test"]]
    text = tf.constant(texts[:sentences])
    contenders = {
        "reuse": translator.module.translate_with_attention,
        "second pass": second_pass(translator.module),
    }
    outputs = {name: call(text) for name, call in contenders.items()}  # warm
    new, old = outputs["reuse"], outputs["second pass"]
    np.testing.assert_array_equal(new["tokens"], old["tokens"])
    gap = float(np.abs(new["attention"].numpy()
                       - old["attention"].numpy()).max())
    assert gap < 1e-5, gap
    # Interleaved, A B A B ...; the calls above were the warm-up.
    timing = harness.interleaved(
        {name: (lambda call=call: call(text))
         for name, call in contenders.items()}, repeats, warmup=0)
    model_name = type(translator.model).__name__
    positions = int(new["tokens"].shape[1])
    print(f"{model_name}, {sentences} sentences, {positions} output "
          f"positions, {repeats} interleaved runs (attention equal to "
          f"{gap:.1e}):")
    for name, t in timing.items():
        print(f"  {name:<12} median {t['median_ms']:7.1f} ms  (IQR "
              f"{t['q1_ms']:.1f}-{t['q3_ms']:.1f})")
    ratio = timing["second pass"]["median_ms"] / timing["reuse"]["median_ms"]
    print(f"  reuse is {ratio:.2f}x the speed of the second pass")
    kind = "rnn" if "RNN" in model_name else "transformer"
    name = args.results_name or (f"attention_signature_{kind}"
                                 + ("_quick" if args.quick else ""))
    harness.write_results(
        name,
        [{"name": f"{model_name}, {sentences} sentences, {positions} "
                  "positions",
          "ours": "reuse", "reference": "second pass",
          "ours_ms": timing["reuse"],
          "reference_ms": timing["second pass"],
          "speedup": ratio, "attention_gap": gap}],
        directory=args.results_dir,
    )


if __name__ == "__main__":
    main()
