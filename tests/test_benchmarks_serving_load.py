"""benchmarks/serving_load.py with the numeric model alone and half a
second per cell: the load table and the JSON record (the machine, a row
per batching and concurrency, the batching ratio and the server's
overhead) written where it is told, not over the committed results."""

import math

import pytest

from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark


def test_numeric_run_writes_rows_and_ratios(tmp_path, monkeypatch):
    results = tmp_path / "results"
    stdout, record = run_benchmark(
        "serving_load.py", results, "--models", "numeric", "--seconds",
        "0.5", "--repository", str(tmp_path / "repository"), timeout=300)
    assert record["benchmark"] == "serving_load_numeric"
    assert record["seconds_per_cell"] == 0.5
    rows = record["rows"]
    assert [(row["batching"], row["api"], row["concurrency"])
            for row in rows] == [
        (batching, api, concurrency) for batching in (False, True)
        for api in ("rest", "grpc") for concurrency in (1, 8, 32)]
    for row in rows:
        assert row["model"] == "numeric" and row["errors"] == 0
        assert row["requests"] >= 1
        assert row["requests_per_s"] == pytest.approx(row["requests"] / 0.5)
        assert math.isfinite(row["p99_ms"])
        assert 0 < row["p50_ms"] <= row["p99_ms"]
    cell = {(row["batching"], row["concurrency"]): row for row in rows
            if row["api"] == "rest"}
    grpc_cell = {(row["batching"], row["concurrency"]): row for row in rows
                 if row["api"] == "grpc"}
    summary, = record["models"]
    assert summary["model"] == "numeric"
    assert summary["batching_ratio_c32"] == pytest.approx(
        cell[True, 32]["requests_per_s"] / cell[False, 32]["requests_per_s"],
        rel=1e-12)
    assert summary["server_p50_ms"] == cell[False, 1]["p50_ms"]
    assert 0 < summary["in_process_p50_ms"] < summary["server_p50_ms"]
    assert summary["overhead_p50_ms"] == pytest.approx(
        summary["server_p50_ms"] - summary["in_process_p50_ms"], rel=1e-12)
    for batching in (False, True):
        assert summary["grpc_over_rest_c32_batching_"
                       f"{'on' if batching else 'off'}"] == pytest.approx(
            grpc_cell[batching, 32]["requests_per_s"]
            / cell[batching, 32]["requests_per_s"], rel=1e-12)
    assert summary["grpc_overhead_p50_ms"] == pytest.approx(
        grpc_cell[False, 1]["p50_ms"] - summary["in_process_p50_ms"],
        rel=1e-12)
    assert ("numeric: batching throughput ratio at c=32: "
            f"{summary['batching_ratio_c32']:.2f}x") in stdout
    assert "numeric: gRPC / REST throughput at c=32: " in stdout
    section = load_script("summary", monkeypatch).render(record)
    table = [line for line in section if line.startswith("| numeric |")]
    assert len(table) == 12
    assert sum("| grpc |" in line for line in table) == 6
