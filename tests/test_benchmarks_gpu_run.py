"""benchmarks/gpu/run.py, the prepared GPU run, at its smoke size on CPU:
each of its three runs writes a results file of the right shape through
the runner that refuses TensorFlow, the music model comes back in pieces
that join into a loadable model, and its argument errors are one line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from keras_attention.data import babi
from tests.test_benchmarks_music_transformer import _made_up as made_up_chorales

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "benchmarks" / "gpu"


def _data(root):
    """The layout run.py reads: babi/en-10k (task 2, generated),
    jsb_chorales (made-up chorales), mnist10k (noise digits)."""
    folder = root / "babi" / "en-10k"
    folder.mkdir(parents=True)
    for split, seed in (("train", 1), ("test", 2)):
        name = f"qa2_{babi.TASK_NAMES[2]}_{split}.txt"
        babi.write_babi(folder / name, 2, 80, seed=seed)
    (root / "jsb_chorales").mkdir()
    made_up_chorales(root / "jsb_chorales" / "jsb16th_train_valid.json.gz")
    rng = np.random.default_rng(0)
    (root / "mnist10k").mkdir()
    np.savez(root / "mnist10k" / "mnist10k.npz",
             x=rng.integers(0, 256, (150, 28, 28)).astype("uint8"),
             y=(np.arange(150) % 10).astype("uint8"))
    return root


def _run(*arguments, timeout=400):
    return subprocess.run(
        [sys.executable, str(GPU / "run.py"), *arguments],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def test_smoke_run_writes_every_result_without_tensorflow(tmp_path):
    data = _data(tmp_path / "data")
    out = tmp_path / "out"
    result = _run("--smoke", "--data", str(data), "--out", str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    names = sorted(path.name for path in out.iterdir())
    # What the device tool brings back: at most 8 files, none in folders.
    assert len(names) <= 8 and all((out / n).is_file() for n in names)
    for name, key in (("babi_universal_transformer_10k_gpu", "test_error"),
                      ("music_transformer_jsb_gpu", "best_nll"),
                      ("ram_cluttered_mnist_gpu", "test_error")):
        record = json.loads((out / f"{name}.json").read_text())
        assert record["benchmark"] == name
        assert record["machine"]["backend"] == "jax"
        assert "tensorflow" not in record["machine"]
        run = record["gpu_run"]
        assert run["returncode"] == 0 and run["results"] == f"{name}.json"
        assert run["tensorflow_modules"] == []
        assert record["rows"] and all(
            isinstance(row[key], float) for row in record["rows"]), name
    for line in ("run babi: return code 0", "run music: return code 0",
                 "run ram: return code 0"):
        assert line in result.stdout
    log = (out / "gpu_run.log").read_text()
    assert "wrote" in log
    # The music model: pieces that join into the model the run scored.
    pieces = sorted(out.glob("relative_sinusoid_voices_seed0.keras.part-*"))
    assert pieces and not list(out.glob("*.keras"))
    music = json.loads((out / "music_transformer_jsb_gpu.json").read_text())
    assert music["gpu_run"]["model_parts"] == [p.name for p in pieces]
    joined = tmp_path / "relative_sinusoid_voices_seed0.keras"
    joined.write_bytes(b"".join(piece.read_bytes() for piece in pieces))
    import keras

    import keras_attention.models  # noqa: F401

    model = keras.saving.load_model(joined)
    assert model.count_params() == json.loads(
        (out / "music_transformer_jsb_gpu.json").read_text()
    )["rows"][0]["weights"]
    # saved without its optimizer's state
    assert getattr(model, "optimizer", None) is None


def test_cut_model_pieces_join_back(tmp_path, monkeypatch):
    sys.path.insert(0, str(GPU))
    import run

    payload = os.urandom(2500)
    (tmp_path / "m.keras").write_bytes(payload)
    monkeypatch.setattr(run, "PIECE_BYTES", 1000)
    pieces = run.cut_model(tmp_path)
    assert pieces == ["m.keras.part-1", "m.keras.part-2", "m.keras.part-3"]
    assert b"".join((tmp_path / p).read_bytes() for p in pieces) == payload
    assert max((tmp_path / p).stat().st_size for p in pieces) <= 1000


def test_the_runner_refuses_tensorflow(tmp_path):
    script = tmp_path / "uses_tf.py"
    script.write_text("import tensorflow\n")
    result = subprocess.run(
        [sys.executable, str(GPU / "without_tensorflow.py"), str(script)],
        capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "the GPU run has no TensorFlow" in result.stderr


@pytest.mark.parametrize("arguments, message", [
    (["--minutes", "0"], "--minutes must be in (0, 30], received: 0.0"),
    (["--runs", "babi,video"], "--runs must name some of babi, music, ram"),
    (["--babi-tasks", "2,21"], "--babi-tasks must be tasks 1-20"),
    (["--data", "/no/such/folder"], "--data: babi needs the folder"),
])
def test_mistakes_are_one_line(arguments, message, tmp_path):
    result = _run("--out", str(tmp_path / "out"), *arguments, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
