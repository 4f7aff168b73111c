"""The piano roll: one bar per held note, in its voice's colour and at its
pitch; the primer shaded; saved pictures; clear errors."""

import matplotlib.colors
import matplotlib.image
import numpy as np
import pytest

from keras_attention.data.chorales import notes
from keras_attention.visualize import plot_piano_roll
from keras_attention.visualize.piano_roll import VOICE_COLOURS

CHORALE = np.array([[72, 67, 64, 48], [72, 67, 64, 48], [74, 67, 62, -1],
                    [76, 65, 60, 36]])


def _bars(figure):
    """`(voice colour, (start, held), pitch)` of every drawn note."""
    found = []
    for collection in figure.axes[0].collections:
        colour = matplotlib.colors.to_hex(collection.get_facecolor()[0])
        for path in collection.get_paths():
            (x0, y0), (x1, y1) = path.vertices.min(0), path.vertices.max(0)
            found.append((colour, (round(x0), round(x1 - x0)),
                          round((y0 + y1) / 2)))
    return sorted(found)


def test_one_bar_per_note_at_its_pitch_in_its_voice_colour(tmp_path):
    path = tmp_path / "roll.png"
    figure = plot_piano_roll(CHORALE, primer_steps=2, title="t", path=path)
    expected = sorted((VOICE_COLOURS[voice], (start, held), pitch)
                      for voice, pitch, start, held in notes(CHORALE))
    assert _bars(figure) == expected
    shaded = [patch for patch in figure.axes[0].patches
              if patch.get_label() == "primer"]
    assert len(shaded) == 1
    assert matplotlib.image.imread(path).shape[2] == 4  # a PNG was written


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        plot_piano_roll(CHORALE[:, 0])
    with pytest.raises(ValueError, match="float"):
        plot_piano_roll(CHORALE.astype(float))
    with pytest.raises(ValueError, match="at most 4 voices"):
        plot_piano_roll(np.zeros((3, 5), int))
    with pytest.raises(ValueError, match="steps_per_bar=0"):
        plot_piano_roll(CHORALE, steps_per_bar=0)
    with pytest.raises(ValueError, match="primer_steps=-1"):
        plot_piano_roll(CHORALE, primer_steps=-1)
