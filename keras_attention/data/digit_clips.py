"""Captioned clips of two handwritten digits, composed from scikit-learn's
bundled 8x8 digits (`sklearn.datasets.load_digits`; no download).

A clip is `T` frames (8 to 16; 12 by default) of a `32 x 32` canvas with
two digits of different values drawn at 10x10. Two events happen in it, one
after the other, each done by one of the digits: a digit moves (left,
right, up or down, by 8 pixels over a few frames), appears or disappears.
The caption names them in the order they happen:

    "a three moves right then a seven appears"
    "an eight disappears then a two moves down"

The first event happens in the first half of the clip, the second in the
second half, so every clip has one correct caption and the order of the
events is part of it: no single frame answers. (The first frame cannot tell
"a three moves right then a seven moves up" from "a seven moves up then a
three moves right", nor can the last.) The digits' paths over the whole
clip never touch (their boxes are at least a pixel apart).

Held-out clips (`split="test"`) are composed only from held-out digit
images: the split is `digit_scenes.split_indices`, the one the captioned
scenes use. `generate_clips` draws from `numpy.random.default_rng(seed)`.
Captions map to ids with `ClipVocabulary`, a `CaptionVocabulary` over this
grammar's words (`<pad>` 0, `<s>` 1, `</s>` 2, then the words).

Letters: N clips, T frames, H, W canvas height and width.
"""

from typing import NamedTuple

import numpy as np

from keras_attention import _validation
from keras_attention.text import digit_scenes
from keras_attention.text.digit_scenes import BOS
from keras_attention.text.digit_scenes import DIGIT_WORDS
from keras_attention.text.digit_scenes import EOS
from keras_attention.text.digit_scenes import PAD
from keras_attention.text.digit_scenes import SPLITS
from keras_attention.text.digit_scenes import CaptionVocabulary

CANVAS = (32, 32)
FRAMES = 12
FRAME_RANGE = (8, 16)  # the clip lengths allowed
DIGIT_SIZE = 10  # pixels
MOVE = 8  # pixels a moving digit travels
# The events, and for the moves the (row, column) direction.
EVENTS = ("moves left", "moves right", "moves up", "moves down", "appears",
          "disappears")
DIRECTIONS = {"moves left": (0, -1), "moves right": (0, 1),
              "moves up": (-1, 0), "moves down": (1, 0)}
MAX_PLACEMENT_TRIES = 1000


class DigitClips(NamedTuple):
    """Clips and their captions; "event order" is the order the events
    happen (and the caption names them).

    videos: `(N, T, H, W)` float32 in [0, 1].
    captions: N strings.
    digits: `(N, 2)` int, the digit values, event order.
    events: `(N, 2)` int indices into `EVENTS`, event order.
    event_frames: `(N, 2, 2)` int, the first and last frame that an event
        changes (a frame differs from the one before it), event order.
    positions: `(N, 2, T, 2)` int, each digit's `(top, left)` per frame.
    visible: `(N, 2, T)` bool, whether each digit is drawn in each frame.
    image_indices: `(N, 2)` int, the `load_digits` images used.
    """

    videos: np.ndarray
    captions: list
    digits: np.ndarray
    events: np.ndarray
    event_frames: np.ndarray
    positions: np.ndarray
    visible: np.ndarray
    image_indices: np.ndarray


def caption(digits, events):
    """The caption of two digit values doing `EVENTS[events[0]]`, then
    `EVENTS[events[1]]`."""
    first, second = (f"{digit_scenes.noun_phrase(int(digit), False)} "
                     f"{EVENTS[int(event)]}"
                     for digit, event in zip(digits, events))
    return f"{first} then {second}"


def _timing(rng, event, window, span):
    """`(start, end)`, the first and last frame the event changes, within
    `window = (first, stop)`: a move changes `span` frames in a row, an
    appearance or a disappearance one, never the window's first frame."""
    first, stop = window
    length = span if EVENTS[event] in DIRECTIONS else 1
    start = int(rng.integers(first + 1, stop - length + 1))
    return start, start + length - 1


def _track(event, start_position, timing, span, frames):
    """A digit's `(positions (T, 2), visible (T,))` over the clip, doing
    `event` at `timing` (or still, visible, for `event=None`)."""
    positions = np.tile(np.asarray(start_position), (frames, 1))
    visible = np.ones((frames,), bool)
    name = None if event is None else EVENTS[event]
    if name in DIRECTIONS:
        # Linear from the frame before the first change to the last one.
        progress = np.clip((np.arange(frames) - timing[0] + 1) / span, 0, 1)
        offsets = np.round(progress * MOVE).astype("int64")  # (T,)
        positions = positions + offsets[:, None] * np.asarray(
            DIRECTIONS[name])[None]
    elif name == "appears":
        visible[: timing[0]] = False
    elif name == "disappears":
        visible[timing[0]:] = False
    return positions, visible


def _path_box(event, start_position):
    """`(top, left, bottom, right)` (exclusive) covered over the clip."""
    top, left = start_position
    bottom, right = top + DIGIT_SIZE, left + DIGIT_SIZE
    name = None if event is None else EVENTS[event]
    if name in DIRECTIONS:
        rows, columns = DIRECTIONS[name]
        top, bottom = top + min(0, rows * MOVE), bottom + max(0, rows * MOVE)
        left, right = (left + min(0, columns * MOVE),
                       right + max(0, columns * MOVE))
    return top, left, bottom, right


def _place(rng, events, canvas):
    """Start positions `(top, left)` of the two digits such that their
    paths stay on the canvas and are at least a pixel apart."""
    for _ in range(MAX_PLACEMENT_TRIES):
        starts, boxes = [], []
        for event in events:
            name = EVENTS[event]
            rows, columns = DIRECTIONS.get(name, (0, 0))
            # A mover starts far enough from the edge it moves towards.
            low = [max(0, -rows * MOVE), max(0, -columns * MOVE)]
            high = [canvas[0] - DIGIT_SIZE - max(0, rows * MOVE),
                    canvas[1] - DIGIT_SIZE - max(0, columns * MOVE)]
            start = (int(rng.integers(low[0], high[0] + 1)),
                     int(rng.integers(low[1], high[1] + 1)))
            starts.append(start)
            boxes.append(_path_box(event, start))
        (top0, left0, bottom0, right0), (top1, left1, bottom1, right1) = boxes
        apart = (bottom0 < top1 or bottom1 < top0 or right0 < left1
                 or right1 < left0)
        if apart:
            return starts
    raise ValueError(f"No room for two digits' paths on the canvas, "
                     f"received: canvas={canvas}")


def generate_clips(count, split="train", seed=0, frames=FRAMES,
                   test_fraction=0.2, split_seed=0):
    """`count` captioned clips from the `split`'s digit images.

    Args:
        count: N.
        split: `"train"` or `"test"`: which digit images
            (`digit_scenes.split_indices`).
        seed: the clips' random seed.
        frames: T, from 8 to 16.
        test_fraction, split_seed: the digit-image split.

    Returns:
        `DigitClips`.

    Example:

    >>> from keras_attention.data.digit_clips import generate_clips
    >>> clips = generate_clips(2, seed=1, frames=8)
    >>> clips.videos.shape
    (2, 8, 32, 32)
    >>> " then " in clips.captions[0]
    True
    """
    count = _validation.positive_int("count", count)
    _validation.choice("split", split, SPLITS)
    frames = _validation.positive_int("frames", frames)
    if not FRAME_RANGE[0] <= frames <= FRAME_RANGE[1]:
        raise ValueError(f"`frames` must be from {FRAME_RANGE[0]} to "
                         f"{FRAME_RANGE[1]}, received: frames={frames}")
    digit_images, labels = digit_scenes.load_digit_images()
    pool = digit_scenes.split_indices(len(labels), test_fraction,
                                      split_seed)[SPLITS.index(split)]
    drawn = {index: digit_scenes.resize(digit_images[index], DIGIT_SIZE)
             for index in pool}
    by_value = [pool[labels[pool] == value] for value in range(10)]
    rng = np.random.default_rng(seed)
    half = frames // 2
    span = max(2, half // 2)  # frames a move takes
    windows = ((0, half), (half, frames))  # each event's frames
    videos = np.zeros((count, frames) + CANVAS, "float32")  # (N, T, H, W)
    digits = np.zeros((count, 2), "int64")
    events = np.zeros((count, 2), "int64")
    event_frames = np.zeros((count, 2, 2), "int64")
    positions = np.zeros((count, 2, frames, 2), "int64")
    visible = np.zeros((count, 2, frames), bool)
    indices = np.zeros((count, 2), "int64")
    captions = []
    for row in range(count):
        digits[row] = rng.choice(10, size=2, replace=False)
        indices[row] = [rng.choice(by_value[value]) for value in digits[row]]
        events[row] = rng.integers(0, len(EVENTS), size=2)
        starts = _place(rng, events[row], CANVAS)
        for which in range(2):
            event_frames[row, which] = _timing(rng, events[row, which],
                                               windows[which], span)
            positions[row, which], visible[row, which] = _track(
                events[row, which], starts[which], event_frames[row, which],
                span, frames)
            image = drawn[indices[row, which]]
            for frame in np.flatnonzero(visible[row, which]):
                top, left = positions[row, which, frame]
                canvas = videos[row, frame, top:top + DIGIT_SIZE,
                                left:left + DIGIT_SIZE]
                np.maximum(canvas, image, out=canvas)
        captions.append(caption(digits[row], events[row]))
    return DigitClips(videos, captions, digits, events, event_frames,
                      positions, visible, indices)


class ClipVocabulary(CaptionVocabulary):
    """`CaptionVocabulary` (encode, decode, teacher forcing) over the
    clips' words: `<pad>` 0, `<s>` 1, `</s>` 2, then the words, sorted.

    Example:

    >>> from keras_attention.data.digit_clips import ClipVocabulary
    >>> vocabulary = ClipVocabulary()
    >>> ids = vocabulary.encode("a two appears then an eight moves up")
    >>> vocabulary.decode(ids + [vocabulary.eos_id, 0])
    'a two appears then an eight moves up'
    """

    def __init__(self):
        words = {"a", "an", "then", *DIGIT_WORDS}
        for event in EVENTS:
            words.update(event.split())
        self.words = (PAD, BOS, EOS) + tuple(sorted(words))
        self.index = {word: i for i, word in enumerate(self.words)}

    @property
    def max_words(self):
        """The longest caption: "a three moves right then a seven moves
        down"."""
        return 9
