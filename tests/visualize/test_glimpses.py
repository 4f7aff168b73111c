"""plot_glimpses: one panel per image, one rectangle per patch of every
glimpse where `glimpse_boxes` puts it, numbered in order; saved; bad
shapes name the argument."""

import numpy as np
import pytest
from matplotlib.patches import Rectangle

from keras_attention.layers.glimpse_sensor import glimpse_boxes
from keras_attention.visualize import plot_glimpses

IMAGES = np.zeros((3, 20, 20), "float32")
LOCATIONS = np.array([[[0.0, 0.0], [0.5, -0.5]]] * 3, "float32")  # (N, T, 2)


def test_panels_rectangles_and_numbers(tmp_path):
    path = tmp_path / "glimpses.png"
    figure = plot_glimpses(IMAGES, LOCATIONS, 4, num_scales=2,
                           titles=["a", "b", "c"], title="t", path=path)
    assert len(figure.axes) == 3 and path.stat().st_size > 1000
    boxes = np.asarray(glimpse_boxes(LOCATIONS, (20, 20), 4, 2))
    for row, ax in enumerate(figure.axes):
        drawn = [(p.get_y() + 0.5, p.get_x() + 0.5, p.get_height(),
                  p.get_width()) for p in ax.patches
                 if isinstance(p, Rectangle)]
        assert drawn == [tuple(box) for box in
                         boxes[row].reshape(-1, 4).tolist()]
        assert [text.get_text() for text in ax.texts] == ["1", "2"]
        assert ax.get_title() == "abc"[row]


@pytest.mark.parametrize("call, message", [
    (lambda: plot_glimpses(IMAGES[0], LOCATIONS, 4), "`images` must be"),
    (lambda: plot_glimpses(IMAGES, LOCATIONS[:2], 4), "`locations` must be"),
    (lambda: plot_glimpses(IMAGES, LOCATIONS[..., :1], 4),
     "`locations` must be"),
    (lambda: plot_glimpses(IMAGES, LOCATIONS, 4, titles=["a"]),
     "`titles` must hold 3"),
])
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
