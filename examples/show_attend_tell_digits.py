"""
Title: Show, Attend and Tell on scenes of handwritten digits
Description: A CNN + LSTM captioner with soft attention learns to write
"a small three left of an eight", and shows where it looks for each word.

Xu et al. (2015) caption an image with an LSTM that, before each word,
weighs the locations of a CNN feature map (`α_ti`, additive attention from
the previous state) and reads their weighted sum. Their *doubly
stochastic* regulariser `λ Σ_i (1 − Σ_t α_ti)²` asks every location to be
looked at about once over the caption. This script trains
`keras_attention.models.Captioner` on scenes composed from scikit-learn's
bundled 8x8 digits (`keras_attention.text.digit_scenes`; no download), with
and without the regulariser, decodes held-out scenes with the package's
greedy and beam search, and draws the attention of a few of them. About
five minutes on two CPU cores.

Run: `python examples/show_attend_tell_digits.py [--epochs E]
[--output-dir DIR] [--lambdas 1,0]`.
"""

import argparse
import pathlib
import time

import keras
import numpy as np
import tensorflow as tf

from keras_attention import decoding
from keras_attention.models.captioner import Captioner
from keras_attention.text import digit_scenes
from keras_attention.training.bleu import corpus_bleu
from keras_attention.training.losses import MaskedAccuracy
from keras_attention.training.losses import MaskedCrossentropy
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
    train = digit_scenes.generate_scenes(args.train_size, "train",
                                         seed=args.seed)
    test = digit_scenes.generate_scenes(args.test_size, "test",
                                        seed=args.seed + 1)
    inputs, targets = vocabulary.teacher_forcing(train.captions)
    return ({"images": train.images, "decoder_tokens": inputs}, targets), test


"""
## The model

Two convolution + pooling stages and a feature convolution turn the image
into an 8x8 map of 64-d annotations (L = 64 locations). The LSTM
(`AttentionRNNDecoder(cell="lstm", attention="additive")`) starts from
the mean annotation; each word comes from the deep output
`L_o(E y_{t-1} + L_h h_t + L_z z_t)`. The regulariser goes into the loss
through `add_loss`, over the caption's real steps.
"""


def train_model(args, vocabulary, data, penalty):
    keras.utils.set_random_seed(args.seed)
    model = Captioner.from_preset(args.preset, vocabulary_size=len(vocabulary),
                                  doubly_stochastic=penalty)
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


def main(argv=None):
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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args(argv)
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    vocabulary = digit_scenes.CaptionVocabulary()
    data, test = load(args, vocabulary)
    results = {}
    for number, penalty in enumerate(float(x) for x in args.lambdas.split(",")):
        start = time.perf_counter()
        model = train_model(args, vocabulary, data, penalty)
        trained = time.perf_counter() - start
        greedy, beam = decoders(model, vocabulary, args.beam_size)
        figures = {"greedy": scores(caption_all(greedy, test.images,
                                                vocabulary), test.captions),
                   f"beam{args.beam_size}": scores(caption_all(
                       beam, test.images, vocabulary), test.captions),
                   "seconds": time.perf_counter() - start}
        results[penalty] = figures
        print(f"\nλ = {penalty:g}: trained in {trained:.0f} s; held-out "
              f"scenes ({len(test.captions)}):")
        for name in ("greedy", f"beam{args.beam_size}"):
            print(f"  {name:>6}: exact match {figures[name]['exact']:.1%}, "
                  f"BLEU {figures[name]['bleu']:.1f}")
        if number == 0 and args.pictures:
            print(f"\nwhere each word looks (λ = {penalty:g}; word@(row, "
                  "column) of the 8x8 grid):")
            paths = draw(model, greedy, test, vocabulary, args.pictures,
                         output_dir)
            print(f"attention pictures: {', '.join(map(str, paths))}")
    return results


if __name__ == "__main__":
    main()
