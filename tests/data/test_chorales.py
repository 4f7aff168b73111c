"""The chorale loader, serialization and windows, on made-up chorales (the
shared JSB file is never read here)."""

import gzip
import json

import numpy as np
import pytest

from keras_attention.data import chorales as chorales_lib

# Two made-up chorales: four steps of S, A, T, B (-1: silent).
MADE_UP = {
    "train": [
        [[72, 67, 64, 48], [72, 67, 64, 48], [74, 67, 62, 55],
         [76, -1, 60, 36]],
        [[81, 69, 57, 45], [79, 67, 55, -1]],
    ],
    "valid": [[[60, 55, 52, 48], [62, 57, 53, 50]]],
}


@pytest.fixture
def chorale_file(tmp_path):
    path = tmp_path / "made_up.json.gz"
    path.write_bytes(gzip.compress(json.dumps(MADE_UP).encode()))
    return path


def test_loads_a_file_a_folder_and_the_environment(chorale_file, monkeypatch):
    loaded = chorales_lib.load_chorales(chorale_file)
    assert sorted(loaded) == ["train", "valid"]
    assert [c.shape for c in loaded["train"]] == [(4, 4), (2, 4)]
    assert loaded["train"][0].dtype == np.int32
    np.testing.assert_array_equal(loaded["valid"][0], MADE_UP["valid"][0])
    from_folder = chorales_lib.load_chorales(chorale_file.parent,
                                             splits=["valid"])
    assert list(from_folder) == ["valid"]
    monkeypatch.setenv("JSB_CHORALES", str(chorale_file))
    np.testing.assert_array_equal(
        chorales_lib.load_chorales()["train"][1], MADE_UP["train"][1])


def test_bad_inputs_name_what_is_wrong(tmp_path, monkeypatch):
    monkeypatch.delenv("JSB_CHORALES", raising=False)
    with pytest.raises(FileNotFoundError, match="JSB_CHORALES"):
        chorales_lib.load_chorales()
    with pytest.raises(FileNotFoundError, match="No chorales file at"):
        chorales_lib.load_chorales(tmp_path / "nothing.json")
    with pytest.raises(FileNotFoundError, match="name the file"):
        chorales_lib.load_chorales(tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="is not a JSON chorales file"):
        chorales_lib.load_chorales(broken)
    with pytest.raises(KeyError, match=r"No split 'test'.*\['train', 'valid'\]"):
        chorales_lib.parse_chorales(MADE_UP, splits=["test"])
    with pytest.raises(ValueError, match="step 1, tenor.*received: 90"):
        chorales_lib.parse_chorales(
            {"train": [[[60, 60, 60, 48], [60, 60, 90, 48]]]})
    with pytest.raises(ValueError, match=r"shape \(1, 3\)"):
        chorales_lib.parse_chorales({"train": [[[60, 60, 60]]]})


def test_serialization_is_voice_by_voice_within_a_step():
    chorale = np.array(MADE_UP["train"][0])
    tokens = chorales_lib.serialize(chorale)
    assert tokens.shape == (16,)
    for step in range(4):
        for voice in range(4):
            pitch = chorale[step, voice]
            token = tokens[4 * step + voice]
            if pitch == -1:
                assert token == chorales_lib.REST_ID
            else:
                assert token == pitch - 36 + chorales_lib.FIRST_PITCH_ID
    np.testing.assert_array_equal(chorales_lib.deserialize(tokens), chorale)
    # The extremes of the range are the first and last pitch tokens.
    assert chorales_lib.serialize([[36, 81, -1, 36]]).tolist() == [
        3, chorales_lib.VOCABULARY_SIZE - 1, 2, 3]
    with pytest.raises(ValueError, match="whole steps"):
        chorales_lib.deserialize([3, 4, 5])


def test_transposition_keeps_rests_and_checks_the_range():
    chorale = np.array(MADE_UP["train"][0])
    up = chorales_lib.transpose(chorale, 2)
    np.testing.assert_array_equal(up[chorale == -1], -1)
    np.testing.assert_array_equal(up[chorale != -1], chorale[chorale != -1] + 2)
    with pytest.raises(ValueError, match="received: 82"):
        chorales_lib.transpose(MADE_UP["train"][1], 1)


def test_windows_cover_every_token_once_with_stride_equal_to_length():
    chorales = [np.array(c) for c in MADE_UP["train"]]
    rows = chorales_lib.windows(chorales, 8)
    assert rows.shape == (3, 9)  # 16 tokens -> 2 windows, 8 tokens -> 1
    assert np.all(rows[:, 0] == chorales_lib.BOS_ID)
    body = rows[:, 1:]
    joined = np.concatenate([body[0], body[1], body[2]])
    np.testing.assert_array_equal(
        joined, np.concatenate([chorales_lib.serialize(c) for c in chorales]))
    overlapping = chorales_lib.windows(chorales[:1], 8, stride=4)
    assert overlapping.shape == (3, 9)  # starts 0, 4, 8
    np.testing.assert_array_equal(overlapping[1, 1:],
                                  chorales_lib.serialize(chorales[0])[4:12])
    short = chorales_lib.windows(chorales[1:], 12)
    assert short.tolist()[0][9:] == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="multiple of 4.*length=6"):
        chorales_lib.windows(chorales, 6)
    with pytest.raises(ValueError, match="stride=0"):
        chorales_lib.windows(chorales, 8, stride=0)


def test_notes_hold_repeated_pitches_and_stop_at_rests():
    chorale = np.array(MADE_UP["train"][0])  # alto rests at the last step
    found = chorales_lib.notes(chorale)
    assert (0, 72, 0, 2) in found and (0, 74, 2, 1) in found
    assert (1, 67, 0, 3) in found and not any(
        voice == 1 and start == 3 for voice, _, start, _ in found)
    # Every sounding step is covered by exactly one note of its voice.
    covered = np.full(chorale.shape, -1)
    for voice, pitch, start, held in found:
        assert np.all(covered[start:start + held, voice] == -1)
        covered[start:start + held, voice] = pitch
    np.testing.assert_array_equal(covered, chorale)


def test_midi_round_trip(tmp_path):
    import mido

    chorale = np.array(MADE_UP["train"][0] + MADE_UP["train"][1])
    path = chorales_lib.write_midi(chorale, tmp_path / "chorale.mid",
                                   beats_per_minute=60)
    np.testing.assert_array_equal(chorales_lib.read_midi(path), chorale)
    midi = mido.MidiFile(str(path))
    assert midi.type == 1 and len(midi.tracks) == 5  # tempo + 4 voices
    assert midi.ticks_per_beat == 480  # a 16th note: 120 ticks
    tempo = [m for m in midi.tracks[0] if m.type == "set_tempo"][0]
    assert mido.tempo2bpm(tempo.tempo) == 60
    # The soprano's first note (72, held 2 steps) lasts 240 ticks.
    soprano = [m for m in midi.tracks[1] if m.type in ("note_on", "note_off")]
    assert (soprano[0].type, soprano[0].note) == ("note_on", 72)
    assert (soprano[1].type, soprano[1].time) == ("note_off", 240)
    # 6 steps at 60 quarter notes a minute: 1.5 s.
    assert abs(midi.length - 1.5) < 1e-6
    with pytest.raises(ValueError, match="beats_per_minute=0"):
        chorales_lib.write_midi(chorale, tmp_path / "x.mid",
                                beats_per_minute=0)


def _long_chorales():
    rng = np.random.default_rng(3)
    return [rng.integers(50, 70, (steps, 4)).astype("int32")
            for steps in (5, 23, 40)]


def test_training_windows_target_every_token_once_cut_on_bar_lines():
    made = _long_chorales()
    rng = np.random.default_rng(0)
    for _ in range(5):
        rows = chorales_lib.training_windows(made, 32, rng, start_every=16)
        assert rows.shape[1] == 33
        targets = rows[:, 1:]
        assert int((targets != chorales_lib.PAD_ID).sum()) == sum(
            4 * len(c) for c in made)
        # Each row is a piece of one chorale's sequence starting at a
        # multiple of 16 (the bar), so its inputs start with <s> or with
        # the token before its targets.
        for row in rows:
            real = row[row != chorales_lib.PAD_ID]
            found = False
            for chorale in made:
                sequence = chorales_lib.sequence(chorale)
                for start in range(0, len(sequence), 16):
                    if np.array_equal(sequence[start:start + len(real)],
                                      real):
                        found = True
            assert found, row
    # Shifts differ between epochs: the windows are not all the same.
    first = chorales_lib.training_windows(made, 32, np.random.default_rng(1),
                                          start_every=16)
    other = chorales_lib.training_windows(made, 32, np.random.default_rng(2),
                                          start_every=16)
    assert sorted(map(tuple, first)) != sorted(map(tuple, other))
    with pytest.raises(ValueError, match="start_every=12, length=32"):
        chorales_lib.training_windows(made, 32, rng, start_every=12)


def test_training_windows_transpose_within_range():
    high = [np.array([[80, 70, 60, 50]] * 4)]
    rng = np.random.default_rng(0)
    moves = set()
    for _ in range(60):
        row = chorales_lib.training_windows(high, 16, rng, transpose=3)[0]
        moves.add(int(row[1]) - int(chorales_lib.serialize(high[0])[0]))
    assert moves == {-3, -2, -1, 0, 1}  # 81 is the highest pitch


def test_scoring_windows_score_every_token_once_with_half_a_window():
    made = _long_chorales()
    rows, weights = chorales_lib.scoring_windows(made, 16)
    assert rows.shape[1] == 17 and weights.shape == (len(rows), 16)
    assert weights.sum() == sum(4 * len(c) for c in made)
    assert np.all(weights[rows[:, 1:] == chorales_lib.PAD_ID] == 0)
    # A window after a chorale's first scores only its second half.
    starts_with_bos = rows[:, 0] == chorales_lib.BOS_ID
    assert np.all(weights[~starts_with_bos, :8] == 0)
    with pytest.raises(ValueError, match="multiple of 8.*length=12"):
        chorales_lib.scoring_windows(made, 12)


def test_negative_log_likelihood_of_a_uniform_model_is_log_vocabulary():
    class Uniform:
        def negative_log_likelihood(self, rows, batch_size, weights):
            assert weights.shape == rows[:, 1:].shape
            return float(np.log(chorales_lib.VOCABULARY_SIZE))

    assert chorales_lib.negative_log_likelihood(
        Uniform(), _long_chorales(), 16) == pytest.approx(np.log(49))
    with pytest.raises(ValueError, match="at least one chorale"):
        chorales_lib.negative_log_likelihood(Uniform(), [], 16)


def test_repeat_rule_by_hand():
    chorale = np.array([[60, 62, 64, 65], [60, 62, 64, 67]])
    rate = chorales_lib.repeat_rate([chorale])
    assert rate == pytest.approx(3 / 4)
    # First step: 4 tokens at 1/47; then 3 repeats at 0.75 and one change
    # at 0.25 / 46.
    expected = (4 * np.log(47) - 3 * np.log(0.75)
                - np.log(0.25 / 46)) / 8
    assert chorales_lib.repeat_rule_nll([chorale], 0.75) == pytest.approx(
        expected)
    with pytest.raises(ValueError, match="repeat_probability"):
        chorales_lib.repeat_rule_nll([chorale], 1.5)


def test_load_split_layouts_and_one_line_errors(tmp_path):
    splits = tmp_path / "splits.json"
    splits.write_text(json.dumps(MADE_UP))
    assert len(chorales_lib.load_split(splits)) == 1  # valid by default
    assert len(chorales_lib.load_split(splits, "train")) == 2
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps(MADE_UP["train"]))
    assert len(chorales_lib.load_split(listed)) == 2
    cases = {
        "no split 'test'": (splits, "test", MADE_UP),
        "holds a list of chorales, not splits": (listed, "valid", None),
        "holds no chorales": (tmp_path / "empty.json", "valid",
                              {"valid": []}),
        "must hold a JSON object of splits": (tmp_path / "n.json", None, 3),
        "step 0, soprano: pitches must be -1 (silent) or in 36..81, "
        "received: 90": (tmp_path / "high.json", None,
                         {"valid": [[[90, 60, 55, 48]]]}),
    }
    for message, (path, split, content) in cases.items():
        if content is not None:
            path.write_text(json.dumps(content))
        with pytest.raises(ValueError, match=message.replace("(", r"\(")
                           .replace(")", r"\)")) as error:
            chorales_lib.load_split(path, split)
        assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_cuts_target_every_entry_once_on_the_grid():
    for total in range(2, 70):
        for length, every in ((8, 4), (16, 8), (32, 16)):
            for shift in range(0, length, every):
                cuts = chorales_lib._cuts(total, length, shift)
                targets = [index for start, end in cuts
                           for index in range(start + 1, end + 1)]
                assert targets == list(range(1, total)), (total, cuts)
                assert all(0 < end - start <= length for start, end in cuts)
                assert all(start % every == 0 for start, _ in cuts)
