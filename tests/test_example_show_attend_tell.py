"""The Show, Attend and Tell example runs on tiny settings, reports its
scores for each λ and writes its attention pictures."""

import importlib.util
import pathlib

import matplotlib.image

EXAMPLE = (pathlib.Path(__file__).resolve().parents[1] / "examples"
           / "show_attend_tell_digits.py")


def load():
    spec = importlib.util.spec_from_file_location("show_attend_tell_digits",
                                                  EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_show_attend_tell_digits_runs(tmp_path, capsys):
    module = load()
    results = module.main([
        "--train-size", "256", "--test-size", "20", "--epochs", "1",
        "--preset", "tiny", "--lambdas", "1,0", "--beam-size", "2",
        "--pictures", "2", "--output-dir", str(tmp_path), "--verbose", "0",
    ])
    assert set(results) == {1.0, 0.0}
    for figures in results.values():
        for name in ("greedy", "beam2"):
            assert 0.0 <= figures[name]["exact"] <= 1.0
            assert 0.0 <= figures[name]["bleu"] <= 100.0
        assert figures["seconds"] > 0
    for row in range(2):
        picture = matplotlib.image.imread(tmp_path / f"scene_{row}.png")
        assert picture.ndim == 3 and picture.shape[0] > 50
    out = capsys.readouterr().out
    assert "exact match" in out and "where each word looks" in out
    # The scores are what the captions give.
    assert module.scores(["a two above a one", "a one below a two"],
                         ["a two above a one", "a one above a two"])[
                             "exact"] == 0.5
