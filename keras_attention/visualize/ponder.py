"""`plot_ponder`: the ponder time of each sentence of a story, as the
Universal Transformer paper's bAbI figure draws it.

Letters: M sentences.
"""

import numpy as np
from matplotlib.figure import Figure

from keras_attention.visualize import heatmaps

QUESTION_COLOUR, SUPPORTING_COLOUR, OTHER_COLOUR = (
    "#555555", "#d62728", "#1f77b4")


def plot_ponder(question, sentences, ponder, supporting=(), *, answer=None,
                path=None):
    """Bars: the ponder time (ACT's steps plus remainder) of the question
    and of each sentence, the supporting sentences in red and starred.

    Args:
        question: str.
        sentences: the story's sentences, oldest first (M str).
        ponder: `(1 + M,)` ponder times, the question's first, then the
            sentences' in the same order (as
            `UniversalTransformerReader(..., return_ponder=True)` returns
            them; extra entries, for empty slots, are ignored).
        supporting: indices (0-based, into `sentences`) of the supporting
            sentences.
        answer: str, shown in the title.
        path: also save the figure there (PNG, SVG or PDF).

    Returns:
        The `matplotlib.figure.Figure`.

    Example:

    >>> from keras_attention.visualize import plot_ponder
    >>> figure = plot_ponder("Where is Mary?", ["Mary went to the office.",
    ...                      "John moved to the garden."], [2.5, 3.1, 2.2],
    ...                      supporting=[0], answer="office")
    >>> len(figure.axes[0].patches)
    3
    """
    sentences = list(sentences)
    ponder = np.asarray(ponder, "float64").reshape(-1)
    if len(ponder) < 1 + len(sentences):
        raise ValueError(
            "`ponder` must hold the question's and every sentence's ponder "
            f"time, {1 + len(sentences)} values, received: "
            f"{len(ponder)} values")
    supporting = set(int(index) for index in supporting)
    labels = [f"Q: {question}"] + [
        f"{'*' if i in supporting else ' '} {text}"
        for i, text in enumerate(sentences)]
    colours = [QUESTION_COLOUR] + [
        SUPPORTING_COLOUR if i in supporting else OTHER_COLOUR
        for i in range(len(sentences))]
    figure = Figure(figsize=(7.0, 0.32 * len(labels) + 1.0))
    axes = figure.add_subplot()
    axes.barh(range(len(labels)), ponder[:len(labels)], color=colours)
    axes.set_yticks(range(len(labels)), labels, fontsize="small")
    axes.invert_yaxis()
    axes.set_xlabel("ponder time (steps + remainder); * supporting")
    if answer is not None:
        axes.set_title(f"answer: {answer}")
    figure.tight_layout()
    if path is not None:
        heatmaps.save(figure, path)
    return figure
