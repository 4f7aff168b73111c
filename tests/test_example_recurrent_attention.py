"""The recurrent attention example runs on tiny settings, prints its table
of held-out accuracies (RAM by glimpses, and the CNN) and draws the
glimpse paths."""

import collections
import importlib.util
import json
import pathlib

import matplotlib.image
import numpy as np

EXAMPLE = (pathlib.Path(__file__).resolve().parents[1] / "examples"
           / "recurrent_attention_digits.py")


def load():
    spec = importlib.util.spec_from_file_location(
        "recurrent_attention_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recurrent_attention_digits_runs(tmp_path, capsys):
    module = load()
    argv = ["--train-size", "64", "--test-size", "10", "--epochs", "1",
            "--preset", "tiny", "--glimpses", "1,2", "--canvas-size", "24",
            "--pictures", "2", "--output-dir", str(tmp_path),
            "--verbose", "0"]
    results = module.main(argv + ["--results", str(tmp_path / "r.json")])
    assert list(results) == ["most common training class", "RAM, 1 glimpse",
                             "RAM, 2 glimpses", "CNN, 3 conv layers",
                             "MLP, 1 glimpse at the digit"]
    for figures in list(results.values())[1:]:
        assert 0.0 <= figures["accuracy"] <= 1.0
        assert figures["parameters"] > 0 and figures["seconds"] > 0
    # The rule with no weights names the most common training class.
    train, test = module.load(module.arguments().parse_args(argv))
    common = collections.Counter(train.labels.tolist()).most_common(1)[0][0]
    assert results["most common training class"] == {
        "accuracy": float(np.mean(test.labels == common)),
        "parameters": 0, "seconds": 0.0}
    # --results writes the figures printed, as JSON.
    assert json.loads((tmp_path / "r.json").read_text()) == results
    picture = matplotlib.image.imread(tmp_path / "glimpses.png")
    assert picture.ndim == 3 and picture.shape[0] > 100
    out = capsys.readouterr().out
    assert "held-out canvases (10)" in out and "glimpse paths (2" in out
    assert module.accuracy([[0.1, 0.9], [0.8, 0.2]], [1, 1]) == 0.5
