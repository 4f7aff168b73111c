"""benchmarks/long_attention.py: a run at a tiny length completes, prints
its table and ratios and writes them; a worker above the memory cap is
killed and reported, and the candidate is not tried at longer lengths."""

from tests.test_benchmarks_summary import run_benchmark


def test_tiny_run_prints_table_and_ratios_and_writes_them(tmp_path):
    stdout, record = run_benchmark(
        "long_attention.py", tmp_path, "--lengths", "64", "--repeats", "1",
        "--compare-length", "64", "--compare-repeats", "1", timeout=600)
    lines = stdout.splitlines()
    rows = [line for line in lines if line.startswith("| 64 |")]
    assert [row.split("|")[2].strip() for row in rows] == [
        "ours", "ours dense", "keras"], stdout
    for row in record["rows"]:
        assert "failed" not in row, row
        assert row["median_ms"] > 0 and row["rss_bytes"] >= 0
    comparison = record["comparison"]
    assert comparison["length"] == 64
    timing = comparison["timing"]
    assert comparison["ours_vs_keras"] == (
        timing["keras"]["median_ms"] / timing["ours"]["median_ms"])
    assert any(line.startswith("- ours / ours dense: ") for line in lines)


def test_over_the_cap_is_killed_and_not_tried_again(tmp_path):
    stdout, record = run_benchmark(
        "long_attention.py", tmp_path, "--lengths", "64", "128",
        "--repeats", "1", "--compare-length", "32", "--compare-repeats", "1",
        "--memory-cap-gib", "0.05", timeout=600)
    first, *rest = [row for row in record["rows"] if row["length"] == 64]
    assert first["failed"] == "over the 0.05 GiB cap", first
    longer = [row for row in record["rows"] if row["length"] == 128]
    assert {row["failed"] for row in longer} == {"failed at a shorter "
                                                 "length"}


def test_relative_candidates_run_and_compare(tmp_path):
    stdout, record = run_benchmark(
        "long_attention.py", tmp_path, "--lengths", "64", "--repeats", "1",
        "--compare-length", "64", "--compare-repeats", "1",
        "--candidates", "relative", "relative dense", timeout=600)
    assert [row["candidate"] for row in record["rows"]] == [
        "relative", "relative dense"]
    comparison = record["comparison"]
    timing = comparison["timing"]
    assert set(comparison) == {"length", "timing", "relative_vs_dense",
                               "ratios", "precision"}
    assert comparison["relative_vs_dense"] == (
        timing["relative dense"]["median_ms"]
        / timing["relative"]["median_ms"])
    assert comparison["ratios"] == [{
        "ours": "relative", "reference": "relative dense",
        "value": comparison["relative_vs_dense"], "target": 2}]
    assert comparison["precision"] == "float32"
    assert "- relative / relative dense: " in stdout


def test_compressed_candidates_run_and_compare(tmp_path):
    stdout, record = run_benchmark(
        "long_attention.py", tmp_path, "--lengths", "64", "--repeats", "1",
        "--compare-length", "64", "--compare-repeats", "1",
        "--candidates", "ours", "compressed", "compressed dense",
        timeout=600)
    assert [row["candidate"] for row in record["rows"]] == [
        "ours", "compressed", "compressed dense"]
    comparison = record["comparison"]
    timing = comparison["timing"]
    assert comparison["compressed_vs_dense"] == (
        timing["compressed dense"]["median_ms"]
        / timing["compressed"]["median_ms"])
    assert "- compressed / compressed dense: " in stdout
    assert "- T=64: compressed " in stdout
