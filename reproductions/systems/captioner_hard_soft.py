"""Xu et al.'s soft against hard attention on captioned scenes of real
digits: the same captioner, the same scenes, three seeds each.

Paper rows (Xu, Ba, Kiros, Cho, Courville, Salakhutdinov, Zemel, Bengio,
"Show, Attend and Tell", ICML 2015, Table 1, Flickr8k, BLEU-1/2/3/4 and
METEOR): soft attention 67 / 44.8 / 29.9 / 19.5 / 18.93; hard attention
67 / 45.7 / 31.4 / 21.3 / 20.30. Hard is ahead on BLEU-4 by 1.8.

Data (`keras_attention.data.mnist.scenes`): the project's 10,000 real MNIST
digits (`../shared/data/mnist10k`, or `--data`, or `$KERAS_ATTENTION_MNIST`),
split once by `--split-seed` into 7,000 train, 1,000 validation and 2,000
test digits. A scene is a 40x80 canvas with three digits side by side at
random heights and spacings among eight 8x8 fragments of other digits (Mnih
et al.'s clutter); its caption names them left to right: "a three left of
an eight left of a one". Training scenes are composed afresh every epoch
from the training digits; the validation and test scenes, from their own
digits, are fixed. The epoch with the best validation BLEU is the one
tested, once, with greedy and beam search.

Model: `keras_attention.models.Captioner`: a CNN of three 3x3 + pool
stages (16, 32, 32 filters) and a 3x3 convolution to 64 features, so
5x10 = 50 locations, each seeing about one digit; an LSTM of 64, additive
attention of 32, the deep output. The image carries each pixel's row and
column as two more channels (CoordConv): without them a small CNN's
features cannot tell where on the canvas they are, and "left of" is a
place (measured in `results/captioner_hard_soft_choices.json`: soft
attention named 29.4% of the validation digits after 9 epochs without
them, 90.8% with). As the paper's CNN is pretrained on ImageNet,
the encoder is first trained for `--pretrain-epochs` to name one training
digit among clutter (a global max pool over the same convolutions), then
fine-tuned with the captioner. Adam (3e-3, a cosine to 0, gradients
clipped at norm 5). `soft` reads the expected context; `hard` draws one
location per word and learns its attention by REINFORCE with the paper's
variance reduction: a moving-average baseline (decay 0.9), the entropy
bonus (λ_e 0.002) and half of the batches on the expected context (the
authors' `semi_sampling_p`), λ_r 0.1. The hard model decodes with the
expected context (the authors' sampler) and, in the same row, with the
most likely location. With 200 locations (`--filters 16,32`) the hard
model stayed on the caption prior (10.7% of the validation digits
named after 9 epochs, where the prior's rule names 11.3%; the same
file): a drawn location then hits the digit being named about one time
in eight, so the LSTM learns to ignore what it reads and the reward
never depends on where it looks. The doubly stochastic penalty is off
for both (λ = 0). The rules with no weights: the training scenes' most
frequent digit at each place, and that rule's caption.

Backend: TensorFlow (the decoders are `tf.function`s). `--speed` times a
training step on any backend: `KERAS_BACKEND=jax python
reproductions/systems/captioner_hard_soft.py --speed` against the same without
`KERAS_BACKEND` (figures on the docs page).

Run: `python reproductions/systems/captioner_hard_soft.py [--variants soft,hard]
[--seeds 0,1,2] [--epochs E] [--parallel 2]`.
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
# benchmarks/ for harness.py; the repository for `reproductions` (and for
# the package, on a machine where it is not installed).
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]
import harness  # noqa: E402

from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402

PROJECT_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / (
    "data") / "mnist10k"
NAME = "captioner_hard_soft"
# Table 1 of Xu et al. (Flickr8k), as data: reproductions/papers/xu2015.json.
PAPER = {variant: {key: common.paper_rows("xu2015", f"Table 1 (Flickr8k), "
                                           f"{metric}")[variant]
                   for key, metric in (("bleu1", "BLEU-1"), ("bleu2", "BLEU-2"),
                                       ("bleu3", "BLEU-3"), ("bleu4", "BLEU-4"),
                                       ("meteor", "METEOR"))}
         for variant in ("soft", "hard")}
VARIANTS = ("soft", "hard")
LABELS = {"soft": "soft attention", "hard": "hard attention, REINFORCE"}
SIZES = dict(filters=(16, 32), feature_dim=64, embedding_dim=64, units=64,
             attention_units=32, dropout=0.1)
FLAGS = {"--append", "--speed"}
DATA_NOTE = ("40x80 scenes of three mnist10k digits and 8 clutter "
             "fragments (7,000 train digits, not Flickr8k's photographs)")


def parser():

    p = argparse.ArgumentParser(
        description="Soft against hard attention (Xu et al. 2015) on "
                    "captioned scenes of real digits")
    p.add_argument("--data", default=None,
                   help="the MNIST .npz or its folder (default: "
                        "$KERAS_ATTENTION_MNIST, else ../shared/data/mnist10k)")
    p.add_argument("--variants", default="soft,hard",
                   help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--scenes", type=int, default=12000,
                   help="training scenes composed each epoch")
    p.add_argument("--validation-scenes", type=int, default=1000)
    p.add_argument("--test-scenes", type=int, default=2000)
    p.add_argument("--objects", type=int, default=3, help="digits a scene")
    p.add_argument("--clutter", type=int, default=8,
                   help="8x8 fragments a scene")
    p.add_argument("--filters", default="16,32,32",
                   help="the encoder's pooled convolutions (each halves the "
                        "map: 16,32,32 gives 5x10 = 50 locations)")
    p.add_argument("--coordinates", type=int, default=1, choices=(0, 1),
                   help="1: give the CNN each pixel's row and column as two "
                        "more channels (CoordConv); 0: the ink alone")
    p.add_argument("--pretrain-epochs", type=int, default=3,
                   help="epochs of the encoder's pretraining as a digit "
                        "classifier (the paper's CNN is pretrained on "
                        "ImageNet); 0: the captioner learns it from scratch")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=3e-3)
    p.add_argument("--reinforce-weight", type=float, default=0.1,
                   help="hard: λ_r")
    p.add_argument("--entropy-weight", type=float, default=0.002,
                   help="hard: λ_e")
    p.add_argument("--beam-size", type=int, default=3)
    p.add_argument("--variance-draws", type=int, default=16,
                   help="hard: location samples for the REINFORCE "
                        "gradient's variance before and after training "
                        "(0: skip)")
    common.add_run_options(p, "runs/captioner_hard_soft")
    p.add_argument("--off-scoreboard", default=None, metavar="REASON",
                   help="keep this file's claim off the Reproductions "
                        "page, for this reason (runs that chose a "
                        "setting, not the claim's runs)")
    p.add_argument("--speed", action="store_true",
                   help="train nothing: time a soft and a hard training "
                        "step (scenes/s) on this backend")
    return p


def finish_arguments(p, args):
    """Check every value; a mistake is one line through `p.error`."""
    for flag in ("epochs", "scenes", "validation_scenes", "test_scenes",
                 "objects", "batch_size", "learning_rate", "beam_size",
                 "parallel"):
        if getattr(args, flag) <= 0:
            p.error(f"--{flag.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, flag)!r}")
    for flag in ("clutter", "reinforce_weight", "entropy_weight",
                 "variance_draws", "pretrain_epochs"):
        if getattr(args, flag) < 0:
            p.error(f"--{flag.replace('_', '-')} must be >= 0, "
                    f"received: {getattr(args, flag)!r}")
    try:
        args.filter_sizes = tuple(int(size) for size in args.filters.split(","))
    except ValueError:
        args.filter_sizes = ()
    if not args.filter_sizes or min(args.filter_sizes) <= 0 or (
            40 % 2 ** len(args.filter_sizes)):
        p.error(f"--filters must be 1 to 3 positive ints separated by "
                f"commas, received: {args.filters!r}")
    if args.variance_draws == 1:
        p.error("--variance-draws must be 0 or at least 2, received: 1")
    if args.objects > 3:
        p.error(f"--objects must be at most 3 on the 80-pixel-wide "
                f"canvas, received: {args.objects}")

    return common.variants_and_seeds(p, args, VARIANTS)


"""
## Data and the rules with no weights
"""


def load(args, p):
    """The split's digits and the fixed validation and test scenes; a bad
    data path is one line."""
    from keras_attention.data import mnist

    path = args.data or os.environ.get(mnist.MNIST_VARIABLE)
    if not path and PROJECT_DATA.is_dir():
        path = PROJECT_DATA
    try:
        digits = mnist.split(mnist.load_mnist(path), args.split_seed,
                             args.validation, args.test)
    except (FileNotFoundError, ValueError) as error:
        p.error(str(error).strip("'\""))
    return {
        "digits": digits,
        "validation": mnist.scenes(digits["validation"],
                                   args.validation_scenes, seed=20_001,
                                   **scene_options(args)),
        "test": mnist.scenes(digits["test"], args.test_scenes, seed=20_002,
                             **scene_options(args)),
    }


def scene_options(args):
    return dict(objects=args.objects, clutter=args.clutter)


def caption_digits(caption):
    """The digit words of a caption, in order, as values."""
    from keras_attention.data.mnist import DIGIT_WORDS

    return [DIGIT_WORDS.index(word) for word in caption.split()
            if word in DIGIT_WORDS]


def scores(hypotheses, scenes):
    """Corpus BLEU-4 (sacreBLEU), exact match and the share of digits
    named right at their place."""
    from keras_attention.training.bleu import corpus_bleu

    right = 0
    for hypothesis, labels in zip(hypotheses, scenes.labels):
        said = caption_digits(hypothesis)
        right += sum(int(k < len(said) and said[k] == label)
                     for k, label in enumerate(labels))
    return {"bleu": corpus_bleu(hypotheses, scenes.captions)[0],
            "exact": float(np.mean([h == r for h, r in
                                    zip(hypotheses, scenes.captions)])),
            "digits": right / scenes.labels.size}


def frequent_digits_rule(train_scenes, test_scenes):
    """The rule with no weights: at each place, the training scenes' most
    frequent digit; its caption, scored on `test_scenes`."""
    from keras_attention.data.mnist import scene_caption

    rule = [int(np.bincount(column, minlength=10).argmax())
            for column in train_scenes.labels.T]
    caption = scene_caption(rule)
    return {"caption": caption,
            **scores([caption] * len(test_scenes.captions), test_scenes)}


"""
## Model, training, decoding
"""


def build(variant, args, seed, steps, vocabulary):
    import keras

    from keras_attention.models.captioner import Captioner
    from keras_attention.training.losses import MaskedCrossentropy

    keras.utils.set_random_seed(seed)
    model = Captioner(len(vocabulary), **{**SIZES, "filters": args.filter_sizes},
                      doubly_stochastic=0.0,
                      attention=variant, seed=seed,
                      reinforce_weight=args.reinforce_weight,
                      entropy_weight=args.entropy_weight)
    schedule = keras.optimizers.schedules.CosineDecay(args.learning_rate,
                                                      steps)
    # The package's masked loss is TensorFlow's; elsewhere Keras's, with
    # the padding ignored (only --speed runs there: the decoders below are
    # tf.functions).
    loss = (MaskedCrossentropy() if keras.backend.backend() == "tensorflow"
            else keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, ignore_class=vocabulary.pad_id))
    model.compile(optimizer=keras.optimizers.Adam(schedule, clipnorm=5.0),
                  loss=loss)
    return model


def pixels(images, coordinates):
    """`(N, H, W)` ink, or with `coordinates` `(N, H, W, 3)`: the ink, then
    each pixel's row and column scaled to [0, 1] (CoordConv): a small
    CNN's features cannot otherwise tell where on the canvas they are,
    and "left of" is a place."""
    if not coordinates:
        return images
    count, height, width = images.shape
    rows = np.broadcast_to(np.linspace(0, 1, height, dtype="float32")[:, None],
                           (height, width))
    columns = np.broadcast_to(np.linspace(0, 1, width, dtype="float32"),
                              (height, width))
    grid = np.broadcast_to(np.stack([rows, columns], -1),
                           (count, height, width, 2))
    return np.concatenate([images[..., None], grid], axis=-1)


def inputs_of(scenes, vocabulary, coordinates=1):
    tokens, targets = vocabulary.teacher_forcing(scenes.captions)
    # A hard model's reward is the caption's likelihood: its inputs carry
    # the labels (a soft model ignores them).
    return {"images": pixels(scenes.images, coordinates),
            "decoder_tokens": tokens, "targets": targets}, targets


def decoder(model, vocabulary, shape, beam_size=None):
    import tensorflow as tf

    from keras_attention import decoding

    ids = dict(bos_id=vocabulary.bos_id, eos_id=vocabulary.eos_id,
               output_lengths=vocabulary.max_words + 1)

    @tf.function(input_signature=[tf.TensorSpec((None, *shape), tf.float32)])
    def decode(images):
        if beam_size:
            found = decoding.beam_search_decode(model, images,
                                                beam_size=beam_size, **ids)
        else:
            found = decoding.greedy_decode(model, images, **ids)
        # Greedy gives (tokens, attention); beam search the tokens.
        return found[0] if isinstance(found, tuple) else found

    def caption_all(images, batch=500):
        captions = []
        for start in range(0, len(images), batch):
            tokens = decode(images[start:start + batch]).numpy()
            captions += [vocabulary.decode(row) for row in tokens]
        return captions

    return caption_all


def argmax_twin(model, sample):
    """The hard model's weights, decoding with the most likely location."""
    from keras_attention.models.captioner import Captioner

    twin = Captioner.from_config({**model.get_config(),
                                  "hard_decoding": "argmax"})
    twin(sample)
    twin.set_weights(model.get_weights())
    return twin


def pretrain_encoder(model, args, data, seed):
    """The paper's encoder is a CNN pretrained on ImageNet; ours learns to
    name one training digit among clutter on a 40x40 canvas (the same
    channels), through the captioner's own convolutions and a global max
    pool, for `--pretrain-epochs`; the captioner starts from those
    weights and fine-tunes them. Returns the classifier's accuracy on
    such canvases of the validation digits."""
    import keras

    from keras_attention.data import mnist

    if not args.pretrain_epochs:
        return None
    pool = keras.layers.MaxPooling2D(2)
    channels = 3 if args.coordinates else 1
    inputs = keras.Input((40, 40, channels))
    x = inputs
    for convolution in model.convolutions:
        x = pool(convolution(x))
    x = keras.layers.GlobalMaxPooling2D()(model.features(x))
    classifier = keras.Model(inputs, keras.layers.Dense(10)(x))
    classifier.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"])

    def canvases(part, count, canvas_seed):
        found = mnist.scenes(data["digits"][part], count, objects=1,
                             height=40, width=40, clutter=args.clutter // 2,
                             seed=canvas_seed)
        images = pixels(found.images, args.coordinates)
        return images.reshape(len(images), 40, 40, channels), found.labels[:, 0]

    for epoch in range(args.pretrain_epochs):
        images, labels = canvases("train", len(data["digits"]["train"]),
                                  40_000 + 100 * seed + epoch)
        classifier.fit(images, labels, batch_size=args.batch_size, epochs=1,
                       verbose=0)
    images, labels = canvases("validation", 1000, 50_000)
    return float(classifier.evaluate(images, labels, verbose=0)[1])


def variance(model, inputs, targets, draws):
    from keras_attention.training.reinforce_variance import reinforce_gradient_variance

    return reinforce_gradient_variance(
        model, inputs["images"][:64], inputs["decoder_tokens"][:64],
        targets[:64], draws)


def train_run(variant, seed, args, data):
    """Train one model with the package's loop (`training.train_run`):
    `--epochs`, the epoch of best validation BLEU, the test split scored
    once at the end."""
    import harness

    from keras_attention.data import mnist
    from keras_attention.text.digit_scenes import CaptionVocabulary
    from keras_attention.training import StoppingRule
    from keras_attention.training import train_run as train_run_of_the_package

    vocabulary = CaptionVocabulary(max_words=4 * args.objects - 2)
    shape = pixels(data["test"].images[:1], args.coordinates).shape[1:]
    steps = args.epochs * -(-args.scenes // args.batch_size)
    model = build(variant, args, seed, steps, vocabulary)
    validation_inputs, _ = inputs_of(data["validation"], vocabulary,
                                     args.coordinates)
    validation_images = validation_inputs["images"]
    test_images = pixels(data["test"].images, args.coordinates)
    model({key: value[:2] for key, value in validation_inputs.items()
           if key != "targets"})
    start = time.perf_counter()
    pretrained = pretrain_encoder(model, args, data, seed)
    pretrain_seconds = time.perf_counter() - start
    if args.verbose and pretrained is not None:
        print(f"{variant} seed {seed}: the pretrained encoder names "
              f"{pretrained:.1%} of validation digits", flush=True)
    before = None
    if variant == "hard" and args.variance_draws:
        probe = mnist.scenes(data["digits"]["train"], 64, seed=30_000 + seed,
                             **scene_options(args))
        before = variance(model, *inputs_of(probe, vocabulary,
                                            args.coordinates),
                          args.variance_draws)
    greedy = decoder(model, vocabulary, shape)
    digits_of = {}  # epoch -> its validation digit accuracy

    def epoch(model, index, _):
        scenes = mnist.scenes(data["digits"]["train"], args.scenes,
                              seed=1_000 * seed + index,
                              **scene_options(args))
        inputs, targets = inputs_of(scenes, vocabulary, args.coordinates)
        start = time.perf_counter()
        model.fit(inputs, targets, batch_size=args.batch_size, epochs=1,
                  verbose=0, shuffle=True)
        return {"seconds": time.perf_counter() - start}

    def validate(model):
        found = scores(greedy(validation_images), data["validation"])
        digits_of[len(digits_of) + 1] = found["digits"]
        if args.verbose:
            print(f"{variant} seed {seed} epoch {len(digits_of)}: "
                  f"validation BLEU {found['bleu']:.2f}, exact "
                  f"{found['exact']:.1%}, digits {found['digits']:.1%}",
                  flush=True)
        return round(found["bleu"], 2), found["bleu"]

    def test(model):
        """The test split, once, on the weights of the best epoch."""
        test = data["test"]
        figures = {
            "greedy": scores(greedy(test_images), test),
            f"beam{args.beam_size}": scores(
                decoder(model, vocabulary, shape, args.beam_size)(
                    test_images), test),
        }
        if variant == "hard":
            twin = argmax_twin(model, {key: value[:2] for key, value in
                                       validation_inputs.items()
                                       if key != "targets"})
            figures["greedy_argmax"] = scores(
                decoder(twin, vocabulary, shape)(test_images), test)
            if before is not None:
                figures["variance"] = {"before": before, "after": variance(
                    model, *inputs_of(probe, vocabulary, args.coordinates),
                    args.variance_draws)}
        return figures

    state = train_run_of_the_package(
        model, epoch=epoch, validate=validate, test=test,
        rule=StoppingRule(args.epochs), seed=seed, verbose=0)
    best_epoch, seconds = state["best"]["epoch"], state["counts"]["seconds"]
    curve = state["curve"]
    row = {
        "variant": variant, "label": LABELS[variant], "seed": seed,
        "epochs": args.epochs, "best_epoch": best_epoch,
        "pretrained_accuracy": pretrained,
        "pretrain_seconds": round(pretrain_seconds, 1),
        "validation_bleu": state["best"]["score"][1],
        "validation_digits": digits_of[best_epoch],
        "validation_curve": curve,
        "setting": {"filters": list(args.filter_sizes),
                    "coordinates": args.coordinates,
                    "pretrain_epochs": args.pretrain_epochs,
                    "reinforce_weight": args.reinforce_weight},
        "late_gain": late_gain(curve),
        **state["test"],
    }
    row.update({
        "test_bleu": row[f"beam{args.beam_size}"]["bleu"],
        "train_seconds": round(seconds, 1),
        "scenes_per_second": round(args.epochs * args.scenes / seconds, 1),
        "weights": int(model.count_params()),
        "cpu": harness.machine()["cpu"],
    })
    if args.verbose:
        print(f"{variant} seed {seed}: test BLEU (beam {args.beam_size}) "
              f"{row['test_bleu']:.2f}, epoch {best_epoch}, "
              f"{row['scenes_per_second']:.0f} scenes/s", flush=True)
    return row


"""
## Summary and the paper's claim
"""


LATE_EPOCHS = 5


def late_gain(curve, window=LATE_EPOCHS):
    """How much validation BLEU the last `window` epochs of `curve` added
    to the best before them (<= 0: it had stopped rising); None for a
    curve of `window` epochs or fewer (`common.late_gain`)."""

    return common.late_gain(curve, window)


def summary(rows, beam_size=3):
    """Per variant: mean and spread (sample standard deviation) over seeds
    of the test BLEU-4 (beam), exact match and digits right."""
    out = {}
    for variant in dict.fromkeys(row["variant"] for row in rows):
        runs = [row for row in rows if row["variant"] == variant]
        figures = {"label": LABELS[variant], "seeds": len(runs),
                   "paper_bleu4": PAPER[variant]["bleu4"]}
        for key, pick in (("bleu", lambda r: r["test_bleu"]),
                          ("greedy_bleu", lambda r: r["greedy"]["bleu"]),
                          ("exact", lambda r: 100 * r["greedy"]["exact"]),
                          ("digits", lambda r: 100 * r["greedy"]["digits"])):
            values = [pick(row) for row in runs]
            figures[f"{key}_mean"] = statistics.fmean(values)
            figures[f"{key}_std"] = (statistics.stdev(values)
                                     if len(values) > 1 else 0.0)
        gains = [late_gain(row["validation_curve"]) for row in runs]
        if None not in gains:  # the largest rise of the last epochs
            figures["late_gain_max"] = max(gains)
        out[variant] = figures
    return out


def run_sizes(args):
    """The model sizes the run used (`SIZES` with --filters in place of
    its default), as the results file records them."""
    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in {**SIZES, "filters": args.filter_sizes}.items()}


def speed(args, data):
    """Scenes per second of a soft and a hard training step here."""
    from keras_attention.data import mnist
    from keras_attention.text.digit_scenes import CaptionVocabulary

    vocabulary = CaptionVocabulary(max_words=4 * args.objects - 2)
    scenes = mnist.scenes(data["digits"]["train"], 1024, seed=0,
                          **scene_options(args))
    inputs, targets = inputs_of(scenes, vocabulary, args.coordinates)
    found = {}
    for variant in args.variant_list:
        model = build(variant, args, 0, 100, vocabulary)
        model.fit(inputs, targets, batch_size=args.batch_size, epochs=1,
                  verbose=0)
        start = time.perf_counter()
        model.fit(inputs, targets, batch_size=args.batch_size, epochs=2,
                  verbose=0)
        found[variant] = 2 * len(scenes.captions) / (time.perf_counter()
                                                     - start)
        print(f"{variant}: {found[variant]:.0f} scenes/s", flush=True)
    return found


def main(argv=None):
    p = parser()
    given = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(given)
    finish_arguments(p, args)
    data = load(args, p)
    from keras_attention.data import mnist

    print(f"machine: {harness.machine()}")
    if args.speed:
        return speed(args, data)
    name = args.results_name or NAME
    print(f"digits: {', '.join(f'{len(d)} {k}' for k, d in data['digits'].items())}"
          f" (of the 10,000 in mnist10k)", flush=True)
    rule = frequent_digits_rule(
        mnist.scenes(data["digits"]["train"], args.scenes, seed=0,
                     **scene_options(args)), data["test"])
    print(f"no weights: always {rule['caption']!r}: BLEU {rule['bleu']:.2f}, "
          f"exact {rule['exact']:.1%}, digits {rule['digits']:.1%}",
          flush=True)
    earlier, commands = harness.earlier_results(name, args.results_dir,
                                                args.append)
    rows = processes.variant_seed_runs(
        __file__, given, args, FLAGS,
        lambda variant, seed: train_run(variant, seed, args, data))
    all_rows = earlier + rows
    print(f"\n{'model':<30} {'seed':>4} {'BLEU beam':>9} {'greedy':>7} "
          f"{'exact':>6} {'digits':>6} {'epoch':>5} {'scenes/s':>8}")
    for row in rows:
        print(f"{row['label']:<30} {row['seed']:>4} {row['test_bleu']:>9.2f} "
              f"{row['greedy']['bleu']:>7.2f} {row['greedy']['exact']:>6.1%} "
              f"{row['greedy']['digits']:>6.1%} {row['best_epoch']:>5} "
              f"{row['scenes_per_second']:>8.0f}")
        if "greedy_argmax" in row:
            print(f"{'  decoding the argmax location':<30} {'':>4} {'':>9} "
                  f"{row['greedy_argmax']['bleu']:>7.2f} "
                  f"{row['greedy_argmax']['exact']:>6.1%} "
                  f"{row['greedy_argmax']['digits']:>6.1%}")
        for when, figures in row.get("variance", {}).items():
            print(f"  REINFORCE gradient variance {when} training: "
                  f"{figures['baseline']:.3g} with the baseline, "
                  f"{figures['none']:.3g} without "
                  f"({figures['none'] / figures['baseline']:.1f}x)")
    print(f"{'most frequent digits (no weights)':<30} {'':>4} "
          f"{rule['bleu']:>9.2f} {rule['bleu']:>7.2f} {rule['exact']:>6.1%} "
          f"{rule['digits']:>6.1%}")
    for figures in summary(all_rows).values():
        print(f"{figures['label']}: BLEU-4 {figures['bleu_mean']:.2f} ± "
              f"{figures['bleu_std']:.2f} over {figures['seeds']} seed(s) "
              f"(Xu et al. Flickr8k: {figures['paper_bleu4']})")
        if "late_gain_max" in figures:
            print(f"  the last {LATE_EPOCHS} epochs raised validation BLEU "
                  f"by at most {figures['late_gain_max']:.2f} over the "
                  f"best before them", flush=True)
    extra = ({"off_scoreboard": args.off_scoreboard}
             if args.off_scoreboard else {})
    harness.write_results(
        name, all_rows, directory=args.results_dir,
        commands=commands + [harness.command_line()],
        summary=summary(all_rows),
        paper={"source": "Xu et al. 2015, Show, Attend and Tell, Table 1 "
                         "(Flickr8k, BLEU-1..4, METEOR)",
               "rows": [{"model": f"{variant} attention", **figures}
                        for variant, figures in PAPER.items()]},
        baselines={"frequent_digits": rule},
        settings={key: value for key, value in vars(args).items()
                  if key not in ("variant_list", "seed_list", "data",
                                 "filter_sizes")},
        sizes=run_sizes(args),
        data={"digits": {k: len(d) for k, d in data["digits"].items()},
              "source": "mnist10k (10,000 MNIST digits, not 70,000)",
              "scenes": DATA_NOTE, "split_seed": args.split_seed},
        **extra)
    return all_rows


if __name__ == "__main__":
    main()
