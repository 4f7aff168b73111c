"""bAbI: the question-answering tasks of Weston et al. (2015), read from
the v1.2 release, vectorized for `keras_attention.models.MemoryNetwork`,
split for validation, and generated.

The format: one sentence a line, `ID text`, the ID counting from 1 within a
story and restarting at 1 for the next one. A question line holds
`ID question?<TAB>answer<TAB>supporting IDs`, the IDs (space-separated) of
the story lines that answer it:

    1 Mary moved to the bathroom.
    2 John went to the hallway.
    3 Where is Mary? \tbathroom\t1

Each question is one sample: the story's sentences before it, the
question, the answer, the supporting IDs and the story's index in its file
(`BabiSample`). `read_babi` reads a file (plain or gzip), `parse_babi` text.

The release (tasks_1-20_v1-2) holds `en/` (1k: 1,000 training and 1,000
test questions a task) and `en-10k/` (10k: 10,000 training questions, the
same test files), files `qa{task}_{TASK_NAMES[task]}_{split}.txt`, plain or
gzipped. `task_file` finds one under a root given by argument or by the
`KERAS_ATTENTION_BABI_DIR` environment variable; `load_task` and
`load_tasks` read a task's training set, carve a validation set off it and
read its test set (`BabiTask`). A public copy of the release may lack
`en-10k/qa3_three-supporting-facts_train.txt`; the tarball has it. Every
file of both sizes parses.

Answers: most are a word of the stories ("bathroom", "yes", "two"), some
capitalised ("Bill", task 5), some several words joined by commas
("football,apple" in task 8, "n,s" in task 19). `answer_token` lower-cases
an answer and keeps it one token, so each multi-word answer is one class
(in the order written: "apple,football" is another) and "Bill" is the
word "bill" of the stories, the id that a memory network whose output
layer is tied to its word embedding must predict. `BabiVocabulary` and
`vectorize_babi` turn samples into the arrays the model takes, the answers
through `answer_token`; `batches_by_length` batches them by story length.

Validation: the papers hold out 10% of the training questions
(Sukhbaatar et al. 2015). `split_validation` holds out whole stories, so
the questions of one story, which share its sentences, are all on one
side.

Generation: `generate_babi` and `write_babi` produce tasks 1 and 2 from a
seeded simulation of the bAbI world, so the answers are right by
construction and nothing is downloaded.

Modules: `TASK_NAMES`, `SIZES`, `task_file` and `split_validation` live in
the private `_babi_tasks`, the generator in `_babi_generator`; import them
from here. This module was `keras_attention.text.babi`, a path that still
works, with a DeprecationWarning, for one more release.
"""

import numbers
import re
from typing import NamedTuple

import numpy as np

from keras_attention import _validation
from keras_attention.data._babi_generator import DROPS  # noqa: F401
from keras_attention.data._babi_generator import GETS  # noqa: F401
from keras_attention.data._babi_generator import MOVES  # noqa: F401
from keras_attention.data._babi_generator import OBJECTS  # noqa: F401
from keras_attention.data._babi_generator import PEOPLE  # noqa: F401
from keras_attention.data._babi_generator import PLACES  # noqa: F401
from keras_attention.data._babi_generator import QUESTIONS_PER_STORY  # noqa: F401
from keras_attention.data._babi_generator import TASKS  # noqa: F401
from keras_attention.data._babi_generator import generate_babi  # noqa: F401
from keras_attention.data._babi_generator import write_babi  # noqa: F401
from keras_attention.data._babi_tasks import ENVIRONMENT_VARIABLE  # noqa: F401
from keras_attention.data._babi_tasks import SIZE_DIRECTORIES  # noqa: F401
from keras_attention.data._babi_tasks import SIZES
from keras_attention.data._babi_tasks import SPLITS  # noqa: F401
from keras_attention.data._babi_tasks import TASK_NAMES
from keras_attention.data._babi_tasks import _fraction
from keras_attention.data._babi_tasks import _task
from keras_attention.data._babi_tasks import babi_directory
from keras_attention.data._babi_tasks import split_validation
from keras_attention.data._babi_tasks import task_file
from keras_attention.text.parallel_files import CorpusError
from keras_attention.text.parallel_files import read_lines

PAD = "<pad>"  # the word of id 0
_LINE = re.compile(r"(\d+) (.*)")


class BabiSample(NamedTuple):
    """One question with its story.

    Attributes:
        sentences: the story's statements before the question, oldest
            first (tuple of str, as written).
        sentence_ids: their line IDs (tuple of int).
        question: str.
        answer: str, as written (`answer_token` gives its class).
        supporting_ids: the IDs of the statements that answer it.
        story: the 0-based index of its story in the text read (the
            stories that start with ID 1, counted); 0 if not given.
    """

    sentences: tuple
    sentence_ids: tuple
    question: str
    answer: str
    supporting_ids: tuple
    story: int = 0


def tokenize(text):
    """Lower-case words, punctuation dropped: "Where is Mary?" ->
    `["where", "is", "mary"]`."""
    return re.findall(r"[^\s.?!,;:]+", text.lower())


def answer_token(answer):
    """The class of an answer: lower-cased, one token even when it is
    several words joined by commas ("Bill" -> "bill", "football,apple" ->
    "football,apple", "n,s" -> "n,s")."""
    return answer.strip().lower()


def parse_babi(lines, source="<text>"):
    """The samples of bAbI lines (a str or an iterable of lines).

    Blank lines are skipped. `source` names the text in error messages.
    Each sample's `story` is the index of its story in `lines`.

    Raises:
        CorpusError (a ValueError): a malformed line; the message names
            `source` and the 1-based line number.
    """
    if isinstance(lines, str):
        lines = lines.split("\n")
    samples, sentences, ids, previous, story = [], [], [], 0, -1

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
            sentences, ids, story = [], [], story + 1
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
                                  answer, supporting, story))
    return samples


def read_babi(path):
    """The samples of a bAbI file (plain or gzip, UTF-8); see `parse_babi`.

    Raises:
        FileNotFoundError: `path` does not exist.
        CorpusError (a ValueError): the file is empty, not UTF-8, or has a
            malformed line (named by file and 1-based line number).
    """
    path = _validation.path("path", path)
    samples = parse_babi(read_lines(path), source=str(path))
    if not samples:
        raise CorpusError(f"{path} holds no question lines")
    return samples


class BabiVocabulary:
    """Words and answers to ids; id 0 is the padding word.

    Answers share the words' ids (a memory network with adjacent tying
    predicts a word of its input vocabulary): an answer is its
    `answer_token`, so "Bill" is the word "bill" and "football,apple" one
    more id.

    Args:
        words: the words, in any order, repeats allowed; `PAD` is added.
    """

    def __init__(self, words):
        self.words = (PAD,) + tuple(sorted(set(words) - {PAD}))
        self.index = {word: i for i, word in enumerate(self.words)}

    @classmethod
    def from_samples(cls, *sample_lists):
        """The vocabulary of every sentence, question and answer
        (`answer_token`) given."""
        words = set()
        for samples in sample_lists:
            for sample in samples:
                for text in sample.sentences + (sample.question,):
                    words.update(tokenize(text))
                words.add(answer_token(sample.answer))
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
    sentence's end are 0. Answers are encoded as their `answer_token`.

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
    answers = np.array([vocabulary.encode([answer_token(sample.answer)])[0]
                        for sample in samples], "int32").reshape(-1)
    return {"story": story, "question": question}, answers


def batches_by_length(story, order, batch_size, rng, pool=50, multiple=1):
    """Batches of similar story lengths, each cut to its longest story.

    Stories are padded to `memory_size` slots (`vectorize_babi`), but most
    are short: over the 20 tasks of 1k, 8.8 of 50 slots hold a sentence on
    average. A reader whose output ignores empty slots (the Universal
    Transformer's: they are masked from attention, the ponder cost and
    the readout) computes the same answers on a story cut after its last
    sentence, in a fifth of the time. So `order` (a permutation of the
    questions, drawn by the caller) is cut into pools of `pool` batches;
    each pool is sorted by story length (stably, so ties keep `order`'s
    order) and cut into batches; the batches of all pools are shuffled
    by `rng`. tensor2tensor's input pipeline, which trained the Universal
    Transformer of Dehghani et al. (2019), batches by length likewise.

    Args:
        story: `(N, M, J)` word ids, empty slots last (`vectorize_babi`).
        order: the `N` question indices in the order drawn this epoch.
        batch_size: the questions a batch (the last pool's last batch may
            have fewer).
        rng: a `numpy.random.Generator`, shuffling the batches.
        pool: how many batches' questions are sorted together.
        multiple: each batch keeps its longest story's slots rounded up
            to a multiple of this (fewer shapes for a backend that
            compiles each: JAX), at most `M`.

    Returns:
        A list of `(indices, slots)`: the questions of a batch and the
        slots to keep, `story[indices, :slots]`.

    Example:

    >>> story = np.zeros((6, 5, 2), "int32")
    >>> for row, length in enumerate([5, 1, 4, 2, 1, 3]):
    ...     story[row, :length] = 1
    >>> batches = batches_by_length(story, np.arange(6), 2,
    ...                             np.random.default_rng(0))
    >>> sorted((slots, indices.tolist()) for indices, slots in batches)
    [(1, [1, 4]), (3, [3, 5]), (5, [2, 0])]
    """
    story = np.asarray(story)
    if story.ndim != 3:
        raise ValueError(f"`story` must be (N, M, J) word ids, received: "
                         f"shape {story.shape}")
    order = np.asarray(order)
    batch_size = _validation.positive_int("batch_size", batch_size)
    pool = _validation.positive_int("pool", pool)
    multiple = _validation.positive_int("multiple", multiple)
    if order.ndim != 1 or (len(order) and not (
            0 <= order.min() and order.max() < len(story))):
        raise ValueError(f"`order` must be indices of the {len(story)} "
                         f"stories, received: {order!r}")
    slots = story.shape[1]
    lengths = np.any(story != 0, axis=-1).sum(-1)  # (N,) slots in use
    batches = []
    for start in range(0, len(order), batch_size * pool):
        chunk = order[start:start + batch_size * pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        for first in range(0, len(chunk), batch_size):
            indices = chunk[first:first + batch_size]
            longest = max(int(lengths[indices].max()), 1)
            batches.append((indices, min(slots, -(-longest // multiple)
                                         * multiple)))
    return [batches[index] for index in rng.permutation(len(batches))]


class BabiTask(NamedTuple):
    """One task of the release, as `load_task` reads it.

    Attributes:
        task: its number, 1 to 20.
        train: the training file's `BabiSample`s less `valid`.
        valid: whole stories of the training file (`split_validation`).
        test: the test file's samples.
    """

    task: int
    train: list
    valid: list
    test: list


def load_task(root, task, size="1k", validation_fraction=0.1, seed=0):
    """A task of the release: its training set, a validation set carved off
    it by stories, and its test set.

    Args:
        root: the release root (`task_file`); None reads
            `$KERAS_ATTENTION_BABI_DIR`.
        task: 1 to 20 (`TASK_NAMES`).
        size: "1k" (1,000 training questions) or "10k" (10,000); the test
            set has 1,000 questions at both sizes.
        validation_fraction: the share of training stories held out
            (`split_validation`); None holds out none.
        seed: the seed of the validation split.

    Returns:
        A `BabiTask(task, train, valid, test)`.

    Raises:
        ValueError: a bad argument, or no root (`task_file`).
        FileNotFoundError: a file of the task is missing (`task_file`).
        CorpusError (a ValueError): a malformed file.

    Example:

    >>> import pathlib, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> root = pathlib.Path(folder.name)
    >>> (root / "en").mkdir()
    >>> for split, seed in (("train", 0), ("test", 1)):
    ...     name = f"qa1_single-supporting-fact_{split}.txt"
    ...     _ = write_babi(root / "en" / name, 1, 1000, seed)
    >>> task = load_task(root, 1)
    >>> len(task.train), len(task.valid), len(task.test)
    (900, 100, 1000)
    """
    return load_tasks(root, [task], size, validation_fraction, seed)[_task(task)]


def load_tasks(root, tasks, size="1k", validation_fraction=0.1, seed=0):
    """Several tasks of the release, `{task: BabiTask}` (see `load_task`).

    Every file is found before any is read, so a missing one fails at
    once. For joint training concatenate the tasks' lists, e.g.
    `[s for t in loaded.values() for s in t.train]`.

    Args:
        root: the release root; None reads `$KERAS_ATTENTION_BABI_DIR`.
        tasks: "all" (1 to 20), a task number, or an iterable of them.
        size, validation_fraction, seed: as in `load_task`; every task is
            split with `seed`.

    Raises:
        ValueError: `tasks` is not "all" or task numbers; as `load_task`.
        FileNotFoundError, CorpusError: as `load_task`.
    """
    received = tasks
    if isinstance(tasks, str):
        if tasks != "all":
            raise ValueError(
                '`tasks` must be "all" or task numbers from 1 to 20, '
                f"received: tasks={tasks!r}"
            )
        tasks = list(TASK_NAMES)
    elif isinstance(tasks, numbers.Integral):
        tasks = [tasks]
    try:
        tasks = list(dict.fromkeys(_task(task) for task in tasks))
    except TypeError:
        raise ValueError(
            '`tasks` must be "all" or task numbers from 1 to 20, received: '
            f"tasks={received!r}"
        ) from None
    if not tasks:
        raise ValueError(f"`tasks` must name a task, received: tasks={received!r}")
    if validation_fraction is not None:
        _fraction("validation_fraction", validation_fraction)
    _validation.choice("size", size, SIZES)
    root = babi_directory(root)
    files = {task: (task_file(root, task, size, "train"),
                    task_file(root, task, size, "test")) for task in tasks}
    loaded = {}
    for task, (train_file, test_file) in files.items():
        train, valid = read_babi(train_file), []
        if validation_fraction is not None:
            train, valid = split_validation(train, validation_fraction, seed)
        loaded[task] = BabiTask(task, train, valid, read_babi(test_file))
    return loaded
