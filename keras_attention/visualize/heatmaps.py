"""Attention as matplotlib figures: heatmaps, grids of heads, bars per hop.

The figures are `matplotlib.figure.Figure` objects made without pyplot, so
they draw with the Agg backend, need no display and leave no global state;
Jupyter shows a returned figure inline. Each function saves its figure when
given `path`: PNG, SVG or PDF by the file's suffix.

Letters: N heads, T target (query) length, S source (key) length, K hops,
M memory items.

Legibility: a cell's size and the font shrink as sequences grow (0.4 inch
and 11 pt for short ones, down to 0.15 inch and 6 pt), the figure grows
with the sequence and its longest label, and column labels are rotated.
Sequences longer than `max_tokens` (200 by default) raise a ValueError
asking to slice them rather than drawing an unreadable picture.
Token labels are cleaned as `keras_attention.visualize.labels` documents
("▁" word starts removed, continuation pieces shown with a leading "·").
"""

import math
import pathlib
import textwrap

import numpy as np
from matplotlib.figure import Figure

from keras_attention import _validation
from keras_attention.visualize import _arrays

MAX_TOKENS = 200
FORMATS = (".png", ".svg", ".pdf")
_CHAR_INCHES = 0.62 / 72  # a character's width per point of font size


def _cell_inches(count):
    return min(0.4, max(0.15, 16.0 / count))


def _font_points(cell):
    return min(11.0, max(6.0, cell * 72 * 0.6))


def _label_inches(labels, font):
    return max((len(label) for label in labels), default=1) * font * _CHAR_INCHES


def _value_range(arrays):
    """A colour scale shared by panels: from 0 (or the minimum, if some
    weight is negative) to the largest weight."""
    low = min(float(np.min(array)) for array in arrays)
    high = max(float(np.max(array)) for array in arrays)
    low = min(low, 0.0)
    return low, high if high > low else low + 1.0


def save(figure, path, dpi=100):
    """Write `figure` to `path` as PNG, SVG or PDF, chosen by its suffix."""
    path = pathlib.Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(
            f"`path` must end in one of {list(FORMATS)}, received: "
            f"path={str(path)!r}"
        )
    figure.savefig(path, dpi=dpi)
    return path


def _draw_heatmap(ax, matrix, row_labels, column_labels, *, font, vmin, vmax,
                  cmap, values):
    """One (rows, columns) heatmap with every row and column labelled."""
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax,
                      aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(row_labels)), row_labels, fontsize=font)
    rotation = 60 if len(column_labels) <= 30 else 90
    ax.set_xticks(range(len(column_labels)), column_labels, fontsize=font,
                  rotation=rotation, ha="right", rotation_mode="anchor")
    ax.tick_params(length=0)
    if values:
        middle = (vmin + vmax) / 2
        for (row, column), weight in np.ndenumerate(matrix):
            ax.text(column, row, f"{weight:.2f}", ha="center", va="center",
                    fontsize=font * 0.8,
                    color="black" if weight > middle else "white")
    return image


def _auto_values(values, rows, columns):
    return max(rows, columns) <= 12 if values is None else bool(values)


def plot_attention(weights, target_tokens=None, source_tokens=None, *,
                   title=None, path=None, values=None, cmap="viridis",
                   xlabel="source", ylabel="target", clean=True,
                   max_tokens=MAX_TOKENS, dpi=100):
    """A heatmap of one attention matrix, rows = target (query) tokens,
    columns = source (key) tokens.

    Args:
        weights: `(T, S)` numbers (NumPy or any framework's tensor).
        target_tokens, source_tokens: `T` and `S` labels (pieces or words,
            str or bytes); None numbers the rows or columns.
        title: the figure's title.
        path: if given, the figure is saved there (`.png`, `.svg`, `.pdf`).
        values: write each weight in its cell; None does so when both
            lengths are at most 12.
        cmap: a matplotlib colormap name.
        xlabel, ylabel: the axis titles.
        clean: clean SentencePiece pieces for display (`labels`).
        max_tokens: longer sequences raise a ValueError.
        dpi: the resolution of a saved PNG.

    Returns:
        The `matplotlib.figure.Figure`; its axes hold the image (`weights`
        as given) and the labels.

    Example:

    >>> from keras_attention.visualize import plot_attention
    >>> figure = plot_attention([[0.9, 0.1], [0.2, 0.8]],
    ...                         ["▁Ein", "▁Hund"], ["▁A", "▁dog"])
    >>> [t.get_text() for t in figure.axes[0].get_xticklabels()]
    ['A', 'dog']
    """
    matrix = _arrays.weights_array("weights", weights, (2,), "(T, S)")
    rows, columns = matrix.shape
    target = _arrays.axis_labels("target_tokens", target_tokens, rows,
                                 "weights", matrix.shape, "row", "", clean)
    source = _arrays.axis_labels("source_tokens", source_tokens, columns,
                                 "weights", matrix.shape, "column", "", clean)
    _validation.positive_int("max_tokens", max_tokens)
    _arrays.max_tokens_check(max_tokens, target_tokens=rows,
                             source_tokens=columns)
    cell = _cell_inches(max(rows, columns))
    font = _font_points(cell)
    width = columns * cell + _label_inches(target, font) + 1.8
    height = rows * cell + _label_inches(source, font) + 1.2
    figure = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    ax = figure.add_subplot()
    vmin, vmax = _value_range([matrix])
    image = _draw_heatmap(ax, matrix, target, source, font=font, vmin=vmin,
                          vmax=vmax, cmap=cmap,
                          values=_auto_values(values, rows, columns))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    figure.colorbar(image, ax=ax, shrink=0.8)
    if title is not None:
        ax.set_title(title)
    if path is not None:
        save(figure, path, dpi)
    return figure


def plot_heads(weights, target_tokens=None, source_tokens=None, *,
               head_names=None, average=True, columns=None, title=None,
               path=None, values=False, cmap="viridis", clean=True,
               max_tokens=MAX_TOKENS, dpi=100, xlabel=None, ylabel=None):
    """A grid of heatmaps, one per head, plus their average.

    Args:
        weights: `(N, T, S)`, e.g. one example of a layer's
            `return_attention_scores` output `(B, N, T, S)`.
        target_tokens, source_tokens: `T` and `S` labels.
        head_names: `N` panel titles; default `"head 0"`, `"head 1"`, ...
        average: add a last panel, `"average"`, the mean over heads
            (when there are two heads or more).
        columns: panels per row; default `ceil(sqrt(panels))`.
        title, path, values, cmap, clean, max_tokens, dpi: as in
            `plot_attention`; all panels share one colour scale.
        xlabel, ylabel: the figure's column and row axis titles (none by
            default).

    Returns:
        The `Figure`; `figure.axes[:panels]` are the panels in order (the
        colorbar's axes come last).
    """
    heads = _arrays.weights_array("weights", weights, (3,), "(N, T, S)")
    count, rows, length = heads.shape
    target = _arrays.axis_labels("target_tokens", target_tokens, rows,
                                 "weights", heads.shape, "row", "", clean)
    source = _arrays.axis_labels("source_tokens", source_tokens, length,
                                 "weights", heads.shape, "column", "", clean)
    titles = _arrays.names("head_names", head_names, count, "head")
    _validation.positive_int("max_tokens", max_tokens)
    _arrays.max_tokens_check(max_tokens, target_tokens=rows,
                             source_tokens=length)
    panels = list(heads)
    if average and count > 1:
        panels.append(heads.mean(axis=0))  # (T, S)
        titles.append("average")
    columns = (math.ceil(math.sqrt(len(panels))) if columns is None
               else _validation.positive_int("columns", columns))
    grid_rows = math.ceil(len(panels) / columns)
    cell = _cell_inches(max(rows, length))
    font = _font_points(cell)
    panel_width = length * cell + _label_inches(target, font) + 0.5
    panel_height = rows * cell + _label_inches(source, font) + 0.6
    figure = Figure(
        figsize=(columns * panel_width + 1.2, grid_rows * panel_height + 0.6),
        dpi=dpi, layout="constrained",
    )
    axes = figure.subplots(grid_rows, columns, squeeze=False).ravel()
    vmin, vmax = _value_range(panels)
    for ax, panel, name in zip(axes, panels, titles):
        image = _draw_heatmap(ax, panel, target, source, font=font, vmin=vmin,
                              vmax=vmax, cmap=cmap, values=bool(values))
        ax.set_title(name)
    for ax in axes[len(panels):]:
        ax.remove()
    figure.colorbar(image, ax=list(axes[:len(panels)]), shrink=0.8)
    if title is not None:
        figure.suptitle(title)
    if xlabel is not None:
        figure.supxlabel(xlabel)
    if ylabel is not None:
        figure.supylabel(ylabel)
    if path is not None:
        save(figure, path, dpi)
    return figure


def plot_hops(weights, items, *, hop_names=None, title=None, path=None,
              wrap=48, max_items=MAX_TOKENS, dpi=100):
    """One horizontal bar chart per hop of a vector of weights over labelled
    items, e.g. a memory network's attention over its `M` sentences.

    Args:
        weights: `(K, M)` (or `(M,)` for one hop).
        items: `M` labels (sentences are wrapped at `wrap` characters).
        hop_names: `K` panel titles; default `"hop 1"`, `"hop 2"`, ...

    Returns:
        The `Figure`; `figure.axes[k]` holds hop `k`'s bars (item 0 at the
        top), each bar labelled with its weight.
    """
    hops = _arrays.weights_array("weights", weights, (1, 2), "(K, M) or (M,)")
    hops = hops.reshape(-1, hops.shape[-1])  # (K, M)
    count, length = hops.shape
    labels = _arrays.axis_labels("items", items, length, "weights",
                                 hops.shape, "column", "", clean=False)
    titles = _arrays.names("hop_names", hop_names, count, "hop", start=1)
    _validation.positive_int("max_items", max_items)
    _arrays.max_tokens_check(max_items, items=length)
    wrap = _validation.positive_int("wrap", wrap)
    labels = [textwrap.fill(label, wrap) for label in labels]
    lines = sum(label.count("\n") + 1 for label in labels)
    font = _font_points(_cell_inches(lines))
    label_width = max(len(line) for label in labels
                      for line in label.split("\n")) * font * _CHAR_INCHES
    height = lines * font * 1.6 / 72 + 0.25 * length + 1.2
    figure = Figure(figsize=(label_width + 2.6 * count + 0.5, height),
                    dpi=dpi, layout="constrained")
    axes = figure.subplots(1, count, sharey=True, squeeze=False)[0]
    _, high = _value_range([hops])
    for ax, hop, name in zip(axes, hops, titles):
        bars = ax.barh(range(length), hop, color="tab:blue")
        ax.bar_label(bars, fmt="%.2f", fontsize=font * 0.9, padding=2)
        ax.set_xlim(min(0.0, float(hop.min())), high * 1.25)
        ax.set_title(name)
        ax.set_xlabel("weight")
    axes[0].set_yticks(range(length), labels, fontsize=font)
    axes[0].invert_yaxis()
    if title is not None:
        figure.suptitle(title)
    if path is not None:
        save(figure, path, dpi)
    return figure


def plot_pooling(weights, tokens=None, *, hop_names=None, title=None,
                 path=None, values=None, cmap="viridis", clean=True,
                 max_tokens=MAX_TOKENS, dpi=100):
    """Self-attentive pooling's hops over one sentence: a heatmap whose rows
    are the hops and whose columns are the tokens.

    Args:
        weights: `(num_hops, T)` (or `(T,)` for one hop).
        tokens: `T` labels.
        hop_names: row labels; default `"hop 1"`, `"hop 2"`, ...
        title, path, values, cmap, clean, max_tokens, dpi: as in
            `plot_attention`.
    """
    hops = _arrays.weights_array("weights", weights, (1, 2),
                                 "(num_hops, T) or (T,)")
    hops = hops.reshape(-1, hops.shape[-1])  # (num_hops, T)
    count = hops.shape[0]
    hop_names = _arrays.names("hop_names", hop_names, count, "hop", start=1)
    _arrays.axis_labels("tokens", tokens, hops.shape[1], "weights",
                        hops.shape, "column", "", clean)  # names `tokens`
    return plot_attention(hops, hop_names, tokens, title=title, path=path,
                          values=values, cmap=cmap, xlabel="token",
                          ylabel="hop", clean=clean, max_tokens=max_tokens,
                          dpi=dpi)
