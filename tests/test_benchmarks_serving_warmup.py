"""benchmarks/serving_warmup.py at its smallest (one server per setting,
two steady requests, a 4-token output limit): a row per setting with
consistent figures, the table and the JSON record written where it is
told, not over the committed results."""

import math

import pytest

from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark


def test_smallest_run_writes_a_row_per_setting(tmp_path, monkeypatch):
    stdout, record = run_benchmark(
        "serving_warmup.py", tmp_path / "results", "--rounds", "1",
        "--requests", "2", "--max-output-length", "4", timeout=300)
    assert record["benchmark"] == "serving_warmup"
    assert record["max_output_length"] == 4 and record["model_dir"] is None
    rows = record["rows"]
    assert [row["warmup"] for row in rows] == [True, False]
    for row in rows:
        assert (row["rounds"], row["requests"]) == (1, 2)
        assert row["ready_s"] > 0 and math.isfinite(row["ready_s"])
        assert 0 < row["p50_ms"] and row["first_ms"] == row["first_max_ms"]
        assert row["ratio"] == pytest.approx(row["first_ms"] / row["p50_ms"],
                                             rel=1e-9)
    on, off = rows
    assert f"| on | {on['ready_s']:.2f} | {on['first_ms']:.1f}" in stdout
    assert (f"with warm-up the first request is {on['ratio']:.2f}x the p50 "
            f"(target <= 2x); without, {off['ratio']:.2f}x") in stdout
    section = load_script("summary", monkeypatch).render(record)
    assert section[0] == "## serving_warmup (`results/serving_warmup.json`)"
