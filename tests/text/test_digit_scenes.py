"""Digit scenes: seeded, captions true to the placement, a split by digit
image, and a vocabulary that round-trips."""

import numpy as np
import pytest

from keras_attention.text import digit_scenes
from keras_attention.text.digit_scenes import CaptionVocabulary
from keras_attention.text.digit_scenes import generate_scenes

WORD_VALUES = {word: value for value, word in enumerate(digit_scenes.DIGIT_WORDS)}


@pytest.fixture(scope="module")
def scenes():
    return generate_scenes(300, split="train", seed=5)


def test_same_seed_same_scenes_other_seed_other_scenes(scenes):
    again = generate_scenes(300, split="train", seed=5)
    np.testing.assert_array_equal(again.images, scenes.images)
    assert again.captions == scenes.captions
    other = generate_scenes(300, split="train", seed=6)
    assert other.captions != scenes.captions
    assert not np.array_equal(other.images, scenes.images)


def parse(caption):
    """`((digit, small), relation, (digit, small))` from a caption."""
    words = caption.split()
    phrases, relation, current = [], None, []
    for word in words:
        if word in ("a", "an"):
            current = []
            phrases.append(current)
        elif word in ("left", "right", "above", "below"):
            relation = word
        elif word != "of":
            current.append(word)
    first, second = [(WORD_VALUES[p[-1]], p[0] == "small") for p in phrases]
    return first, relation, second


def test_captions_match_the_placement_and_the_pixels(scenes):
    images, labels = digit_scenes.load_digit_images()
    for row, text in enumerate(scenes.captions):
        first, relation, second = parse(text)
        assert text.startswith("an " if not first[1] and first[0] == 8
                               else "a ")
        assert (first, second) == tuple(
            zip(scenes.digits[row].tolist(), scenes.small[row].tolist()))
        # The digits' labels are the captioned values.
        assert labels[scenes.image_indices[row]].tolist() == [first[0],
                                                              second[0]]
        # The subject: lower value, then small.
        assert (first[0], not first[1]) <= (second[0], not second[1])
        (top_a, left_a, h_a, w_a), (top_b, left_b, h_b, w_b) = scenes.boxes[row]
        assert h_a == w_a == (8 if first[1] else 12)
        assert h_b == w_b == (8 if second[1] else 12)
        # Along the relation's axis disjoint and ordered; across, overlapping.
        ordered = {
            "left": left_a + w_a < left_b, "right": left_b + w_b < left_a,
            "above": top_a + h_a < top_b, "below": top_b + h_b < top_a,
        }
        assert ordered[relation], (text, scenes.boxes[row])
        if relation in ("left", "right"):
            assert top_a < top_b + h_b and top_b < top_a + h_a
        else:
            assert left_a < left_b + w_b and left_b < left_a + w_a
        # The canvas holds the resized digits in their boxes, nothing else.
        expected = np.zeros_like(scenes.images[row])
        for (top, left, size, _), index in zip(scenes.boxes[row],
                                               scenes.image_indices[row]):
            expected[top:top + size, left:left + size] = digit_scenes.resize(
                images[index], size)
        np.testing.assert_allclose(scenes.images[row], expected, atol=1e-6)
    assert set(scenes.relations.tolist()) == {0, 1, 2, 3}
    assert scenes.small.any() and not scenes.small.all()


def test_resize_keeps_a_constant_image_and_the_mean():
    np.testing.assert_allclose(digit_scenes.resize(np.full((8, 8), 0.5), 12),
                               0.5, atol=1e-6)
    ramp = np.tile(np.arange(8, dtype="float64"), (8, 1))
    grown = digit_scenes.resize(ramp, 12)
    assert grown.shape == (12, 12)
    np.testing.assert_allclose(grown.mean(), ramp.mean(), atol=1e-5)


def test_held_out_scenes_use_held_out_digit_images():
    train, test = digit_scenes.split_indices(1797)
    assert len(test) == 359 and len(train) + len(test) == 1797
    assert not set(train) & set(test)
    held_out = generate_scenes(200, split="test", seed=1)
    assert set(held_out.image_indices.ravel()) <= set(test.tolist())
    seen = generate_scenes(200, split="train", seed=1)
    assert set(seen.image_indices.ravel()) <= set(train.tolist())


def test_vocabulary_round_trip_and_teacher_forcing(scenes):
    vocabulary = CaptionVocabulary()
    assert vocabulary.words[:3] == ("<pad>", "<s>", "</s>")
    assert len(vocabulary) == 21
    for text in scenes.captions:
        assert vocabulary.decode(vocabulary.encode(text)) == text
    inputs, targets = vocabulary.teacher_forcing(["a two above an eight",
                                                  "a small one left of a two"])
    two, eight = vocabulary.index["two"], vocabulary.index["eight"]
    assert inputs.shape == targets.shape == (2, 9)
    assert inputs[0].tolist()[:6] == [1, vocabulary.index["a"], two,
                                      vocabulary.index["above"],
                                      vocabulary.index["an"], eight]
    assert targets[0].tolist()[4:7] == [eight, 2, 0]
    np.testing.assert_array_equal(inputs[:, 1:], np.where(
        targets[:, :-1] == 2, 0, targets[:, :-1]))
    assert max(len(text.split()) for text in scenes.captions) <= (
        vocabulary.max_words)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="split='val'"):
        generate_scenes(2, split="val")
    with pytest.raises(ValueError, match="count=0"):
        generate_scenes(0)
    with pytest.raises(ValueError, match="small_probability=2"):
        generate_scenes(2, small_probability=2)
    with pytest.raises(ValueError, match="dog"):
        CaptionVocabulary().encode("a dog above a two")
    with pytest.raises(ValueError, match="length=3"):
        CaptionVocabulary().teacher_forcing(["a two above a one"], length=3)
