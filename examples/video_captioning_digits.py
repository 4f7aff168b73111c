"""
Title: Describing clips of moving digits with temporal attention
Description: Yao et al.'s four rows (Basic, +Local, +Global, +Local+Global)
on clips where two digits move, appear or disappear one after the other,
and where each word looks among the frames.

Yao et al. (2015) describe a video with an LSTM that reads per-frame CNN
features in one of two ways: their mean (the "Basic" encoder-decoder), or a
soft attention over the frames before every word (the *global* temporal
structure); local features of a 3-D convolution over neighbouring frames
add the *local* structure, the motion. This script trains
`keras_attention.models.VideoCaptioner` in the four combinations with the
same data, epochs and seed, scores held-out clips (composed from held-out
digit images) with the package's greedy and beam search, and draws each
word's attention over the frames. About five minutes on two CPU cores.

Run: `python examples/video_captioning_digits.py [--epochs E]
[--seeds 0,1,2] [--rows basic,local,global,local_global]
[--output-dir DIR]`.
"""

import argparse
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

from keras_attention import decoding
from keras_attention.data import digit_clips
from keras_attention.models.video_captioner import VideoCaptioner
from keras_attention.training.bleu import corpus_bleu
from keras_attention.training.losses import MaskedAccuracy
from keras_attention.training.losses import MaskedCrossentropy

"""
## Data: two events, in order

Each clip is 12 frames of a 32x32 canvas with two digits of different
values. The first event happens in the first half of the clip, the second
in the second half, and the caption names them in that order:

    a three moves right then a seven appears
    an eight disappears then a two moves down

No single frame can answer: the first frame does not show what will move
or appear, the last does not show what moved first. Played backwards, a
clip is another clip with another caption ("a seven disappears then a
three moves left"). Held-out clips are composed only from held-out digit
images (a fixed 20% of the 1,797).
"""

ROWS = {  # name: (local, temporal_attention), Yao et al.'s table order
    "basic": (False, False),
    "local": (True, False),
    "global": (False, True),
    "local_global": (True, True),
}
TITLES = {"basic": "Basic", "local": "+Local", "global": "+Global",
          "local_global": "+Local+Global"}


def load(args, vocabulary, seed):
    train = digit_clips.generate_clips(args.train_size, "train", seed=seed,
                                       frames=args.frames)
    test = digit_clips.generate_clips(args.test_size, "test",
                                      seed=seed + 1000, frames=args.frames)
    inputs, targets = vocabulary.teacher_forcing(train.captions)
    return ({"videos": train.videos, "decoder_tokens": inputs}, targets), test


"""
## The model

Per frame: two convolution + pooling stages and a dense layer give a
feature vector `v_t`; with `local=True`, a 3x3x3 convolution over
(frames, height, width) adds local features of frames `t - 1, t, t + 1`.
The frame's index enters as a sinusoidal position encoding, so attention
can tell early frames from late ones (the paper's GoogLeNet features of a
real video carry their time in their content; a digit clip backwards is
a valid clip). The LSTM reads either the mean of the frame features
(`temporal_attention=False`: `AttentionRNNDecoder(attention=None)`) or an
additive attention over them (`temporal_attention=True`).
"""


def train_model(args, vocabulary, data, name, seed):
    keras.utils.set_random_seed(seed)
    local, attention = ROWS[name]
    model = VideoCaptioner.from_preset(
        args.preset, vocabulary_size=len(vocabulary), local=local,
        temporal_attention=attention)
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

The clips go to `greedy_decode` and `beam_search_decode` as they are (the
model's `encode` reads them); they carry no length, so the caption's limit
is given. Scores: exact match and corpus BLEU-4 (sacreBLEU) on the
held-out captions.
"""


def decoders(model, vocabulary, beam_size, shape):
    ids = dict(bos_id=vocabulary.bos_id, eos_id=vocabulary.eos_id,
               output_lengths=vocabulary.max_words + 1)
    signature = [tf.TensorSpec([None] + list(shape), tf.float32)]

    @tf.function(input_signature=signature)
    def greedy(videos):
        return decoding.greedy_decode(model, videos, **ids)

    @tf.function(input_signature=signature)
    def beam(videos):
        return decoding.beam_search_decode(model, videos, beam_size=beam_size,
                                           **ids)

    return greedy, beam


def caption_all(decode, videos, vocabulary, batch_size=250):
    captions = []
    for start in range(0, len(videos), batch_size):
        tokens = decode(videos[start:start + batch_size])
        tokens = tokens[0] if isinstance(tokens, tuple) else tokens
        captions += [vocabulary.decode(row) for row in tokens.numpy()]
    return captions


def parts(text):
    """`(digits, events)` of a caption, each a tuple of its two phrases'
    words in order ("a three moves right then a seven appears" ->
    `(("three", "seven"), ("moves right", "appears"))`); unreadable
    captions give empty tuples."""
    phrases = [phrase.split() for phrase in text.split(" then ")]
    if len(phrases) != 2 or min(map(len, phrases)) < 3:
        return (), ()
    return (tuple(words[1] for words in phrases),
            tuple(" ".join(words[2:]) for words in phrases))


def scores(hypotheses, references):
    """Exact match, corpus BLEU-4, and which half of the caption is right:
    both digits in order (`digits`), both events in order (`events`)."""
    pairs = list(zip(map(parts, hypotheses), map(parts, references)))
    return {
        "exact": float(np.mean([h == r for h, r in zip(hypotheses,
                                                        references)])),
        "bleu": corpus_bleu(hypotheses, references)[0],
        "digits": float(np.mean([h[0] == r[0] for h, r in pairs])),
        "events": float(np.mean([h[1] == r[1] for h, r in pairs])),
    }


"""
## Pictures: where each word looks in time

For a few held-out clips, the frames as a strip and, under each frame, the
attention `α` of every word of the greedy caption (the end token included).
"""


def draw_clip(video, attention, words, reference, path):
    """The frames `(T, H, W)` in a row, the words' weights `(N, T)` under
    them, column under frame."""
    frames = video.shape[0]
    figure, (top, bottom) = plt.subplots(
        2, 1, figsize=(0.75 * frames + 1.2, 1.2 + 0.3 * len(words)),
        gridspec_kw={"height_ratios": [1.0, 0.3 * len(words)]})
    gap = np.full((video.shape[1], 2), 0.35, "float32")
    strip = np.concatenate([part for frame in video for part in (frame, gap)],
                           axis=1)[:, :-2]
    top.imshow(strip, cmap="gray_r", vmin=0, vmax=1, aspect="auto")
    top.set_xticks([(video.shape[2] + 2) * t + video.shape[2] / 2 - 0.5
                    for t in range(frames)], [str(t) for t in range(frames)])
    top.set_yticks([])
    top.set_title(f"reference: {reference}", fontsize=9, loc="left")
    image = bottom.imshow(attention, cmap="viridis", vmin=0,
                          vmax=max(attention.max(), 1e-6), aspect="auto")
    bottom.set_yticks(range(len(words)), words, fontsize=8)
    bottom.set_xticks(range(frames), [str(t) for t in range(frames)])
    bottom.set_xlabel("frame")
    figure.colorbar(image, ax=[top, bottom], fraction=0.02, pad=0.01,
                    label="α")
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return path


def draw(greedy, test, vocabulary, count, output_dir, name):
    tokens, attention = greedy(test.videos[:count])
    paths = []
    for row in range(count):
        ids = [int(t) for t in tokens[row].numpy() if t != vocabulary.pad_id]
        words = [vocabulary.words[t] for t in ids]
        weights = attention[row, :len(ids)].numpy()  # (N, T)
        paths.append(draw_clip(test.videos[row], weights, words,
                               test.captions[row],
                               output_dir / f"{name}_clip_{row}.png"))
        peaks = [int(np.argmax(w)) for w in weights]
        events = test.event_frames[row]
        print(f"  {test.captions[row]!r} (events at frames "
              f"{events[0, 0]}-{events[0, 1]}, {events[1, 0]}-"
              f"{events[1, 1]}): " + ", ".join(
                  f"{word}@{peak}" for word, peak in zip(words, peaks)))
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--train-size", type=int, default=4000)
    parser.add_argument("--test-size", type=int, default=500)
    parser.add_argument("--frames", type=int, default=digit_clips.FRAMES)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--rows", default=",".join(ROWS),
                        help="which of Yao et al.'s rows to train")
    parser.add_argument("--seeds", default="0",
                        help="one run of every row per seed, e.g. 0,1,2")
    parser.add_argument("--beam-size", type=int, default=3)
    parser.add_argument("--pictures", type=int, default=3)
    parser.add_argument("--output-dir", default="video_captioning_output")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args(argv)
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    rows = args.rows.split(",")
    for name in rows:
        if name not in ROWS:
            parser.error(f"--rows: {name!r} is not one of {', '.join(ROWS)}")
    seeds = [int(seed) for seed in args.seeds.split(",")]

    vocabulary = digit_clips.ClipVocabulary()
    beam_name = f"beam{args.beam_size}"
    results = {name: [] for name in rows}
    for seed in seeds:
        data, test = load(args, vocabulary, seed)
        shape = test.videos.shape[1:]
        for name in rows:
            start = time.perf_counter()
            model = train_model(args, vocabulary, data, name, seed)
            trained = time.perf_counter() - start
            greedy, beam = decoders(model, vocabulary, args.beam_size, shape)
            figures = {
                "greedy": scores(caption_all(greedy, test.videos, vocabulary),
                                 test.captions),
                beam_name: scores(caption_all(beam, test.videos, vocabulary),
                                  test.captions),
                "seconds": time.perf_counter() - start,
            }
            results[name].append(figures)
            print(f"\n{TITLES[name]} (seed {seed}): trained in {trained:.0f} "
                  f"s; held-out clips ({len(test.captions)}):")
            for kind in ("greedy", beam_name):
                print(f"  {kind:>6}: exact match {figures[kind]['exact']:.1%},"
                      f" BLEU-4 {figures[kind]['bleu']:.1f} (digits right "
                      f"{figures[kind]['digits']:.1%}, events right "
                      f"{figures[kind]['events']:.1%})")
            if seed == seeds[0] and args.pictures and ROWS[name][1]:
                print(f"\nwhere each word looks ({TITLES[name]}; "
                      "word@frame of its largest weight):")
                paths = draw(greedy, test, vocabulary, args.pictures,
                             output_dir, name)
                print(f"attention pictures: {', '.join(map(str, paths))}")

    print(f"\n| row | greedy exact | greedy BLEU-4 | {beam_name} exact | "
          f"{beam_name} BLEU-4 | greedy: digits right | greedy: events "
          "right |\n|---|---|---|---|---|---|---|")
    columns = [("greedy", "exact", 100, "%"), ("greedy", "bleu", 1, ""),
               (beam_name, "exact", 100, "%"), (beam_name, "bleu", 1, ""),
               ("greedy", "digits", 100, "%"), ("greedy", "events", 100, "%")]
    for name in rows:
        cells = []
        for kind, key, scale, unit in columns:
            values = np.array([run[kind][key] for run in results[name]])
            cell = f"{scale * values.mean():.1f}{unit}"
            if len(values) > 1:
                cell += f" ± {scale * values.std(ddof=1):.1f}"
            cells.append(cell)
        print(f"| {TITLES[name]} | " + " | ".join(cells) + " |")
    return results


if __name__ == "__main__":
    main()
