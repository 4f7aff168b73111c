"""bAbI: the question-answering format of Weston et al. (2015), read,
vectorized for `keras_attention.models.MemoryNetwork`, and generated.

The format: one sentence a line, `ID text`, the ID counting from 1 within a
story and restarting at 1 for the next one. A question line holds
`ID question?<TAB>answer<TAB>supporting IDs`, the IDs (space-separated) of
the story lines that answer it:

    1 Mary moved to the bathroom.
    2 John went to the hallway.
    3 Where is Mary? \tbathroom\t1

Each question is one sample: the story's sentences before it, the
question, the answer and the supporting IDs (`BabiSample`). `read_babi`
reads a file (plain or gzip), `parse_babi` text. `BabiVocabulary` and
`vectorize_babi` turn samples into the arrays the model takes.
`generate_babi` and `write_babi` produce tasks 1 (single supporting fact)
and 2 (two supporting facts) from a seeded simulation of the bAbI world,
so the answers are right by construction and nothing is downloaded.
"""

import pathlib
import random
import re
from typing import NamedTuple

import numpy as np

from keras_attention import _validation
from keras_attention.text.parallel_files import CorpusError
from keras_attention.text.parallel_files import _as_path
from keras_attention.text.parallel_files import read_lines

PAD = "<pad>"  # the word of id 0
TASKS = (1, 2)
PEOPLE = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("bathroom", "hallway", "garden", "office", "bedroom", "kitchen")
OBJECTS = ("football", "apple", "milk")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
GETS = ("got", "picked up", "grabbed", "took")
DROPS = ("dropped", "discarded", "put down", "left")
QUESTIONS_PER_STORY = 5
_LINE = re.compile(r"(\d+) (.*)")


class BabiSample(NamedTuple):
    """One question with its story.

    Attributes:
        sentences: the story's statements before the question, oldest
            first (tuple of str, as written).
        sentence_ids: their line IDs (tuple of int).
        question: str.
        answer: str.
        supporting_ids: the IDs of the statements that answer it.
    """

    sentences: tuple
    sentence_ids: tuple
    question: str
    answer: str
    supporting_ids: tuple


def tokenize(text):
    """Lower-case words, punctuation dropped: "Where is Mary?" ->
    `["where", "is", "mary"]`."""
    return re.findall(r"[^\s.?!,;:]+", text.lower())


def parse_babi(lines, source="<text>"):
    """The samples of bAbI lines (a str or an iterable of lines).

    Blank lines are skipped. `source` names the text in error messages.

    Raises:
        CorpusError (a ValueError): a malformed line; the message names
            `source` and the 1-based line number.
    """
    if isinstance(lines, str):
        lines = lines.split("\n")
    samples, sentences, ids, previous = [], [], [], 0

    def fail(number, why, line):
        raise CorpusError(f"{source}: line {number} {why}: {line!r}")

    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            fail(number, "must start with a line ID and a space, as in "
                 "'1 Mary moved to the bathroom.'", line)
        line_id, text = int(match.group(1)), match.group(2)
        if line_id == 1:
            sentences, ids = [], []
        elif line_id != previous + 1:
            expected = "1" if previous == 0 else f"1 or {previous + 1}"
            fail(number, f"has ID {line_id}, expected {expected}", line)
        previous = line_id
        if "\t" not in text:
            if not tokenize(text):
                fail(number, "has no words after its ID", line)
            sentences.append(text.strip())
            ids.append(line_id)
            continue
        fields = text.split("\t")
        if len(fields) != 3:
            fail(number, f"is a question with {len(fields)} tab-separated "
                 "fields, expected 3: question, answer, supporting IDs", line)
        question, answer, support = (field.strip() for field in fields)
        if not tokenize(question) or not answer:
            fail(number, "has an empty question or answer", line)
        if not re.fullmatch(r"\d+( +\d+)*", support):
            fail(number, "must end with the supporting IDs, integers "
                 f"separated by spaces, received {support!r}", line)
        supporting = tuple(int(value) for value in support.split())
        unknown = [value for value in supporting if value not in ids]
        if unknown:
            fail(number, f"names supporting IDs {unknown} that are not "
                 "statements of its story before it", line)
        samples.append(BabiSample(tuple(sentences), tuple(ids), question,
                                  answer, supporting))
    return samples


def read_babi(path):
    """The samples of a bAbI file (plain or gzip, UTF-8); see `parse_babi`.

    Raises:
        FileNotFoundError: `path` does not exist.
        CorpusError (a ValueError): the file is empty, not UTF-8, or has a
            malformed line (named by file and 1-based line number).
    """
    path = _as_path(path, "path")
    samples = parse_babi(read_lines(path), source=str(path))
    if not samples:
        raise CorpusError(f"{path} holds no question lines")
    return samples


class BabiVocabulary:
    """Words and answers to ids; id 0 is the padding word.

    Answers share the words' ids (a memory network with adjacent tying
    predicts a word of its input vocabulary).

    Args:
        words: the words, in any order, repeats allowed; `PAD` is added.
    """

    def __init__(self, words):
        self.words = (PAD,) + tuple(sorted(set(words) - {PAD}))
        self.index = {word: i for i, word in enumerate(self.words)}

    @classmethod
    def from_samples(cls, *sample_lists):
        """The vocabulary of every sentence, question and answer given."""
        words = set()
        for samples in sample_lists:
            for sample in samples:
                for text in sample.sentences + (sample.question,):
                    words.update(tokenize(text))
                words.add(sample.answer)
        return cls(words)

    def __len__(self):
        return len(self.words)

    def encode(self, words):
        unknown = [word for word in words if word not in self.index]
        if unknown:
            raise ValueError(
                f"Words not in the vocabulary, received: {unknown} (build "
                "the vocabulary from every file: `BabiVocabulary."
                "from_samples(train, test)`)"
            )
        return [self.index[word] for word in words]


def vectorize_babi(samples, vocabulary, memory_size=50, sentence_size=None):
    """Samples as the arrays `MemoryNetwork` takes, and the answer ids.

    The most recent `memory_size` sentences of each story are kept, oldest
    first, in slots `0..n-1`; the other slots and the words after a
    sentence's end are 0.

    Args:
        samples: `BabiSample`s.
        vocabulary: a `BabiVocabulary` holding all their words.
        memory_size: M, the most sentences kept.
        sentence_size: J; the longest sentence or question if None.

    Returns:
        `({"story": (N, M, J) int32, "question": (N, J) int32},
        answers (N,) int32)`.
    """
    memory_size = _validation.positive_int("memory_size", memory_size)
    sentence_size = _validation.optional_positive_int("sentence_size",
                                                      sentence_size)
    stories = [[tokenize(text) for text in sample.sentences[-memory_size:]]
               for sample in samples]
    questions = [tokenize(sample.question) for sample in samples]
    longest = max([len(words) for story in stories for words in story]
                  + [len(words) for words in questions] + [1])
    if sentence_size is None:
        sentence_size = longest
    elif longest > sentence_size:
        raise ValueError(
            f"A sentence has {longest} words, more than sentence_size: "
            f"received sentence_size={sentence_size}"
        )
    story = np.zeros((len(samples), memory_size, sentence_size), "int32")
    question = np.zeros((len(samples), sentence_size), "int32")
    for row, (sentences, words) in enumerate(zip(stories, questions)):
        for slot, sentence in enumerate(sentences):
            story[row, slot, :len(sentence)] = vocabulary.encode(sentence)
        question[row, :len(words)] = vocabulary.encode(words)
    answers = np.array([vocabulary.encode([sample.answer])[0]
                        for sample in samples], "int32").reshape(-1)
    return {"story": story, "question": question}, answers


"""Generation: a seeded simulation of the bAbI world."""


class _World:
    """Where people are, who holds what, and the line that says so."""

    def __init__(self, rng):
        self.rng = rng
        self.place = {}  # person -> (place, line ID of the move)
        # object -> (place, holder, line ID, ID of the move that placed
        # it): held, place is None; untouched, the line IDs are None and
        # it lies at a place no sentence has named.
        self.objects = {name: (rng.choice(PLACES), None, None, None)
                        for name in OBJECTS}

    def move(self, person, line_id):
        here = self.place.get(person, (None,))[0]
        there = self.rng.choice([p for p in PLACES if p != here])
        self.place[person] = (there, line_id)
        return f"{person} {self.rng.choice(MOVES)} the {there}."

    def get(self, person, thing, line_id):
        self.objects[thing] = (None, person, line_id, None)
        return f"{person} {self.rng.choice(GETS)} the {thing} there."

    def drop(self, person, thing, line_id):
        place, moved = self.place[person]
        self.objects[thing] = (place, None, line_id, moved)
        return f"{person} {self.rng.choice(DROPS)} the {thing}."

    def statement(self, task, line_id):
        """A random event that the world allows, told as a sentence: a
        move (task 1 always, task 2 six times in ten), else a pick-up or,
        one time in two, a drop."""
        rng, people = self.rng, list(PEOPLE)
        draw = 0.0 if task == 1 else rng.random()
        gets, drops = [], []
        for thing, (place, holder, _, _) in self.objects.items():
            if holder is not None:
                drops.append((self.drop, holder, thing))
            else:
                gets += [(self.get, person, thing) for person in people
                         if self.place.get(person, (None,))[0] == place]
        actions = gets if draw >= 0.8 or not drops else drops
        if draw < 0.6 or not actions:
            return self.move(rng.choice(people), line_id)
        action, person, thing = rng.choice(actions)
        return action(person, thing, line_id)

    def question(self, task):
        """(question, answer, supporting IDs), or None if none is known."""
        if task == 1:
            if not self.place:
                return None
            person = self.rng.choice(sorted(self.place))
            place, line_id = self.place[person]
            return f"Where is {person}?", place, (line_id,)
        known = [thing for thing, (_, _, line_id, _) in self.objects.items()
                 if line_id is not None]
        if not known:
            return None
        thing = self.rng.choice(known)
        place, holder, line_id, moved = self.objects[thing]
        if holder is not None:  # where the holder is now
            place, moved = self.place[holder]
        return f"Where is the {thing}?", place, (line_id, moved)


def _story(task, rng, questions):
    """The lines of one story with `questions` questions."""
    world, lines = _World(rng), []
    asked = 0
    while asked < questions:
        count = 2 if task == 1 else rng.randint(2, 6)
        for _ in range(count):
            line_id = len(lines) + 1
            lines.append(f"{line_id} {world.statement(task, line_id)}")
        asked_question = world.question(task)
        if asked_question is not None:
            question, answer, support = asked_question
            ids = " ".join(str(value) for value in support)
            lines.append(f"{len(lines) + 1} {question} \t{answer}\t{ids}")
            asked += 1
    return lines


def generate_babi(task, num_stories, seed):
    """The text of a generated bAbI file.

    Task 1, single supporting fact: people move ("Mary went to the
    kitchen."), the question is "Where is Mary?"; two statements before
    each question, as in bAbI. Task 2, two supporting facts: people also
    pick up and drop objects ("John picked up the apple there.", "John
    discarded the apple."), the question is "Where is the apple?", answered
    by the last sentence about the apple and the holder's last move before
    it (or since, while held); two to six statements before each question.
    Objects start at unnamed places and are picked up only where they lie.

    Args:
        task: 1 or 2.
        num_stories: the number of questions (samples, as `parse_babi`
            counts them); stories hold five questions each, as in bAbI,
            the last one fewer if needed. bAbI's "1k" sets hold 1,000.
        seed: int; the same seed gives the same text.

    Returns:
        str, lines ending with "\\n".
    """
    _validation.choice("task", task, TASKS)
    num_stories = _validation.positive_int("num_stories", num_stories)
    rng = random.Random(seed)
    lines = []
    for first in range(0, num_stories, QUESTIONS_PER_STORY):
        questions = min(QUESTIONS_PER_STORY, num_stories - first)
        lines += _story(task, rng, questions)
    return "\n".join(lines) + "\n"


def write_babi(path, task, num_stories, seed):
    """Write `generate_babi(task, num_stories, seed)` to `path` (UTF-8);
    returns the path as a `pathlib.Path`."""
    path = pathlib.Path(_as_path(path, "path"))
    path.write_text(generate_babi(task, num_stories, seed), encoding="utf-8")
    return path
