"""benchmarks/recurrent_attention_digits.py: the recurrent attention
example's figures over seeds, one row per model, setting and seed beside
the most common class (no weights), the mean and spread of each model
and setting, rendered into RESULTS.md and the page; a wrong option is
one line."""

import json
import statistics
import subprocess
import sys
import types

import numpy as np
import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import load_script

# What the example's main returns for one seed (made up; the names are
# the example's).
MADE_UP = {0: [0.39, 0.61, 0.94], 1: [0.37, 0.58, 0.95], 2: [0.38, 0.60, 0.93]}
NAMES = ["RAM, 1 glimpse", "RAM, 4 glimpses", "CNN, 3 conv layers"]


class _Example:
    """Stands in for the example: records its arguments, returns the
    made-up figures of the seed asked, and canvases whose labels make
    the most common training class 3 and put it on 2 of 5 test
    canvases."""

    def __init__(self):
        self.calls = []

    def arguments(self):
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--seed", type=int)
        return types.SimpleNamespace(
            parse_args=lambda argv: parser.parse_known_args(argv)[0])

    def load(self, args):
        train = types.SimpleNamespace(labels=np.array([3, 3, 1, 2]))
        test = types.SimpleNamespace(labels=np.array([3, 0, 3, 1, 2]))
        return train, test

    def main(self, argv):
        self.calls.append(argv)
        seed = int(argv[argv.index("--seed") + 1])
        return {name: {"accuracy": accuracy, "parameters": 63_629 + i,
                       "seconds": 10.0 * (i + 1)}
                for i, (name, accuracy) in enumerate(zip(NAMES,
                                                         MADE_UP[seed]))}


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("recurrent_attention_digits", monkeypatch)
    example = _Example()
    monkeypatch.setattr(module.harness, "load_example", lambda name: example)
    return module, example


def read(tmp_path, name="recurrent_attention_digits"):
    return json.loads((tmp_path / f"{name}.json").read_text())


def test_rows_and_summary(script, tmp_path):
    module, example = script
    module.main(["--seeds", "0,1,2", "--location-std", "0.3",
                 "--results-dir", str(tmp_path)])
    # The example ran once per seed with the settings asked, quietly.
    assert [call[call.index("--seed") + 1] for call in example.calls] == [
        "0", "1", "2"]
    for call in example.calls:
        assert call[call.index("--location-std") + 1] == "0.3"
        assert call[call.index("--pictures") + 1] == "0"
    rows = read(tmp_path)["rows"]
    assert [(row["variant"], row["seed"]) for row in rows] == [
        (variant, seed) for seed in (0, 1, 2)
        for variant in ("majority", "ram1", "ram4", "cnn")]
    assert all(row["location_std"] == 0.3 and row["epochs"] == 15
               and row["cpu"] for row in rows)
    # The most common training class (3) names 2 of the 5 test canvases.
    assert rows[0]["test_accuracy"] == 0.4 and "parameters" not in rows[0]
    assert rows[2]["parameters"] == 63_630 and rows[2]["seconds"] == 20.0
    found = read(tmp_path)["summary"]
    line = found["ram4, sigma 0.3, lr 0.001, 15 epochs"]
    values = [MADE_UP[seed][1] for seed in (0, 1, 2)]
    assert line["test_accuracy"] == values and line["seeds"] == [0, 1, 2]
    assert line["test_accuracy_mean"] == pytest.approx(
        statistics.fmean(values))
    assert line["test_accuracy_std"] == pytest.approx(statistics.stdev(values))
    assert line["label"] == "RAM, 4 glimpses" and line["seconds_mean"] == 20.0


def test_a_setting_appended_sits_beside_the_first(script, tmp_path):
    module, _ = script
    module.main(["--seeds", "0", "--results-dir", str(tmp_path)])
    module.main(["--seeds", "0,1", "--location-std", "0.1", "--append",
                 "--results-dir", str(tmp_path)])
    record = read(tmp_path)
    assert len(record["rows"]) == 4 + 8 and len(record["commands"]) == 2
    found = record["summary"]
    assert found["ram4, sigma 0.2, lr 0.001, 15 epochs"]["seeds"] == [0]
    assert found["ram4, sigma 0.1, lr 0.001, 15 epochs"]["seeds"] == [0, 1]


def test_renders_into_results_md(script, tmp_path, monkeypatch):
    module, _ = script
    module.main(["--seeds", "0,1,2", "--results-dir", str(tmp_path)])
    text = "\n".join(load_script("summary", monkeypatch).render(
        read(tmp_path)))
    assert ("| RAM, 4 glimpses (`ram4`) | 0.2 | 0.001 | 15 | 3 | **59.7%** "
            "| ±1.5% | 61.0%, 58.0%, 60.0% | 63,630 | 20 |") in text
    assert ("| the most common training class (no weights) (`majority`) "
            "| 0.2 | 0.001 | 15 | 3 | **40.0%** | ±0.0% |") in text


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", "1,x"], "--seeds: must be comma-separated ints >= 0, "
                         "received: '1,x'"),
    (["--location-std", "0"], "--location-std must be > 0, received: 0.0"),
    (["--glimpses", "2,0"], "--glimpses must be comma-separated ints >= 1, "
                            "received: '2,0'"),
])
def test_a_wrong_option_is_one_line(arguments, message):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "recurrent_attention_digits.py"),
         *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
