"""benchmarks/attention_scaling.py: the quick run completes, prints the
table and the ratios the issue asks for and writes them as JSON where it
is told; its FLOP counter agrees with the closed-form count of each
layer's matrix products."""

import math

import pytest

from tests.test_benchmarks_summary import check_timing
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark


def test_quick_run_prints_table_and_ratios_and_writes_them(tmp_path,
                                                           monkeypatch):
    stdout, record = run_benchmark(
        "attention_scaling.py", tmp_path, "--quick", "--repeats", "2",
        "--local-block-sizes", "64", timeout=300)
    lines = stdout.splitlines()
    assert ("| section | size | layer | fwd+bwd ms | x ref time | GFLOP "
            "| GFLOP/s | tensor MiB | x ref mem | RSS MiB |") in lines
    rows = [line for line in lines if line.startswith(("| relative |",
                                                       "| local |"))]
    assert len(rows) == 2 * 4 + 2 * 4, stdout
    assert sum("LocalSelfAttention r=128 b=64 |" in row for row in rows) == 2
    # The work column: full attention at n=512 does 9 projection products
    # (2·512·512² each) and 12·8·512·512·64 attention FLOPs, 4.03 GFLOP.
    full = next(row for row in rows
                if row.startswith("| local | n=512 | MultiHeadSelfAttention"))
    assert full.split("|")[6].strip() == "4.03", full
    # Every memory subprocess answered: no "n/a" cell.
    assert not any("n/a" in row for row in rows), stdout
    ratios = [line for line in lines if line.startswith("ratio: ")]
    assert len(ratios) == 3, stdout
    assert ratios[0].startswith("ratio: relative(skew)/MHSA memory at T=128 = ")
    assert ratios[1].startswith("ratio: relative(skew)/MHSA time at T=128 = ")
    assert ratios[2].startswith("ratio: full/local time at n=512 = ")
    for line in ratios:
        assert line.endswith((": met", ": NOT met")), line
    work = [line for line in lines if "product work" in line]
    assert len(work) == 1 and work[0].startswith(
        "also at n=512: full/local product work "), stdout
    _check_record(record, rows)
    section = load_script("summary", monkeypatch).render(record)
    assert sum(line.startswith(("| relative |", "| local |"))
               for line in section) == len(rows)


def _check_record(record, printed_rows):
    """The JSON record holds what the table printed: a row per layer and
    size, each ratio the quotient of the medians it names."""
    assert record["benchmark"] == "attention_scaling_quick"
    assert record["parameters"]["repeats"] == 2
    rows = {(row["size"], row["variant"]): row for row in record["rows"]}
    assert len(rows) == len(record["rows"]) == len(printed_rows)
    for (size, _), row in rows.items():
        check_timing(row["time"], runs=2)
        reference = rows[size, "mhsa"]
        assert row["time_ratio"] == pytest.approx(
            row["time"]["median_ms"] / reference["time"]["median_ms"],
            rel=1e-12)
        assert row["gflop_per_s"] == pytest.approx(
            row["gflop"] / row["time"]["median_ms"] * 1e3, rel=1e-12)
        assert row["memory_runs"] == 1
        for memory in (row["tensor"], row["rss"]):
            assert math.isfinite(memory["median_mib"])
            assert memory["median_mib"] == memory["min_mib"] == (
                memory["max_mib"])  # one process
        assert row["tensor"]["median_mib"] > 0
        assert row["memory_ratio"] == pytest.approx(
            row["tensor"]["median_mib"] / reference["tensor"]["median_mib"],
            rel=1e-12)
        printed = next(line for line in printed_rows
                       if f"| {size} | {row['layer']} |" in line)
        assert printed.split("|")[4].strip() == (
            f"{row['time']['median_ms']:.1f}")
    assert rows["n=512", "local64"]["layer"] == "LocalSelfAttention r=128 b=64"
    memory, time, local = record["targets"]
    assert memory["value"] == pytest.approx(
        rows["T=128", "skew"]["memory_ratio"], rel=1e-12)
    assert time["value"] == pytest.approx(rows["T=128", "skew"]["time_ratio"],
                                          rel=1e-12)
    assert local["value"] == pytest.approx(
        rows["n=512", "mhsa"]["time"]["median_ms"]
        / rows["n=512", "local"]["time"]["median_ms"], rel=1e-12)
    assert (local["relation"], local["bound"]) == (">=", 10)
    assert local["verdict"] == ("met" if local["value"] >= 10 else "NOT met")
    assert local["note"] == "the target is for n=8192"
    assert any(note.startswith("also at n=512: full/local product work ")
               for note in record["notes"])


def test_product_flops_equal_the_closed_form_counts(monkeypatch):
    """fwd+bwd products: four projections (forward, weight gradient, input
    gradient except for the constant input's three: 9 products of
    2·B·n·D² each) plus attention (q·k and weights·v forward, two
    gradients each: 12·B·N·n·K·H for K keys per query)."""
    bench = load_script("attention_scaling", monkeypatch)
    n, batch, heads, dim = 512, bench.BATCH, bench.HEADS, bench.DIM
    key_dim = dim // heads
    keys = {"mhsa": n, "projections": 0,
            "local": 3 * bench.WINDOW,  # blocks of 128: 1 + 1 + 1 blocks
            "local64": 5 * 64}  # blocks of 64: 2 + 1 + 2 blocks
    x, layers = bench.build_layers("local", n, tuple(keys), None)
    projections = 9 * 2 * batch * n * dim * dim
    for variant, (layer, kwargs) in layers.items():
        step, _ = bench.fwd_bwd(layer, x, kwargs)
        expected = projections + 12 * batch * heads * n * keys[variant] * (
            key_dim)
        assert bench.product_flops(step) == expected, variant
