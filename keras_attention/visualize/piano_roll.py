"""`plot_piano_roll`: a four-voice chorale as a piano roll.

Letters: T steps (16th notes), V voices.
"""

import numpy as np
from matplotlib.figure import Figure

from keras_attention import _validation
from keras_attention.visualize import heatmaps

VOICE_COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd")  # S, A, T, B
VOICE_NAMES = ("soprano", "alto", "tenor", "bass")


def plot_piano_roll(chorale, *, primer_steps=0, title=None, path=None,
                    steps_per_bar=16):
    """Draw a chorale `(T, V)` of MIDI pitches (-1: silent) as a piano
    roll: time across (16th-note steps), pitch up, one colour per voice,
    a held pitch one bar. The first `primer_steps` steps (a primer the
    model continued) are shaded; bar lines every `steps_per_bar` steps.

    Returns the `matplotlib.figure.Figure`; with `path`, also saves it
    (PNG, SVG or PDF).

    Example:

    >>> import numpy as np
    >>> from keras_attention.visualize import plot_piano_roll
    >>> chorale = np.array([[72, 67, 64, 48]] * 8 + [[74, 67, 65, 50]] * 8)
    >>> figure = plot_piano_roll(chorale, primer_steps=8, title="a cadence")
    >>> len(figure.axes)
    1
    """
    steps_per_bar = _validation.positive_int("steps_per_bar", steps_per_bar)
    if (isinstance(primer_steps, bool) or not isinstance(primer_steps, int)
            or primer_steps < 0):
        raise ValueError(
            "`primer_steps` must be an int >= 0, received: "
            f"primer_steps={primer_steps!r}")
    chorale = np.asarray(chorale)
    if chorale.ndim != 2 or not np.issubdtype(chorale.dtype, np.integer):
        raise ValueError(
            "`chorale` must be ints of shape (steps, voices), received: "
            f"shape {chorale.shape} and dtype {chorale.dtype}")
    steps, voices = chorale.shape
    if voices > len(VOICE_COLOURS):
        raise ValueError(
            f"`chorale` may have at most {len(VOICE_COLOURS)} voices, "
            f"received: shape {chorale.shape}")
    width = min(max(4.0, steps * 0.06), 24.0)
    figure = Figure(figsize=(width, 3.6))
    axes = figure.add_subplot()
    if primer_steps:
        axes.axvspan(0, primer_steps, color="0.9", zorder=0,
                     label="primer")
    for voice in range(voices):
        line = chorale[:, voice]
        start = 0
        first = True
        for step in range(1, steps + 1):
            if step == steps or line[step] != line[start]:
                if line[start] != -1:
                    axes.broken_barh(
                        [(start, step - start)], (line[start] - 0.4, 0.8),
                        color=VOICE_COLOURS[voice], zorder=2,
                        label=VOICE_NAMES[voice] if first else None)
                    first = False
                start = step
    for bar in range(0, steps + 1, steps_per_bar):
        axes.axvline(bar, color="0.75", linewidth=0.5, zorder=1)
    sounding = chorale[chorale >= 0]
    if sounding.size:
        axes.set_ylim(sounding.min() - 2, sounding.max() + 2)
    axes.set_xlim(0, max(steps, 1))
    axes.set_xlabel("16th-note step")
    axes.set_ylabel("MIDI pitch")
    if title:
        axes.set_title(title)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22),
                fontsize="small", ncol=5, frameon=False)
    figure.tight_layout()
    if path is not None:
        heatmaps.save(figure, path)
    return figure
