"""bAbI: the reader, its errors, the vectorizer, and the generator (read
back exactly, answers checked by an independent simulation)."""

import gzip
import re

import numpy as np
import pytest

from keras_attention.text import babi
from keras_attention.text.babi import BabiSample
from keras_attention.text.babi import BabiVocabulary
from keras_attention.text.babi import generate_babi
from keras_attention.text.babi import parse_babi
from keras_attention.text.babi import read_babi
from keras_attention.text.babi import vectorize_babi
from keras_attention.text.babi import write_babi

TEXT = """\
1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Sandra moved to the garden.
6 Where is Daniel? \thallway\t4
1 John picked up the apple there.
2 Where is John? \tnowhere\t1
"""


def test_reads_samples_with_the_story_up_to_each_question(tmp_path):
    path = tmp_path / "qa.txt"
    path.write_text(TEXT)
    samples = read_babi(path)
    assert samples == [
        BabiSample(("Mary moved to the bathroom.", "John went to the hallway."),
                   (1, 2), "Where is Mary?", "bathroom", (1,)),
        BabiSample(("Mary moved to the bathroom.", "John went to the hallway.",
                    "Daniel went back to the hallway.",
                    "Sandra moved to the garden."),
                   (1, 2, 4, 5), "Where is Daniel?", "hallway", (4,)),
        BabiSample(("John picked up the apple there.",), (1,), "Where is John?",
                   "nowhere", (1,)),
    ]
    gzipped = tmp_path / "qa.txt.gz"
    gzipped.write_bytes(gzip.compress(TEXT.encode()))
    assert read_babi(gzipped) == samples


@pytest.mark.parametrize(
    "line, number, message",
    [
        ("Mary moved.", 1, "must start with a line ID"),
        ("2 Mary moved.", 1, "has ID 2, expected 1"),
        ("1 Mary moved.\n3 John moved.", 2, "has ID 3, expected 1 or 2"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom", 2, "2 tab-separated"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom\t1\t1", 2,
         "4 tab-separated"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom\tone", 2,
         "supporting IDs, integers"),
        ("1 Mary moved.\n2 Where is Mary?\t\t1", 2, "empty question or answer"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom\t2", 2,
         "supporting IDs [2] that are not"),
        ("1 Mary moved.\n2 Where?\tb\t1\n3 Where?\tb\t2", 3,
         "supporting IDs [2]"),  # a question is no supporting statement
        ("1 ...", 1, "has no words"),
    ],
)
def test_malformed_lines_name_the_file_and_line(tmp_path, line, number,
                                                message):
    path = tmp_path / "bad.txt"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        read_babi(path)
    assert f"{path}: line {number} " in str(error.value)


def test_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_babi(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="empty"):
        read_babi(tmp_path / "empty.txt")
    (tmp_path / "story.txt").write_text("1 Mary moved.\n")
    with pytest.raises(ValueError, match="no question lines"):
        read_babi(tmp_path / "story.txt")


def test_vectorize_keeps_the_most_recent_sentences_oldest_first():
    samples = parse_babi(TEXT)
    vocabulary = BabiVocabulary.from_samples(samples)
    assert vocabulary.words[0] == babi.PAD and "nowhere" in vocabulary.words
    inputs, answers = vectorize_babi(samples, vocabulary, memory_size=3,
                                sentence_size=7)
    assert inputs["story"].shape == (3, 3, 7)
    assert inputs["question"].shape == (3, 7)

    def words(ids):
        return " ".join(vocabulary.words[i] for i in ids if i)

    # The second story has 4 sentences: the oldest one is dropped.
    assert [words(row) for row in inputs["story"][1]] == [
        "john went to the hallway", "daniel went back to the hallway",
        "sandra moved to the garden"]
    assert [words(row) for row in inputs["story"][0]] == [
        "mary moved to the bathroom", "john went to the hallway", ""]
    assert words(inputs["question"][2]) == "where is john"
    assert [vocabulary.words[i] for i in answers] == [
        "bathroom", "hallway", "nowhere"]
    assert inputs["story"][1, 0, 5:].tolist() == [0, 0]  # padded words
    # The default width is the longest sentence (with "went back").
    assert vectorize_babi(samples, vocabulary)[0]["story"].shape == (3, 50, 6)


def test_vectorize_errors():
    samples = parse_babi(TEXT)
    vocabulary = BabiVocabulary.from_samples(samples[:1])
    with pytest.raises(ValueError, match=r"not in the vocabulary.*'daniel'"):
        vectorize_babi(samples, vocabulary)
    vocabulary = BabiVocabulary.from_samples(samples)
    with pytest.raises(ValueError, match="sentence_size=3"):
        vectorize_babi(samples, vocabulary, sentence_size=3)
    with pytest.raises(ValueError, match="memory_size=0"):
        vectorize_babi(samples, vocabulary, memory_size=0)


def simulate(lines):
    """An independent reading of a generated story: where each person
    is and where each object is, from the sentences alone; returns the
    (answer, supporting IDs) of each question."""
    found = []
    for line in lines:
        line_id, text = line.split(" ", 1)
        line_id = int(line_id)
        if line_id == 1:
            person_at, object_at, holder = {}, {}, {}
        if "\t" in text:
            question, _, _ = text.split("\t")
            name = question.split()[-1].rstrip("?")
            if name in babi.PEOPLE:
                place, move = person_at[name]
                found.append((place, (move,)))
            elif name in holder:
                place, move = person_at[holder[name][0]]
                found.append((place, (holder[name][1], move)))
            else:
                place, drop, move = object_at[name]
                found.append((place, (drop, move)))
            continue
        words = text.rstrip(".").split()
        person, thing = words[0], words[-2 if words[-1] == "there" else -1]
        if words[-2] == "the" and thing in babi.PLACES:
            person_at[person] = (thing, line_id)
        elif words[-1] == "there":  # a pick-up, where the object lies
            assert thing not in holder
            if thing in object_at:
                assert object_at[thing][0] == person_at[person][0]
            holder[thing] = (person, line_id)
        else:  # a drop
            assert holder.pop(thing)[0] == person
            object_at[thing] = (person_at[person][0], line_id,
                                person_at[person][1])
    return found


@pytest.mark.parametrize("task", [1, 2])
def test_generated_answers_are_right_and_read_back(tmp_path, task):
    text = generate_babi(task, 1000, seed=7)
    assert text == generate_babi(task, 1000, seed=7)
    assert text != generate_babi(task, 1000, seed=8)
    path = write_babi(tmp_path / f"qa{task}.txt", task, 1000, seed=7)
    assert path.read_text() == text
    samples = read_babi(path)
    assert len(samples) == 1000

    lines = text.splitlines()
    questions = [line for line in lines if "\t" in line]
    assert len(questions) == 1000
    expected = simulate(lines)
    assert [(s.answer, s.supporting_ids) for s in samples] == expected
    for sample, line in zip(samples, questions):
        question, answer, support = line.split(" ", 1)[1].split("\t")
        assert (sample.question, sample.answer) == (question.strip(), answer)
        assert " ".join(map(str, sample.supporting_ids)) == support
    # Read back exactly: each sample's sentences are the story's statements
    # before its question.
    statements, position = {}, 0
    for line in lines:
        line_id, rest = line.split(" ", 1)
        if line_id == "1":
            statements = {}
        if "\t" in rest:
            sample = samples[position]
            assert sample.sentences == tuple(statements.values())
            assert sample.sentence_ids == tuple(statements)
            position += 1
        else:
            statements[int(line_id)] = rest

    stories = text.count("\n1 ") + 1
    assert stories == 200  # five questions a story
    vocabulary = BabiVocabulary.from_samples(samples)
    people = {p.lower() for p in babi.PEOPLE}
    assert people <= set(vocabulary.words)
    assert set(babi.PLACES) <= set(vocabulary.words)
    answers = [s.answer for s in samples]
    counts = np.unique(answers, return_counts=True)[1]
    assert len(counts) == 6 and counts.min() > 100  # every place, balanced
    if task == 2:
        assert set(babi.OBJECTS) <= set(vocabulary.words)
        verbs = {line.split()[2] for line in lines if "\t" not in line}
        assert {"picked", "got", "grabbed", "dropped", "discarded"} <= verbs
        held = sum(s.sentences[s.sentence_ids.index(s.supporting_ids[0])]
                   .endswith("there.") for s in samples)
        assert 300 < held < 800  # both held and dropped objects are asked


def test_generator_arguments():
    with pytest.raises(ValueError, match="task=3"):
        generate_babi(3, 10, 0)
    with pytest.raises(ValueError, match="num_stories=0"):
        generate_babi(1, 0, 0)
    assert len(parse_babi(generate_babi(1, 7, 0))) == 7
