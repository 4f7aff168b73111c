import numpy as np
import pytest

from keras_attention.visualize import labels


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        # Word starts lose "▁"; continuations get "·".
        (["▁Ein", "▁kleiner", "▁Hund"], ["Ein", "kleiner", "Hund"]),
        (["▁Sch", "nee", "ball", "▁fällt"], ["Sch", "·nee", "·ball", "fällt"]),
        # A lone "▁" is a visible space; the piece after it starts a word.
        (["▁Es", "▁", "2", "0", "▁Uhr"], ["Es", "␣", "2", "·0", "Uhr"]),
        # Control pieces are kept as they are.
        (["<s>", "▁A", "▁dog", ".", "</s>", "<pad>"],
         ["<s>", "A", "dog", "·.", "</s>", "<pad>"]),
        # The first piece has nothing to continue.
        (["nee", "▁A"], ["nee", "A"]),
        # Words without any "▁" are left alone.
        (["a", "dog", "runs", "."], ["a", "dog", "runs", "."]),
    ],
)
def test_clean_pieces_golden(pieces, expected):
    assert labels.clean_pieces(pieces) == expected


def test_bytes_and_arrays_are_decoded():
    pieces = np.array(["▁Hund".encode(), b"e", b"</s>"], dtype=object)
    assert labels.clean_pieces(pieces) == ["Hund", "·e", "</s>"]


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        ("▁Ein ▁Hund", "not one string"),
        (np.array([["a", "b"]]), r"tokens.shape=\(1, 2\)"),
        (["a", 3], "containing 3"),
    ],
)
def test_bad_tokens_name_the_argument(tokens, message):
    with pytest.raises(ValueError, match=message):
        labels.clean_pieces(tokens, "tokens")
