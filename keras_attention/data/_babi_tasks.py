"""The bAbI v1.2 release (tasks_1-20_v1-2): where its files are, and the
validation split by stories. `keras_attention.data.babi` reads the files
(`load_task`, `load_tasks`) and re-exports the names here: import them
from there.

The release holds `en/` (1k: 1,000 training and 1,000 test questions a
task) and `en-10k/` (10k: 10,000 training questions, the same test files),
files `qa{task}_{TASK_NAMES[task]}_{split}.txt`, here plain or gzipped. A
public copy may lack `en-10k/qa3_three-supporting-facts_train.txt`; the
release tarball has it.
"""

import numbers
import os
import random

from keras_attention import _validation

# The release's file-name stems, qa{task}_{name}_{split}.txt.
TASK_NAMES = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    3: "three-supporting-facts",
    4: "two-arg-relations",
    5: "three-arg-relations",
    6: "yes-no-questions",
    7: "counting",
    8: "lists-sets",
    9: "simple-negation",
    10: "indefinite-knowledge",
    11: "basic-coreference",
    12: "conjunction",
    13: "compound-coreference",
    14: "time-reasoning",
    15: "basic-deduction",
    16: "basic-induction",
    17: "positional-reasoning",
    18: "size-reasoning",
    19: "path-finding",
    20: "agents-motivations",
}
SIZES = ("1k", "10k")
SIZE_DIRECTORIES = {"1k": "en", "10k": "en-10k"}
SPLITS = ("train", "test")
ENVIRONMENT_VARIABLE = "KERAS_ATTENTION_BABI_DIR"


def babi_directory(root=None):
    """The release root as a `pathlib.Path`: `root`, else
    `$KERAS_ATTENTION_BABI_DIR`, else a ValueError."""
    if root is None:
        root = os.environ.get(ENVIRONMENT_VARIABLE) or None
    if root is None:
        raise ValueError(
            "bAbI needs the release root (the folder holding en/ and "
            f"en-10k/): pass `root` or set {ENVIRONMENT_VARIABLE}, received "
            "neither"
        )
    return _validation.path("root", root)


def _task(task):
    _validation.positive_int("task", task)  # no bool, no float
    return int(_validation.choice("task", task, TASK_NAMES))


def _fraction(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 < value < 1.0
    ):
        raise ValueError(
            f"`{name}` must be a float in (0, 1), received: {name}={value!r}"
        )
    return float(value)


def task_file(root, task, size="1k", split="train"):
    """The path of one file of the release, gzipped or plain.

    Args:
        root: the release root holding `en/` and `en-10k/` (str or
            `os.PathLike`); None reads `$KERAS_ATTENTION_BABI_DIR`.
        task: 1 to 20 (`TASK_NAMES`).
        size: "1k" (`en/`) or "10k" (`en-10k/`).
        split: "train" or "test".

    Returns:
        `root/en/qa{task}_{TASK_NAMES[task]}_{split}.txt.gz` (`en-10k/` at
        10k), or the same name without `.gz` if only that exists.

    Raises:
        ValueError: a bad `task`, `size` or `split`; no `root` and no
            `$KERAS_ATTENTION_BABI_DIR`.
        FileNotFoundError: neither file exists.
    """
    task = _task(task)
    _validation.choice("size", size, SIZES)
    _validation.choice("split", split, SPLITS)
    name = f"qa{task}_{TASK_NAMES[task]}_{split}.txt"
    path = babi_directory(root) / SIZE_DIRECTORIES[size] / name
    gzipped = path.with_name(name + ".gz")
    for candidate in (gzipped, path):
        if candidate.is_file():
            return candidate
    hint = ""
    if (task, size, split) == (3, "10k", "train"):
        hint = ("; the public copy of the release lacks this file, the "
                "release tarball tasks_1-20_v1-2.tar.gz has it")
    raise FileNotFoundError(
        f"bAbI task {task} ({size} {split}) not found: looked for {gzipped} "
        f"and {path}{hint}"
    )


def split_validation(samples, fraction=0.1, seed=0):
    """`(train, valid)`: whole stories of `samples` held out for validation.

    `fraction` of the stories (`BabiSample.story`), rounded half up, drawn
    with `seed`, go to `valid` with all their questions, the others to
    `train`, so the questions of a story, which share its sentences, are on
    one side. Both lists keep the order of `samples`. The papers hold out
    10% of each task's training questions (Sukhbaatar et al. 2015); with
    stories of unequal length the questions held out are about `fraction`.

    Samples of several files share story indices: stories of the same
    index go to the same side, so split each file to hold out `fraction`
    of each.

    Args:
        samples: `BabiSample`s, as `read_babi` gives them.
        fraction: float in (0, 1), the share of stories held out.
        seed: the seed of the draw; the same seed, the same split.

    Returns:
        Two lists of `BabiSample`.

    Raises:
        ValueError: `fraction` is not in (0, 1), or it leaves no story on
            one side.

    Example:

    >>> from keras_attention.data import babi
    >>> samples = babi.parse_babi(babi.generate_babi(1, 100, seed=0))  # 20 stories
    >>> train, valid = split_validation(samples, 0.1, seed=0)
    >>> len(train), len(valid), {s.story for s in train} & {s.story for s in valid}
    (90, 10, set())
    """
    fraction = _fraction("fraction", fraction)
    samples = list(samples)
    stories = sorted({sample.story for sample in samples})
    held = int(fraction * len(stories) + 0.5)
    if not 0 < held < len(stories):
        raise ValueError(
            f"split_validation needs a story on each side: fraction={fraction}"
            f" of {len(stories)} stories holds out {held}; pass more stories "
            "or another fraction"
        )
    valid_stories = set(random.Random(seed).sample(stories, held))
    train = [sample for sample in samples if sample.story not in valid_stories]
    valid = [sample for sample in samples if sample.story in valid_stories]
    return train, valid
