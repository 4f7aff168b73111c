"""benchmarks/attention_variants.py: a tiny run times every variant
against plain attention and the decoding steps, and writes what it
printed; the summary renders it."""

from tests.test_benchmarks_summary import run_benchmark


def test_tiny_run_prints_every_variant_and_the_cache_sizes(tmp_path):
    stdout, record = run_benchmark(
        "attention_variants.py", tmp_path, "--lengths", "64",
        "--repeats", "1", "--cache-length", "32", "--decode-batch", "1",
        "--decode-repeats", "1", timeout=600)
    training = [row for row in record["rows"] if row["part"] == "training"]
    assert [row["variant"] for row in training] == [
        "plain", "gqa (2 kv heads)", "mqa (1 kv head)",
        "sliding window 1024", "rope", "alibi", "relative (δ=1024)",
        "attention_bias"]
    plain = training[0]["median_ms"]
    for row in training:
        assert row["vs_plain"] == row["median_ms"] / plain
        assert f"| 64 | {row['variant']} |" in stdout
    decoding = {row["variant"]: row["cache_bytes"]
                for row in record["rows"] if row["part"] == "decoding"}
    # keys and values, float32: 2 x 32 positions x heads x 64 x 4 bytes
    assert decoding == {f"{heads} kv heads, {impl}": 2 * 32 * heads * 64 * 4
                        for heads in (8, 2, 1)
                        for impl in ("dense", "blockwise")}
