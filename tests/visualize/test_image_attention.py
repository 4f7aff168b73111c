"""Attention over image locations: the upsampled maps keep the weights and
the argmax, one panel per word, saved pictures, clear errors."""

import matplotlib.image
import numpy as np
import pytest

from keras_attention.visualize.image_attention import plot_image_attention
from keras_attention.visualize.image_attention import upsample_attention

RNG = np.random.default_rng(0)
IMAGE = RNG.random((32, 32))
WORDS = ["a", "three", "left", "of", "a", "seven", "</s>"]


def attention(steps=7, locations=64):
    logits = RNG.normal(size=(steps, locations)) * 3
    weights = np.exp(logits)
    return weights / weights.sum(-1, keepdims=True)


def test_upsampled_maps_keep_sums_argmax_and_blocks():
    weights = attention()
    maps = upsample_attention(weights, (8, 8), IMAGE.shape)
    assert maps.shape == (len(WORDS), 32, 32)
    np.testing.assert_allclose(maps.sum((1, 2)), weights.sum(-1), atol=1e-12)
    for row, grid_map in zip(weights, maps):
        top, left = divmod(int(np.argmax(row)), 8)
        block = grid_map[4 * top:4 * top + 4, 4 * left:4 * left + 4]
        np.testing.assert_allclose(block, row.max() / 16)  # 4x4 pixels
        assert grid_map.max() == pytest.approx(row.max() / 16)
    # A non-square grid: (h, w) = (2, 4) on a 4x8 image, 2x2 blocks.
    wide = upsample_attention([[0, 0, 0, 1, 0, 0, 0, 0]], (2, 4), (4, 8))[0]
    expected = np.zeros((4, 8))
    expected[0:2, 6:8] = 0.25
    np.testing.assert_array_equal(wide, expected)


def test_one_panel_per_word_plus_the_image(tmp_path):
    weights = attention()
    path = tmp_path / "three.png"
    figure = plot_image_attention(IMAGE, weights, WORDS, grid=(8, 8),
                                  path=path, title="a three left of a seven")
    assert [ax.get_title() for ax in figure.axes] == ["image"] + WORDS
    assert len(figure.axes[0].images) == 1
    np.testing.assert_array_equal(figure.axes[0].images[0].get_array(), IMAGE)
    maps = upsample_attention(weights, (8, 8), IMAGE.shape)
    for ax, grid_map in zip(figure.axes[1:], maps):
        base, overlay = ax.images
        np.testing.assert_array_equal(base.get_array(), IMAGE)
        np.testing.assert_allclose(overlay.get_array(), grid_map)
    picture = matplotlib.image.imread(path)
    assert picture.ndim == 3 and picture.shape[0] > 100
    assert len(plot_image_attention(IMAGE, weights[:2], WORDS[:2], grid=(8, 8),
                                    columns=1).axes) == 3


@pytest.mark.parametrize(
    "image, weights, words, grid, message",
    [
        (IMAGE[0], attention(), WORDS, (8, 8), r"image.shape=\(32,\)"),
        (IMAGE, attention()[0], WORDS, (8, 8), r"attention.shape=\(64,\)"),
        (IMAGE, attention(), WORDS[:3], (8, 8), "len\\(words\\)=3"),
        (IMAGE, attention(), WORDS, (4, 8), r"grid=\(4, 8\)"),
        (IMAGE, attention(locations=36), WORDS, (6, 6), "image.shape"),
        (IMAGE, attention(), WORDS, 8, "grid=8"),
        (IMAGE, attention(), "a three", (8, 8), "words="),
    ],
    ids=["image-rank", "attention-rank", "words", "grid-size",
         "grid-divides", "grid-type", "one-string"],
)
def test_bad_shapes_raise_naming_the_argument(image, weights, words, grid,
                                              message):
    with pytest.raises(ValueError, match=message):
        plot_image_attention(image, weights, words, grid=grid)
