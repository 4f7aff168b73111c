"""Real handwritten digits (MNIST) and Fashion-MNIST from local files, a
split fixed by a seed, and the papers' canvases built from them:
translated and cluttered translated digits (Mnih et al., 2014).

Nothing is downloaded. `load_mnist` reads a `.npz` holding `x` (N, 28,
28) uint8 and `y` (N,), as the project's `mnist10k.npz` (the first 10,000
digits of MNIST's training set), or Keras's `mnist.npz` (`x_train`,
`y_train`, `x_test`, `y_test`, concatenated); the path comes from the
argument, else `$KERAS_ATTENTION_MNIST` (the file or its folder).
`load_fashion_mnist` reads the four IDX files of Fashion-MNIST, as
Debian's `dataset-fashion-mnist` installs them under
`/usr/share/datasets/fashion-mnist` (the default), or
`$KERAS_ATTENTION_FASHION_MNIST`. A missing or malformed file is one
line naming it.

`split` fixes train / validation / test by a seed (a permutation of the
indices), so every script selects on the same validation digits and
reports on the same test digits. Canvases are composed from one split's
digits only, clutter included.

Letters: N images, H = W the canvas size, S = 28 the digit's side.
"""

import gzip
import os
import pathlib
import zipfile
from typing import NamedTuple

import numpy as np

from keras_attention import _validation

MNIST_VARIABLE = "KERAS_ATTENTION_MNIST"
FASHION_VARIABLE = "KERAS_ATTENTION_FASHION_MNIST"
FASHION_DEFAULT = pathlib.Path("/usr/share/datasets/fashion-mnist")
MNIST_FILES = ("mnist10k.npz", "mnist.npz")
SPLITS = ("train", "validation", "test")
DIGIT_SIZE = 28


class Digits(NamedTuple):
    """Images and labels.

    images: `(N, 28, 28)` uint8, 0 black .. 255 white ink.
    labels: `(N,)` int64.
    """

    images: np.ndarray
    labels: np.ndarray

    def __len__(self):
        return len(self.labels)

    def take(self, indices):
        """The digits at `indices`, as `Digits`."""
        return Digits(self.images[indices], self.labels[indices])


def _checked(images, labels, source):
    images, labels = np.asarray(images), np.asarray(labels)
    if images.ndim != 3 or images.shape[1:] != (DIGIT_SIZE, DIGIT_SIZE):
        raise ValueError(f"{source}: images must be (N, 28, 28), received "
                         f"shape {images.shape}")
    if labels.shape != images.shape[:1]:
        raise ValueError(f"{source}: labels must be ({len(images)},), "
                         f"received shape {labels.shape}")
    if images.dtype != np.uint8:
        raise ValueError(f"{source}: images must be uint8 grey levels, "
                         f"received dtype {images.dtype}")
    return Digits(images, labels.astype("int64"))


def mnist_file(path=None):
    """The MNIST `.npz`: `path`, else `$KERAS_ATTENTION_MNIST`; a folder
    stands for its `mnist10k.npz` or `mnist.npz`. Missing: a
    `FileNotFoundError` naming where it looked."""
    given = path or os.environ.get(MNIST_VARIABLE)
    if not given:
        raise FileNotFoundError(
            "No MNIST file given: pass a path (an .npz with x and y, or "
            f"its folder) or set ${MNIST_VARIABLE}, received: path={path!r}")
    given = pathlib.Path(given)
    if given.is_dir():
        for name in MNIST_FILES:
            if (given / name).is_file():
                return given / name
        raise FileNotFoundError(f"{given} holds none of {list(MNIST_FILES)}")
    if not given.is_file():
        raise FileNotFoundError(f"No MNIST file at {given}")
    return given


def load_mnist(path=None):
    """All the digits of the MNIST `.npz` (see `mnist_file`), as `Digits`.

    Example:

    >>> import numpy as np, pathlib, tempfile
    >>> from keras_attention.data import mnist
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> np.savez(folder / "mnist10k.npz", x=np.zeros((3, 28, 28), "uint8"),
    ...          y=np.array([4, 0, 9], "uint8"))
    >>> digits = mnist.load_mnist(folder)
    >>> digits.images.shape, digits.labels.tolist()
    ((3, 28, 28), [4, 0, 9])
    """
    file = mnist_file(path)
    try:
        with np.load(file) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, EOFError, ValueError, AttributeError,
            zipfile.BadZipFile) as error:
        reason = str(error).splitlines()[0] if str(error) else type(
            error).__name__
        raise ValueError(f"{file} is not an .npz file: {reason}") from None
    if {"x", "y"} <= set(arrays):
        images, labels = arrays["x"], arrays["y"]
    elif {"x_train", "y_train", "x_test", "y_test"} <= set(arrays):
        images = np.concatenate([arrays["x_train"], arrays["x_test"]])
        labels = np.concatenate([arrays["y_train"], arrays["y_test"]])
    else:
        raise ValueError(
            f"{file} must hold x and y (or x_train, y_train, x_test, "
            f"y_test), received: {sorted(arrays)}")
    return _checked(images, labels, file)


def _read_idx(file, dims):
    """An IDX file (gzip or not) of uint8, `dims` dimensions."""
    opener = gzip.open if file.name.endswith(".gz") else open
    try:
        with opener(file, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise ValueError(f"{file} is not a readable IDX file: {error}") from None
    if len(raw) < 4 + 4 * dims or raw[:4] != bytes([0, 0, 8, dims]):
        raise ValueError(f"{file} is not an IDX file of uint8 with {dims} "
                         f"dimensions (magic {raw[:4].hex() or 'missing'})")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big")
                  for i in range(dims))
    body = np.frombuffer(raw, np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{file}: the header says {shape}, the file holds "
                         f"{body.size} values")
    return body.reshape(shape)


def load_fashion_mnist(path=None, part="train"):
    """Fashion-MNIST's `part` (`"train"`, 60,000, or `"test"`, 10,000) from
    the folder `path`, else `$KERAS_ATTENTION_FASHION_MNIST`, else
    Debian's `/usr/share/datasets/fashion-mnist`; the files are
    `train-images-idx3-ubyte[.gz]` and the like."""
    _validation.choice("part", part, ("train", "test"))
    folder = pathlib.Path(path or os.environ.get(FASHION_VARIABLE)
                          or FASHION_DEFAULT)
    prefix = "train" if part == "train" else "t10k"
    found = {}
    for kind, dims in (("images", 3), ("labels", 1)):
        name = f"{prefix}-{kind}-idx{dims}-ubyte"
        candidates = [folder / name, folder / f"{name}.gz"]
        file = next((c for c in candidates if c.is_file()), None)
        if file is None:
            raise FileNotFoundError(
                f"No {name}[.gz] in {folder}: install Debian's "
                "dataset-fashion-mnist or pass the folder of the IDX files")
        found[kind] = _read_idx(file, dims)
    return _checked(found["images"], found["labels"], folder)


def split(digits, seed=0, validation=1000, test=2000):
    """`{"train", "validation", "test"}` -> `Digits`: a permutation of the
    indices by `seed`, the first `test` for test, the next `validation`
    for validation, the rest for training, each in the permutation's
    order (so a file sorted by class comes out shuffled). The same digits
    and seed give the same split.

    Example:

    >>> import numpy as np
    >>> from keras_attention.data.mnist import Digits, split
    >>> digits = Digits(np.zeros((10, 28, 28), "uint8"), np.arange(10))
    >>> parts = split(digits, seed=0, validation=2, test=3)
    >>> [len(parts[name]) for name in ("train", "validation", "test")]
    [5, 2, 3]
    >>> sorted(np.concatenate([p.labels for p in parts.values()]).tolist())
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    validation = _validation.non_negative_int("validation", validation)
    test = _validation.non_negative_int("test", test)
    if validation + test >= len(digits):
        raise ValueError(
            f"`validation` + `test` must leave training digits out of "
            f"{len(digits)}, received: validation={validation}, test={test}")
    order = np.random.default_rng(seed).permutation(len(digits))
    return {"test": digits.take(order[:test]),
            "validation": digits.take(order[test:test + validation]),
            "train": digits.take(order[test + validation:])}


def binarize(images, rng=None):
    """Binarized digits `(N, 28, 28)` uint8 0/1: dynamic (each pixel 1
    with probability its grey level / 255, drawn from `rng`) when `rng` is
    given, else fixed at a threshold of half."""
    grey = np.asarray(images, "float32") / 255.0
    if rng is None:
        return (grey >= 0.5).astype("uint8")
    return (rng.random(grey.shape, dtype="float32") < grey).astype("uint8")


class Canvases(NamedTuple):
    """Digits placed on larger canvases.

    images: `(N, H, W)` float32 in [0, 1].
    labels: `(N,)` int64.
    boxes: `(N, 4)` int64 `(top, left, 28, 28)` of the digit.
    """

    images: np.ndarray
    labels: np.ndarray
    boxes: np.ndarray


def cluttered(digits, count=None, canvas_size=60, clutter=4,
              fragment_size=8, seed=0):
    """Mnih et al.'s cluttered translated digits: each canvas holds one
    digit at a uniformly random place, fully on the canvas, and `clutter`
    random `fragment_size`² crops of other digits of the same `digits`
    at random places; where they overlap the brighter pixel wins.
    `clutter=0` gives the translated digits. Deterministic in `seed`.

    Args:
        digits: `Digits` to compose from (one split's).
        count: N canvases; None: one per digit, in order.
        canvas_size: H = W >= 28.
        clutter: fragments per canvas, >= 0.
        fragment_size: a fragment's side, 1 .. 28.
        seed: the canvases' random seed.

    Returns:
        `Canvases`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.data.mnist import Digits, cluttered
    >>> digits = Digits(np.full((4, 28, 28), 255, "uint8"), np.arange(4))
    >>> canvases = cluttered(digits, canvas_size=40, clutter=2, seed=1)
    >>> canvases.images.shape, canvases.labels.tolist()
    ((4, 40, 40), [0, 1, 2, 3])
    >>> float(canvases.images.sum(axis=(1, 2)).min()) >= 28 * 28
    True
    """
    canvas_size = _validation.positive_int("canvas_size", canvas_size)
    if canvas_size < DIGIT_SIZE:
        raise ValueError(f"`canvas_size` must be at least {DIGIT_SIZE}, "
                         f"received: canvas_size={canvas_size}")
    clutter = _validation.non_negative_int("clutter", clutter)
    fragment_size = _validation.positive_int("fragment_size", fragment_size)
    if fragment_size > DIGIT_SIZE:
        raise ValueError(f"`fragment_size` must be at most {DIGIT_SIZE}, "
                         f"received: fragment_size={fragment_size}")
    rng = np.random.default_rng(seed)
    if count is None:
        chosen = np.arange(len(digits))
    else:
        chosen = rng.integers(0, len(digits),
                              _validation.positive_int("count", count))
    grey = digits.images
    images = np.zeros((len(chosen), canvas_size, canvas_size), "uint8")
    others = rng.integers(0, len(digits), (len(chosen), clutter))
    crops = rng.integers(0, DIGIT_SIZE - fragment_size + 1,
                         (len(chosen), clutter, 2))
    places = rng.integers(0, canvas_size - fragment_size + 1,
                          (len(chosen), clutter, 2))
    corners = rng.integers(0, canvas_size - DIGIT_SIZE + 1, (len(chosen), 2))
    for row, index in enumerate(chosen):
        canvas = images[row]
        for other, (y, x), (top, left) in zip(others[row], crops[row],
                                             places[row]):
            window = canvas[top:top + fragment_size, left:left + fragment_size]
            np.maximum(window, grey[other, y:y + fragment_size,
                                    x:x + fragment_size], out=window)
        top, left = corners[row]
        window = canvas[top:top + DIGIT_SIZE, left:left + DIGIT_SIZE]
        np.maximum(window, grey[index], out=window)
    boxes = np.concatenate([corners, np.full((len(chosen), 2), DIGIT_SIZE)],
                           axis=1).astype("int64")
    return Canvases(images.astype("float32") / 255.0,
                    digits.labels[chosen], boxes)


DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six",
               "seven", "eight", "nine")
INK = 20  # MNIST centres each digit's ink in the middle 20x20 of its 28x28


class Scenes(NamedTuple):
    """Captioned scenes of several digits.

    images: `(N, H, W)` float32 in [0, 1].
    captions: N strings, the digits left to right.
    labels: `(N, K)` int64, the digits' values left to right.
    boxes: `(N, K, 4)` int64 `(top, left, height, width)` of each digit's
        ink box (its middle 20x20), left to right.
    """

    images: np.ndarray
    captions: list
    labels: np.ndarray
    boxes: np.ndarray


def scene_caption(labels):
    """"a three left of an eight left of a one": each digit, left to
    right, with its article."""
    phrases = [("an " if label == 8 else "a ") + DIGIT_WORDS[label]
               for label in labels]
    return " left of ".join(phrases)


def scenes(digits, count, objects=3, height=40, width=80, clutter=8,
           fragment_size=8, gap=2, seed=0):
    """Captioning scenes: `objects` real digits side by side at random
    heights and spacings, among `clutter` fragments of other digits (as
    `cluttered`'s), captioned left to right ("a three left of an eight
    left of a one"). The ink boxes (each digit's middle 20x20) are at least
    `gap` pixels apart across the width and fully on the canvas; the
    28x28 digit around its box is clipped at the edges (its margin is
    blank). Where things overlap the brighter pixel wins. Every scene's
    digits and fragments come from `digits` (one split's). Deterministic
    in `seed`.

    Args:
        digits: `Digits` to compose from.
        count: N scenes.
        objects: K >= 1 digits a scene.
        height, width: the canvas, H >= 20 and W >= K * (20 + gap) - gap.
        clutter: fragments a scene, >= 0.
        fragment_size: a fragment's side, 1 .. 28.
        gap: the least space between two ink boxes, >= 0.
        seed: the scenes' random seed.

    Returns:
        `Scenes`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.data.mnist import Digits, scenes
    >>> digits = Digits(np.full((4, 28, 28), 255, "uint8"), np.arange(4))
    >>> made = scenes(digits, 2, objects=2, height=24, width=48, clutter=0)
    >>> made.images.shape, made.labels.shape
    ((2, 24, 48), (2, 2))
    >>> made.captions[0] == scene_caption(made.labels[0])
    True
    """
    count = _validation.positive_int("count", count)
    objects = _validation.positive_int("objects", objects)
    height = _validation.positive_int("height", height)
    width = _validation.positive_int("width", width)
    clutter = _validation.non_negative_int("clutter", clutter)
    fragment_size = _validation.positive_int("fragment_size", fragment_size)
    gap = _validation.non_negative_int("gap", gap)
    if fragment_size > DIGIT_SIZE:
        raise ValueError(f"`fragment_size` must be at most {DIGIT_SIZE}, "
                         f"received: fragment_size={fragment_size}")
    if height < INK:
        raise ValueError(f"`height` must be at least {INK}, received: "
                         f"height={height}")
    least = objects * (INK + gap) - gap
    if width < least:
        raise ValueError(f"`width` must be at least {least} for {objects} "
                         f"digits {gap} pixels apart, received: "
                         f"width={width}")
    if fragment_size > min(height, width):
        raise ValueError(f"`fragment_size` must fit the canvas "
                         f"({height}x{width}), received: "
                         f"fragment_size={fragment_size}")
    rng = np.random.default_rng(seed)
    margin = (DIGIT_SIZE - INK) // 2
    images = np.zeros((count, height, width), "uint8")  # (N, H, W)
    labels = np.zeros((count, objects), "int64")
    boxes = np.zeros((count, objects, 4), "int64")
    for row in range(count):
        chosen = rng.integers(0, len(digits), objects)
        # The spare width, shared at random before, between and after.
        spare = rng.multinomial(width - least,
                                rng.dirichlet(np.ones(objects + 1)))
        lefts = np.cumsum(spare[:objects]) + np.arange(objects) * (INK + gap)
        tops = rng.integers(0, height - INK + 1, objects)
        canvas = images[row]
        for _ in range(clutter):
            other = rng.integers(0, len(digits))
            y, x = rng.integers(0, DIGIT_SIZE - fragment_size + 1, 2)
            top = rng.integers(0, height - fragment_size + 1)
            left = rng.integers(0, width - fragment_size + 1)
            window = canvas[top:top + fragment_size, left:left + fragment_size]
            np.maximum(window, digits.images[other, y:y + fragment_size,
                                             x:x + fragment_size], out=window)
        for index, top, left in zip(chosen, tops, lefts):
            # The 28x28 digit around its ink box, clipped to the canvas.
            y0, x0 = top - margin, left - margin
            ys = slice(max(y0, 0), min(y0 + DIGIT_SIZE, height))
            xs = slice(max(x0, 0), min(x0 + DIGIT_SIZE, width))
            window = canvas[ys, xs]
            np.maximum(window, digits.images[
                index, ys.start - y0:ys.stop - y0,
                xs.start - x0:xs.stop - x0], out=window)
        labels[row] = digits.labels[chosen]
        boxes[row] = [[top, left, INK, INK] for top, left in zip(tops, lefts)]
    return Scenes(images.astype("float32") / 255.0,
                  [scene_caption(row) for row in labels], labels, boxes)
