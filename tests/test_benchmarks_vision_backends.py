"""benchmarks/vision_backends.py: wrong options are one line; the parent
interleaves the backends' processes, takes medians, the ratio and writes
the rows (the child runner made up here); a failed child is one line;
one real child measures a model on this backend."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import load_script


@pytest.fixture
def module(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return load_script("vision_backends", monkeypatch)


@pytest.mark.parametrize("arguments, message", [
    (["--models", "ram6,vit"], "--models must name some of ram6, "
     "image_transformer_local_2d, image_transformer_full, captioner_soft, "
     "captioner_hard, sagan_attention, received: 'ram6,vit'"),
    (["--models", ","], "--models must name some of"),
    (["--repeats", "0"], "--repeats must be positive, received: 0"),
    (["--epochs", "-1"], "--epochs must be positive, received: -1"),
    (["--examples", "10"], "--examples must be at least 64 (a batch), "
     "received: 10"),
    (["--repeats", "two"], "argument --repeats: invalid int value: 'two'"),
])
def test_a_wrong_option_is_one_line(arguments, message):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "vision_backends.py"), *arguments],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        "vision_backends.py: error: ")


def test_the_parent_interleaves_takes_medians_and_writes_rows(
        module, monkeypatch, tmp_path):
    made_up = {("ram6", "jax"): [30.0, 10.0, 20.0],
               ("ram6", "tensorflow"): [45.0, 15.0, 60.0],
               ("captioner_hard", "jax"): [4.0, 8.0, 6.0],
               ("captioner_hard", "tensorflow"): [3.0, 3.0, 9.0]}
    calls = []

    def run_child(model_name, backend, examples, epochs, data=None):
        calls.append((model_name, backend, examples, epochs, data))
        return made_up[model_name, backend][
            sum(call[:2] == (model_name, backend) for call in calls) - 1]

    monkeypatch.setattr(module, "run_child", run_child)
    monkeypatch.setattr(module.harness, "machine",
                        lambda: {"cpu": "made-up CPU", "backend": "x"})
    rows = module.main(["--models", "ram6,captioner_hard", "--examples",
                        "200", "--epochs", "2", "--results-dir",
                        str(tmp_path)])
    # JAX, TensorFlow, JAX, TensorFlow ...; the examples in whole batches
    # (200 -> 192), the captioner at its own sizes.
    assert [call[:2] for call in calls] == [
        ("ram6", "jax"), ("ram6", "tensorflow")] * 3 + [
        ("captioner_hard", "jax"), ("captioner_hard", "tensorflow")] * 3
    assert {call[2:] for call in calls[:6]} == {(192, 2, None)}
    assert {call[2:] for call in calls[6:]} == {(1024, 2, None)}
    ram, captioner = rows
    assert ram["model"] == "ram6" and ram["unit"] == "canvases"
    assert ram["jax_examples_per_s"] == 20.0
    assert ram["tensorflow_examples_per_s"] == 45.0
    assert ram["tensorflow_over_jax"] == pytest.approx(45.0 / 20.0)
    assert ram["runs"] == {"jax": [30.0, 10.0, 20.0],
                           "tensorflow": [45.0, 15.0, 60.0]}
    assert (ram["examples"], ram["epochs"], ram["cpu"]) == (
        192, 2, "made-up CPU")
    assert captioner["jax_examples_per_s"] == 6.0
    assert captioner["tensorflow_examples_per_s"] == 3.0
    assert captioner["tensorflow_over_jax"] == pytest.approx(0.5)
    record = json.loads((tmp_path / "vision_backends.json").read_text())
    assert record["benchmark"] == "vision_backends"
    assert record["rows"] == rows and record["repeats"] == 3


def test_the_median_of_an_even_count_is_the_middle_pair(module):
    assert module.median([4.0, 1.0]) == 2.5
    assert module.median([3.0, 1.0, 2.0]) == 2.0


def test_a_failed_child_is_one_line(module, monkeypatch):
    def failed(command, **kwargs):
        assert kwargs["env"]["KERAS_BACKEND"] == "tensorflow"
        return subprocess.CompletedProcess(
            command, 1, "", "Traceback (most recent call last):\n  ...\n"
            "ValueError: made up\n")

    monkeypatch.setattr(module.subprocess, "run", failed)
    with pytest.raises(SystemExit) as raised:
        module.run_child("sagan_attention", "tensorflow", 64, 1)
    assert str(raised.value) == ("sagan_attention on tensorflow failed: "
                                 "ValueError: made up")


def test_a_child_on_another_backend_is_refused(module, monkeypatch):
    def other(command, **kwargs):
        return subprocess.CompletedProcess(
            command, 0, 'noise\n{"backend": "jax", "examples_per_s": 5.0}\n',
            "")

    monkeypatch.setattr(module.subprocess, "run", other)
    with pytest.raises(SystemExit, match="ram6 on tensorflow failed: it "
                                         "ran on jax"):
        module.run_child("ram6", "tensorflow", 64, 1)


def test_one_real_child_measures_a_positive_rate(module, tmp_path,
                                                 monkeypatch):
    """The cheapest model, at a batch a pass, on made-up digits, in this
    process's backend."""
    import keras

    if keras.backend.backend() not in module.BACKENDS:
        pytest.skip("the GAN's step runs on TensorFlow or JAX")
    load_script("sagan_mnist", monkeypatch)  # imported, then forgotten
    rng = np.random.default_rng(0)
    path = tmp_path / "mnist10k.npz"
    np.savez(path, x=rng.integers(0, 256, (300, 28, 28)).astype("uint8"),
             y=(np.arange(300) % 10).astype("uint8"))
    found = module.measure("sagan_attention", 64, 1, path)
    assert found["backend"] == keras.backend.backend()
    assert math.isfinite(found["examples_per_s"])
    assert found["examples_per_s"] > 0


def _page(name):
    text = (BENCHMARKS.parent / "docs" / "models" / f"{name}.md").read_text()
    return " ".join(text.split())


def test_the_pages_state_the_results_files_rates_and_ratios():
    """The RAM, Image Transformer, captioner and SAGAN pages state the
    committed file's medians and ratios, and name the faster backend as
    the file does."""
    record = json.loads((BENCHMARKS / "results" / "vision_backends.json")
                        .read_text())
    rows = {row["model"]: row for row in record["rows"]}
    assert set(rows) == {"ram6", "image_transformer_local_2d",
                         "image_transformer_full", "captioner_soft",
                         "captioner_hard", "sagan_attention"}
    assert all(len(row["runs"][backend]) == record["repeats"] == 3
               for row in rows.values() for backend in ("jax", "tensorflow"))
    ram = rows["ram6"]
    assert ram["tensorflow_over_jax"] < 1  # JAX is the RAM's backend
    assert (f"trains {ram['jax_examples_per_s']:,.0f} canvases a second on "
            f"JAX against {ram['tensorflow_examples_per_s']:,.0f} on "
            f"TensorFlow, {1 / ram['tensorflow_over_jax']:.2f} times as fast"
            ) in _page("recurrent_attention")
    local, full = (rows["image_transformer_local_2d"],
                   rows["image_transformer_full"])
    assert min(local["tensorflow_over_jax"], full["tensorflow_over_jax"]) > 1
    assert (f"it trains {local['tensorflow_over_jax']:.2f} times as fast as "
            f"JAX with local attention and {full['tensorflow_over_jax']:.2f}"
            f" times with full attention") in _page("image-transformer")
    soft, hard = rows["captioner_soft"], rows["captioner_hard"]
    assert min(soft["tensorflow_over_jax"], hard["tensorflow_over_jax"]) > 1
    assert (f"runs {soft['tensorflow_examples_per_s']:.1f} scenes/s (soft) "
            f"and {hard['tensorflow_examples_per_s']:.1f} (hard) on "
            f"TensorFlow against {soft['jax_examples_per_s']:.1f} and "
            f"{hard['jax_examples_per_s']:.1f} on JAX, "
            f"{soft['tensorflow_over_jax']:.2f} and "
            f"{hard['tensorflow_over_jax']:.2f} times as fast"
            ) in _page("captioner")
    sagan = rows["sagan_attention"]
    assert sagan["tensorflow_over_jax"] > 1
    assert (f"at {sagan['tensorflow_examples_per_s']:.1f} images a second "
            f"against {sagan['jax_examples_per_s']:.1f} under JAX, "
            f"{sagan['tensorflow_over_jax']:.2f} times as fast"
            ) in _page("sagan")
