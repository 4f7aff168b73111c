"""The Image Transformer example runs on a tiny setting and writes its
figures and sample grid."""

import importlib.util
import json
import math
import pathlib

import numpy as np
import pytest

EXAMPLE = (pathlib.Path(__file__).resolve().parents[1] / "examples"
           / "image_transformer_digits.py")


def load():
    spec = importlib.util.spec_from_file_location("image_transformer_digits",
                                                  EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_image_transformer_digits_runs(tmp_path, capsys):
    output = tmp_path / "samples.png"
    results = load().main([
        "--epochs", "1", "--train-size", "200", "--num-layers", "1",
        "--hidden-dim", "16", "--samples", "4", "--output", str(output),
        "--results", str(tmp_path / "r.json")])
    for name in ("independent", "full", "local"):
        bits = results[f"{name}_bits_per_dim"]
        assert 0.0 < bits < math.log2(17) + 1.0, (name, bits)
    for name in ("full", "local"):  # what the benchmark's rows keep
        assert 0.0 < results[f"{name}_train_bits_per_dim"] < math.log2(17) + 1
        assert results[f"{name}_seconds"] > 0
    # One size: only the attention differs.
    assert results["full_parameters"] == results["local_parameters"] > 0
    # Cached and uncached sampling draw the same images from one seed.
    assert results["full_cached_equals_uncached"] is True
    assert results["local_cached_equals_uncached"] is True
    assert np.isfinite(results["seconds"])
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # --results writes the same figures as JSON.
    written = json.loads((tmp_path / "r.json").read_text())
    assert written == pytest.approx(results)
    out = capsys.readouterr().out
    assert "independent pixels" in out and "local attention" in out


def test_split_is_fixed():
    train, test = load().load_split(1500)
    assert train.shape == (1500, 8, 8) and test.shape == (297, 8, 8)
    assert train.max() == 16 and train.min() == 0
