"""Captioned scenes of two handwritten digits, composed from scikit-learn's
bundled 8x8 digits (`sklearn.datasets.load_digits`; no download).

A scene is a `32 x 32` canvas holding two digits side by side or one above
the other; a digit is drawn at 12x12 (upsampled), or at its own 8x8 when
"small". The caption names both and their relation:

    "a three left of a small seven"    "an eight above a two"

Which digit the caption starts with is a function of the scene, so every
scene has one correct caption: the one of lower value, then the small one,
then the left or upper one. The relation is then "left of", "right of",
"above" or "below" as the placement says: along the relation's axis the
digits' boxes are disjoint (at least one pixel apart); across it they
overlap (their centres at most 4 pixels apart), so no other relation holds.

The 1,797 digit images are split once, by a seeded permutation of their
indices (`split_indices`): held-out scenes (`split="test"`) are composed
only from held-out digit images, so the test measures reading new
handwriting, not memorised strokes. `generate_scenes` draws from
`numpy.random.default_rng(seed)`. Captions map to ids with
`CaptionVocabulary` (`<pad>` 0, `<s>` 1, `</s>` 2, then the words).

Letters: N scenes, H, W canvas height and width, T caption length.
"""

from typing import NamedTuple

from keras_attention._extras import require

require(__name__, "translate", "sklearn")

import numpy as np

from keras_attention import _validation

CANVAS = (32, 32)
LARGE, SMALL = 12, 8  # digit sizes in pixels
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six",
               "seven", "eight", "nine")
RELATIONS = ("left of", "right of", "above", "below")
PAD, BOS, EOS = "<pad>", "<s>", "</s>"
SPLITS = ("train", "test")
MAX_OFFSET = 4  # the most the centres differ across the relation's axis


class DigitScenes(NamedTuple):
    """Scenes and their captions.

    images: `(N, H, W)` float32 in [0, 1].
    captions: N strings.
    digits: `(N, 2)` int, the digit values, caption order.
    small: `(N, 2)` bool, caption order.
    boxes: `(N, 2, 4)` int `(top, left, height, width)`, caption order.
    relations: `(N,)` int indices into `RELATIONS`.
    image_indices: `(N, 2)` int, the `load_digits` images used.
    """

    images: np.ndarray
    captions: list
    digits: np.ndarray
    small: np.ndarray
    boxes: np.ndarray
    relations: np.ndarray
    image_indices: np.ndarray


def load_digit_images():
    """`(images (1797, 8, 8) float32 in [0, 1], labels (1797,) int)`."""
    from sklearn.datasets import load_digits

    data = load_digits()
    return (data.images / 16.0).astype("float32"), data.target.astype("int64")


def split_indices(count, test_fraction=0.2, seed=0):
    """`(train, test)` sorted index arrays, a seeded split of `count`
    images."""
    count = _validation.positive_int("count", count)
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"`test_fraction` must be in (0, 1), received: "
                         f"test_fraction={test_fraction!r}")
    order = np.random.default_rng(seed).permutation(count)
    test_count = max(1, int(round(test_fraction * count)))
    return np.sort(order[test_count:]), np.sort(order[:test_count])


def resize(image, size):
    """Bilinear resize of a square `(n, n)` image to `(size, size)`
    (pixel centres aligned)."""
    n = image.shape[0]
    positions = (np.arange(size) + 0.5) * n / size - 0.5
    matrix = np.zeros((size, n), "float64")
    for row, x in enumerate(np.clip(positions, 0, n - 1)):
        low = min(int(np.floor(x)), n - 2)
        frac = x - low
        matrix[row, low] = 1.0 - frac
        matrix[row, low + 1] = frac
    return (matrix @ image @ matrix.T).astype("float32")  # (size, size)


def noun_phrase(digit, small):
    """"a three", "an eight", "a small eight"."""
    words = (["small"] if small else []) + [DIGIT_WORDS[digit]]
    article = "an" if words[0] == "eight" else "a"
    return " ".join([article] + words)


def caption(first, second, relation):
    """The caption of `first` `(digit, small)` in `RELATIONS[relation]` to
    `second`."""
    return (f"{noun_phrase(*first)} {RELATIONS[relation]} "
            f"{noun_phrase(*second)}")


def _place(rng, sizes, horizontal, canvas):
    """Boxes `(top, left, height, width)` of two digits of `sizes`, the
    first before the second along the axis (left or top)."""
    along, across = (1, 0) if horizontal else (0, 1)
    free = canvas[along] - sizes[0] - sizes[1] - 1  # room left over
    start = int(rng.integers(0, free + 1))
    gap = 1 + int(rng.integers(0, free - start + 1))
    starts_along = (start, start + sizes[0] + gap)
    # Across: centres within MAX_OFFSET of each other, boxes on the canvas.
    centre = rng.uniform(max(sizes) / 2, canvas[across] - max(sizes) / 2)
    boxes = []
    for size, position in zip(sizes, starts_along):
        offset = rng.uniform(-MAX_OFFSET / 2, MAX_OFFSET / 2)
        low = int(np.clip(round(centre + offset - size / 2), 0,
                          canvas[across] - size))
        box = [0, 0, size, size]
        box[along], box[across] = position, low
        boxes.append(box)
    return boxes


def generate_scenes(count, split="train", seed=0, small_probability=0.3,
                    test_fraction=0.2, split_seed=0):
    """`count` captioned scenes from the `split`'s digit images.

    Args:
        count: N.
        split: `"train"` or `"test"`: which digit images (`split_indices`).
        seed: the scenes' random seed.
        small_probability: the chance that a digit is drawn small.
        test_fraction, split_seed: the digit-image split.

    Returns:
        `DigitScenes`.

    Example:

    >>> from keras_attention.text.digit_scenes import generate_scenes
    >>> scenes = generate_scenes(2, seed=1)
    >>> scenes.images.shape
    (2, 32, 32)
    >>> scenes.captions[0].split()[0] in ("a", "an")
    True
    """
    count = _validation.positive_int("count", count)
    _validation.choice("split", split, SPLITS)
    if not 0.0 <= small_probability <= 1.0:
        raise ValueError(f"`small_probability` must be in [0, 1], received: "
                         f"small_probability={small_probability!r}")
    digit_images, labels = load_digit_images()
    pool = split_indices(len(labels), test_fraction,
                         split_seed)[SPLITS.index(split)]
    rng = np.random.default_rng(seed)
    images = np.zeros((count,) + CANVAS, "float32")  # (N, H, W)
    digits = np.zeros((count, 2), "int64")
    small = np.zeros((count, 2), bool)
    boxes = np.zeros((count, 2, 4), "int64")
    relations = np.zeros((count,), "int64")
    indices = np.zeros((count, 2), "int64")
    captions = []
    for row in range(count):
        chosen = rng.choice(pool, size=2, replace=False)
        is_small = rng.random(2) < small_probability
        horizontal = bool(rng.random() < 0.5)
        sizes = [SMALL if flag else LARGE for flag in is_small]
        placed = _place(rng, sizes, horizontal, CANVAS)  # first: left/top
        for index, size, (top, left, _, _) in zip(chosen, sizes, placed):
            images[row, top:top + size, left:left + size] = resize(
                digit_images[index], size)
        # The caption's subject: lower value, then small, then left/top.
        order = sorted(range(2), key=lambda i: (labels[chosen[i]],
                                                not is_small[i], i))
        relation = (0 if horizontal else 2) + (order[0] == 1)
        digits[row] = labels[chosen[order]]
        small[row] = is_small[order]
        boxes[row] = np.array(placed)[order]
        relations[row] = relation
        indices[row] = chosen[order]
        captions.append(caption((digits[row, 0], small[row, 0]),
                                (digits[row, 1], small[row, 1]), relation))
    return DigitScenes(images, captions, digits, small, boxes, relations,
                       indices)


class CaptionVocabulary:
    """Caption words to ids and back: `<pad>` 0, `<s>` 1, `</s>` 2, then
    every word of the captions' grammar, sorted. `max_words` is the longest
    caption's length (8, the two-digit scenes').

    Example:

    >>> from keras_attention.text.digit_scenes import CaptionVocabulary
    >>> vocabulary = CaptionVocabulary()
    >>> ids = vocabulary.encode("a two above an eight")
    >>> vocabulary.decode(ids + [vocabulary.eos_id, 0])
    'a two above an eight'
    """

    pad_id, bos_id, eos_id = 0, 1, 2

    def __init__(self, max_words=8):
        self._max_words = _validation.positive_int("max_words", max_words)
        words = {"a", "an", "small", *DIGIT_WORDS}
        for relation in RELATIONS:
            words.update(relation.split())
        self.words = (PAD, BOS, EOS) + tuple(sorted(words))
        self.index = {word: i for i, word in enumerate(self.words)}

    def __len__(self):
        return len(self.words)

    @property
    def max_words(self):
        """The longest caption's words: 8 by default, "a small seven left
        of a small seven" (`keras_attention.data.mnist.scenes` of three
        digits need 10: "a seven left of a two left of a one")."""
        return self._max_words

    def encode(self, text):
        """A caption's word ids (no `<s>`, no `</s>`)."""
        unknown = [word for word in text.split() if word not in self.index]
        if unknown:
            raise ValueError(f"`text` has words not in the vocabulary, "
                             f"received: {unknown} in text={text!r}")
        return [self.index[word] for word in text.split()]

    def decode(self, ids):
        """The words of `ids` up to the first `</s>`, without `<pad>` and
        `<s>`."""
        words = []
        for token in (int(token) for token in ids):
            if token == self.eos_id:
                break
            if token not in (self.pad_id, self.bos_id):
                words.append(self.words[token])
        return " ".join(words)

    def teacher_forcing(self, captions, length=None):
        """`(decoder_tokens (N, T), targets (N, T))` int32: `<s> w1 .. wn`
        and `w1 .. wn </s>`, padded with 0 to `length` (default
        `max_words + 1`)."""
        length = _validation.positive_int(
            "length", self.max_words + 1 if length is None else length)
        inputs = np.zeros((len(captions), length), "int32")
        targets = np.zeros((len(captions), length), "int32")
        for row, text in enumerate(captions):
            ids = self.encode(text)
            if len(ids) + 1 > length:
                raise ValueError(f"`length` is too short for a caption of "
                                 f"{len(ids)} words, received: length={length}")
            inputs[row, : len(ids) + 1] = [self.bos_id] + ids
            targets[row, : len(ids) + 1] = ids + [self.eos_id]
        return inputs, targets
