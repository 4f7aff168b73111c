"""Bach chorales as token sequences for a decoder-only language model (the
Music Transformer's JSB experiment, Huang et al., ICLR 2019).

The data: a JSON object (optionally gzip-compressed) mapping split names to
lists of chorales; a chorale is a list of time steps on a 16th-note grid,
each step four MIDI pitches (soprano, alto, tenor, bass), -1 where a voice
is silent. It is the format of Coconet's `Jsb16thSeparated.json` (Huang,
Cooijmans et al., ISMIR 2017), the split of Boulanger-Lewandowski et al.
(ICML 2012). `load_chorales` reads it from a path or from the
`JSB_CHORALES` environment variable (a file, or a folder holding one);
nothing is downloaded.

Serialization, as the paper does: the voices of each step in order S, A,
T, B, then the next step, so token `4·t + v` is voice `v` at step `t`. The
vocabulary: `<pad>` 0, `<s>` 1, a silent voice (rest) 2, then one token per
MIDI pitch from `LOWEST_PITCH` (36) to `HIGHEST_PITCH` (81).

Letters: C chorales, T steps, V voices (4), L window length in tokens.
"""

import gzip
import json
import os
import pathlib

import numpy as np

from keras_attention import _validation

ENVIRONMENT_VARIABLE = "JSB_CHORALES"
DEFAULT_FILE = "jsb16th_train_valid.json.gz"
VOICES = ("soprano", "alto", "tenor", "bass")
PAD_ID, BOS_ID, REST_ID = 0, 1, 2
LOWEST_PITCH, HIGHEST_PITCH = 36, 81
FIRST_PITCH_ID = 3
VOCABULARY_SIZE = FIRST_PITCH_ID + HIGHEST_PITCH - LOWEST_PITCH + 1  # 49


def chorales_file(path=None):
    """The data file: `path`, else `$JSB_CHORALES`; a folder stands for
    its `jsb16th_train_valid.json.gz`, or its only `*.json`/`*.json.gz`
    file. A missing file is a `FileNotFoundError` naming where it looked."""
    given = path or os.environ.get(ENVIRONMENT_VARIABLE)
    if not given:
        raise FileNotFoundError(
            "No chorales given: pass a path (a .json or .json.gz file, or "
            f"its folder) or set ${ENVIRONMENT_VARIABLE}, received: "
            f"path={path!r}")
    given = pathlib.Path(given)
    if given.is_dir():
        default = given / DEFAULT_FILE
        if default.is_file():
            return default
        found = sorted([*given.glob("*.json"), *given.glob("*.json.gz")])
        if len(found) != 1:
            raise FileNotFoundError(
                f"{given} holds no {DEFAULT_FILE} and "
                f"{len(found)} other .json/.json.gz files; name the file")
        return found[0]
    if not given.is_file():
        raise FileNotFoundError(f"No chorales file at {given}")
    return given


def _check_chorale(split, index, chorale):
    array = np.asarray(chorale, dtype="int64") if len(chorale) else (
        np.zeros((0, 4), "int64"))
    where = f"chorale {index} of split {split!r}"
    if array.ndim != 2 or array.shape[1] != len(VOICES):
        raise ValueError(
            f"{where}: each step must be {len(VOICES)} pitches (S, A, T, "
            f"B), received an array of shape {array.shape}")
    bad = (array != -1) & ((array < LOWEST_PITCH) | (array > HIGHEST_PITCH))
    if bad.any():
        step, voice = np.argwhere(bad)[0]
        raise ValueError(
            f"{where}: step {step}, {VOICES[voice]}: pitches must be -1 "
            f"(silent) or in {LOWEST_PITCH}..{HIGHEST_PITCH}, received: "
            f"{array[step, voice]}")
    return array.astype("int32")


def parse_chorales(data, splits=None):
    """`{split: [(T, 4) int32 arrays]}` from the decoded JSON object,
    checked: every step four pitches in range or -1. `splits` (names)
    keeps those only; a missing one is a `KeyError` naming the splits
    there are."""
    if not isinstance(data, dict):
        raise ValueError(
            "The chorales must be a JSON object of split name -> list of "
            f"chorales, received: {type(data).__name__}")
    names = list(data) if splits is None else list(splits)
    missing = [name for name in names if name not in data]
    if missing:
        raise KeyError(
            f"No split {missing[0]!r} in the chorales, whose splits are "
            f"{sorted(data)}")
    return {name: [_check_chorale(name, index, chorale)
                   for index, chorale in enumerate(data[name])]
            for name in names}


def load_chorales(path=None, splits=None):
    """Read the chorales (see `chorales_file` for `path`) as
    `{split: [(T, 4) int32 arrays]}`; `splits` keeps the named ones.

    Example:

    >>> import json, pathlib, tempfile
    >>> from keras_attention.data.chorales import load_chorales
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(folder.name) / "tiny.json"
    >>> _ = path.write_text(json.dumps(
    ...     {"train": [[[72, 67, 64, 48], [72, 67, 64, -1]]], "valid": []}))
    >>> chorales = load_chorales(path)
    >>> chorales["train"][0].tolist()
    [[72, 67, 64, 48], [72, 67, 64, -1]]
    >>> folder.cleanup()
    """
    file = chorales_file(path)
    opener = gzip.open if file.name.endswith(".gz") else open
    try:
        with opener(file, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{file} is not a JSON chorales file: {error}") from None
    return parse_chorales(data, splits)


def serialize(chorale):
    """A `(T, 4)` chorale to its `(4·T,)` int32 tokens: S, A, T, B of each
    step in turn; a silent voice is `REST_ID`.

    >>> from keras_attention.data.chorales import serialize, deserialize
    >>> tokens = serialize([[72, 67, 64, 48], [74, -1, 65, 50]])
    >>> tokens.tolist()
    [39, 34, 31, 15, 41, 2, 32, 17]
    >>> deserialize(tokens).tolist()
    [[72, 67, 64, 48], [74, -1, 65, 50]]
    """
    chorale = _check_chorale("given", 0, chorale)
    tokens = np.where(chorale == -1, REST_ID,
                      chorale - LOWEST_PITCH + FIRST_PITCH_ID)
    return tokens.reshape(-1).astype("int32")


def deserialize(tokens):
    """`(4·T,)` tokens back to a `(T, 4)` chorale (-1 for a rest). `<s>`
    and `<pad>` tokens are dropped first; the rest must be whole steps of
    rests and pitches."""
    tokens = np.asarray(tokens).reshape(-1)
    tokens = tokens[(tokens != PAD_ID) & (tokens != BOS_ID)]
    if tokens.size % len(VOICES):
        raise ValueError(
            f"`tokens` must hold whole steps of {len(VOICES)} voices, "
            f"received {tokens.size} tokens")
    bad = (tokens < REST_ID) | (tokens >= VOCABULARY_SIZE)
    if bad.any():
        raise ValueError(
            f"`tokens` must be ids below {VOCABULARY_SIZE}, received: "
            f"{tokens[bad][0]}")
    pitches = np.where(tokens == REST_ID, -1,
                       tokens - FIRST_PITCH_ID + LOWEST_PITCH)
    return pitches.reshape(-1, len(VOICES)).astype("int32")


def transpose(chorale, semitones):
    """The chorale moved by `semitones` (rests stay rests); a pitch leaving
    `LOWEST_PITCH..HIGHEST_PITCH` is a `ValueError`."""
    chorale = np.asarray(chorale, "int32")
    moved = np.where(chorale == -1, -1, chorale + int(semitones))
    return _check_chorale(f"transposed by {semitones}", 0, moved)


def windows(chorales, length, stride=None):
    """Token windows for a decoder-only model: every chorale serialized,
    cut into windows of `length` tokens starting every `stride` tokens
    (default `length`; both multiples of 4, so a window starts at a step),
    each prefixed with `<s>` and padded at the end with `<pad>`. Returns
    `(N, length + 1)` int32: inputs `[:, :-1]`, targets `[:, 1:]`.

    >>> from keras_attention.data.chorales import windows, serialize
    >>> chorale = [[72, 67, 64, 48]] * 3
    >>> windows([chorale], 8).tolist()
    [[1, 39, 34, 31, 15, 39, 34, 31, 15], [1, 39, 34, 31, 15, 0, 0, 0, 0]]
    """
    length = _validation.positive_int("length", length)
    stride = length if stride is None else _validation.positive_int(
        "stride", stride)
    for name, value in (("length", length), ("stride", stride)):
        if value % len(VOICES):
            raise ValueError(
                f"`{name}` must be a multiple of {len(VOICES)} (whole "
                f"steps), received: {name}={value}")
    rows = []
    for chorale in chorales:
        tokens = serialize(chorale)
        for start in range(0, max(len(tokens) - length, 0) + stride, stride):
            piece = tokens[start:start + length]
            if not len(piece):
                break
            row = np.full(length + 1, PAD_ID, "int32")
            row[0] = BOS_ID
            row[1:1 + len(piece)] = piece
            rows.append(row)
            if start + length >= len(tokens):
                break
    return np.stack(rows) if rows else np.zeros((0, length + 1), "int32")
