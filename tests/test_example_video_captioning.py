"""The video captioning example runs on tiny settings, reports the scores of
the rows it is given (Basic and +Local+Global here: both decoders and the
3-D convolution) and writes its attention pictures."""

import importlib.util
import pathlib

import matplotlib.image
import numpy as np

EXAMPLE = (pathlib.Path(__file__).resolve().parents[1] / "examples"
           / "video_captioning_digits.py")


def load():
    spec = importlib.util.spec_from_file_location("video_captioning_digits",
                                                  EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_video_captioning_digits_runs(tmp_path, capsys):
    module = load()
    results = module.main([
        "--train-size", "64", "--test-size", "8", "--frames", "8",
        "--epochs", "1", "--preset", "tiny", "--beam-size", "2",
        "--rows", "basic,local_global",
        "--pictures", "1", "--output-dir", str(tmp_path), "--verbose", "0",
    ])
    assert list(results) == ["basic", "local_global"]
    for runs in results.values():
        (figures,) = runs  # one seed
        for name in ("greedy", "beam2"):
            assert 0.0 <= figures[name]["exact"] <= 1.0
            assert 0.0 <= figures[name]["bleu"] <= 100.0
        assert figures["seconds"] > 0
    # Pictures for the rows with temporal attention.
    picture = matplotlib.image.imread(tmp_path / "local_global_clip_0.png")
    assert picture.ndim == 3 and picture.shape[1] > 200
    assert not (tmp_path / "basic_clip_0.png").exists()
    out = capsys.readouterr().out
    assert "exact match" in out and "where each word looks" in out
    assert "| +Local+Global |" in out and "| Basic |" in out
    assert module.scores(["a two appears then a one moves up"] * 2,
                         ["a two appears then a one moves up",
                          "a one moves up then a two appears"])[
                              "exact"] == 0.5


def test_draw_clip_writes_the_strip_and_the_weights(tmp_path):
    module = load()
    video = np.zeros((8, 32, 32), "float32")
    attention = np.full((3, 8), 1 / 8, "float32")
    path = module.draw_clip(video, attention, ["a", "two", "</s>"],
                            "a two appears then a one moves up",
                            tmp_path / "strip.png")
    assert matplotlib.image.imread(path).shape[0] > 100
