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
from keras_attention._extras import require

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


def _read(path):
    """`(file, decoded JSON)` of the chorales file `chorales_file(path)`
    names; an unreadable file is a one-line `ValueError`."""
    file = chorales_file(path)
    opener = gzip.open if file.name.endswith(".gz") else open
    try:
        with opener(file, "rt", encoding="utf-8") as handle:
            return file, json.load(handle)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{file} is not a JSON chorales file: {error}") from None


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
    _, data = _read(path)
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


def sequence(chorale):
    """A chorale as the model reads it whole: `<s>`, then its tokens
    (`serialize`), `(1 + 4·T,)` int32. Entry `i >= 1` is voice
    `(i − 1) mod 4` of step `(i − 1) // 4`.

    >>> from keras_attention.data.chorales import sequence
    >>> sequence([[72, 67, 64, 48]]).tolist()
    [1, 39, 34, 31, 15]
    """
    return np.concatenate([[BOS_ID], serialize(chorale)]).astype("int32")


def random_transposition(chorale, semitones, rng):
    """The chorale moved by a number of semitones drawn uniformly from
    `[-semitones, semitones]`, narrowed so that every pitch stays in
    `LOWEST_PITCH..HIGHEST_PITCH` (the training augmentation; 0 returns
    the chorale as it is).

    >>> import numpy as np
    >>> from keras_attention.data.chorales import random_transposition
    >>> high = np.array([[80, 70, 60, 50]])  # 81 is the top: up by 1 at most
    >>> moves = {int(random_transposition(high, 3, np.random.default_rng(s))
    ...              [0, 0]) - 80 for s in range(40)}
    >>> sorted(moves)
    [-3, -2, -1, 0, 1]
    """
    chorale = _check_chorale("given", 0, chorale)
    semitones = _validation.non_negative_int("semitones", semitones)
    sounding = chorale[chorale >= 0]
    if not semitones or not sounding.size:
        return chorale
    low = max(-semitones, LOWEST_PITCH - int(sounding.min()))
    high = min(semitones, HIGHEST_PITCH - int(sounding.max()))
    return transpose(chorale, int(rng.integers(low, high + 1)))


def training_windows(chorales, length, rng, start_every=None, transpose=0):
    """One epoch of training windows, `(N, length + 1)` int32, shuffled.

    Each chorale (moved by `random_transposition(chorale, transpose,
    rng)`) is its `sequence` cut into consecutive windows: row `[:-1]`
    is a window's inputs and row `[1:]` its targets, the next window's
    inputs starting where these targets end, so every token is a target
    exactly once. The cuts fall at sequence positions that are multiples
    of `start_every` tokens (default `length`), shifted by a random
    multiple of `start_every` per chorale and epoch: with `start_every`
    one bar (64 tokens: 16 steps of 4 voices), a window's position `p`
    holds a token at the same place in its bar as position `p` of any
    other window, so absolute positions tell the metre as they do in a
    whole chorale. A window's first input is the token before its
    targets (`<s>` only at a chorale's start); the last window of a
    chorale is padded with `PAD_ID`.

    >>> import numpy as np
    >>> from keras_attention.data.chorales import training_windows
    >>> chorale = np.array([[72, 67, 64, 48]] * 3)  # 12 tokens
    >>> rows = training_windows([chorale], 8, np.random.default_rng(0),
    ...                         start_every=4)
    >>> rows.shape, int((rows[:, 1:] != 0).sum())  # every token once
    ((2, 9), 12)
    """
    length = _validation.positive_int("length", length)
    start_every = length if start_every is None else (
        _validation.positive_int("start_every", start_every))
    if length % start_every or start_every % len(VOICES):
        raise ValueError(
            f"`start_every` must be a multiple of {len(VOICES)} (whole "
            "steps) dividing `length`, received: "
            f"start_every={start_every}, length={length}")
    rows = []
    for chorale in chorales:
        tokens = sequence(random_transposition(chorale, transpose, rng))
        shift = start_every * int(rng.integers(0, length // start_every))
        for start, end in _cuts(len(tokens), length, shift):
            row = np.full(length + 1, PAD_ID, "int32")
            row[:end - start + 1] = tokens[start:end + 1]
            rows.append(row)
    rows = np.stack(rows) if rows else np.zeros((0, length + 1), "int32")
    return rows[rng.permutation(len(rows))]


def _cuts(total, length, shift):
    """`[(start, end)]`: the windows of a sequence of `total` entries, each
    `tokens[start:end + 1]` (inputs `[start, end)`, targets `(start,
    end]`), the first ending at `length - shift` (or `length` when
    `shift` is 0), the others every `length` after it, the last at
    `total - 1`; so every entry but the first is a target exactly once.

    >>> from keras_attention.data.chorales import _cuts
    >>> _cuts(20, 8, 4)
    [(0, 4), (4, 12), (12, 19)]
    """
    first = length - shift if shift else length
    starts = [0] + list(range(first, total - 1, length))
    return list(zip(starts, starts[1:] + [total - 1]))


def scoring_windows(chorales, length):
    """Every token of every chorale scored once, each with at least
    `length / 2` tokens of context (or all since the chorale's start):
    windows of `length + 1` entries of the `sequence` starting every
    `length / 2`, and `(N, length)` float32 weights, 1 at the targets a
    window scores (all of the first window's, the second half of every
    later one's; never padding). Returns `(rows, weights)` for
    `TransformerLanguageModel.negative_log_likelihood`.

    >>> import numpy as np
    >>> from keras_attention.data.chorales import scoring_windows
    >>> rows, weights = scoring_windows([[[72, 67, 64, 48]] * 4], 8)
    >>> rows.shape, weights.sum(1).tolist()  # 16 tokens: 8, then 4 + 4
    ((3, 9), [8.0, 4.0, 4.0])
    """
    length = _validation.positive_int("length", length)
    if length % (2 * len(VOICES)):
        raise ValueError(
            f"`length` must be a multiple of {2 * len(VOICES)} (windows "
            "start every half window, at whole steps), received: "
            f"length={length}")
    half = length // 2
    rows, weights = [], []
    for chorale in chorales:
        tokens = sequence(chorale)
        start = 0
        while True:
            row = np.full(length + 1, PAD_ID, "int32")
            piece = tokens[start:start + length + 1]
            row[:len(piece)] = piece
            weight = (row[1:] != PAD_ID).astype("float32")
            if start:
                weight[:half] = 0.0  # scored by the window before
            rows.append(row)
            weights.append(weight)
            if start + length + 1 >= len(tokens):
                break
            start += half
    if not rows:
        return (np.zeros((0, length + 1), "int32"),
                np.zeros((0, length), "float32"))
    return np.stack(rows), np.stack(weights)


def negative_log_likelihood(model, chorales, length, batch_size=32):
    """The note-wise NLL (nats per token) of `model` (a
    `TransformerLanguageModel` over this vocabulary) on `chorales`: every
    token of every chorale, each predicted from up to `length` tokens
    before it and at least `length / 2` (`scoring_windows`), the number
    `reproductions/systems/music_transformer_jsb.py` reports. An empty list is a
    `ValueError`."""
    if not len(chorales):
        raise ValueError("`chorales` must hold at least one chorale, "
                         "received an empty list")
    rows, weights = scoring_windows(chorales, length)
    return model.negative_log_likelihood(rows, batch_size, weights=weights)


def repeat_rate(chorales):
    """The fraction of tokens that repeat the token four before them (the
    same voice one step earlier), over every step after the first."""
    same = total = 0
    for chorale in chorales:
        tokens = serialize(chorale)
        same += int((tokens[len(VOICES):] == tokens[:-len(VOICES)]).sum())
        total += max(len(tokens) - len(VOICES), 0)
    if not total:
        raise ValueError("`chorales` must hold a chorale of two steps or "
                         "more, received none")
    return same / total


def repeat_rule_nll(chorales, repeat_probability):
    """The NLL (nats per token, over every token, as
    `negative_log_likelihood`) of the rule with no learned weights:
    each voice repeats its previous step's token with probability
    `repeat_probability` (e.g. the training chorales' `repeat_rate`),
    else any other of the 47 tokens a chorale holds (a rest or a pitch)
    equally; a chorale's first step is uniform over the 47.

    >>> from keras_attention.data.chorales import repeat_rule_nll
    >>> round(repeat_rule_nll([[[72, 67, 64, 48]] * 2], 0.5), 4)
    2.2716
    """
    probability = _validation.probability("repeat_probability",
                                          repeat_probability)
    choices = VOCABULARY_SIZE - FIRST_PITCH_ID + 1  # a rest or a pitch: 47
    total = count = 0.0
    for chorale in chorales:
        tokens = serialize(chorale)
        repeats = tokens[len(VOICES):] == tokens[:-len(VOICES)]
        first = min(len(tokens), len(VOICES))
        total += first * np.log(choices)
        total -= repeats.sum() * np.log(max(probability, 1e-300))
        total -= (~repeats).sum() * np.log(
            max((1 - probability) / (choices - 1), 1e-300))
        count += len(tokens)
    if not count:
        raise ValueError("`chorales` must hold at least one step, "
                         "received none")
    return float(total / count)


def load_split(path, split=None):
    """The chorales of one split of a file, for scoring: a JSON object of
    splits (Coconet's layout: `train`, `valid`, `test`; `split` names one,
    default `valid`), or a JSON list of chorales (`split` must then be
    None). Each problem is a one-line `ValueError` naming the file: not
    JSON, another layout, a missing or empty split, a pitch out of range
    (with the chorale, step and voice)."""
    file, data = _read(path)
    if isinstance(data, list):
        if split is not None:
            raise ValueError(
                f"{file} holds a list of chorales, not splits: give no "
                f"split, received: split={split!r}")
        data, split = {"chorales": data}, "chorales"
    elif isinstance(data, dict):
        split = "valid" if split is None else split
        if split not in data:
            raise ValueError(f"{file} has no split {split!r}; its splits "
                             f"are {sorted(data)}")
        if not isinstance(data[split], list):
            raise ValueError(f"{file}: split {split!r} must be a list of "
                             f"chorales, received: "
                             f"{type(data[split]).__name__}")
    else:
        raise ValueError(
            f"{file} must hold a JSON object of splits (train, valid, test) "
            f"or a list of chorales, received: {type(data).__name__}")
    if not data[split]:
        raise ValueError(f"{file}: split {split!r} holds no chorales")
    for index, chorale in enumerate(data[split]):
        if not isinstance(chorale, list) or not chorale:
            raise ValueError(f"{file}: chorale {index} of split {split!r} "
                             "must be a non-empty list of steps")
    try:
        return parse_chorales(data, [split])[split]
    except ValueError as error:
        raise ValueError(f"{file}: {error}") from None


def notes(chorale):
    """The chorale's notes, voice by voice: `[(voice, pitch, start step,
    steps held)]`. A pitch repeated on consecutive steps of a voice is one
    held note (the 16th-note grid does not tell a repeated note from a held
    one; holding is the usual reading); rests end notes.

    >>> from keras_attention.data.chorales import notes
    >>> notes([[72, 67, 64, 48], [72, 67, 65, -1], [74, 67, 65, 48]])
    [(0, 72, 0, 2), (0, 74, 2, 1), (1, 67, 0, 3), (2, 64, 0, 1), \
(2, 65, 1, 2), (3, 48, 0, 1), (3, 48, 2, 1)]
    """
    chorale = _check_chorale("given", 0, chorale)
    found = []
    for voice in range(chorale.shape[1]):
        line = chorale[:, voice]
        start = 0
        for step in range(1, len(line) + 1):
            if step == len(line) or line[step] != line[start]:
                if line[start] != -1:
                    found.append((voice, int(line[start]), start,
                                  step - start))
                start = step
    return found


def write_midi(chorale, path, beats_per_minute=80, program=19):
    """Write the chorale as a standard MIDI file (type 1, one track per
    voice, a 16th note = a quarter of a beat) with `mido`; returns the
    path. `program` is the General MIDI instrument (19: church organ).
    Needs the `music` extra."""
    require("keras_attention.data.chorales.write_midi", "music", "mido")
    import mido

    beats_per_minute = _validation.positive_float("beats_per_minute",
                                                  beats_per_minute)
    ticks_per_step = 120  # 480 ticks per beat, a beat = 4 steps
    midi = mido.MidiFile(type=1, ticks_per_beat=4 * ticks_per_step)
    tempo = mido.MidiTrack()
    tempo.append(mido.MetaMessage(
        "set_tempo", tempo=mido.bpm2tempo(beats_per_minute), time=0))
    midi.tracks.append(tempo)
    by_voice = {voice: [] for voice in range(len(VOICES))}
    for voice, pitch, start, held in notes(chorale):
        by_voice[voice].append((pitch, start, held))
    for voice, name in enumerate(VOICES):
        track = mido.MidiTrack()
        track.append(mido.MetaMessage("track_name", name=name, time=0))
        track.append(mido.Message("program_change", channel=voice,
                                  program=program, time=0))
        events = []  # (tick, order, message): note-offs before note-ons
        for pitch, start, held in by_voice[voice]:
            events.append((start * ticks_per_step, 1, "note_on", pitch))
            events.append(((start + held) * ticks_per_step, 0, "note_off",
                           pitch))
        now = 0
        for tick, _, kind, pitch in sorted(events):
            track.append(mido.Message(kind, channel=voice, note=pitch,
                                      velocity=80 if kind == "note_on" else 0,
                                      time=tick - now))
            now = tick
        midi.tracks.append(track)
    midi.save(str(path))
    return path


def read_midi(path):
    """A MIDI file written by `write_midi` back to a `(T, 4)` chorale (each
    sounding note on the steps it covers; -1 elsewhere). T ends at the last
    note's end: silent steps after it are not in the file. Needs the
    `music` extra."""
    require("keras_attention.data.chorales.read_midi", "music", "mido")
    import mido

    midi = mido.MidiFile(str(path))
    ticks_per_step = midi.ticks_per_beat // 4
    spans = []  # (voice, pitch, start step, end step)
    for track in midi.tracks:
        now, started = 0, {}
        for message in track:
            now += message.time
            if message.type == "note_on" and message.velocity > 0:
                started[(message.channel, message.note)] = now
            elif message.type in ("note_off", "note_on"):
                begin = started.pop((message.channel, message.note))
                spans.append((message.channel, message.note,
                              begin // ticks_per_step, now // ticks_per_step))
    steps = max((end for *_, end in spans), default=0)
    chorale = np.full((steps, len(VOICES)), -1, "int32")
    for voice, pitch, begin, end in spans:
        chorale[begin:end, voice] = pitch
    return chorale
