"""The long-range retrieval documents: the facts early, the question at the
end, its answer the value written after the asked key."""

import numpy as np
import pytest

from keras_attention.data import long_range


def test_documents_hold_their_facts_early_and_end_with_the_answer():
    ids = long_range.vocabulary()
    tokens, answers, positions = long_range.generate_documents(
        50, 300, num_facts=4, seed=3)
    assert tokens.shape == (50, 300) and tokens.dtype == np.int32
    assert np.all(tokens[:, 0] == long_range.BOS_ID)
    assert np.all(tokens[:, -3] == long_range.QUESTION_ID)
    np.testing.assert_array_equal(tokens[:, -1], answers)
    body = 300 - 4
    for row in range(50):
        keys = tokens[row, positions[row]]
        values = tokens[row, positions[row] + 1]
        assert all(key in ids["keys"] for key in keys)
        assert all(value in ids["values"] for value in values)
        assert len(set(keys.tolist())) == 4  # distinct keys
        assert np.all(positions[row] + 1 < 1 + int(body * 0.1))  # early
        asked = tokens[row, -2]
        (index,) = np.flatnonzero(keys == asked)
        assert answers[row] == values[index]
        # Everywhere else in the body: filler words only.
        others = np.ones(300, bool)
        others[[0, 297, 298, 299]] = False
        others[positions[row]] = others[positions[row] + 1] = False
        assert all(token in ids["fillers"] for token in tokens[row, others])
    again = long_range.generate_documents(50, 300, num_facts=4, seed=3)
    np.testing.assert_array_equal(again[0], tokens)
    other = long_range.generate_documents(50, 300, num_facts=4, seed=4)
    assert not np.array_equal(other[0], tokens)


def test_every_fact_is_asked_about_and_answers_vary():
    tokens, answers, positions = long_range.generate_documents(
        400, 100, num_facts=3, seed=0)
    asked = np.array([np.flatnonzero(tokens[row, positions[row]]
                                     == tokens[row, -2])[0]
                      for row in range(400)])
    assert set(asked.tolist()) == {0, 1, 2}
    assert len(set(answers.tolist())) == 16


@pytest.mark.parametrize(
    "kwargs, message",
    [({"length": 20, "num_facts": 4}, "too few for 4 facts"),
     ({"num_facts": 20}, "num_facts=20, num_keys=16"),
     ({"early": 0.0}, "early=0.0"),
     ({"count": 0}, "count=0")])
def test_errors_name_the_argument(kwargs, message):
    options = {"count": 2, "length": 200, **kwargs}
    with pytest.raises(ValueError, match=message):
        long_range.generate_documents(**options)
