"""`plot_glimpses`: where a recurrent attention model looked, its glimpses'
patches drawn on the images.

Letters: N images, H, W their size, T glimpses, k scales.
"""

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from keras_attention.layers.glimpse_sensor import glimpse_boxes
from keras_attention.visualize import heatmaps

COLOURS = ("tab:red", "tab:orange", "tab:green", "tab:cyan", "tab:blue",
           "tab:purple", "tab:pink", "tab:olive")


def plot_glimpses(images, locations, glimpse_size, num_scales=1, scale=2, *,
                  titles=None, title=None, path=None):
    """Draw each image `(N, H, W)` with its glimpses: for every step of
    `locations` `(N, T, 2)` (`(row, column)` in [-1, 1], as
    `RecurrentAttentionModel` returns them), the `num_scales` patches of
    `GlimpseSensor`, one colour per step, numbered in order.

    Returns the `matplotlib.figure.Figure`; with `path`, also saves it.

    Example:

    >>> import numpy as np
    >>> from keras_attention.visualize import plot_glimpses
    >>> images = np.zeros((2, 24, 24), "float32")
    >>> locations = np.array([[[0.0, 0.0], [0.5, -0.5]]] * 2, "float32")
    >>> figure = plot_glimpses(images, locations, 4, num_scales=2,
    ...                        titles=["a", "b"])
    >>> len(figure.axes)
    2
    """
    images = np.asarray(images)
    locations = np.asarray(locations, "float32")
    if images.ndim != 3:
        raise ValueError("`images` must be (N, H, W), received shape "
                         f"{images.shape}")
    if locations.ndim != 3 or locations.shape[0] != images.shape[0] or (
            locations.shape[2] != 2):
        raise ValueError(f"`locations` must be ({images.shape[0]}, T, 2), "
                         f"received shape {locations.shape}")
    if titles is not None and len(titles) != len(images):
        raise ValueError(f"`titles` must hold {len(images)} strings, "
                         f"received {len(titles)}")
    boxes = np.asarray(glimpse_boxes(locations, images.shape[1:],
                                     glimpse_size, num_scales,
                                     scale))  # (N, T, k, 4)
    figure = Figure(figsize=(2.6 * len(images), 2.9), dpi=100,
                    layout="constrained")
    axes = figure.subplots(1, len(images), squeeze=False)[0]
    for row, ax in enumerate(axes):
        ax.imshow(images[row], cmap="gray", vmin=0, vmax=1,
                  interpolation="nearest")
        for step in range(boxes.shape[1]):
            colour = COLOURS[step % len(COLOURS)]
            for level, (top, left, height, width) in enumerate(
                    boxes[row, step]):
                ax.add_patch(Rectangle(
                    (left - 0.5, top - 0.5), width, height, fill=False,
                    edgecolor=colour, linewidth=2.0 - 0.5 * min(level, 2),
                    alpha=1.0 - 0.25 * min(level, 3)))
            top, left, height, width = boxes[row, step, 0]
            ax.text(left + width / 2 - 0.5, top + height / 2 - 0.5,
                    str(step + 1), color=colour, ha="center", va="center",
                    fontsize=11, fontweight="bold")
        if titles is not None:
            ax.set_title(titles[row])
        ax.set_xlim(-0.5, images.shape[2] - 0.5)
        ax.set_ylim(images.shape[1] - 0.5, -0.5)
        ax.set_axis_off()
    if title:
        figure.suptitle(title)
    if path is not None:
        heatmaps.save(figure, path, 100)
    return figure
