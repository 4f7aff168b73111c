"""Where a captioner looks: the image once per generated word, with that
step's attention over the feature map's locations laid over it (Xu et al.
2015, figures 2-3).

Letters: T words, L = h * w locations, H, W image height and width.
"""

import math

import numpy as np
from matplotlib.figure import Figure

from keras_attention import _validation
from keras_attention.visualize import _arrays
from keras_attention.visualize import heatmaps
from keras_attention.visualize import labels as labels_lib


def _grid(grid, locations, image_shape):
    """`(h, w)` checked against the attention's L and the image's size."""
    if (not isinstance(grid, (tuple, list)) or len(grid) != 2
            or any(isinstance(s, bool) or not isinstance(s, int) or s <= 0
                   for s in grid)):
        raise ValueError(f"`grid` must be two positive ints (h, w), received: "
                         f"grid={grid!r}")
    height, width = grid
    if height * width != locations:
        raise ValueError(
            f"`grid` must have h * w = L = {locations} (the attention's last "
            f"axis), received: grid={tuple(grid)}")
    if image_shape[0] % height or image_shape[1] % width:
        raise ValueError(
            f"`grid` must divide the image's height and width, received: "
            f"grid={tuple(grid)}, image.shape={tuple(image_shape)}")
    return height, width


def upsample_attention(attention, grid, image_shape):
    """Attention over `h x w` locations `(T, L)` as maps over the image's
    pixels `(T, H, W)`: each location's weight spread evenly over its
    `(H / h) x (W / w)` block, so a map sums to what its row sums to and
    its largest block is the row's largest location.

    Example:

    >>> from keras_attention.visualize.image_attention import upsample_attention
    >>> maps = upsample_attention([[0.75, 0.25]], (1, 2), (2, 4))
    >>> maps[0].tolist()
    [[0.1875, 0.1875, 0.0625, 0.0625], [0.1875, 0.1875, 0.0625, 0.0625]]
    """
    weights = _arrays.weights_array("attention", attention, (2,), "(T, L)")
    height, width = _grid(grid, weights.shape[1], image_shape)
    block = (image_shape[0] // height, image_shape[1] // width)
    maps = weights.reshape(-1, height, width)  # (T, L) -> (T, h, w)
    maps = np.repeat(np.repeat(maps, block[0], axis=1), block[1], axis=2)
    return maps / (block[0] * block[1])  # (T, H, W)


def plot_image_attention(image, attention, words, grid, *, path=None,
                         columns=None, alpha=0.6, cmap="jet", title=None,
                         dpi=100):
    """The image, then one panel per generated word: the image in grey with
    the word's attention (upsampled by `upsample_attention`) over it.

    Args:
        image: `(H, W)` numbers (e.g. floats in [0, 1]).
        attention: `(T, L)`, one row per word (e.g. one example of
            `greedy_decode`'s attention, cut at the caption's end).
        words: T labels.
        grid: `(h, w)`, the feature map's shape (`h * w = L`); h and w must
            divide H and W.
        path: if given, the figure is saved there (`.png`, `.svg`, `.pdf`).
        columns: panels per row; default `min(T + 1, 6)`.
        alpha: the overlay's opacity.
        cmap: the overlay's colormap; each panel scales it from 0 to its
            map's largest weight.
        title: the figure's title.
        dpi: the resolution of a saved PNG.

    Returns:
        The `Figure`; `figure.axes[0]` is the image, `figure.axes[1 + t]`
        the panel of word t, whose second image holds the upsampled map.

    Example:

    >>> import numpy as np
    >>> from keras_attention.visualize.image_attention import (
    ...     plot_image_attention)
    >>> figure = plot_image_attention(np.zeros((8, 8)), np.full((2, 4), 0.25),
    ...                               ["a", "two"], grid=(2, 2))
    >>> [ax.get_title() for ax in figure.axes]
    ['image', 'a', 'two']
    """
    picture = _arrays.weights_array("image", image, (2,), "(H, W)")
    weights = _arrays.weights_array("attention", attention, (2,), "(T, L)")
    words = labels_lib.as_strings("words", words)
    if len(words) != weights.shape[0]:
        raise ValueError(
            f"`words` must have one word per row of `attention` "
            f"({weights.shape[0]}), received: len(words)={len(words)}")
    maps = upsample_attention(weights, grid, picture.shape)  # (T, H, W)
    panels = len(words) + 1
    columns = (min(panels, 6) if columns is None
               else _validation.positive_int("columns", columns))
    rows = math.ceil(panels / columns)
    figure = Figure(figsize=(1.8 * columns, 1.9 * rows + 0.3 * bool(title)),
                    dpi=dpi, layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    extent = (-0.5, picture.shape[1] - 0.5, picture.shape[0] - 0.5, -0.5)
    for index, ax in enumerate(axes):
        if index >= panels:
            figure.delaxes(ax)
            continue
        ax.imshow(picture, cmap="gray", interpolation="nearest")
        if index == 0:
            ax.set_title("image")
        else:
            ax.imshow(maps[index - 1], cmap=cmap, alpha=alpha, extent=extent,
                      interpolation="nearest", vmin=0.0)
            ax.set_title(words[index - 1])
        ax.set_axis_off()
    if title is not None:
        figure.suptitle(title)
    if path is not None:
        heatmaps.save(figure, path, dpi)
    return figure
