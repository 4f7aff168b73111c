"""benchmarks/quantization.py: float32 and weight-only int8 of the tests'
tiny trained translator on a few synthetic sentences, in memory, on disk
and served; the int8 weights take under half the float32's bytes; each
variant's targets; mistakes are one line."""

import subprocess
import sys

import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark
from tests.trained_translators import trained_translator


def test_float32_and_int8_side_by_side(tmp_path, tmp_path_factory,
                                       monkeypatch):
    directory = trained_translator(tmp_path_factory, "sinusoidal")
    stdout, record = run_benchmark(
        "quantization.py", tmp_path / "results", "--model-dir",
        str(directory), "--corpus", "synthetic", "--limit", "6",
        "--variants", "float32,int8", "--beam-size", "1", "--clients", "1,2",
        "--seconds", "0.5", timeout=600)
    rows = {row["variant"]: row for row in record["rows"]}
    assert set(rows) == {"float32", "int8"}
    for row in rows.values():
        assert row["sentences"] == 6 and 0 <= row["bleu_greedy"] <= 100
        assert row["bleu_beam"] == row["bleu_greedy"]  # --beam-size 1
        assert [s["clients"] for s in row["served"]] == [1, 2]
        assert all(s["errors"] == 0 and s["p50_ms"] > 0
                   and s["server_rss_bytes"] > 2**20 for s in row["served"])
    summary = record["summary"]
    assert summary["int8"]["size_over_float32"] < 0.5
    assert summary["int8"]["size_over_float32"] == pytest.approx(
        rows["int8"]["weights_bytes"] / rows["float32"]["weights_bytes"])
    assert set(summary["targets"]) == {"int8"}
    assert set(summary["targets"]["int8"]) == {
        "bleu_within_0.5", "size_at_most_0.3x", "not_slower",
        "served_p50_not_slower"}
    assert "int8 targets" in stdout
    # The page's table (benchmarks/summary.py): a row per variant, the
    # ratios and the targets as computed.
    text = "\n".join(load_script("summary", monkeypatch).render(record))
    assert (f"| `int8` | {rows['int8']['bleu_greedy']:.2f} | "
            f"{rows['int8']['bleu_beam']:.2f} | ") in text
    assert f"{summary['int8']['size_over_float32']:.2f}×" in text
    served = rows["int8"]["served"][1]
    assert (f"| `int8` | 2 | {served['p50_ms']:.0f} | {served['p99_ms']:.0f} "
            f"| {served['requests_per_s']:.1f} | 0 | ") in text
    verdicts = ", ".join(f"{name} {'yes' if met else 'no'}"
                         for name, met in summary["targets"]["int8"].items())
    assert f"int8's targets (computed): {verdicts}." in text


def test_each_quantized_variant_has_its_targets(monkeypatch):
    """int4's size target is 0.2x, the others' 0.3x; a variant served
    slower than float32 at any number of clients is marked so."""
    bench = load_script("quantization", monkeypatch)

    def row(variant, size, speed, p50):
        return {"variant": variant, "bleu_greedy": 30.0, "bleu_beam": 31.0,
                "weights_bytes": size, "greedy_sentences_per_s": speed,
                "served": [{"clients": 1, "p50_ms": p50}]}

    found = bench.summary([row("float32", 100, 10.0, 40.0),
                           row("int8", 27, 11.0, 39.0),
                           row("int4", 25, 9.0, 41.0)])
    assert found["targets"]["int8"] == {
        "bleu_within_0.5": True, "size_at_most_0.3x": True,
        "not_slower": True, "served_p50_not_slower": True}
    assert found["targets"]["int4"] == {
        "bleu_within_0.5": True, "size_at_most_0.2x": False,
        "not_slower": False, "served_p50_not_slower": False}


@pytest.mark.parametrize("arguments, message", [
    (["--variants", "int8"], "--variants must name float32"),
    (["--clients", "0"], "--clients: must be positive integers"),
    (["--limit", "0"], "--limit must be positive, received: 0"),
])
def test_mistakes_are_one_line(tmp_path, arguments, message):
    (tmp_path / "translator.json").write_text("{}")
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "quantization.py"), "--model-dir",
         str(tmp_path), *arguments], capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr
