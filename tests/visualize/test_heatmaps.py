import xml.etree.ElementTree as ElementTree

import matplotlib.image
import numpy as np
import pytest

from keras_attention.visualize import plot_attention
from keras_attention.visualize import plot_heads
from keras_attention.visualize import plot_hops
from keras_attention.visualize import plot_pooling

SOURCE = ["▁Ein", "▁Schnee", "ball", "▁fällt", "."]
SOURCE_LABELS = ["Ein", "Schnee", "·ball", "fällt", "·."]
TARGET = ["▁A", "▁snow", "ball", "▁falls", "</s>"]
TARGET_LABELS = ["A", "snow", "·ball", "falls", "</s>"]


def softmax(logits):
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def weights(*shape, seed=0):
    return softmax(np.random.default_rng(seed).normal(size=shape) * 2)


def ticks(labels):
    return [label.get_text() for label in labels]


def image_array(ax):
    (image,) = ax.get_images()
    return np.asarray(image.get_array())


def test_plot_attention_draws_the_matrix_with_cleaned_labels():
    matrix = weights(5, 5)
    figure = plot_attention(matrix, TARGET, SOURCE, title="t", values=True)
    ax = figure.axes[0]
    np.testing.assert_array_equal(image_array(ax), matrix)
    assert ticks(ax.get_xticklabels()) == SOURCE_LABELS
    assert ticks(ax.get_yticklabels()) == TARGET_LABELS
    assert ax.get_title() == "t"
    # The numbers written in the cells, row by row.
    assert [text.get_text() for text in ax.texts] == [
        f"{weight:.2f}" for weight in matrix.ravel()]


def test_plot_attention_takes_framework_tensors():
    import tensorflow as tf

    matrix = weights(3, 4).astype(np.float32)
    figure = plot_attention(tf.constant(matrix))
    np.testing.assert_array_equal(image_array(figure.axes[0]), matrix)
    assert ticks(figure.axes[0].get_xticklabels()) == ["0", "1", "2", "3"]


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_saved_file_is_readable_and_sized(tmp_path, suffix):
    path = tmp_path / f"attention{suffix}"
    figure = plot_attention(weights(5, 5), TARGET, SOURCE, path=path, dpi=80)
    width, height = figure.get_size_inches()
    if suffix == ".png":
        pixels = matplotlib.image.imread(path)
        np.testing.assert_allclose(pixels.shape[:2], (height * 80, width * 80),
                                   atol=1)
        assert pixels[..., :3].std() > 0.05  # a picture, not a blank page
    else:
        root = ElementTree.parse(path).getroot()
        assert root.tag.endswith("svg")
        assert float(root.get("width").removesuffix("pt")) == pytest.approx(
            width * 72)
        assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 25


def test_long_sentences_scale_font_and_figure():
    short = plot_attention(weights(5, 5), TARGET, SOURCE)
    long = plot_attention(weights(150, 150))
    short_font = short.axes[0].get_xticklabels()[0].get_fontsize()
    long_font = long.axes[0].get_xticklabels()[0].get_fontsize()
    assert long_font < short_font
    assert long_font >= 6
    assert long.get_size_inches()[0] > 3 * short.get_size_inches()[0]
    assert long.axes[0].get_xticklabels()[0].get_rotation() == 90
    assert short.axes[0].get_xticklabels()[0].get_rotation() == 60
    too_long = "target_tokens has 201 tokens.*max_tokens=200.*slice"
    with pytest.raises(ValueError, match=too_long):
        plot_attention(weights(201, 3))
    assert image_array(
        plot_attention(weights(201, 3), max_tokens=300).axes[0]).shape == (201, 3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: plot_attention(weights(5, 5), TARGET, SOURCE[:4]),
         r"`source_tokens`.*len\(source_tokens\)=4, weights.shape=\(5, 5\)"),
        (lambda: plot_attention(weights(4, 5), TARGET, SOURCE),
         r"`target_tokens`.*len\(target_tokens\)=5, weights.shape=\(4, 5\)"),
        (lambda: plot_attention(weights(2, 5, 5)),
         r"`weights` must have shape \(T, S\).*weights.shape=\(2, 5, 5\)"),
        (lambda: plot_attention([[0.5, np.nan]]), "finite"),
        (lambda: plot_attention([["a", "b"]]), "array of numbers"),
        (lambda: plot_attention(np.zeros((0, 3))), "empty"),
        (lambda: plot_attention([[1.0]], path="a.jpg"), "path='a.jpg'"),
        (lambda: plot_attention([[1.0]], max_tokens=0), "max_tokens=0"),
        (lambda: plot_heads(weights(2, 5, 5), head_names=["a"]),
         r"len\(head_names\)=1"),
        (lambda: plot_hops(weights(2, 3), ["a", "b"]),
         r"len\(items\)=2, weights.shape=\(2, 3\)"),
        (lambda: plot_pooling(weights(2, 3), ["a"]), r"len\(tokens\)=1"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_plot_heads_draws_each_head_and_the_average():
    heads = weights(3, 5, 5)
    figure = plot_heads(heads, TARGET, SOURCE, title="layer 2")
    panels = figure.axes[:4]
    for ax, expected in zip(panels, [*heads, heads.mean(axis=0)]):
        np.testing.assert_allclose(image_array(ax), expected, rtol=1e-12)
        assert ticks(ax.get_xticklabels()) == SOURCE_LABELS
        assert ticks(ax.get_yticklabels()) == TARGET_LABELS
    assert [ax.get_title() for ax in panels] == [
        "head 0", "head 1", "head 2", "average"]
    # One colour scale for all panels, and one colorbar (2 x 2 grid).
    limits = {ax.get_images()[0].get_clim() for ax in panels}
    assert limits == {(0.0, float(heads.max()))}
    assert len(figure.axes) == 5
    assert figure.get_suptitle() == "layer 2"


def test_plot_heads_names_and_no_average():
    figure = plot_heads(weights(2, 3, 4), head_names=["self", "cross"],
                        average=False, columns=1)
    assert [ax.get_title() for ax in figure.axes[:2]] == ["self", "cross"]
    assert len(figure.axes) == 3  # two panels and the colorbar


def test_plot_hops_bars_are_the_weights():
    hops = weights(3, 4)
    items = ["Mary moved to the bathroom.", "John went to the hallway.",
             "Daniel went back to the hallway and then to the garden.",
             "Where is Mary?"]
    figure = plot_hops(hops, items, wrap=30)
    assert [ax.get_title() for ax in figure.axes] == ["hop 1", "hop 2", "hop 3"]
    for ax, hop in zip(figure.axes, hops):
        bars = ax.containers[0]
        np.testing.assert_allclose([bar.get_width() for bar in bars], hop)
        assert [text.get_text() for text in ax.texts] == [
            f"{weight:.2f}" for weight in hop]
    labels = ticks(figure.axes[0].get_yticklabels())
    assert [label.replace("\n", " ") for label in labels] == items
    assert max(len(line) for label in labels for line in label.split("\n")) <= 30
    # Item 0 is at the top.
    assert figure.axes[0].yaxis_inverted()


def test_plot_pooling_rows_are_hops():
    hops = weights(2, 5)
    figure = plot_pooling(hops, SOURCE)
    ax = figure.axes[0]
    np.testing.assert_array_equal(image_array(ax), hops)
    assert ticks(ax.get_yticklabels()) == ["hop 1", "hop 2"]
    assert ticks(ax.get_xticklabels()) == SOURCE_LABELS
    one = plot_pooling(hops[0], SOURCE)
    np.testing.assert_array_equal(image_array(one.axes[0]), hops[:1])
