"""The synthetic English→German corpus: agreement, word order, splits."""

import re

import pytest

from keras_attention.text import synthetic
from keras_attention.text.synthetic import ADVERBS
from keras_attention.text.synthetic import CONJUNCTIONS
from keras_attention.text.synthetic import NOUNS
from keras_attention.text.synthetic import VERBS
from keras_attention.text.synthetic import Clause
from keras_attention.text.synthetic import NounPhrase
from keras_attention.text.synthetic import Place
from keras_attention.text.synthetic import Sentence
from keras_attention.text.synthetic import adjective_ending
from keras_attention.text.synthetic import generate_pairs
from keras_attention.text.synthetic import render
from keras_attention.text.synthetic import synthetic_corpus

MAN, WOMAN, DOG, BOOK = (NounPhrase(n) for n in ("man", "woman", "dog", "book"))
WOMAN_READS = Clause(WOMAN, "read", BOOK)
MAN_SEES = Clause(MAN, "see", DOG)


def clause(subject, verb, obj, tense="present", place=None):
    return Clause(subject, verb, obj, tense, place)


def words(text):
    return re.findall(r"[^\s.,]+", text)


GOLDEN = [
    # gender and case of definite articles: m nom/acc, f nom, n acc
    (Sentence(MAN_SEES), "The man sees the dog.", "Der Mann sieht den Hund."),
    (Sentence(WOMAN_READS), "The woman reads the book.", "Die Frau liest das Buch."),
    (
        Sentence(clause(NounPhrase("child", definite=False), "eat",
                        NounPhrase("apple", definite=False))),
        "A child eats an apple.",
        "Ein Kind isst einen Apfel.",
    ),
    (
        Sentence(clause(NounPhrase("man", True), "see", NounPhrase("dog", True))),
        "The men see the dogs.",
        "Die Männer sehen die Hunde.",
    ),
    # adjective endings: weak after der, mixed after ein, strong without article
    (
        Sentence(clause(NounPhrase("man", adjective="old"), "see",
                        NounPhrase("dog", adjective="small"))),
        "The old man sees the small dog.",
        "Der alte Mann sieht den kleinen Hund.",
    ),
    (
        Sentence(clause(NounPhrase("man", definite=False, adjective="old"), "see",
                        NounPhrase("dog", definite=False, adjective="small"))),
        "An old man sees a small dog.",
        "Ein alter Mann sieht einen kleinen Hund.",
    ),
    (
        Sentence(clause(NounPhrase("girl", definite=False, adjective="young"), "read",
                        NounPhrase("book", definite=False, adjective="new"))),
        "A young girl reads a new book.",
        "Ein junges Mädchen liest ein neues Buch.",
    ),
    (
        Sentence(clause(NounPhrase("woman", definite=False, adjective="tired"), "find",
                        NounPhrase("bag", definite=False, adjective="red"))),
        "A tired woman finds a red bag.",
        "Eine müde Frau findet eine rote Tasche.",
    ),
    (
        Sentence(clause(NounPhrase("dog", True, False, "hungry"), "eat",
                        NounPhrase("apple", True, False, "big"))),
        "Hungry dogs eat big apples.",
        "Hungrige Hunde essen große Äpfel.",
    ),
    (
        Sentence(clause(NounPhrase("woman", True, adjective="happy"), "buy",
                        NounPhrase("umbrella", definite=False, adjective="black"))),
        "The happy women buy a black umbrella.",
        "Die glücklichen Frauen kaufen einen schwarzen Regenschirm.",
    ),
    # dative after prepositions: plural -n, in dem -> im, no -n after -n/-s
    (
        Sentence(clause(MAN, "see", DOG,
                        place=Place("with", NounPhrase("child", True)))),
        "The man sees the dog with the children.",
        "Der Mann sieht den Hund mit den Kindern.",
    ),
    (
        Sentence(clause(WOMAN, "read", BOOK,
                        place=Place("in", NounPhrase("house", adjective="big")))),
        "The woman reads the book in the big house.",
        "Die Frau liest das Buch im großen Haus.",
    ),
    (
        Sentence(clause(MAN, "find", NounPhrase("key"),
                        place=Place("under", NounPhrase("table", definite=False)))),
        "The man finds the key under a table.",
        "Der Mann findet den Schlüssel unter einem Tisch.",
    ),
    (
        Sentence(clause(MAN, "find", NounPhrase("key"), place=Place("in", NounPhrase(
            "kitchen", definite=False, adjective="clean")))),
        "The man finds the key in a clean kitchen.",
        "Der Mann findet den Schlüssel in einer sauberen Küche.",
    ),
    (
        Sentence(clause(MAN, "see", DOG,
                        place=Place("next to", NounPhrase("car", True)))),
        "The man sees the dog next to the cars.",
        "Der Mann sieht den Hund neben den Autos.",
    ),
    (
        Sentence(clause(MAN, "wash", DOG,
                        place=Place("with", NounPhrase("dog", True, False, "small")))),
        "The man washes the dog with small dogs.",
        "Der Mann wäscht den Hund mit kleinen Hunden.",
    ),
    # V2 after a time adverb
    (
        Sentence(MAN_SEES, adverb="today"),
        "Today the man sees the dog.",
        "Heute sieht der Mann den Hund.",
    ),
    (
        Sentence(clause(NounPhrase("girl", True), "eat",
                        NounPhrase("apple", True, False)), adverb="every day"),
        "Every day the girls eat apples.",
        "Jeden Tag essen die Mädchen Äpfel.",
    ),
    # perfect: participle at the end, auxiliary agrees
    (
        Sentence(clause(MAN, "see", DOG, "perfect")),
        "The man has seen the dog.",
        "Der Mann hat den Hund gesehen.",
    ),
    (
        Sentence(clause(NounPhrase("man", True), "see", NounPhrase("dog", True),
                        "perfect")),
        "The men have seen the dogs.",
        "Die Männer haben die Hunde gesehen.",
    ),
    (
        Sentence(clause(MAN, "see", DOG, "past", Place("in", NounPhrase("park"))),
                 adverb="yesterday"),
        "Yesterday the man saw the dog in the park.",
        "Gestern hat der Mann den Hund im Park gesehen.",
    ),
    # separable verbs: particle closes the main clause
    (
        Sentence(clause(WOMAN, "call", NounPhrase("doctor"),
                        place=Place("in", NounPhrase("park")))),
        "The woman calls the doctor in the park.",
        "Die Frau ruft den Arzt im Park an.",
    ),
    (
        Sentence(clause(WOMAN, "call", NounPhrase("doctor"), "perfect")),
        "The woman has called the doctor.",
        "Die Frau hat den Arzt angerufen.",
    ),
    # subordinate clauses: comma, verb-final, joined separable verb, V2 after
    (
        Sentence(MAN_SEES, conjunction="because", subordinate=WOMAN_READS),
        "The man sees the dog because the woman reads the book.",
        "Der Mann sieht den Hund, weil die Frau das Buch liest.",
    ),
    (
        Sentence(MAN_SEES, conjunction="although",
                 subordinate=clause(WOMAN, "read", BOOK, "perfect")),
        "The man sees the dog although the woman has read the book.",
        "Der Mann sieht den Hund, obwohl die Frau das Buch gelesen hat.",
    ),
    (
        Sentence(MAN_SEES, conjunction="while",
                 subordinate=clause(WOMAN, "call", NounPhrase("doctor"))),
        "The man sees the dog while the woman calls the doctor.",
        "Der Mann sieht den Hund, während die Frau den Arzt anruft.",
    ),
    (
        Sentence(MAN_SEES, conjunction="because", subordinate=WOMAN_READS,
                 subordinate_first=True),
        "Because the woman reads the book, the man sees the dog.",
        "Weil die Frau das Buch liest, sieht der Mann den Hund.",
    ),
    (
        Sentence(MAN_SEES, conjunction="when", subordinate=WOMAN_READS),
        "The man sees the dog when the woman reads the book.",
        "Der Mann sieht den Hund, wenn die Frau das Buch liest.",
    ),
    (
        Sentence(clause(MAN, "see", DOG, "past"), conjunction="when",
                 subordinate=clause(WOMAN, "read", BOOK, "past")),
        "The man saw the dog when the woman read the book.",
        "Der Mann hat den Hund gesehen, als die Frau das Buch gelesen hat.",
    ),
]


@pytest.mark.parametrize("sentence, english, german", GOLDEN)
def test_golden_translations(sentence, english, german):
    assert render(sentence) == (english, german)


def test_adjective_endings_cover_the_full_paradigm():
    table = {
        (definite, case): " ".join(
            adjective_ending(gender, case, False, definite) for gender in "mfn"
        )
        + " " + adjective_ending("m", case, True, definite)
        for definite in (True, False) for case in ("nom", "acc", "dat")
    }
    assert table == {  # m f n plural
        (True, "nom"): "e e e en", (True, "acc"): "en e e en",
        (True, "dat"): "en en en en", (False, "nom"): "er e es e",
        (False, "acc"): "en e es e", (False, "dat"): "en en en en",
    }


def test_lexicon_sizes_and_genders():
    assert 65 <= len(NOUNS) <= 75
    assert 25 <= len(synthetic.ADJECTIVES) <= 35
    assert 30 <= len(VERBS) <= 40
    assert len(ADVERBS) == 12 and len(synthetic.PREPOSITIONS) == 6
    assert {noun.gender for noun in NOUNS.values()} == {"m", "f", "n"}
    assert all(noun.german[0].isupper() for noun in NOUNS.values())
    assert sum(bool(verb.particle) for verb in VERBS.values()) >= 3


@pytest.fixture(scope="module")
def pairs():
    return generate_pairs(20000, 0)


def test_vocabulary_size_and_coverage(pairs):
    english = {w.lower() for e, _ in pairs for w in words(e)}
    german = {w.lower() for _, g in pairs for w in words(g)}
    assert 250 <= len(english) <= 350, len(english)
    assert 350 <= len(german) <= 480, len(german)
    for noun in NOUNS.values():
        assert noun.english in english and noun.german.lower() in german
    for verb in VERBS.values():
        assert verb.german_participle in german


def test_lengths_and_orthography(pairs):
    for english, german in pairs:
        for side in (english, german):
            assert 4 <= len(side.split()) <= 20
            assert side[0].isupper() and side.endswith(".") and side.count(".") == 1
            assert "  " not in side and " ," not in side
        capitalised = {w for w in words(english)[1:] if not w.islower()}
        assert capitalised <= {"Sunday"}, english


def test_german_capitals_are_nouns_and_commas_mark_clauses(pairs):
    noun_forms = {f for n in NOUNS.values() for f in (n.german, n.german_plural)}
    noun_forms |= {form + "n" for form in noun_forms}  # dative plural
    noun_forms |= {w for german, _ in ADVERBS.values() for w in german.split()[1:]}
    conjunctions = {c for forms in CONJUNCTIONS.values() for c in forms}
    for english, german in pairs:
        tokens = words(german)
        assert {t for t in tokens[1:] if t[0].isupper()} <= noun_forms, german
        clauses = sum(t.lower() in conjunctions for t in tokens)
        assert german.count(",") == clauses <= 1, german
        leading = english.split()[0].lower() in CONJUNCTIONS
        assert english.count(",") == (1 if leading else 0), english


def test_verb_second_and_verb_final_in_generated_text(pairs):
    finite = {"hat", "haben"}
    joined = set()
    for verb in VERBS.values():
        finite |= {verb.german_3sg, verb.german_3pl}
        joined |= {verb.particle + verb.german_3sg, verb.particle + verb.german_3pl}
    adverbs = [german.split() for german, _ in ADVERBS.values()]
    conjunctions = {c for forms in CONJUNCTIONS.values() for c in forms}
    checked = {"adverb": 0, "final": 0, "after clause": 0}
    for _, german in pairs:
        tokens = german.lower().rstrip(".").split()
        for adverb in adverbs:
            if tokens[: len(adverb)] == [word.lower() for word in adverb]:
                assert tokens[len(adverb)] in finite, german
                checked["adverb"] += 1
        clauses = german.rstrip(".").split(", ")
        for index, part in enumerate(clauses):
            if part.split()[0].lower() in conjunctions:
                assert part.split()[-1] in finite | joined, german
                checked["final"] += 1
                if index == 0:
                    assert clauses[1].split()[0] in finite, german
                    checked["after clause"] += 1
    assert min(checked.values()) > 500, checked


def test_generate_pairs_is_deterministic():
    assert generate_pairs(50, 3) == generate_pairs(50, 3)
    assert generate_pairs(50, 3) != generate_pairs(50, 4)
    assert generate_pairs(10, 3) == generate_pairs(50, 3)[:10]
    assert generate_pairs(0, 3) == []


def test_corpus_splits_are_disjoint_sized_and_deterministic():
    corpus = synthetic_corpus(train_size=3000, val_size=200, test_size=100, seed=1)
    assert {k: len(v) for k, v in corpus.items()} == {
        "train": 3000, "val": 200, "test": 100
    }
    english = [{e for e, _ in corpus[k]} for k in ("train", "val", "test")]
    assert sum(map(len, english)) == 3300  # distinct, so no overlap
    assert corpus == synthetic_corpus(3000, 200, 100, seed=1)
    assert corpus["val"] != synthetic_corpus(3000, 200, 100, seed=2)["val"]
    smaller = synthetic_corpus(train_size=10, val_size=200, test_size=100, seed=1)
    assert smaller["val"] == corpus["val"] and smaller["test"] == corpus["test"]
    assert smaller["train"] == corpus["train"][:10]


def test_default_corpus_sizes():
    corpus = synthetic_corpus()
    assert [len(corpus[k]) for k in ("train", "val", "test")] == [20000, 500, 500]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: generate_pairs(-1, 0), "count=-1"),
        (lambda: generate_pairs(2.0, 0), "count=2.0"),
        (lambda: generate_pairs(True, 0), "count=True"),
        (lambda: generate_pairs(1, "0"), "seed='0'"),
        (lambda: synthetic_corpus(train_size=-5), "train_size=-5"),
        (lambda: synthetic_corpus(val_size=None), "val_size=None"),
        (lambda: synthetic_corpus(test_size=1.5), "test_size=1.5"),
        (lambda: synthetic_corpus(seed=0.5), "seed=0.5"),
    ],
)
def test_invalid_arguments(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_negative_seed_is_valid():
    assert len(generate_pairs(3, -7)) == 3
