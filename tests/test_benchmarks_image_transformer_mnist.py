"""reproductions/systems/image_transformer_mnist.py: a tiny run on made-up digits
trains local 2-D and full attention, tests the epoch of the best
validation NLL, prints the rules with no weights beside them and writes
the rows, the summary and the paper's rows; it runs on JAX as well as
TensorFlow; a wrong option or data file is one line."""

import math
import subprocess
import sys

import numpy as np
import pytest

from keras_attention.data import mnist
from reproductions import common
from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark

TINY = ["--validation", "10", "--test", "10", "--epochs", "2",
        "--batch-size", "8", "--layers", "1", "--hidden", "8", "--heads",
        "2", "--ff", "8", "--warmup", "2", "--verbose", "0"]
ROW_KEYS = {"variant", "label", "seed", "test_nll", "validation_nll",
            "best_epoch", "epochs", "train_seconds", "seconds_per_epoch",
            "epoch_seconds", "train_cpu_seconds", "examples_per_second",
            "parameters", "validation_curve", "backend", "cpu", "finished",
            "weights_sha256"}


def _made_up(folder, count=60, seed=0):
    """Write `folder/mnist10k.npz`: `count` digits of random grey blobs."""
    rng = np.random.default_rng(seed)
    ink = rng.random((count, 28, 28)) < 0.3
    images = (rng.integers(1, 256, (count, 28, 28)) * ink).astype("uint8")
    np.savez(folder / "mnist10k.npz", x=images,
             y=rng.integers(0, 10, count).astype("uint8"))
    return folder / "mnist10k.npz"


def test_tiny_run_on_both_backends_writes_rows_baselines_and_paper(
        tmp_path, monkeypatch):
    data = _made_up(tmp_path)
    stdout, record = run_benchmark(
        "image_transformer_mnist.py", tmp_path / "results", "--data",
        str(data), "--variants", "local_2d,full", "--seeds", "0,1",
        "--backend", "tensorflow", *TINY, timeout=600)
    rows = record["rows"]
    assert [(row["variant"], row["seed"]) for row in rows] == [
        ("local_2d", 0), ("local_2d", 1), ("full", 0), ("full", 1)]
    for row in rows:
        assert set(row) == ROW_KEYS
        assert row["backend"] == "tensorflow" and row["cpu"]
        assert row["epochs"] == 2 and len(row["validation_curve"]) == 2
        # The curve is rounded to 3 decimals; the best epoch's is kept.
        assert row["validation_nll"] == pytest.approx(
            min(row["validation_curve"]), abs=1e-3)
        assert row["validation_curve"][row["best_epoch"] - 1] == (
            min(row["validation_curve"]))
        assert math.isfinite(row["test_nll"]) and row["test_nll"] > 0
        assert row["examples_per_second"] > 0 < row["seconds_per_epoch"]
        assert len(row["epoch_seconds"]) == 2 and row["finished"]
    # The same sizes: only the attention differs.
    assert len({row["parameters"] for row in rows}) == 1
    summary = record["summary"]
    assert record["comparison"]["outcome"] in ("tie", "local lower",
                                               "full lower")
    assert "late_gain_max" not in summary["full"]  # 2 epochs: none before
    assert summary["full"]["test_nll_mean"] == pytest.approx(
        np.mean([row["test_nll"] for row in rows[2:]]))
    assert summary["full"]["test_nll_std"] == pytest.approx(
        np.std([row["test_nll"] for row in rows[2:]], ddof=1))
    # The rule with no weights, derived again: training means of grey /
    # 255, add-one smoothed, on the test digits binarized by seed [0, 2].
    parts = mnist.split(mnist.load_mnist(data), 0, 10, 10)
    test = mnist.binarize(parts["test"].images, np.random.default_rng(
        [0, 2]))
    ones = (parts["train"].images.astype("float64").sum(0) / 255 + 1) / (
        len(parts["train"]) + 2)
    expected = -np.log(np.where(test == 1, ones, 1 - ones)).sum((1, 2))
    assert record["baselines"]["pixel_means"] == pytest.approx(
        expected.mean())
    assert record["baselines"]["uniform"] == pytest.approx(784 * math.log(2))
    assert "independent pixels at their training means" in stdout
    paper = record["paper"]
    assert "not our 10,000" in paper["data"]
    assert {"model": "PixelCNN", "test_nll": 81.30} in paper["rows"]
    assert record["data"]["digits"] == {"test": 10, "validation": 10,
                                        "train": 40}
    assert record["settings"]["query_block"] == [4, 7]
    # The same run on JAX, added to the file's rows.
    _, record = run_benchmark(
        "image_transformer_mnist.py", tmp_path / "results", "--data",
        str(data), "--variants", "local_2d", "--backend", "jax", *TINY,
        "--epochs", "1", "--append", timeout=600)
    assert [row["backend"] for row in record["rows"]] == [
        "tensorflow"] * 4 + ["jax"]
    assert record["machine"]["backend"] == "jax"
    assert len(record["commands"]) == 2 and "--append" in record["commands"][1]
    jax_row = record["rows"][-1]
    assert jax_row["parameters"] == rows[0]["parameters"]
    assert math.isfinite(jax_row["test_nll"]) and jax_row["test_nll"] > 0
    assert record["summary"]["local_2d"]["seeds"] == 3
    page = "\n".join(load_script("summary", monkeypatch).render(record))
    assert "| PixelCNN | 81.30 |" in page
    assert "| `full` | " in page and "| s/epoch |" in page
    _resumes_where_it_stopped(tmp_path, data, rows[0])


def _resumes_where_it_stopped(tmp_path, data, reference):
    """--minutes stops a run at an epoch's end with its checkpoint; the
    same command with --resume trains the epochs left, from the saved
    weights and optimizer, to the curve of the run never stopped
    (`reference`); once finished, --resume gives its row again without
    training; a checkpoint is never overwritten or resumed with other
    settings."""
    common = ["--data", str(data), "--variants", "local_2d", "--seeds", "0",
              "--backend", "tensorflow", *TINY]
    checkpoints = ["--checkpoint-dir", str(tmp_path / "checkpoints")]
    # A deadline already past: the first epoch runs, then the run stops.
    stdout, cut = run_benchmark(
        "image_transformer_mnist.py", tmp_path / "cut", *common,
        *checkpoints, "--deadline", "1", timeout=600)
    (row,) = cut["rows"]
    assert not row["finished"] and len(row["validation_curve"]) == 1
    assert row["test_nll"] is None  # the test split only once finished
    assert "stopped after epoch 1 of 2" in stdout and cut["summary"] == {}
    stdout, resumed = run_benchmark(
        "image_transformer_mnist.py", tmp_path / "cut", *common,
        *checkpoints, "--resume", timeout=600)
    (row,) = resumed["rows"]
    assert "resumed at epoch 1" in stdout and row["finished"]
    np.testing.assert_allclose(row["validation_curve"],
                               reference["validation_curve"], atol=0.02)
    assert row["test_nll"] == pytest.approx(reference["test_nll"], abs=0.02)
    stdout, again = run_benchmark(
        "image_transformer_mnist.py", tmp_path / "cut", *common,
        *checkpoints, "--resume", timeout=600)
    assert "finished earlier" in stdout and again["rows"] == resumed["rows"]
    assert len(row["weights_sha256"]) == 64
    for extra, message in ((["--validation", "10"], "add --resume"),
                           (["--resume", "--epochs", "3"],
                            "was saved with other settings")):
        result = subprocess.run(
            [sys.executable, str(SYSTEMS / "image_transformer_mnist.py"),
             *common, *checkpoints, *extra], capture_output=True, text=True,
            timeout=120)
        assert result.returncode == 2 and message in result.stderr


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", "x"], "--seeds must be comma-separated ints, received: "
                       "'x'"),
    (["--variants", "local_2d,nope"], "--variants must name some of"),
    (["--query-block", "4"], "--query-block must be two ints >= 1 as "
                             "rows,columns, received: '4'"),
    (["--hidden", "10", "--heads", "4"], "--hidden must be divisible by "
                                         "--heads, received: 10 and 4"),
    (["--epochs", "0"], "--epochs must be positive, received: 0"),
    (["--dropout", "1"], "--dropout must be in [0, 1), received: 1.0"),
    (["--minutes", "0"], "--minutes must be positive, received: 0.0"),
    (["--data", "/no/such/mnist.npz"], "No MNIST file at /no/such/"),
    (["--data", "{data}", "--batch-size", "500"],
     "--batch-size must be at most the 40 training digits"),
])
def test_mistakes_are_one_line(arguments, message, tmp_path):
    data = _made_up(tmp_path)
    arguments = [argument.format(data=data) for argument in arguments]
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "image_transformer_mnist.py"),
         *arguments, "--validation", "10", "--test", "10"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def _row(variant, seed, test_nll, curve):
    return {"variant": variant, "label": variant, "seed": seed,
            "test_nll": test_nll, "validation_nll": min(curve),
            "best_epoch": curve.index(min(curve)) + 1, "epochs": len(curve),
            "train_seconds": 60.0 * len(curve), "seconds_per_epoch": 60.0,
            "examples_per_second": 100.0, "parameters": 1000,
            "validation_curve": curve, "backend": "tensorflow", "cpu": "x",
            "finished": True}


def test_local_and_full_are_told_apart_only_beyond_the_spread(monkeypatch):
    """`common.local_against_full`: full's mean test NLL less local's,
    against the larger spread over seeds; a tie within it, a side only
    beyond it; and the late gain: how much the last epochs lowered
    validation NLL."""
    script = load_script("image_transformer_mnist", monkeypatch)
    script.LABELS.update(local_2d="local", full="full")
    curve = [130.0, 110.0, 104.0, 103.0, 102.5, 102.6, 102.4, 102.45]
    assert script.late_gain(curve) == pytest.approx(1.6)  # 104.0 - 102.4
    assert script.late_gain([110, 100, 101, 102, 103, 104, 105]) == -1.0
    assert script.late_gain(curve[:5]) is None  # no epoch before the five

    def rows(local, full):
        return ([_row("local_2d", s, v, curve) for s, v in enumerate(local)]
                + [_row("full", s, v, curve) for s, v in enumerate(full)])

    tie = common.local_against_full(script.summary(rows([100, 102, 104],
                                                [101, 105, 103])))
    assert tie == {"difference": 1.0, "spread": 2.0, "outcome": "tie"}
    apart = common.local_against_full(script.summary(rows([100, 101, 102],
                                                  [105, 106, 107])))
    assert apart["outcome"] == "local lower" and apart["difference"] == 5.0
    assert common.local_against_full(script.summary(
        rows([110, 111, 112], [100, 101, 102])))["outcome"] == "full lower"
    assert common.local_against_full(script.summary(rows([100], [101]))) is None
    found = script.summary(rows([100, 101, 102], [105, 106, 107]))
    assert found["full"]["late_gain_max"] == pytest.approx(1.6)
    assert found["full"]["best_epochs"] == [7, 7, 7]
    record = {"benchmark": "image_transformer_mnist", "command": "c",
              "when": "w", "machine": {"backend": "tensorflow", "cpu": "x",
                                       "device": "cpu", "cores": 2,
                                       "cpu_flags": [], "keras": "3"},
              "rows": rows([100, 101, 102], [105, 106, 107]),
              "summary": found, "comparison": apart}
    page = "\n".join(load_script("summary", monkeypatch).render(record))
    assert ("full's mean test NLL less local's is +5.00 nats, the larger "
            "spread over seeds 1.00: local attention lower beyond the "
            "spread.") in page
    assert ("`local_2d`'s validation NLL fell by at most 1.60 nats in its "
            "last 5 epochs below its best before them (best epochs 7, 7, "
            "7)") in page
    # A run stopped by --minutes: its epochs so far, marked, and left out
    # of the summary.
    cut = _row("full", 3, 120.0, curve[:4])
    cut.update(epochs=15, finished=False)
    record["rows"].append(cut)
    page = "\n".join(load_script("summary", monkeypatch).render(record))
    assert "| `full` | 3 | tensorflow | 120.00 | 103.00 (4) | 4 of 15, " \
           "unfinished † |" in page
    assert "† `full` seed 3: stopped by `--minutes` after epoch 4" in page


def test_the_page_states_the_results_files_figures(monkeypatch):
    """docs/models/image-transformer.md states the committed runs'
    figures: each finished variant's mean and spread, seed by seed, the
    verdict of `common.local_against_full` (a tie, or a side beyond the spread), how far
    from stopping the runs were, and the epochs of the unfinished ones."""
    import json

    script = load_script("image_transformer_mnist", monkeypatch)
    page = " ".join((BENCHMARKS.parent / "docs" / "models"
                     / "image-transformer.md").read_text().split())

    def load(name):
        return json.loads((BENCHMARKS / "results" / f"{name}.json"
                           ).read_text())

    def stated(line):
        return f"{line['test_nll_mean']:.2f} ± {line['test_nll_std']:.2f}"

    verdicts = {"tie": "**A tie", "local lower": "**Local attention lower",
                "full lower": "**Full attention lower"}
    for name in ("image_transformer_mnist_5_epochs",
                 "image_transformer_mnist"):
        record = load(name)
        found = script.summary(record["rows"])
        for variant, line in found.items():  # the file's, not edited
            assert line["test_nll_mean"] == pytest.approx(
                record["summary"][variant]["test_nll_mean"])
        for line in found.values():
            assert stated(line) in page, (name, stated(line))
        for variant in found:
            seeds = ", ".join(f"{row['test_nll']:.2f}" for row in
                              record["rows"] if row["variant"] == variant)
            assert seeds in page, (name, seeds)
        outcome = common.local_against_full(found)
        if outcome is not None:
            assert verdicts[outcome["outcome"]] in page, name
    record = load("image_transformer_mnist")
    assert record["settings"]["query_block"] == [4, 7]
    finished = [row for row in record["rows"] if row["finished"]]
    last = max(row["validation_curve"][-2] - row["validation_curve"][-1]
               for row in finished)
    assert f"at most {last:.2f} nats" in page
    if all(row["finished"] for row in record["rows"]):
        gains = [script.late_gain(row["validation_curve"])
                 for row in record["rows"]]
        assert f"the last five by {min(gains):.2f}–{max(gains):.2f}" in page
        found = record["summary"]
        minutes = {variant: [row["train_seconds"] / 60 for row in
                             record["rows"] if row["variant"] == variant]
                   for variant in found}
        assert (f"an epoch took "
                f"{found['local_2d']['seconds_per_epoch_mean']:.0f} s with "
                f"local attention and "
                f"{found['full']['seconds_per_epoch_mean']:.0f} s with full"
                ) in page
        assert (f"{min(minutes['local_2d']):.0f}–"
                f"{max(minutes['local_2d']):.0f} minutes for a local run and "
                f"{min(minutes['full']):.0f}–{max(minutes['full']):.0f} for a "
                f"full one, "
                f"{sum(sum(m) for m in minutes.values()) / 60:.1f} hours"
                ) in page
        cpu = {variant: sum(row["train_cpu_seconds"] for row in
                            record["rows"] if row["variant"] == variant)
               for variant in found}
        assert f"{cpu['full'] / cpu['local_2d']:.1f} times the processor" in (
            page)
    for row in record["rows"]:
        if not row["finished"]:
            assert (f"seed {row['seed']} after "
                    f"{len(row['validation_curve'])} of {row['epochs']}"
                    ) in page, row["seed"]
