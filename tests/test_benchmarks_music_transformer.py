"""reproductions/systems/music_transformer_jsb.py: a tiny run on made-up chorales
trains each variant on windows, scores the validation chorales, prints the
repeat rule beside the models, saves each model with its settings (which
the `score-chorales` command scores to the same NLL), writes the samples
(MIDI and piano roll) and checks cached against uncached sampling."""

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from keras_attention.data import chorales
from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import run_benchmark


def _made_up(path, seed=0):
    """Write chorales of 12-30 steps, each voice a slow random walk."""
    rng = np.random.default_rng(seed)

    def chorale():
        pitches, steps = np.array([72, 64, 57, 48]), []
        for _ in range(int(rng.integers(12, 30))):
            move = rng.integers(-2, 3, 4) * (rng.random(4) < 0.3)
            pitches = np.clip(pitches + move, 40, 78)
            steps.append(pitches.tolist())
        return steps

    data = {"train": [chorale() for _ in range(12)],
            "valid": [chorale() for _ in range(4)]}
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return data


def test_tiny_run_scores_saves_and_samples(tmp_path):
    data = _made_up(tmp_path / "chorales.json.gz")
    output, saved = tmp_path / "samples", tmp_path / "models"
    stdout, record = run_benchmark(
        "music_transformer_jsb.py", tmp_path / "results", "--data",
        str(tmp_path / "chorales.json.gz"), "--variants",
        "absolute,relative_sinusoid_voices", "--seeds", "0,1",
        "--steps", "3", "--eval-every", "2", "--layers", "1", "--hidden",
        "16", "--heads", "2", "--ff", "32", "--window", "32",
        "--start-every", "16", "--batch", "4", "--max-relative", "8",
        "--primer", "2", "--sample-steps", "3", "--warmup", "2",
        "--output-dir", str(output), "--save-dir", str(saved),
        timeout=600)
    rows = record["rows"]
    assert [(row["variant"], row["seed"]) for row in rows] == [
        ("absolute", 0), ("absolute", 1), ("relative_sinusoid_voices", 0),
        ("relative_sinusoid_voices", 1)]
    for row in rows:
        assert row["steps"] == 3 and row["cpu"]
        assert [point[0] for point in row["valid_curve"]] == [2, 3]
        # Near-uniform after a few steps: about log(49) nats per token.
        assert 2.0 < row["best_nll"] <= row["last_nll"] + 1e-9 < 6.0
        assert min(point[2] for point in row["valid_curve"]) == (
            row["best_nll"])
    assert record["complete"] is True
    summary = {line["variant"]: line for line in record["summary"]}
    absolute = [row["best_nll"] for row in rows[:2]]
    assert summary["absolute"]["runs"] == 2
    assert summary["absolute"]["mean_nll"] == pytest.approx(
        np.mean(absolute))
    # The rule is the committed function on the valid split.
    valid = [np.array(c) for c in data["valid"]]
    rate = chorales.repeat_rate([np.array(c) for c in data["train"]])
    assert record["repeat_rule"]["nll"] == pytest.approx(
        chorales.repeat_rule_nll(valid, rate))
    assert "repeat rule" in stdout and "0.335" in stdout
    # The saved model scores the same NLL through the command.
    model = saved / "absolute_seed1.keras"
    settings = json.loads(model.with_suffix(".json").read_text())
    assert settings["window"] == 32 and settings["variant"] == "absolute"
    scored = subprocess.run(
        [sys.executable, "-m", "keras_attention", "score-chorales",
         str(model), str(tmp_path / "chorales.json.gz")],
        capture_output=True, text=True, timeout=300)
    assert scored.returncode == 0, scored.stderr[-2000:]
    assert float(scored.stdout.split()[0]) == pytest.approx(
        rows[1]["best_nll"], abs=1e-4)
    samples = record["samples"]
    assert samples["cached_equals_uncached"] is True
    assert samples["unconditional_tokens_per_second"] > 0
    for kind in ("unconditional", "continuation"):
        midi = chorales.read_midi(samples[kind] + ".mid")
        assert midi.shape[1] == 4 and len(midi) <= 3 + 2
        assert (output / (samples[kind].rsplit("/", 1)[-1] + ".png")).exists()


@pytest.mark.parametrize("arguments, message", [
    (["--variants", "relative,nope"], "--variants must name some of"),
    (["--window", "30"], "--window must be a multiple of 8, received: 30"),
    (["--start-every", "24"], "--start-every must be a multiple of 4 "
                              "dividing half of --window (128; scoring "
                              "windows start every half window), received: "
                              "24"),
    (["--window", "64", "--start-every", "64"], "received: 64"),
    (["--data", "{data}", "--batch", "500"],
     "--batch must be at most the"),
    (["--seeds", "a"], "--seeds must be comma-separated ints"),
    (["--dropout", "1"], "--dropout must be in [0, 1)"),
    (["--data", "/no/such/chorales.json"], "No chorales file at"),
])
def test_mistakes_are_one_line(arguments, message, tmp_path):
    _made_up(tmp_path / "chorales.json.gz")
    arguments = [argument.format(data=tmp_path / "chorales.json.gz")
                 for argument in arguments]
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "music_transformer_jsb.py"),
         *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_learning_rate_warms_up_then_follows_the_cosine():
    sys.path.insert(0, str(BENCHMARKS))  # harness.py
    sys.path.insert(0, str(SYSTEMS))
    import music_transformer_jsb as jsb

    args = jsb.finish_arguments(jsb.parser(), jsb.parser().parse_args(
        ["--learning-rate", "0.002", "--warmup", "100"]))
    assert jsb.learning_rate(args, 0, 0.0) == pytest.approx(0.002 / 100)
    assert jsb.learning_rate(args, 99, 0.0) == pytest.approx(0.002)
    assert jsb.learning_rate(args, 500, 0.5) == pytest.approx(0.001)
    assert jsb.learning_rate(args, 900, 1.0) == pytest.approx(0.0)


def test_speed_benchmark_times_each_backend_and_precision_given(tmp_path):
    # Three of the five default candidates (each a process of its own):
    # both backends, both precisions, one core and all.
    stdout, record = run_benchmark(
        "music_transformer_speed.py", tmp_path, "--steps", "1", "--repeats",
        "1", "--window", "32", "--batch", "2", "--candidates",
        "tensorflow:float32:0,jax:mixed_bfloat16:0,tensorflow:float32:1",
        timeout=600)
    seen = {(row["backend"], row["precision"], row["threads"])
            for row in record["rows"]}
    assert ("tensorflow", "float32", 1) in seen
    assert {("jax", "mixed_bfloat16"), ("tensorflow", "float32")} <= {
        (backend, precision) for backend, precision, _ in seen}
    reference = [row for row in record["rows"]
                 if (row["backend"], row["precision"]) == (
                     "tensorflow", "float32") and row["threads"] > 1]
    if reference:  # a machine of one core has no two-thread row
        assert reference[0]["ratio_to_tensorflow_float32"] == 1.0
    assert all(row["tokens_per_second"] > 0 for row in record["rows"])
    assert "vs TF float32" in stdout
    assert len(record["rows"]) == 3


@pytest.mark.parametrize("candidates, message", [
    ("jax:float32:0", "must include tensorflow:float32:0"),
    ("tensorflow:float32", "must be BACKEND:POLICY:THREADS"),
    ("torch:float32:0", "must be BACKEND:POLICY:THREADS"),
])
def test_speed_candidates_mistakes_are_one_line(candidates, message):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "music_transformer_speed.py"),
         "--candidates", candidates], capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr


def test_parallel_runs_each_job_in_its_own_process_and_append_adds(
        tmp_path):
    """--parallel 2: each seed in a process of its own
    (`reproductions.processes.run_pinned`), its log in --save-dir, its
    row in the file; --append adds another command's rows to the file
    and keeps every command."""
    _made_up(tmp_path / "chorales.json.gz")
    saved = tmp_path / "models"
    tiny = ["--data", str(tmp_path / "chorales.json.gz"), "--steps", "2",
            "--eval-every", "2", "--layers", "1", "--hidden", "16",
            "--heads", "2", "--ff", "32", "--window", "32", "--start-every",
            "16", "--batch", "4", "--max-relative", "8", "--warmup", "1",
            "--no-samples", "--save-dir", str(saved), "--results-name",
            "jsb_tiny"]
    _, record = run_benchmark(
        "music_transformer_jsb.py", tmp_path / "results", *tiny,
        "--variants", "absolute", "--seeds", "0,1", "--parallel", "2",
        timeout=600)
    assert [(row["variant"], row["seed"]) for row in record["rows"]] == [
        ("absolute", 0), ("absolute", 1)]
    assert record["complete"] is True and record["in_progress"] == []
    assert sorted(path.name for path in saved.glob("*.log")) == [
        "absolute_seed0.log", "absolute_seed1.log"]
    assert (saved / "absolute_seed1.keras").is_file()
    _, record = run_benchmark(
        "music_transformer_jsb.py", tmp_path / "results", *tiny,
        "--variants", "relative", "--append", timeout=600)
    assert [(row["variant"], row["seed"]) for row in record["rows"]] == [
        ("absolute", 0), ("absolute", 1), ("relative", 0)]
    assert [line["variant"] for line in record["summary"]] == [
        "absolute", "relative"]
    assert len(record["commands"]) == 2
    assert "--append" in record["commands"][1]
    assert "--append" not in record["commands"][0]


def test_a_run_in_pieces_is_the_uninterrupted_run(tmp_path):
    """`--minutes` ends a piece after its first validation (no model
    saved, nothing summarized); `--resume` goes on to the rule's
    `--steps` with the same batches, schedule and dropout draws: the
    validation curve of the uninterrupted run."""
    _made_up(tmp_path / "chorales.json.gz")
    tiny = ["--data", str(tmp_path / "chorales.json.gz"), "--steps", "4",
            "--eval-every", "2", "--layers", "1", "--hidden", "16",
            "--heads", "2", "--ff", "32", "--window", "32", "--start-every",
            "16", "--batch", "4", "--max-relative", "8", "--warmup", "1",
            "--dropout", "0.3", "--no-samples", "--variants", "relative"]
    _, whole = run_benchmark(
        "music_transformer_jsb.py", tmp_path / "whole", *tiny, "--save-dir",
        str(tmp_path / "whole_models"), timeout=600)
    pieces = [*tiny, "--save-dir", str(tmp_path / "models"),
              "--checkpoint-dir", str(tmp_path / "checkpoints")]
    _, cut = run_benchmark("music_transformer_jsb.py", tmp_path / "cut",
                           *pieces, "--minutes", "0.0001", timeout=600)
    (row,) = cut["rows"]
    assert not row["finished"] and [p[0] for p in row["valid_curve"]] == [2]
    assert cut["summary"] == [] and cut["complete"] is False
    assert cut["in_progress"] == [{
        "variant": "relative", "seed": 0,
        "checkpoint": str(tmp_path / "checkpoints" / "relative_seed0")}]
    assert not (tmp_path / "models" / "relative_seed0.keras").exists()
    stdout, cut = run_benchmark("music_transformer_jsb.py", tmp_path / "cut",
                                *pieces, "--resume", timeout=600)
    assert "relative seed 0: resumed at epoch 1" in stdout
    (row,) = cut["rows"]
    (expected,) = whole["rows"]
    assert row["finished"] and row["stopped_by"] == "budget: 2 epochs"
    assert row["steps"] == expected["steps"] == 4
    assert row["training_tokens"] == expected["training_tokens"]
    np.testing.assert_allclose([p[2] for p in row["valid_curve"]],
                               [p[2] for p in expected["valid_curve"]],
                               rtol=1e-5)
    assert (tmp_path / "models" / "relative_seed0.keras").is_file()
    assert cut["in_progress"] == [] and cut["complete"] is True
    assert row["weights_sha256"]

    # Published, the run may keep its state alone: its row comes back
    # whole (figures, hash) and no model is saved from weights it lacks.
    run = tmp_path / "checkpoints" / "relative_seed0"
    for name in ("last.weights.h5", "best.npz", "seeds.npz"):
        (run / name).unlink()
    (tmp_path / "models" / "relative_seed0.keras").unlink()
    _, again = run_benchmark("music_transformer_jsb.py", tmp_path / "cut",
                             *pieces, "--resume", timeout=600)
    assert again["rows"] == cut["rows"]
    assert not (tmp_path / "models" / "relative_seed0.keras").exists()
    # Its checkpoint gone too, `--resume` gives its row from the file
    # (saved with the same run settings) and trains nothing.
    import shutil

    shutil.rmtree(tmp_path / "checkpoints")
    stdout, again = run_benchmark("music_transformer_jsb.py",
                                  tmp_path / "cut", *pieces, "--resume",
                                  timeout=600)
    assert "relative seed 0: finished earlier (its row in" in stdout
    assert again["rows"] == cut["rows"] and again["complete"] is True
    assert again["run_settings"] == cut["run_settings"]
    assert not (tmp_path / "checkpoints").exists()
