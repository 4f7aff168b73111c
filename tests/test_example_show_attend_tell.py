"""The Show, Attend and Tell example runs on tiny settings, soft and hard
attention over two seeds, reports its scores, their spread and the
REINFORCE gradient variance, and writes its attention pictures; a bad
option is one line."""

import importlib.util
import json
import pathlib

import matplotlib.image
import pytest

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
        "--preset", "tiny", "--lambdas", "1", "--attention", "soft,hard",
        "--seeds", "0,1", "--beam-size", "2", "--variance-draws", "3",
        "--pictures", "2", "--output-dir", str(tmp_path), "--verbose", "0",
        "--results", str(tmp_path / "r.json")])
    assert set(results) == {(attention, 1.0, seed)
                            for attention in ("soft", "hard")
                            for seed in (0, 1)}
    for (attention, _, _), figures in results.items():
        for name in ("greedy", "beam2"):
            assert 0.0 <= figures[name]["exact"] <= 1.0
            assert 0.0 <= figures[name]["bleu"] <= 100.0
        assert figures["seconds"] > 0
        # The gradient variance is measured for the hard models only.
        assert ("variance" in figures) == (attention == "hard")
        if attention == "hard":
            for when in ("before", "after"):
                variance = figures["variance"][when]
                assert variance["none"] > 0.0 and variance["baseline"] >= 0
            # Before training every caption costs about T log V nats: the
            # baseline removes that common part of the learning signal.
            before = figures["variance"]["before"]
            assert before["mean_nll"] > 5.0
            assert before["baseline"] < before["none"]
            assert 0.0 <= figures["greedy (argmax)"]["exact"] <= 1.0
    for row in range(2):
        picture = matplotlib.image.imread(tmp_path / f"scene_{row}.png")
        assert picture.ndim == 3 and picture.shape[0] > 50
    # --results writes the runs as a list, and the rule with no weights.
    written = json.loads((tmp_path / "r.json").read_text())
    assert [(run["attention"], run["penalty"], run["seed"])
            for run in written["runs"]] == list(results)
    assert written["runs"][0]["greedy"] == results[("soft", 1.0, 0)]["greedy"]
    baseline = written["most_common_caption"]
    assert baseline["exact"] == module.scores(
        [baseline["caption"]] * 20, module.digit_scenes.generate_scenes(
            20, "test", seed=1).captions)["exact"]
    out = capsys.readouterr().out
    assert "exact match" in out and "where each word looks" in out
    assert "no weights: the most common training caption" in out
    assert "soft λ=1 (2 seeds)" in out and "hard λ=1 (2 seeds)" in out
    assert "gradient variance" in out


def test_show_attend_tell_bad_options_are_one_line(capsys):
    module = load()
    for argv in (["--attention", "medium"], ["--seeds", "a,b"]):
        with pytest.raises(SystemExit):
            module.main(argv)
        assert "--" in capsys.readouterr().err


def test_scores():
    # The scores are what the captions give.
    assert load().scores(["a two above a one", "a one below a two"],
                         ["a two above a one", "a one above a two"])[
                             "exact"] == 0.5


def test_most_common_caption_is_the_rule_with_no_weights():
    # Training captions "1 2", "1 2", "3 4": "1 2" for every test scene
    # is right on 1 of 4.
    class Vocabulary:
        def decode(self, row):
            return " ".join(str(token) for token in row)

    test = type("Scenes", (), {"captions": ["1 2", "3 4", "5 6", "3 4"]})
    found = load().most_common_caption(Vocabulary(),
                                       [[1, 2], [1, 2], [3, 4]], test)
    assert found["caption"] == "1 2" and found["exact"] == 0.25
