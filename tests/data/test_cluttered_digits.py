"""Cluttered digits: seeded, the digit where the box says, clutter that
does not cover it, a split by digit image, and argument errors."""

import subprocess
import sys

import numpy as np
import pytest

from keras_attention.data import cluttered_digits
from keras_attention.data.cluttered_digits import generate_cluttered_digits
from keras_attention.text import digit_scenes


@pytest.fixture(scope="module")
def data():
    return generate_cluttered_digits(200, split="train", seed=3)


def test_same_seed_same_canvases_other_seed_other_canvases(data):
    again = generate_cluttered_digits(200, split="train", seed=3)
    for got, want in zip(again, data):
        np.testing.assert_array_equal(got, want)
    other = generate_cluttered_digits(200, split="train", seed=4)
    assert not np.array_equal(other.images, data.images)


def test_shapes_range_and_labels(data):
    assert data.images.shape == (200, 40, 40)
    assert data.images.dtype == np.float32
    assert 0.0 <= data.images.min() and data.images.max() <= 1.0
    _, labels = digit_scenes.load_digit_images()
    np.testing.assert_array_equal(data.labels, labels[data.image_indices])
    assert set(data.labels.tolist()) == set(range(10))
    assert data.fragment_indices.shape == (200, 4)


def test_the_digit_is_in_its_box_and_on_the_canvas(data):
    """Inside the box the canvas is at least the upscaled digit (clutter
    only adds ink under it); the box lies on the canvas; the positions
    spread over the canvas."""
    images, _ = digit_scenes.load_digit_images()
    for row in range(len(data.labels)):
        top, left, height, width = data.boxes[row]
        assert (height, width) == (16, 16)
        assert 0 <= top <= 24 and 0 <= left <= 24
        digit = digit_scenes.resize(images[data.image_indices[row]], 16)
        window = data.images[row, top:top + 16, left:left + 16]
        assert np.all(window >= np.clip(digit, 0, 1) - 1e-6)
    assert data.boxes[:, 0].min() <= 2 and data.boxes[:, 0].max() >= 22
    assert data.boxes[:, 1].min() <= 2 and data.boxes[:, 1].max() >= 22


def test_clutter_adds_ink_outside_the_digit():
    clean = generate_cluttered_digits(50, seed=7, clutter=0)
    cluttered = generate_cluttered_digits(50, seed=7, clutter=6)

    def ink_outside(images, boxes):
        mask = np.ones(images.shape, bool)
        for row, (top, left, height, width) in enumerate(boxes):
            mask[row, top:top + height, left:left + width] = False
        return images[mask].sum()

    assert ink_outside(clean.images, clean.boxes) == 0.0
    assert ink_outside(cluttered.images, cluttered.boxes) > 50 * 6 * 36 * 0.1


def test_the_split_is_by_digit_image():
    """Digits and fragments of test canvases come from the held-out
    images only (digit_scenes's split), and train canvases never use
    them."""
    train_pool, test_pool = digit_scenes.split_indices(1797)
    test = generate_cluttered_digits(300, split="test", seed=0)
    train = generate_cluttered_digits(300, split="train", seed=0)
    assert set(test.image_indices) <= set(test_pool)
    assert set(test.fragment_indices.ravel()) <= set(test_pool)
    assert set(train.image_indices) <= set(train_pool)
    assert set(train.fragment_indices.ravel()) <= set(train_pool)
    assert len(test_pool) == 359


def test_other_sizes():
    data = generate_cluttered_digits(5, canvas_size=24, digit_size=8,
                                     clutter=2, fragment_size=3)
    assert data.images.shape == (5, 24, 24)
    assert (data.boxes[:, 2:] == 8).all()


@pytest.mark.parametrize(
    "options, message",
    [({"count": 0}, "count=0"),
     ({"split": "val"}, "split='val'"),
     ({"canvas_size": 0}, "canvas_size=0"),
     ({"digit_size": 41}, "digit_size=41"),
     ({"clutter": -1}, "clutter=-1"),
     ({"fragment_size": 16}, "fragment_size=16"),
     ({"test_fraction": 1.0}, "test_fraction=1.0")],
)
def test_bad_arguments_name_themselves(options, message):
    with pytest.raises(ValueError, match=message):
        generate_cluttered_digits(**{"count": 2, **options})


def test_imports_neither_tensorflow_nor_keras():
    probe = ("import sys, keras_attention.data.cluttered_digits; "
             "print(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('tensorflow', 'keras')))")
    result = subprocess.run([sys.executable, "-c", probe], check=True,
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]"
    assert cluttered_digits.SPLITS == ("train", "test")
