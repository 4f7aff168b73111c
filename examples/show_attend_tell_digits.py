"""
Title: Show, Attend and Tell on scenes of handwritten digits
Description: A CNN + LSTM captioner with soft or hard attention learns to
write "a small three left of an eight", and shows where it looks for each
word.

Xu et al. (2015) caption an image with an LSTM that, before each word,
weighs the locations of a CNN feature map (`α_ti`, additive attention from
the previous state) and reads their weighted sum (*soft* attention), or
samples one location from `α_t` and reads it (*hard* attention, trained
with REINFORCE). Their *doubly stochastic* regulariser
`λ Σ_i (1 − Σ_t α_ti)²` asks every location to be looked at about once
over the caption. This script trains `keras_attention.models.Captioner`
on scenes composed from scikit-learn's bundled 8x8 digits
(`keras_attention.text.digit_scenes`; no download), for each attention,
λ and seed asked for, decodes held-out scenes with the package's greedy
and beam search (beside the rule with no weights: the most common training
caption), measures the REINFORCE estimator's gradient variance with
and without its baseline, and draws the attention of a few scenes. About
ten minutes on one busy CPU core with the defaults (one soft model for
each of λ = 1 and 0); `reproductions/systems/show_attend_tell_digits.py` runs it
over seeds.

Run: `python examples/show_attend_tell_digits.py [--epochs E]
[--output-dir DIR] [--lambdas 1,0] [--attention soft,hard] [--seeds 0,1,2]
[--results FILE]`.
"""

import argparse
import collections
import json
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np
import tensorflow as tf

from keras_attention import decoding
from keras_attention.models.captioner import Captioner
from keras_attention.text import digit_scenes
from keras_attention.training.bleu import corpus_bleu
from keras_attention.training.losses import MaskedAccuracy
from keras_attention.training.losses import MaskedCrossentropy
from keras_attention.training.reinforce_variance import reinforce_gradient_variance
from keras_attention.visualize.image_attention import plot_image_attention

"""
## Data: two digits, one sentence

A 32x32 canvas holds two digits from `load_digits`, side by side or one
above the other, each drawn at 12x12 or, "small", at 8x8. The caption
starts with the digit of lower value (then the small one), so every scene
has one correct caption:

    a three left of a small seven        an eight above a two

Held-out scenes are composed only from held-out digit images (a fixed 20%
of the 1,797), so the test reads handwriting the model never saw.
"""


def load(args, vocabulary):
    train = digit_scenes.generate_scenes(args.train_size, "train", seed=0)
    test = digit_scenes.generate_scenes(args.test_size, "test", seed=1)
    inputs, targets = vocabulary.teacher_forcing(train.captions)
    # A hard-attention model's reward is the caption's likelihood, so its
    # training inputs carry the labels too (a soft model ignores them).
    inputs = {"images": train.images, "decoder_tokens": inputs,
              "targets": targets}
    return (inputs, targets), test


"""
## The model

Two convolution + pooling stages and a feature convolution turn the image
into an 8x8 map of 64-d annotations (L = 64 locations). The LSTM
(`AttentionRNNDecoder(cell="lstm", attention="additive")`) starts from
the mean annotation; each word comes from the deep output
`L_o(E y_{t-1} + L_h h_t + L_z z_t)`. The regulariser goes into the loss
through `add_loss`, over the caption's real steps.

With `attention="hard"`, each training step draws one location per word,
`s_t ~ Multinoulli(α_t)`, and the LSTM reads that annotation alone; half
of the batches (as in the authors' code) read the expectation instead.
The sampled locations cannot be differentiated, so the attention learns
from REINFORCE (the paper's equation 12): `λ_r (NLL − b) ∇ log α_t[s_t]`
with a moving-average baseline `b` and an entropy bonus. Held-out captions
are written with the expected context (the authors' sampler's default).
"""


def train_model(args, vocabulary, data, penalty, attention="soft", seed=0):
    keras.utils.set_random_seed(seed)
    model = Captioner.from_preset(args.preset, vocabulary_size=len(vocabulary),
                                  doubly_stochastic=penalty,
                                  attention=attention, seed=seed)
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate,
                                                  clipnorm=5.0),
                  loss=MaskedCrossentropy(label_smoothing=0.0),
                  metrics=[MaskedAccuracy()])
    inputs, targets = data
    model.fit(inputs, targets, batch_size=args.batch_size, epochs=args.epochs,
              verbose=2 if args.verbose else 0)
    return model


"""
## Decoding and scores

`greedy_decode` and `beam_search_decode` are the translators' decoders:
the model follows the same protocol (`encode`, `initial_cache`,
`decode_step`), with images as the encoder inputs. Images carry no length,
so the caption's length limit is given (`output_lengths`). Scores are the
exact-match rate and corpus BLEU (sacreBLEU) on the held-out captions.
"""


def decoders(model, vocabulary, beam_size):
    ids = dict(bos_id=vocabulary.bos_id, eos_id=vocabulary.eos_id,
               output_lengths=vocabulary.max_words + 1)
    signature = [tf.TensorSpec([None] + list(digit_scenes.CANVAS), tf.float32)]

    @tf.function(input_signature=signature)
    def greedy(images):
        return decoding.greedy_decode(model, images, **ids)

    @tf.function(input_signature=signature)
    def beam(images):
        return decoding.beam_search_decode(model, images, beam_size=beam_size,
                                           **ids)

    return greedy, beam


def caption_all(decode, images, vocabulary, batch_size=250):
    captions = []
    for start in range(0, len(images), batch_size):
        tokens = decode(images[start:start + batch_size])
        tokens = tokens[0] if isinstance(tokens, tuple) else tokens
        captions += [vocabulary.decode(row) for row in tokens.numpy()]
    return captions


def scores(hypotheses, references):
    exact = float(np.mean([h == r for h, r in zip(hypotheses, references)]))
    return {"exact": exact, "bleu": corpus_bleu(hypotheses, references)[0]}


def most_common_caption(vocabulary, targets, test):
    """The rule with no weights: the most common training caption, written
    for every held-out scene and scored as the models are."""
    captions = collections.Counter(vocabulary.decode(row) for row in targets)
    caption = captions.most_common(1)[0][0]
    return {"caption": caption,
            **scores([caption] * len(test.captions), test.captions)}


"""
## Pictures: where each word looks

For a few held-out scenes, the greedy caption's attention (64 locations,
an 8x8 grid) is spread over the 4x4 pixel blocks it covers and laid over
the image, one panel per word (the end token included).
"""


def draw(model, greedy, test, vocabulary, count, output_dir):
    tokens, attention = greedy(test.images[:count])
    grid = tuple(size // 2 ** len(model.filters) for size in digit_scenes.CANVAS)
    paths = []
    for row in range(count):
        ids = [int(t) for t in tokens[row].numpy() if t != vocabulary.pad_id]
        words = [vocabulary.words[t] for t in ids]
        path = output_dir / f"scene_{row}.png"
        plot_image_attention(
            test.images[row], attention[row, :len(ids)].numpy(), words,
            grid=grid, path=path,
            title=f"reference: {test.captions[row]}")
        paths.append(path)
        peaks = [int(np.argmax(a)) for a in attention[row, :len(ids)].numpy()]
        print(f"  {test.captions[row]!r}: " + ", ".join(
            f"{word}@{divmod(peak, grid[1])}" for word, peak in zip(words, peaks)))
    return paths


"""
## The estimator's variance, with and without the baseline

REINFORCE is unbiased whatever constant `b` it subtracts, but its
variance is not. For one batch and fixed weights, the gradient of the
REINFORCE term alone (on the attention's weights) is drawn again for
`--variance-draws` location samples, with `b` = the mean NLL of those
draws (what a well-tracked moving average holds) and with `b = 0`; the
variance across draws is summed over the weights. It is measured before
training (captions cost about `T log V` nats, so without a baseline every
advantage is large and of one sign) and after.
"""


def gradient_variance(model, data, draws, batch=64):
    inputs, targets = data
    return reinforce_gradient_variance(
        model, inputs["images"][:batch], inputs["decoder_tokens"][:batch],
        targets[:batch], draws)


def argmax_twin(model, inputs):
    """The same weights, reading the most likely location when decoding."""
    twin = Captioner.from_config({**model.get_config(),
                                  "hard_decoding": "argmax"})
    twin({"images": inputs["images"][:2],
          "decoder_tokens": inputs["decoder_tokens"][:2]})
    twin.set_weights(model.get_weights())
    return twin


def sample_std(values):
    """The sample standard deviation (n − 1); 0 for one value."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def summary(results):
    """Mean and spread over seeds for each (attention, λ)."""
    groups = {}
    for (attention, penalty, _), figures in results.items():
        groups.setdefault((attention, penalty), []).append(figures)
    lines = []
    for (attention, penalty), runs in groups.items():
        cells = []
        for name in [key for key in runs[0] if key.startswith(("greedy",
                                                               "beam"))]:
            exact = [100 * run[name]["exact"] for run in runs]
            bleu = [run[name]["bleu"] for run in runs]
            cells.append(f"{name} exact {np.mean(exact):.1f} ± "
                         f"{sample_std(exact):.1f}%, BLEU {np.mean(bleu):.1f} ± "
                         f"{sample_std(bleu):.1f}")
        lines.append(f"  {attention:<4} λ={penalty:g} ({len(runs)} seeds): "
                     + "; ".join(cells))
    return lines


def arguments():
    """The command line's parser (a benchmark parses the same options)."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--train-size", type=int, default=8000)
    parser.add_argument("--test-size", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--lambdas", default="1,0",
                        help="doubly stochastic λ values, one model each")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--pictures", type=int, default=3)
    parser.add_argument("--output-dir", default="show_attend_tell_output")
    parser.add_argument("--attention", default="soft",
                        help="soft, hard or soft,hard: one model each")
    parser.add_argument("--seeds", default="0",
                        help="seeds, one model each (e.g. 0,1,2)")
    parser.add_argument("--variance-draws", type=int, default=32,
                        help="hard models: location samples for the "
                             "gradient variance (0: skip)")
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--results", metavar="FILE",
                        help="also write the figures printed to FILE (JSON)")
    return parser


def main(argv=None):
    parser = arguments()
    args = parser.parse_args(argv)
    attentions = args.attention.split(",")
    for attention in attentions:
        if attention not in ("soft", "hard"):
            parser.error(f"--attention takes soft, hard or soft,hard, "
                         f"received: {args.attention!r}")
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")]
        lambdas = [float(x) for x in args.lambdas.split(",")]
    except ValueError:
        parser.error(f"--seeds takes ints and --lambdas numbers, separated "
                     f"by commas, received: --seeds {args.seeds!r} "
                     f"--lambdas {args.lambdas!r}")
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    vocabulary = digit_scenes.CaptionVocabulary()
    data, test = load(args, vocabulary)
    baseline = most_common_caption(vocabulary, data[1], test)
    print(f"no weights: the most common training caption "
          f"({baseline['caption']!r}) for every held-out scene: exact match "
          f"{baseline['exact']:.1%}, BLEU {baseline['bleu']:.1f}")
    results = {}
    runs = [(attention, penalty, seed) for attention in attentions
            for penalty in lambdas for seed in seeds]
    for number, (attention, penalty, seed) in enumerate(runs):
        variance_before = None
        if attention == "hard" and args.variance_draws:
            keras.utils.set_random_seed(seed)
            untrained = Captioner.from_preset(
                args.preset, vocabulary_size=len(vocabulary),
                attention="hard", seed=seed)
            untrained({"images": data[0]["images"][:2],
                       "decoder_tokens": data[0]["decoder_tokens"][:2]})
            variance_before = gradient_variance(untrained, data,
                                                args.variance_draws)
        start = time.perf_counter()
        model = train_model(args, vocabulary, data, penalty, attention, seed)
        trained = time.perf_counter() - start
        greedy, beam = decoders(model, vocabulary, args.beam_size)
        figures = {"greedy": scores(caption_all(greedy, test.images,
                                                vocabulary), test.captions),
                   f"beam{args.beam_size}": scores(caption_all(
                       beam, test.images, vocabulary), test.captions),
                   "seconds": time.perf_counter() - start}
        if attention == "hard":
            twin_greedy, _ = decoders(argmax_twin(model, data[0]),
                                      vocabulary, args.beam_size)
            figures["greedy (argmax)"] = scores(caption_all(
                twin_greedy, test.images, vocabulary), test.captions)
        if variance_before is not None:
            figures["variance"] = {
                "before": variance_before,
                "after": gradient_variance(model, data, args.variance_draws)}
        results[(attention, penalty, seed)] = figures
        print(f"\n{attention} attention, λ = {penalty:g}, seed {seed}: "
              f"trained in {trained:.0f} s; held-out scenes "
              f"({len(test.captions)}):")
        for name in [key for key in figures
                     if key.startswith(("greedy", "beam"))]:
            print(f"  {name:>6}: exact match {figures[name]['exact']:.1%}, "
                  f"BLEU {figures[name]['bleu']:.1f}")
        for when, variance in figures.get("variance", {}).items():
            print(f"  REINFORCE gradient variance {when} training, "
                  f"{args.variance_draws} draws (attention weights; mean "
                  f"NLL {variance['mean_nll']:.2f}): "
                  f"{variance['baseline']:.3g} with the baseline, "
                  f"{variance['none']:.3g} without "
                  f"({variance['none'] / variance['baseline']:.1f}x)")
        if number == 0 and args.pictures:
            print(f"\nwhere each word looks ({attention}, λ = {penalty:g}; "
                  "word@(row, column) of the 8x8 grid):")
            paths = draw(model, greedy, test, vocabulary, args.pictures,
                         output_dir)
            print(f"attention pictures: {', '.join(map(str, paths))}")
    if len(seeds) > 1:
        print("\nheld-out scenes, mean ± sample standard deviation over "
              "seeds:")
        print("\n".join(summary(results)))
    if args.results:
        pathlib.Path(args.results).write_text(json.dumps({
            "most_common_caption": baseline,
            "runs": [{"attention": attention, "penalty": penalty,
                      "seed": seed, **figures}
                     for (attention, penalty, seed), figures
                     in results.items()]}, indent=1))
    return results


if __name__ == "__main__":
    main()
