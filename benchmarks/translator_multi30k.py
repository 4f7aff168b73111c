"""The translator on Multi30k: BLEU after a wall-clock training budget, and
cached against uncached decoding speed.

1. Trains `--model` (`transformer`, the default; `rnn`, the RNN
   encoder-decoder with additive attention; or `decoder_only`, Liu et
   al.'s T-D) with `keras-attention train
   --corpus multi30k`'s recipe (`CORPUS_RECIPES["multi30k"]`; the options
   below override it) on Multi30k `train` for `--minutes` of wall clock
   (under the policy `--precision auto` picks for the CPU by default:
   mixed_bfloat16 with AVX512-BF16 or AMX, float32 without), printing the BLEU of the
   first `--bleu-sentences` `val` pairs after every epoch (inside the
   clock) and a table of them at the end; then for the last weights and
   for the average of the last `--average-last` epoch checkpoints (the
   recipe's final weights, saved in `OUTPUT_DIR`): greedy and beam-4
   sacreBLEU on all of `val` for each length penalty of `--alphas`, the
   penalty that scores best on `val`, and with it greedy and beam-4
   sacreBLEU on `test_2016_flickr`, overall and by source length (1-10,
   11-15, 16-20, 21-25, 26+ words; skipped with `--val-only`, for trials
   that must not look at the test set), training tokens per second and
   decoding sentences per second.
2. Decodes exactly `--decode-tokens` positions for a batch of test
   sentences with the key/value cache and by re-running the decoder on the
   whole prefix at every step, checks that both choose the same tokens,
   and prints the speed ratio (target: cached at least 5x faster at 64).

Run: `python benchmarks/translator_multi30k.py --minutes 60 [--model rnn
[--attention none] [--query current] | --model decoder_only]
[--data-dir ../shared/data/multi30k]` (the folder also comes from
`$MULTI30K_DIR`). Targets: sacreBLEU on test_2016_flickr after at most 60
minutes on 2 CPU cores >= 35 for the Transformer, >= 30 for the RNN.
"""

import argparse
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention._length_buckets import DEFAULT_EDGES  # noqa: E402
from keras_attention.models import TRANSLATORS  # noqa: E402
from keras_attention.text import load_multi30k  # noqa: E402
from keras_attention.training import average_checkpoints  # noqa: E402
from keras_attention.training import epoch_checkpoints  # noqa: E402
from keras_attention.training.config import CORPUS_RECIPES  # noqa: E402
from keras_attention.training.precision import PRECISION_SETTINGS  # noqa: E402
from keras_attention.translator import TrainingConfig  # noqa: E402
from keras_attention.translator import Translator  # noqa: E402
from keras_attention.translator import build  # noqa: E402
from keras_attention.translator import train  # noqa: E402


class TimeBudget(keras.callbacks.Callback):
    """Stop training once `seconds` of wall clock have passed (after the
    step, or the epoch, that crosses them); count the steps, and keep each
    epoch's `(epoch, steps, minutes, val_bleu)`."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.steps = 0
        self.epochs = []

    def on_train_begin(self, logs=None):
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        minutes = (time.perf_counter() - self.started) / 60
        self.epochs.append((epoch + 1, self.steps, minutes,
                            (logs or {}).get("val_bleu")))
        # An epoch whose validation ends past the budget is the last: no
        # next epoch of one step (whose checkpoint would join the average).
        if minutes * 60 > self.seconds:
            self.model.stop_training = True

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if time.perf_counter() - self.started > self.seconds:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        self.elapsed = time.perf_counter() - self.started


def fixed_length_decoders(model, bos_id):
    """Greedy decoders that run exactly `steps` positions (no early stop):
    one with the key/value cache, one that re-runs the decoder on the whole
    prefix at every step (a decoder-only translator, which has no decoder
    of its own, re-runs the whole source + prefix). Each is one
    `tf.function`, traced once and reused, so the timed calls measure
    decoding, not tracing."""

    def full_pass(source, prefix, memory, source_mask):
        if hasattr(model, "decode"):  # encoder-decoder: the decoder only
            return model.decode(prefix, memory, source_mask)
        return model({"encoder_tokens": source, "decoder_tokens": prefix})

    @tf.function
    def cached(source, steps):
        memory, source_mask = model.encode(source)
        batch = tf.shape(source)[0]
        cache = model.initial_cache(memory, source_mask, steps)
        token = tf.fill([batch], bos_id)
        tokens = tf.TensorArray(tf.int32, size=steps)
        for index in tf.range(steps):
            logits, cache, _ = model.decode_step(token[:, None], index,
                                                 cache, source_mask)
            token = tf.argmax(logits, -1, output_type=tf.int32)
            tokens = tokens.write(index, token)
        return tf.transpose(tokens.stack())

    @tf.function
    def uncached(source, steps):
        memory, source_mask = model.encode(source)
        batch = tf.shape(source)[0]
        prefix = tf.fill([batch, 1], bos_id)
        for _ in tf.range(steps):
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(prefix, tf.TensorShape([None, None]))]
            )
            logits = full_pass(source, prefix, memory, source_mask)
            token = tf.argmax(logits[:, -1], -1, output_type=tf.int32)
            prefix = tf.concat([prefix, token[:, None]], 1)
        return prefix[:, 1:]

    return {True: cached, False: uncached}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0,
                        help="training wall-clock budget (default: 60)")
    parser.add_argument("--data-dir", default=None,
                        help="Multi30k folder (default: $MULTI30K_DIR)")
    parser.add_argument("--output-dir", default="runs/multi30k-benchmark")
    parser.add_argument("--model", default="transformer",
                        choices=sorted(TRANSLATORS),
                        help="the translator (default: transformer)")
    parser.add_argument("--attention", default=None,
                        choices=["additive", "general", "dot", "scaled_dot",
                                 "none"],
                        help="rnn: the score, or none for the encoder-decoder "
                             "without attention (the recipe's default: "
                             "additive)")
    parser.add_argument("--query", default=None,
                        choices=["previous", "current"],
                        help="rnn: Bahdanau's query (previous, the default) "
                             "or Luong's (current)")
    parser.add_argument("--preset", default=None,
                        help="the model size (default: the recipe's)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="use only N training pairs (a quick check)")
    parser.add_argument("--warmup-steps", type=int, default=1000,
                        help="learning-rate warm-up steps (default: 1000; "
                        "an hour on 2 cores is about 2000 steps)")
    parser.add_argument("--learning-rate-scale", type=float, default=None,
                        help="factor on the learning-rate schedule "
                        "(default: the recipe's)")
    parser.add_argument("--dropout", type=float, default=None,
                        help="the model's dropout rate (default: the "
                        "preset's)")
    parser.add_argument("--tokens-per-batch", type=int, default=None,
                        help="tokens per training batch (default: the "
                        "recipe's)")
    parser.add_argument("--precision", default="auto",
                        choices=PRECISION_SETTINGS,
                        help="Keras dtype policy (default: auto, "
                             "mixed_bfloat16 on CPUs with AVX512-BF16 or "
                             "AMX, float32 on others; the run prints its "
                             "choice)")
    parser.add_argument("--evaluate-only", action="store_true",
                        help="skip training: evaluate the translator saved "
                             "in --output-dir by an earlier run")
    parser.add_argument("--average-last", type=int, default=None,
                        help="the final weights are the average of the last "
                             "K epoch checkpoints, evaluated beside the last "
                             "weights (default: the recipe's, "
                             f"{CORPUS_RECIPES['multi30k']['average_last']}"
                             "; 1 disables)")
    parser.add_argument("--decoding-only", action="store_true",
                        help="with --evaluate-only: skip BLEU, measure only "
                             "the cached/uncached decoding speed")
    parser.add_argument("--bleu-sentences", type=int, default=200,
                        help="val pairs translated (greedy) for the BLEU "
                        "printed after every epoch, inside the clock "
                        "(default: 200; 0 disables)")
    parser.add_argument("--alphas", type=alpha_list,
                        default=(0.3, 0.6, 1.0),
                        help="beam-search length penalties tried on val, "
                        "each a beam-4 pass over it; test uses the best "
                        "(default: 0.3,0.6,1.0)")
    parser.add_argument("--val-only", action="store_true",
                        help="evaluate on val only: trials that choose a "
                        "recipe must not look at the test set")
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--decode-batch", type=int, default=32)
    args = parser.parse_args()
    if args.model != "rnn" and (args.attention or args.query):
        parser.error(f"--attention and --query are rnn options, received: "
                     f"--model {args.model}")

    if args.average_last is None:
        args.average_last = CORPUS_RECIPES["multi30k"]["average_last"]
    if args.average_last < 1:
        parser.error(f"--average-last must be >= 1, received: "
                     f"{args.average_last}")
    if args.bleu_sentences < 0:
        parser.error(f"--bleu-sentences must be >= 0, received: "
                     f"{args.bleu_sentences}")

    output_dir = pathlib.Path(args.output_dir)
    if args.evaluate_only:
        translator = Translator.load(output_dir)
        print(f"evaluating the translator trained in {output_dir}")
        averaged = epoch_checkpoints(output_dir / "checkpoints",
                                     args.average_last)
    else:
        translator = train_for(args)
        averaged = translator.averaged
    val = load_multi30k("val", args.data_dir)
    test = None if args.val_only else load_multi30k("test", args.data_dir)
    decoded = val if test is None else test  # for the decoding speed
    if args.decoding_only:
        decoding_speed(translator, decoded, args)
        return
    # A run that averaged saved its last weights beside the average.
    last = output_dir / "last.weights.h5"
    if last.exists():
        translator.model.load_weights(last)
    print(f"last weights ({len(val)} val sentences"
          + ("" if test is None else f", {len(test)} test_2016_flickr") + "):")
    bleu(translator, val, test, args.alphas)
    if len(averaged) > 1:
        average_checkpoints(translator.model, averaged)
        print(f"the average of the last {len(averaged)} epoch checkpoints "
              f"({averaged[0].name} .. {averaged[-1].name}):")
        bleu(translator, val, test, args.alphas)
    decoding_speed(translator, decoded, args)


def alpha_list(text):
    """`--alphas 0,0.6,1.0` -> (0.0, 0.6, 1.0); one line on a bad value."""
    try:
        alphas = tuple(float(value) for value in text.split(","))
    except ValueError:
        alphas = ()
    if not alphas or any(alpha < 0 for alpha in alphas):
        raise argparse.ArgumentTypeError(
            f"--alphas takes non-negative numbers separated by commas, "
            f"received: {text!r}")
    return alphas


def train_for(args):
    """Train the preset for `args.minutes` of wall clock."""
    budget = TimeBudget(args.minutes * 60)
    config = TrainingConfig(
        corpus="multi30k", data_dir=args.data_dir, output_dir=args.output_dir,
        model=args.model, preset=args.preset, epochs=1000,
        attention=args.attention, query=args.query,
        tokens_per_batch=args.tokens_per_batch, max_length=64,
        precision=args.precision,
        warmup_steps=args.warmup_steps,
        learning_rate_scale=args.learning_rate_scale,
        average_last=args.average_last, dropout=args.dropout,
        bleu_sentences=args.bleu_sentences,
        train_size=args.train_size,
        verbose=2,
    )
    translator = train(config, callbacks=[budget])
    report = translator.report
    tokens_per_step = report.target_tokens / max(report.batches, 1)
    print(f"\ntrained {budget.steps} steps in {budget.elapsed / 60:.1f} min: "
          f"{budget.steps * tokens_per_step / budget.elapsed:.0f} target "
          "tokens/s")
    if args.bleu_sentences:
        print(f"\nval BLEU (greedy, first {args.bleu_sentences} val pairs) "
              "after each epoch:\n  epoch  steps  minutes  val BLEU")
        for epoch, steps, minutes, score in budget.epochs:
            score = "" if score is None else f"{score:8.2f}"
            print(f"  {epoch:5d}  {steps:5d}  {minutes:7.1f}  {score}")

    return translator


def bleu(translator, val, test, alphas):
    """Greedy and beam 4 on `val` for each length penalty in `alphas`; the
    best one on `val`; greedy and beam 4 with it on `test` (if given)."""

    def line(split, name, result):
        print(f"  {split:<5} {name:<20} {result['bleu']:5.2f}  "
              f"{result['sentences_per_second']:.1f} sentences/s")

    line("val", "greedy", translator.with_decoding(beam_size=1).evaluate(val))
    scores = {}
    for alpha in alphas:
        result = translator.with_decoding(beam_size=4, alpha=alpha).evaluate(
            val)
        scores[alpha] = result["bleu"]
        line("val", f"beam 4, alpha {alpha:g}", result)
    best = max(scores, key=scores.get)
    print(f"  length penalty chosen on val: alpha={best:g}")
    if test is None:
        return
    for beam in (1, 4):
        result = translator.with_decoding(beam_size=beam, alpha=best).evaluate(
            test, by_length=DEFAULT_EDGES)
        name = "greedy" if beam == 1 else f"beam {beam}, alpha {best:g}"
        line("test", name, result)
        print("    by source length: " + ", ".join(
            f"{row['words']} words "
            + ("-" if row["bleu"] is None else f"{row['bleu']:.2f}")
            + f" ({row['sentences']})" for row in result["by_length"]))
    print(f"  ({result['signature']})")


def decoding_speed(translator, test, args):
    """Cached against uncached greedy decoding of a fixed length, with the
    model's own policy and, when that is a mixed one, with a float32 copy
    of the same weights."""
    texts = [pair[0] for pair in test[: args.decode_batch]]
    source = translator.module.encode_text(tf.constant(texts))[0]
    models = {translator.model.dtype_policy.name: translator.model}
    if "float32" not in models:
        config = {**translator.model.get_config(), "dtype": "float32"}
        copy = type(translator.model).from_config(config)
        build(copy)
        copy.set_weights(translator.model.get_weights())
        models["float32"] = copy
    steps = tf.constant(args.decode_tokens)
    for policy, model in models.items():
        decoders = fixed_length_decoders(model, translator.tokenizer.bos_id)
        timings = {}
        outputs = {}
        for cached, decoder in decoders.items():
            decoder(source, steps)  # trace and warm up
            started = time.perf_counter()
            outputs[cached] = decoder(source, steps).numpy()
            timings[cached] = time.perf_counter() - started
        same = np.mean(outputs[True] == outputs[False])
        print(f"\n{policy}: greedy decoding of {args.decode_tokens} tokens "
              f"for {len(texts)} sentences: cached {timings[True]:.2f} s, "
              f"uncached {timings[False]:.2f} s, ratio "
              f"{timings[False] / timings[True]:.1f}x (same token at "
              f"{same:.1%} of positions)")


if __name__ == "__main__":
    main()
