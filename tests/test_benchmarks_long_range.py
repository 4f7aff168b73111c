"""benchmarks/long_range.py: a tiny run measures every step row and
trains every accuracy row in fresh processes, prints both tables, merges
an earlier run's accuracy rows and draws the figure; a worker over the
memory cap is killed and its candidate not tried at longer lengths; bad
arguments are one line naming the flag."""

import argparse
import json

import numpy as np
import pytest

from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark

TINY = ("--hidden", "16", "--heads", "2", "--ff", "32", "--window", "16",
        "--train-batch", "4", "--eval-documents", "8")


def test_tiny_run_measures_trains_merges_and_plots(tmp_path, monkeypatch,
                                                   capsys):
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({
        "machine": {"device": "NVIDIA H100 80GB HBM3"},
        "settings": {"hidden": 128, "heads": 4, "batch": 1, "facts": 4,
                     "window": 128, "compression": 3},
        "rows": [{"kind": "accuracy", "candidate": "full", "length": 1024,
                  "steps": 2840, "train_minutes": 1.2, "final_loss": 1.41,
                  "accuracy": 0.316},
                 {"kind": "step", "candidate": "full", "length": 1024,
                  "step_s": 9.0}]}))
    figure = tmp_path / "long_range.png"
    stdout, record = run_benchmark(
        "long_range.py", tmp_path / "results", "--lengths", "320",
        "--accuracy-lengths", "320", "--candidates", "full-dense", "tdmca",
        "--train-minutes", "0.01", "--repeats", "1", *TINY,
        "--merge", str(earlier), "--plot", str(figure), timeout=600)
    rows = record["rows"]
    assert [(row["kind"], row["candidate"], row["length"]) for row in rows] \
        == [("step", "full-dense", 320), ("step", "tdmca", 320),
            ("accuracy", "full-dense", 320), ("accuracy", "tdmca", 320),
            ("accuracy", "full", 1024)]
    for row in rows[:4]:
        assert "failed" not in row, row
        assert row["weights"] > 0
    # T-DMCA's compression convolutions are the only extra weights.
    assert rows[1]["weights"] > rows[0]["weights"]
    for row in rows[:2]:
        assert row["step_s"] > 0 and row["first_s"] > 0
        assert row["rss_bytes"] > 0
    for row in rows[2:4]:
        assert row["steps"] >= 1 and 0.0 <= row["accuracy"] <= 1.0
        # After a few steps: near log(99), the vocabulary's uniform loss.
        assert 2.0 < row["final_loss"] < 8.0
        # The accuracy is a count over the 8 held-out documents.
        assert (row["accuracy"] * 8).is_integer()
    assert rows[4]["from"] == "NVIDIA H100 80GB HBM3"  # step rows not taken
    lines = stdout.splitlines()
    for start in ("| 320 | full-dense | ", "| 320 | tdmca | ",
                  "| 320 | full-dense | here | ", "| 320 | tdmca | here | "):
        assert any(line.startswith(start) for line in lines), start
    assert any(line.startswith("| 1,024 | full | NVIDIA H100 80GB HBM3 | "
                               "2,840 |") for line in lines), stdout
    assert figure.stat().st_size > 10_000
    assert record["settings"]["window"] == 16
    # --replot: the same tables and a figure from the results file alone.
    script = load_script("long_range", monkeypatch)
    again = tmp_path / "again.png"
    results = next((tmp_path / "results").glob("*.json"))
    script.main(["--replot", str(results), "--plot", str(again)])
    printed = capsys.readouterr().out
    for line in lines:
        if line.startswith("| "):
            assert line in printed
    assert again.stat().st_size > 10_000


def test_over_the_cap_is_killed_and_not_tried_again(tmp_path):
    stdout, record = run_benchmark(
        "long_range.py", tmp_path, "--lengths", "320", "640",
        "--accuracy-lengths", "--candidates", "tdmca",
        "--memory-cap-gib", "0.05", *TINY, timeout=600)
    first, longer = record["rows"]
    assert first["failed"] == "over the 0.05 GiB cap", first
    assert longer["failed"] == "failed at a shorter length"
    assert "| 640 | tdmca | failed at a shorter length |" in stdout


def test_documents_weigh_the_answer_only(monkeypatch):
    """The loss reads the answer alone, at the question's key, and the
    weights make the mean over positions the mean over answers."""
    from keras_attention.data import long_range

    script = load_script("long_range", monkeypatch)
    settings = argparse.Namespace(facts=3)
    inputs, targets, weights = script.documents(5, 200, settings, [7, 0])
    tokens, answers, _ = long_range.generate_documents(
        5, 200, num_facts=3, num_keys=16, num_values=16, num_fillers=64,
        seed=[7, 0])
    np.testing.assert_array_equal(inputs, tokens[:, :-1])
    np.testing.assert_array_equal(targets[:, -1], answers)
    assert (inputs[:, -2] == long_range.QUESTION_ID).all()
    assert (weights[:, :-1] == 0).all() and (weights[:, -1] == 199).all()
    assert weights.mean() == 1.0


def test_accuracy_reads_the_last_position_only(monkeypatch):
    """A stand-in model that puts the answer's logit at one position: the
    accuracy counts it at the last position, and nowhere else."""
    script = load_script("long_range", monkeypatch)
    answers = np.array([3, 5, 7, 9, 11])
    inputs = np.zeros((5, 6), "int32")

    class Answering:
        def __init__(self, position):
            self.position = position

        def predict_on_batch(self, batch):
            logits = np.zeros((len(batch), 6, 16), "float32")
            rows = np.arange(len(batch))
            start = int(batch[0, 0])  # the rows' index, written below
            logits[rows, self.position, answers[start:start + len(batch)]] = 1
            return logits

    for row in range(5):
        inputs[row, 0] = row
    assert script.accuracy(Answering(-1), inputs, answers, batch=2) == 1.0
    assert script.accuracy(Answering(-2), inputs, answers, batch=2) == 0.0


def test_quick_lengths_pass_and_replot_needs_no_run(tmp_path, monkeypatch,
                                                    capsys):
    results = tmp_path / "earlier.json"
    results.write_text(json.dumps({
        "machine": {"device": "cpu"},
        "settings": {"hidden": 16, "heads": 2, "batch": 1, "facts": 4,
                     "window": 16, "compression": 3},
        "rows": [{"kind": "step", "candidate": "local", "length": 256,
                  "weights": 10, "step_s": 0.5, "first_s": 2.0,
                  "rss_bytes": 2**29}]}))
    script = load_script("long_range", monkeypatch)
    script.main(["--quick", "--replot", str(results)])
    printed = capsys.readouterr().out
    assert "| 256 | local | 10 | 0.50 | 2.00 | 0.50 |" in printed
    assert "accuracy" not in printed  # no rows, no table


@pytest.mark.parametrize("arguments, message", [
    (["--hidden", "10", "--heads", "4"],
     "--hidden must be divisible by --heads, received: --hidden 10 "
     "--heads 4"),
    (["--lengths", "80"], "every length must be at least 88 for 4 facts, "
                          "received: 80"),
    (["--facts", "17"], "--facts must be at most 16 (a key each), "
                        "received: 17"),
    (["--seed", "-1"], "--seed must be >= 0, received: -1"),
    (["--replot", "/nonexistent/long_range.json"],
     "--replot must be a results file of this script, received: "
     "'/nonexistent/long_range.json' (FileNotFoundError: [Errno 2] No such "
     "file or directory: '/nonexistent/long_range.json')"),
    (["--plot", "/nonexistent/figure.png"],
     "--plot's folder does not exist, received: '/nonexistent/figure.png'"),
    (["--train-minutes", "0"], "--train-minutes must be positive, "
                               "received: 0.0"),
])
def test_bad_arguments_are_one_line(arguments, message, monkeypatch,
                                    capsys, tmp_path):
    script = load_script("long_range", monkeypatch)
    # Should a check ever let the arguments through, this is the run it
    # would start: one small step sweep, nothing written to the project.
    harmless = ["--lengths", "88", "--accuracy-lengths", "--candidates",
                "local", "--results-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as raised:
        script.main(harmless + arguments)
    assert raised.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(message), error


def test_summary_renders_both_tables(monkeypatch):
    summary = load_script("summary", monkeypatch)
    record = {
        "benchmark": "long_range", "when": "2026-11-27T01:00:00+00:00",
        "command": "long_range.py", "machine": {
            "cpu": "AMD EPYC", "cpu_flags": ["avx2"], "cores": 2,
            "keras": "3.15.1", "backend": "tensorflow", "device": "cpu"},
        "settings": {"hidden": 128, "heads": 4, "batch": 1, "facts": 4,
                     "layers": 5, "values": 16},
        "rows": [
            {"kind": "step", "candidate": "full", "length": 16384,
             "weights": 688099, "step_s": 31.5, "first_s": 40.25,
             "rss_bytes": 3 * 2**30},
            {"kind": "step", "candidate": "full-dense", "length": 16384,
             "failed": "over the 20 GiB cap", "rss_bytes": 21 * 2**30},
            {"kind": "accuracy", "candidate": "tdmca", "length": 1024,
             "weights": 885219, "steps": 3863, "train_minutes": 1.2,
             "final_loss": 1.808, "accuracy": 0.34765625,
             "from": "NVIDIA H100 80GB HBM3"}]}
    lines = summary.render(record)
    assert "| 16,384 | full | 688,099 | 31.50 | 40.25 | 3.00 |" in lines
    assert ("| 16,384 | full-dense | — | over the 20 GiB cap | — | 21.00 at "
            "the kill |" in lines)
    assert lines[lines.index("Training step, 5 blocks of 128 (4 heads), "
                             "batch 1, a fresh process each; memory: the "
                             "peak resident memory's growth over the first "
                             "step.") + 2].startswith("| L | candidate |")
    assert ("Held-out answer accuracy (chance 0.062; knowing the document's "
            "values only, 0.250).") in lines
    assert ("| 1,024 | tdmca | NVIDIA H100 80GB HBM3 | 3,863 | 1.2 | 1.808 "
            "| 0.348 |") in lines
