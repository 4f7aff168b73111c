"""benchmarks/int8_matmul.py: int8 and weight-only against float32
products on TensorFlow (with and without XLA) and JAX at a tiny shape,
each int8 result checked exact; mistakes are one line."""

import subprocess
import sys

import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import run_benchmark


def test_every_backend_times_an_exact_int8_product(tmp_path):
    stdout, record = run_benchmark(
        "int8_matmul.py", tmp_path / "results", "--shapes", "4x8x16,2x3x5",
        "--repeats", "2", timeout=300)
    rows = record["rows"]
    assert [(row["backend"], row["m"], row["k"], row["n"]) for row in rows] \
        == [("tensorflow", 4, 8, 16), ("tensorflow", 2, 3, 5),
            ("tensorflow-xla", 4, 8, 16), ("tensorflow-xla", 2, 3, 5),
            ("jax", 4, 8, 16), ("jax", 2, 3, 5)]
    for row in rows:
        assert row["int8_exact"] is True
        assert row["float32_ms"] > 0 and row["int8_ms"] > 0
        assert row["weight_only_ms"] > 0
        assert row["int8_over_float32_time"] == pytest.approx(
            row["int8_ms"] / row["float32_ms"])
        assert row["weight_only_over_float32_time"] == pytest.approx(
            row["weight_only_ms"] / row["float32_ms"])
    assert "2x3x5: float32" in stdout.splitlines()[-2]


@pytest.mark.parametrize("arguments, message", [
    (["--backends", "torch"], "--backends must be some of tensorflow, "
     "tensorflow-xla, jax, received: 'torch'"),
    (["--shapes", "4x8"], "--shapes: must be MxKxN products separated by "
     "commas, received: '4x8'"),
    (["--repeats", "0"], "--repeats must be positive, received: 0"),
])
def test_mistakes_are_one_line(tmp_path, arguments, message):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "int8_matmul.py"), *arguments,
         "--results-dir", str(tmp_path)], capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
