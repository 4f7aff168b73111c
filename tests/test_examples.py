"""The examples run (on tiny settings; their defaults train longer)."""

import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bahdanau_dates_runs(capsys):
    exact = load("bahdanau_dates").main(["--samples", "256", "--epochs", "1"])
    assert 0.0 <= exact <= 1.0
    assert "where each output character looks" in capsys.readouterr().out
