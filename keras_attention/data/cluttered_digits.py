"""Cluttered translated digits (Mnih et al. 2014's cluttered translated
MNIST, in small), composed from scikit-learn's bundled 8x8 digits
(`sklearn.datasets.load_digits`; no download).

A canvas (default 40x40, black) holds one digit, upscaled to `digit_size`
(default 16x16, bilinear), at a uniformly random place, fully on the
canvas; under it, `clutter` fragments (default 4): square crops of
`fragment_size` (default 6) pixels taken from other digits (upscaled the
same way) and dropped at random places. Where they overlap, the brighter
pixel wins. The label is the whole digit's value; a fragment is too small
to be read as a digit, but it looks like strokes, so a classifier must find
the digit first.

The 1,797 digit images are split once, as `digit_scenes` splits them
(`digit_scenes.split_indices`, a fixed held-out 20%): the digits and the
fragments of `split="test"` canvases come only from held-out images.
`generate_cluttered_digits` draws from `numpy.random.default_rng(seed)`:
the same arguments give the same canvases.

Letters: N canvases, H = W the canvas size.
"""

from typing import NamedTuple

from keras_attention._extras import require

require(__name__, "translate", "sklearn")

import numpy as np

from keras_attention import _validation
from keras_attention.text import digit_scenes

SPLITS = digit_scenes.SPLITS
MIN_FRAGMENT_INK = 0.2  # a fragment's mean brightness is at least this


class ClutteredDigits(NamedTuple):
    """Canvases and their labels.

    images: `(N, H, W)` float32 in [0, 1].
    labels: `(N,)` int64, the digit's value.
    boxes: `(N, 4)` int64 `(top, left, height, width)` of the digit.
    image_indices: `(N,)` int64, the `load_digits` image drawn.
    fragment_indices: `(N, clutter)` int64, the images the fragments are
        cut from.
    """

    images: np.ndarray
    labels: np.ndarray
    boxes: np.ndarray
    image_indices: np.ndarray
    fragment_indices: np.ndarray


def _fragment(rng, digit, size):
    """A `size x size` crop of `digit` with some ink (the first of a few
    random tries whose mean brightness reaches `MIN_FRAGMENT_INK`, else
    the inkiest of them)."""
    limit = digit.shape[0] - size
    best = None
    for _ in range(8):
        top, left = rng.integers(0, limit + 1, size=2)
        crop = digit[top:top + size, left:left + size]
        if best is None or crop.mean() > best.mean():
            best = crop
        if crop.mean() >= MIN_FRAGMENT_INK:
            break
    return best


def generate_cluttered_digits(count, split="train", seed=0, canvas_size=40,
                              digit_size=16, clutter=4, fragment_size=6,
                              test_fraction=0.2, split_seed=0):
    """`count` cluttered canvases from the `split`'s digit images.

    Args:
        count: N.
        split: `"train"` or `"test"`: which digit images
            (`digit_scenes.split_indices`).
        seed: the canvases' random seed.
        canvas_size: H = W.
        digit_size: the digit's side on the canvas (<= canvas_size).
        clutter: the number of fragments (>= 0).
        fragment_size: a fragment's side (< digit_size).
        test_fraction, split_seed: the digit-image split.

    Returns:
        `ClutteredDigits`.

    Example:

    >>> from keras_attention.data.cluttered_digits import (
    ...     generate_cluttered_digits)
    >>> data = generate_cluttered_digits(3, seed=1)
    >>> data.images.shape, data.labels.shape
    ((3, 40, 40), (3,))
    >>> top, left, height, width = data.boxes[0]
    >>> int(height), int(width)
    (16, 16)
    """
    count = _validation.positive_int("count", count)
    _validation.choice("split", split, SPLITS)
    canvas_size = _validation.positive_int("canvas_size", canvas_size)
    digit_size = _validation.positive_int("digit_size", digit_size)
    if digit_size > canvas_size:
        raise ValueError(f"`digit_size` must be at most canvas_size="
                         f"{canvas_size}, received: digit_size={digit_size}")
    clutter = _validation.non_negative_int("clutter", clutter)
    fragment_size = _validation.positive_int("fragment_size", fragment_size)
    if fragment_size >= digit_size:
        raise ValueError(f"`fragment_size` must be less than digit_size="
                         f"{digit_size}, received: "
                         f"fragment_size={fragment_size}")
    digit_images, labels = digit_scenes.load_digit_images()
    pool = digit_scenes.split_indices(len(labels), test_fraction,
                                      split_seed)[SPLITS.index(split)]
    resized = {}

    def digit(index):
        if index not in resized:
            resized[index] = digit_scenes.resize(digit_images[index],
                                                 digit_size)
        return resized[index]

    rng = np.random.default_rng(seed)
    images = np.zeros((count, canvas_size, canvas_size), "float32")
    boxes = np.zeros((count, 4), "int64")
    fragments = np.zeros((count, clutter), "int64")
    chosen = rng.choice(pool, size=count)
    for row, index in enumerate(chosen):
        canvas = images[row]
        fragments[row] = rng.choice(pool, size=clutter)
        for other in fragments[row]:
            piece = _fragment(rng, digit(int(other)), fragment_size)
            top, left = rng.integers(0, canvas_size - fragment_size + 1,
                                     size=2)
            window = canvas[top:top + fragment_size, left:left + fragment_size]
            np.maximum(window, piece, out=window)
        top, left = rng.integers(0, canvas_size - digit_size + 1, size=2)
        window = canvas[top:top + digit_size, left:left + digit_size]
        np.maximum(window, digit(int(index)), out=window)
        boxes[row] = (top, left, digit_size, digit_size)
    np.clip(images, 0.0, 1.0, out=images)
    return ClutteredDigits(images, labels[chosen], boxes,
                           chosen.astype("int64"), fragments)
