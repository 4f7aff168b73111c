"""sacreBLEU by source-length bucket (Bahdanau et al., 2015, Fig. 2):
`bleu_by_length` against sacrebleu run directly on buckets built by hand,
and `Translator.evaluate(by_length=...)` scoring its one translation.
No model is trained: a stub stands in for the translation."""

import pytest
import sacrebleu

from keras_attention.translator import Translator
from keras_attention.translator import bleu_by_length


def words(count):
    """A source sentence of `count` whitespace-separated words."""
    return " ".join(f"w{index}" for index in range(count))


# (source length in words, hypothesis, reference); 10 and 15 are on edges,
# and no sentence has 21-25 words.
SENTENCES = [
    (3, "a man sees the small dog in the park",
     "a man sees a small dog in the park"),
    (10, "the woman reads a book on the train",
     "the woman reads a book on the train"),
    (11, "two children play with a red ball",
     "two kids play with the red ball"),
    (15, "the old man cooks dinner for his family",
     "an old man cooks food for the family"),
    (16, "a dog runs across the green field",
     "the dog runs over the green grass"),
    (26, "the girls sing a song in the school",
     "the girls sing songs at school today"),
    (40, "a cat sleeps under the warm sun",
     "a cat sleeps in the warm sun"),
]
SOURCES = [words(count) for count, _, _ in SENTENCES]
HYPOTHESES = [hypothesis for _, hypothesis, _ in SENTENCES]
REFERENCES = [reference for _, _, reference in SENTENCES]


def sacrebleu_of(indices):
    return sacrebleu.BLEU().corpus_score(
        [HYPOTHESES[i] for i in indices],
        [[REFERENCES[i] for i in indices]]).score


def test_each_bucket_scores_its_own_sentences():
    rows = bleu_by_length(SOURCES, HYPOTHESES, REFERENCES)
    by_hand = {"1-10": [0, 1], "11-15": [2, 3], "16-20": [4], "21-25": [],
               "26+": [5, 6]}
    assert [row["words"] for row in rows] == list(by_hand)
    assert [row["sentences"] for row in rows] == [2, 2, 1, 0, 2]
    assert sum(row["sentences"] for row in rows) == len(SOURCES)
    for row in rows:
        indices = by_hand[row["words"]]
        if indices:
            assert row["bleu"] == pytest.approx(sacrebleu_of(indices),
                                                abs=1e-9)
        else:
            assert row["bleu"] is None
    # The buckets' scores are their own, not the whole set's.
    scores = [row["bleu"] for row in rows if row["bleu"] is not None]
    assert len(set(scores)) == len(scores)
    assert sacrebleu_of(range(len(SOURCES))) not in scores
    assert rows[0]["bleu"] > 50 > rows[2]["bleu"] > 0


def test_other_edges_and_a_sentence_on_an_edge():
    # An edge's own length closes its bucket: 10 words are in 4-10.
    rows = bleu_by_length(SOURCES, HYPOTHESES, REFERENCES, edges=[3, 10])
    assert [(row["words"], row["sentences"]) for row in rows] == [
        ("1-3", 1), ("4-10", 1), ("11+", 5)]
    assert rows[1]["bleu"] == pytest.approx(100.0)
    assert rows[2]["bleu"] == pytest.approx(sacrebleu_of([2, 3, 4, 5, 6]))
    # Consecutive edges give one-length buckets; words are split on any
    # whitespace.
    rows = bleu_by_length(["a  b\tc", "a b", ""], ["x", "y", "z"],
                          ["x", "y", "z"], edges=(2, 3))
    assert [(row["words"], row["sentences"]) for row in rows] == [
        ("1-2", 2), ("3", 1), ("4+", 0)]


def test_no_sentences_gives_empty_buckets():
    rows = bleu_by_length([], [], [], edges=(5,))
    assert rows == [{"words": "1-5", "sentences": 0, "bleu": None},
                    {"words": "6+", "sentences": 0, "bleu": None}]


@pytest.mark.parametrize("edges", [
    (10, 5), (10, 10), (0, 5), (-3,), (), (10.0, 20), (True, 5), "10",
    None, 10])
def test_bad_edges(edges):
    with pytest.raises(ValueError) as error:
        bleu_by_length(SOURCES, HYPOTHESES, REFERENCES, edges=edges)
    assert str(error.value) == (
        "`edges` must be positive, strictly increasing ints (e.g. "
        f"(10, 15, 20, 25)), received: edges={edges!r}")


def test_unequal_lengths():
    with pytest.raises(ValueError, match=r"`sources`, `hypotheses` and "
                                         r"`references` must have the same "
                                         r"length, received: 7, 7 and 6"):
        bleu_by_length(SOURCES, HYPOTHESES, REFERENCES[:-1])


class StubTranslator(Translator):
    """A `Translator` whose translation is looked up, counting the calls."""

    def __init__(self):
        self.calls = []

    def translate(self, texts, batch_size=64, on_batch=None):
        self.calls.append(list(texts))
        return [HYPOTHESES[SOURCES.index(text)] for text in texts]


def test_evaluate_by_length_reuses_the_one_translation():
    translator = StubTranslator()
    pairs = list(zip(SOURCES, REFERENCES))
    result = translator.evaluate(pairs, by_length=(10, 15, 20, 25))
    assert translator.calls == [SOURCES]
    assert result["by_length"] == bleu_by_length(SOURCES, HYPOTHESES,
                                                 REFERENCES)
    assert result["bleu"] == pytest.approx(sacrebleu_of(range(len(SOURCES))))
    assert "by_length" not in translator.evaluate(pairs)


def test_evaluate_checks_the_edges_before_translating():
    translator = StubTranslator()
    with pytest.raises(ValueError, match=r"`by_length` must be positive, "
                                         r".*received: by_length=\[20, 10\]"):
        translator.evaluate(list(zip(SOURCES, REFERENCES)),
                            by_length=[20, 10])
    assert translator.calls == []
