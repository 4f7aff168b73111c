"""Digit clips: deterministic from the seed; the pixels are the recorded
paths of the digits; each caption names the recorded events in the order
the frames show them; held-out clips use held-out digit images only;
`ClipVocabulary` covers the grammar; argument errors."""

import numpy as np
import pytest

from keras_attention.data import digit_clips
from keras_attention.data.digit_clips import DIGIT_SIZE
from keras_attention.data.digit_clips import DIRECTIONS
from keras_attention.data.digit_clips import EVENTS
from keras_attention.data.digit_clips import MOVE
from keras_attention.data.digit_clips import ClipVocabulary
from keras_attention.data.digit_clips import generate_clips
from keras_attention.text import digit_scenes

CLIPS = generate_clips(60, seed=3)


def test_the_same_seed_gives_the_same_clips():
    again = generate_clips(60, seed=3)
    for name, values in CLIPS._asdict().items():
        np.testing.assert_array_equal(getattr(again, name), values, name)
    other = generate_clips(60, seed=4)
    assert other.captions != CLIPS.captions
    assert CLIPS.videos.shape == (60, 12, 32, 32)
    assert CLIPS.videos.dtype == np.float32
    assert 0.0 <= CLIPS.videos.min() and CLIPS.videos.max() <= 1.0


def test_the_pixels_are_the_recorded_paths():
    images, _ = digit_scenes.load_digit_images()
    for row in range(10):
        expected = np.zeros_like(CLIPS.videos[row])  # (T, H, W)
        for which in range(2):
            image = digit_scenes.resize(
                images[CLIPS.image_indices[row, which]], DIGIT_SIZE)
            for frame in np.flatnonzero(CLIPS.visible[row, which]):
                top, left = CLIPS.positions[row, which, frame]
                box = expected[frame, top:top + DIGIT_SIZE,
                               left:left + DIGIT_SIZE]
                np.maximum(box, image, out=box)
        np.testing.assert_array_equal(CLIPS.videos[row], expected)


@pytest.mark.parametrize("frames", [8, 12, 16])
def test_captions_name_the_events_in_the_order_they_happen(frames):
    clips = CLIPS if frames == 12 else generate_clips(40, seed=5,
                                                      frames=frames)
    half = frames // 2
    for row, text in enumerate(clips.captions):
        assert text == digit_clips.caption(clips.digits[row],
                                           clips.events[row])
        first, second = text.split(" then ")
        # One event per half, the first before the second.
        (start0, end0), (start1, end1) = clips.event_frames[row]
        assert 1 <= start0 <= end0 < half < start1 <= end1 < frames
        # The frames that change are exactly the events' frames.
        changes = np.abs(np.diff(clips.videos[row], axis=0)).max(axis=(1, 2))
        changed = set(np.flatnonzero(changes > 0) + 1)
        assert changed == (set(range(start0, end0 + 1))
                           | set(range(start1, end1 + 1))), (text, changed)
        # The events happen to the digits the caption names, in its order.
        for which, phrase in enumerate((first, second)):
            digit = clips.digits[row, which]
            event = EVENTS[clips.events[row, which]]
            assert phrase == (digit_scenes.noun_phrase(digit, False) + " "
                              + event)
            path = clips.positions[row, which]
            seen = clips.visible[row, which]
            start, end = clips.event_frames[row, which]
            if event in DIRECTIONS:
                np.testing.assert_array_equal(
                    path[-1] - path[0], MOVE * np.array(DIRECTIONS[event]))
                assert (path[:start] == path[0]).all()
                assert seen.all()
            else:
                assert (path == path[0]).all()
                expected = np.arange(frames) >= start
                if event == "disappears":
                    expected = ~expected
                np.testing.assert_array_equal(seen, expected)


def test_digits_differ_and_their_paths_stay_apart_on_the_canvas():
    assert (CLIPS.digits[:, 0] != CLIPS.digits[:, 1]).all()
    _, labels = digit_scenes.load_digit_images()
    np.testing.assert_array_equal(labels[CLIPS.image_indices], CLIPS.digits)
    for row in range(len(CLIPS.captions)):
        boxes = []
        for which in range(2):
            path = CLIPS.positions[row, which]
            assert path.min() >= 0 and path.max() + DIGIT_SIZE <= 32
            boxes.append((*path.min(0), *(path.max(0) + DIGIT_SIZE)))
        (top0, left0, bottom0, right0), (top1, left1, bottom1, right1) = boxes
        assert (bottom0 < top1 or bottom1 < top0 or right0 < left1
                or right1 < left0)
    # Every event occurs.
    assert set(CLIPS.events.ravel()) == set(range(len(EVENTS)))


def test_held_out_clips_use_held_out_digit_images_only():
    _, labels = digit_scenes.load_digit_images()
    train_pool, test_pool = digit_scenes.split_indices(len(labels))
    test = generate_clips(60, split="test", seed=3)
    assert set(test.image_indices.ravel()) <= set(test_pool)
    assert set(CLIPS.image_indices.ravel()) <= set(train_pool)
    assert not set(test.image_indices.ravel()) & set(train_pool)


def test_the_vocabulary_covers_the_captions():
    vocabulary = ClipVocabulary()
    assert vocabulary.words[:3] == ("<pad>", "<s>", "</s>")
    assert max(len(text.split()) for text in CLIPS.captions) <= (
        vocabulary.max_words)
    inputs, targets = vocabulary.teacher_forcing(CLIPS.captions)
    assert inputs.shape == (60, vocabulary.max_words + 1)
    for text, ids in zip(CLIPS.captions, targets):
        assert vocabulary.decode(ids) == text
    longest = "a three moves right then a seven moves down"
    assert len(longest.split()) == vocabulary.max_words
    with pytest.raises(ValueError, match="small"):
        vocabulary.encode("a small three appears")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"count": 0}, "count=0"),
        ({"split": "val"}, "split='val'"),
        ({"frames": 7}, "frames=7"),
        ({"frames": 17}, "frames=17"),
        ({"frames": 12.0}, "frames=12.0"),
    ],
)
def test_bad_arguments_name_themselves(options, message):
    with pytest.raises(ValueError, match=message):
        generate_clips(**{"count": 2, **options})
