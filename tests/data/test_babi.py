"""bAbI: the reader, its errors, the vectorizer, the answers of the real
release, its files and validation split, and the generator (read back
exactly, answers checked by an independent simulation).

The release itself is read only by `test_the_real_release`, skipped unless
KERAS_ATTENTION_BABI_DIR names its root."""

import gzip
import os
import re

import numpy as np
import pytest

from keras_attention.data import babi
from keras_attention.data.babi import BabiSample
from keras_attention.data.babi import BabiVocabulary
from keras_attention.data.babi import generate_babi
from keras_attention.data.babi import parse_babi
from keras_attention.data.babi import read_babi
from keras_attention.data.babi import vectorize_babi
from keras_attention.data.babi import write_babi

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
                   "nowhere", (1,), story=1),
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


def _stories(lengths, slots=10):
    """`(N, slots, 3)` word ids whose row i fills its first lengths[i]
    slots (a row of length 0 is all empty)."""
    story = np.zeros((len(lengths), slots, 3), "int32")
    for row, length in enumerate(lengths):
        story[row, :length, :2] = row + 1
    return story


def test_batches_by_length_cover_every_question_once_sorted_in_pools():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 11, 103)
    story = _stories(lengths)
    order = rng.permutation(103)
    batches = babi.batches_by_length(story, order, 8, np.random.default_rng(
        1), pool=4)
    indices = np.concatenate([batch for batch, _ in batches])
    assert sorted(indices.tolist()) == list(range(103))  # each once
    # 103 = 3 pools of 32 and one of 7: 4 + 4 + 4 + 1 batches, one partial.
    assert sorted(len(batch) for batch, _ in batches) == [7] + [8] * 12
    for batch, slots in batches:
        # Cut to its longest story (an all-empty batch keeps one slot),
        # nothing it holds is lost.
        assert slots == max(1, lengths[batch].max())
        assert not story[batch, slots:].any()
    # A pool is sorted by length: a pool's batches do not overlap in
    # length, and a batch holds questions of one pool of `order`.
    pools = {question: start // 32 for start in range(0, 103, 32)
             for question in order[start:start + 32]}
    for batch, _ in batches:
        assert len({pools[question] for question in batch}) == 1
    for pool in range(4):
        mine = sorted((lengths[batch].min(), lengths[batch].max())
                      for batch, _ in batches if pools[batch[0]] == pool)
        assert all(high <= low for (_, high), (low, _) in zip(mine,
                                                               mine[1:]))
    # Drawn by the generator: the same generator state, the same batches.
    again = babi.batches_by_length(story, order, 8, np.random.default_rng(
        1), pool=4)
    assert all(np.array_equal(a, b) and m == n
               for (a, m), (b, n) in zip(batches, again, strict=True))


def test_batches_by_length_round_slots_up_to_a_multiple_within_the_memory():
    story = _stories([1, 3, 6, 9, 10, 10])
    batches = babi.batches_by_length(story, np.arange(6), 2,
                                     np.random.default_rng(0), multiple=4)
    assert sorted(slots for _, slots in batches) == [4, 10, 10]
    # Ties keep the drawn order (a stable sort): 5 before 4, both of 10.
    batches = babi.batches_by_length(story, [5, 4, 3, 2, 1, 0], 2,
                                     np.random.default_rng(0))
    assert sorted(batch.tolist() for batch, _ in batches) == [
        [0, 1], [2, 3], [5, 4]]


@pytest.mark.parametrize("arguments, message", [
    ({"story": np.zeros((4, 5))}, r"`story` must be \(N, M, J\) word ids, "
                                  r"received: shape \(4, 5\)"),
    ({"order": [0, 4]}, r"`order` must be indices of the 4 stories"),
    ({"order": [[0, 1]]}, r"`order` must be indices of the 4 stories"),
    ({"batch_size": 0}, "batch_size=0"),
    ({"pool": -1}, "pool=-1"),
    ({"multiple": 0}, "multiple=0"),
])
def test_batches_by_length_errors_name_the_argument(arguments, message):
    given = {"story": _stories([1, 2, 3, 4]), "order": [0, 1, 2, 3],
             "batch_size": 2, "rng": np.random.default_rng(0), **arguments}
    with pytest.raises(ValueError, match=message):
        babi.batches_by_length(**given)


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


# The real release: answers, files, validation split, tasks. The fixtures
# are handwritten in the release's format, one or two stories a task kind.

RELEASE_TEXT = {
    5: """\
1 Bill travelled to the office.
2 Bill picked up the football there.
3 Bill gave the football to Fred.
4 What did Bill give to Fred? \tfootball\t3
5 Fred handed the football to Bill.
6 Who received the football? \tBill\t5
""",  # a capitalised answer
    6: """\
1 Mary moved to the bathroom.
2 Sandra journeyed to the bedroom.
3 Is Sandra in the hallway? \tno\t2
4 Is Mary in the bathroom? \tyes\t1
""",
    7: """\
1 Mary took the football there.
2 Mary got the milk there.
3 How many objects is Mary carrying? \ttwo\t1 2
4 Mary dropped the milk.
5 How many objects is Mary carrying? \tone\t1 4
""",
    8: """\
1 Mary got the football there.
2 Mary picked up the apple there.
3 What is Mary carrying? \tfootball,apple\t1 2
4 Mary dropped the football.
5 Mary dropped the apple.
6 What is Mary carrying? \tnothing\t4 5
""",
    19: """\
1 The office is east of the hallway.
2 The kitchen is north of the office.
3 How do you go from the hallway to the kitchen?\te,n\t1 2
""",  # no space before the tab, as in the release
}
ENV = babi.ENVIRONMENT_VARIABLE


def write_release(root, tasks=RELEASE_TEXT, size="1k", copies=20,
                  suffix=".txt.gz"):
    """A release under `root`: each task's fixture `copies` times (one
    story each time) as its training file, once as its test file."""
    folder = root / babi.SIZE_DIRECTORIES[size]
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        for split, text in (("train", RELEASE_TEXT[task] * copies),
                            ("test", RELEASE_TEXT[task])):
            path = folder / f"qa{task}_{babi.TASK_NAMES[task]}_{split}{suffix}"
            data = text.encode()
            path.write_bytes(gzip.compress(data) if suffix.endswith(".gz")
                             else data)
    return root


def test_answers_are_lower_cased_single_tokens_sharing_the_word_ids():
    samples = {task: parse_babi(text) for task, text in RELEASE_TEXT.items()}
    answers = [s.answer for task in samples for s in samples[task]]
    assert answers == ["football", "Bill", "no", "yes", "two", "one",
                       "football,apple", "nothing", "e,n"]
    assert [babi.answer_token(a) for a in answers] == [
        "football", "bill", "no", "yes", "two", "one", "football,apple",
        "nothing", "e,n"]
    assert samples[7][1].supporting_ids == (1, 4)

    every = [s for task in samples for s in samples[task]]
    vocabulary = BabiVocabulary.from_samples(every)
    assert "Bill" not in vocabulary.words
    assert {"bill", "football,apple", "football", "apple", "e,n", "east",
            "north"} <= set(vocabulary.words)
    assert "e" not in vocabulary.words  # the answer "e,n" is not split
    inputs, ids = vectorize_babi(every, vocabulary)
    assert [vocabulary.words[i] for i in ids] == [
        babi.answer_token(a) for a in answers]
    # "Who received the football? Bill": the answer id is the id of "bill"
    # in the story (what an output layer tied to the embedding predicts).
    assert ids[1] == inputs["story"][1, 0, 0] == vocabulary.index["bill"]
    # "football,apple" is one class, neither "football" nor "apple".
    assert ids[6] not in {vocabulary.index["football"],
                          vocabulary.index["apple"]}
    assert len(set(ids.tolist())) == 9


def test_samples_know_their_story():
    assert [s.story for s in parse_babi(TEXT)] == [0, 0, 1]
    assert [s.story for s in parse_babi(RELEASE_TEXT[6] * 3)] == [
        0, 0, 1, 1, 2, 2]
    assert BabiSample((), (), "Where?", "here", ()).story == 0  # the default


def test_vectorize_keeps_the_50_most_recent_sentences():
    lines = [f"{i} Mary went to room{i}." for i in range(1, 56)]
    lines.append("56 Where is Mary? \troom55\t55")
    (sample,) = parse_babi("\n".join(lines))
    vocabulary = BabiVocabulary.from_samples([sample])
    inputs, answers = vectorize_babi([sample], vocabulary)  # memory_size=50
    rooms = [vocabulary.words[row[3]] for row in inputs["story"][0]]
    assert rooms == [f"room{i}" for i in range(6, 56)]  # 1..5 dropped
    assert vocabulary.words[answers[0]] == "room55"


def test_task_names_follow_the_release_file_names():
    assert sorted(babi.TASK_NAMES) == list(range(1, 21))
    assert babi.TASK_NAMES[8] == "lists-sets"
    assert babi.SIZES == ("1k", "10k")
    assert babi.SIZE_DIRECTORIES == {"1k": "en", "10k": "en-10k"}


def test_task_file_finds_gzip_or_plain_under_root_or_the_variable(
        tmp_path, monkeypatch):
    root = write_release(tmp_path, [8])
    expected = root / "en" / "qa8_lists-sets_train.txt.gz"
    assert babi.task_file(root, 8) == expected
    assert babi.task_file(str(root), 8, "1k", "train") == expected
    monkeypatch.setenv(ENV, str(root))
    assert babi.task_file(None, 8, split="test") == expected.with_name(
        "qa8_lists-sets_test.txt.gz")
    write_release(tmp_path, [6], suffix=".txt")
    assert babi.task_file(root, 6).name == "qa6_yes-no-questions_train.txt"
    write_release(tmp_path, [6])  # both: the gzip file
    assert babi.task_file(root, 6).name == "qa6_yes-no-questions_train.txt.gz"


@pytest.mark.parametrize(
    "arguments, message",
    [
        ((0,), "task=0"),
        ((21,), "task=21"),
        ((True,), "task=True"),
        ((1.0,), "task=1.0"),
        ((1, "100k"), "size='100k'"),
        ((1, "1k", "valid"), "split='valid'"),
    ],
)
def test_task_file_argument_errors(tmp_path, arguments, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        babi.task_file(tmp_path, *arguments)


def test_task_file_needs_a_root(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(ValueError, match=f"pass `root` or set {ENV}"):
        babi.task_file(None, 1)
    monkeypatch.setenv(ENV, "")
    with pytest.raises(ValueError, match=f"pass `root` or set {ENV}"):
        babi.task_file(None, 1)
    with pytest.raises(ValueError, match="root=42"):
        babi.task_file(42, 1)


def test_task_file_missing_names_the_path(tmp_path):
    write_release(tmp_path, [8])
    with pytest.raises(FileNotFoundError) as error:
        babi.task_file(tmp_path, 7)
    message = str(error.value)
    assert str(tmp_path / "en" / "qa7_counting_train.txt.gz") in message
    assert "\n" not in message and "tarball" not in message
    with pytest.raises(FileNotFoundError) as error:
        babi.task_file(tmp_path, 3, "10k", "train")
    message = str(error.value)
    path = tmp_path / "en-10k" / "qa3_three-supporting-facts_train.txt.gz"
    assert str(path) in message and "\n" not in message
    assert "public copy" in message and "release tarball" in message


def test_split_validation_holds_out_whole_stories():
    samples = parse_babi(generate_babi(1, 1000, seed=3))  # 200 stories of 5
    train, valid = babi.split_validation(samples)
    assert len(valid) == 100 and len(train) == 900  # 20 stories, 10%
    train_stories = {s.story for s in train}
    valid_stories = {s.story for s in valid}
    assert len(valid_stories) == 20 and not train_stories & valid_stories
    assert train_stories | valid_stories == set(range(200))
    # Both sides keep the file's order, and nothing is lost or repeated.
    position = {id(s): i for i, s in enumerate(samples)}
    for side in (train, valid):
        assert [position[id(s)] for s in side] == sorted(
            position[id(s)] for s in side)
    assert sorted(position[id(s)] for s in train + valid) == list(range(1000))

    assert babi.split_validation(samples) == (train, valid)  # deterministic
    other = babi.split_validation(samples, seed=1)[1]
    assert {s.story for s in other} != valid_stories
    assert len(babi.split_validation(samples, 0.25)[1]) == 250


def test_split_validation_of_uneven_stories_is_about_the_fraction():
    text = "".join(RELEASE_TEXT[task] for task in (5, 6, 7, 8, 19)) * 40
    samples = parse_babi(text)  # 200 stories of 1 or 2 questions
    assert len(samples) == 360
    train, valid = babi.split_validation(samples, seed=5)
    assert len({s.story for s in valid}) == 20
    assert 20 <= len(valid) <= 40 and len(train) + len(valid) == 360


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, True, "0.1", None])
def test_split_validation_fraction_errors(fraction):
    samples = parse_babi(generate_babi(1, 100, seed=0))
    with pytest.raises(ValueError, match=re.escape(f"fraction={fraction!r}")):
        babi.split_validation(samples, fraction)


def test_split_validation_needs_a_story_on_each_side():
    one_story = parse_babi(RELEASE_TEXT[6])
    with pytest.raises(ValueError, match="of 1 stories holds out 1"):
        babi.split_validation(one_story, 0.5)
    four = parse_babi(RELEASE_TEXT[6] * 4)
    with pytest.raises(ValueError, match="of 4 stories holds out 0"):
        babi.split_validation(four, 0.1)
    with pytest.raises(ValueError, match="of 4 stories holds out 4"):
        babi.split_validation(four, 0.9)
    assert len(babi.split_validation(four, 0.25)[1]) == 2  # one story
    with pytest.raises(ValueError, match="of 0 stories"):
        babi.split_validation([], 0.1)


def test_load_task_reads_a_release_laid_out_like_the_real_one(
        tmp_path, monkeypatch):
    root = write_release(tmp_path)
    task = babi.load_task(root, 8)
    assert task.task == 8 and isinstance(task, babi.BabiTask)
    assert task.test == parse_babi(RELEASE_TEXT[8])
    assert len(task.train) + len(task.valid) == 40  # 20 stories of 2
    assert len({s.story for s in task.valid}) == 2 and len(task.valid) == 4
    assert not {s.story for s in task.train} & {s.story for s in task.valid}
    assert task == babi.load_task(str(root), 8)  # same seed, same split
    assert task.valid != babi.load_task(root, 8, seed=2).valid

    whole = babi.load_task(root, 8, validation_fraction=None)
    assert whole.valid == [] and whole.train == parse_babi(
        RELEASE_TEXT[8] * 20)
    monkeypatch.setenv(ENV, str(root))
    assert babi.load_task(None, 5).test[1].answer == "Bill"

    tasks = babi.load_tasks(root, [19, 5, 19])
    assert list(tasks) == [19, 5] and tasks[5] == babi.load_task(root, 5)
    joint = [s for loaded in tasks.values() for s in loaded.train]
    assert len(joint) == len(tasks[19].train) + len(tasks[5].train)
    assert list(babi.load_tasks(root, 6)) == [6]


def test_load_tasks_errors(tmp_path):
    root = write_release(tmp_path)
    with pytest.raises(FileNotFoundError, match=re.escape(
            str(root / "en" / "qa1_single-supporting-fact_train.txt.gz"))):
        babi.load_tasks(root, "all")  # task 1 is not in this release
    write_release(tmp_path, [6], size="10k")
    with pytest.raises(FileNotFoundError, match="en-10k.*qa8_lists-sets"):
        babi.load_task(root, 8, size="10k")
    for tasks, message in [("some", "tasks='some'"), ([], "tasks=[]"),
                           (3.5, "tasks=3.5"), ([0], "task=0")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            babi.load_tasks(root, tasks)
    with pytest.raises(ValueError, match="validation_fraction=1.5"):
        babi.load_task(root, 8, validation_fraction=1.5)
    with pytest.raises(ValueError, match="size='2k'"):
        babi.load_task(root, 8, size="2k")


# Questions and stories of each 1k training file (SOURCE.md of the copy).
RELEASE_STORIES = {1: 200, 2: 200, 3: 200, 4: 1000, 5: 200, 6: 200, 7: 200,
                   8: 200, 9: 200, 10: 200, 11: 200, 12: 200, 13: 200,
                   14: 200, 15: 250, 16: 1000, 17: 125, 18: 198, 19: 1000,
                   20: 94}


@pytest.mark.skipif(not os.environ.get(ENV),
                    reason=f"{ENV} does not name the bAbI v1.2 release")
def test_the_real_release():
    tasks = babi.load_tasks(None, "all")
    assert list(tasks) == list(range(1, 21))
    for number, task in tasks.items():
        stories = RELEASE_STORIES[number]
        assert len(task.train) + len(task.valid) == 1000, number
        assert len(task.test) == 1000, number
        assert {s.story for s in task.train + task.valid} == set(
            range(stories))
        held = int(0.1 * stories + 0.5)  # half up: 13 of task 17's 125
        assert len({s.story for s in task.valid}) == held, number
        assert 50 <= len(task.valid) <= 150, number
        vocabulary = BabiVocabulary.from_samples(task.train, task.valid,
                                                 task.test)
        ids = vectorize_babi(task.test, vocabulary)[1]
        assert [vocabulary.words[i] for i in ids] == [
            babi.answer_token(s.answer) for s in task.test]
    assert "Bill" in {s.answer for s in tasks[5].train}
    assert "football,apple" in {s.answer for s in tasks[8].train}
    # The joint 1k training stories fill 8.8 of 50 slots on average
    # (`batches_by_length`'s docstring, the joint setting's note).
    slots = [min(len(s.sentences), 50) for task in tasks.values()
             for s in task.train]
    assert round(float(np.mean(slots)), 1) == 8.8
    ten = babi.load_task(None, 1, "10k")
    assert len(ten.train) + len(ten.valid) == 10000 and len(ten.test) == 1000
    assert len({s.story for s in ten.valid}) == 200
    try:
        three = babi.load_task(None, 3, "10k")
    except FileNotFoundError as error:  # not in the public copy
        assert "release tarball" in str(error)
    else:
        assert len(three.train) + len(three.valid) == 10000
