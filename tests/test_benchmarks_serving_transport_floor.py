"""benchmarks/serving_transport_floor.py, briefly: one row per empty
server, each with its throughput and the CPU a request cost the server
and the client, written where it is told."""

import pytest

from tests.test_benchmarks_summary import run_benchmark


def test_every_server_is_measured(tmp_path):
    stdout, record = run_benchmark(
        "serving_transport_floor.py", tmp_path / "results", "--seconds",
        "0.3", "--concurrency", "4", timeout=180)
    rows = record["rows"]
    assert [row["server"] for row in rows] == [
        "aiohttp", "grpc-asyncio", "grpc-threads"]
    for row in rows:
        assert row["requests"] >= 10, row
        assert row["requests_per_s"] == pytest.approx(row["requests"] / 0.3)
        assert 0 < row["server_us_per_request"] < 1e5
        assert 0 < row["client_us_per_request"] < 1e5
        assert f"| {row['server']} | {row['requests_per_s']:.0f} |" in stdout
