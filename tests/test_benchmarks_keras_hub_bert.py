"""benchmarks/keras_hub_bert.py: at a tiny width and 1,030 tokens (our
block-wise core), KerasHub's BERT backbone and ours made from it give the
same outputs, each timed and its memory measured; mistakes are one line."""

import subprocess
import sys

import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark


def test_a_tiny_run_compares_both_models(tmp_path, monkeypatch):
    stdout, record = run_benchmark(
        "keras_hub_bert.py", tmp_path, "--lengths", "1030", "--layers", "1",
        "--hidden", "16", "--heads", "2", "--repeats", "1", timeout=600)
    rows = {row["model"]: row for row in record["rows"]}
    assert set(rows) == {"keras_hub", "ours"}
    for row in rows.values():
        assert row["length"] == 1030
        assert row["forward_ms"] > 0 and row["train_ms"] > 0
        assert row["forward_rss_bytes"] >= 0 and row["train_rss_bytes"] >= 0
        assert row["max_abs_difference"] < 1e-4
    assert record["settings"]["hidden"] == 16
    assert "T=1,030: forward " in stdout
    text = "\n".join(load_script("summary", monkeypatch).render(record))
    hub, ours = rows["keras_hub"], rows["ours"]
    assert (f"| 1,030 | ours | {ours['forward_ms']:,.0f} | "
            f"{ours['train_ms']:,.0f} | ") in text
    assert ("KerasHub's time over ours at 1,030 tokens: forward "
            f"{hub['forward_ms'] / ours['forward_ms']:.2f}×") in text
    (ratios,) = record["summary"]
    assert ratios["train"] == pytest.approx(hub["train_ms"] / ours["train_ms"])


@pytest.mark.parametrize("arguments, message", [
    (["--lengths", "0"], "--lengths: must be positive integers"),
    (["--hidden", "10", "--heads", "3"], "--hidden must be divisible by "
                                         "--heads, received: --hidden 10 "
                                         "--heads 3"),
    (["--repeats", "0"], "--repeats must be positive, received: 0"),
])
def test_mistakes_are_one_line(tmp_path, arguments, message):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "keras_hub_bert.py"), *arguments,
         "--results-dir", str(tmp_path)], capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
