"""`keras-attention score-chorales`: a saved chorale model's note-wise NLL
on a split, equal to `chorales.negative_log_likelihood`; each mistake one
line."""

import json

import keras
import numpy as np
import pytest

from keras_attention.cli import main
from keras_attention.data import chorales
from keras_attention.models import TransformerLanguageModel

SPLITS = {"train": [[[72, 67, 64, 48]] * 6],
          "valid": [[[72, 67, 64, 48], [74, 67, 65, 50]] * 5,
                    [[60, 55, 52, 48]] * 3]}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chorale_model")
    keras.utils.set_random_seed(0)
    model = TransformerLanguageModel(
        chorales.VOCABULARY_SIZE, num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, attention="relative", positions="sinusoidal",
        max_relative_position=4, voices=4)
    model(np.ones((1, 4), "int32"))
    path = folder / "model.keras"
    model.save(path)
    (folder / "model.json").write_text(json.dumps({"window": 16}))
    data = folder / "chorales.json"
    data.write_text(json.dumps(SPLITS))
    return model, path, data


def test_prints_the_nll_of_the_library_function(saved, capsys):
    model, path, data = saved
    assert main(["score-chorales", str(path), str(data)]) == 0
    printed = capsys.readouterr().out
    valid = [np.array(c) for c in SPLITS["valid"]]
    expected = chorales.negative_log_likelihood(model, valid, 16)
    assert float(printed.split()[0]) == pytest.approx(expected, abs=1e-4)
    assert "over 52 tokens of 2 chorales (window 16)" in printed
    assert main(["score-chorales", str(path), str(data), "--split", "train",
                 "--window", "8"]) == 0
    train = [np.array(c) for c in SPLITS["train"]]
    assert float(capsys.readouterr().out.split()[0]) == pytest.approx(
        chorales.negative_log_likelihood(model, train, 8), abs=1e-4)


def test_mistakes_are_one_line(saved, tmp_path, capsys):
    _, path, data = saved
    bare = tmp_path / "bare.keras"
    bare.write_bytes(path.read_bytes())
    high = tmp_path / "high.json"
    high.write_text(json.dumps({"valid": [[[90, 60, 55, 48]]]}))
    cases = [
        (["score-chorales", str(tmp_path / "none.keras"), str(data)],
         "model " + str(tmp_path / "none.keras") + " is not a file"),
        (["score-chorales", str(bare), str(data)],
         "no --window given and no settings file"),
        (["score-chorales", str(path), str(data), "--split", "test"],
         "has no split 'test'"),
        (["score-chorales", str(path), str(high)],
         "pitches must be -1 (silent) or in 36..81, received: 90"),
        (["score-chorales", str(path), str(data), "--window", "12"],
         "--window must be a multiple of 8, received: 12"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        error = capsys.readouterr().err
        assert message in error and error.count("\n") == 1, error
