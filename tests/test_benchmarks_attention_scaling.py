"""benchmarks/attention_scaling.py: the quick run completes, prints the
table and the ratios the issue asks for and writes them as JSON where it
is told, on every CPU: where TensorFlow's CPU allocator keeps no
statistics (oneDNN off, as on AVX2-only CPUs) the memory ratios come from
the RSS growth and the table says so; its FLOP counter agrees with the
closed-form count of each layer's matrix products."""

import math

import pytest

from tests.test_benchmarks_summary import check_timing
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark


def test_quick_run_prints_table_and_ratios_and_writes_them(tmp_path,
                                                           monkeypatch):
    """The whole quick run with oneDNN turned off, as TensorFlow leaves it
    on AVX2-only CPUs: the allocator keeps no statistics, so this is the
    RSS fallback on every CPU (the allocator path: the next test)."""
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    stdout, record = run_benchmark(
        "attention_scaling.py", tmp_path, "--quick", "--repeats", "2",
        "--relative-lengths", "64", "--local-lengths", "512",
        "--local-block-sizes", "64", timeout=300)
    lines = stdout.splitlines()
    assert ("| section | size | layer | fwd+bwd ms | x ref time | GFLOP "
            "| GFLOP/s | tensor MiB | x ref mem | RSS MiB | memory from |"
            ) in lines
    rows = [line for line in lines if line.startswith(("| relative |",
                                                       "| local |"))]
    assert len(rows) == 4 + 4, stdout
    assert sum("LocalSelfAttention r=128 b=64 |" in row for row in rows) == 1
    assert any(line.startswith("memory: TensorFlow's CPU allocator kept no "
                               "statistics for local 512, relative 64 (its "
                               "oneDNN kernels are off: "
                               "TF_ENABLE_ONEDNN_OPTS=0") for line in lines)
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")]
        assert cells[8] == "no stats" and cells[11] == "RSS", row
    # The work column: full attention at n=512 does 9 projection products
    # (2·512·512² each) and 12·8·512·512·64 attention FLOPs, 4.03 GFLOP.
    full = next(row for row in rows
                if row.startswith("| local | n=512 | MultiHeadSelfAttention"))
    assert full.split("|")[6].strip() == "4.03", full
    # Every memory subprocess answered: no "n/a" cell.
    assert not any("n/a" in row for row in rows), stdout
    ratios = [line for line in lines if line.startswith("ratio: ")]
    assert len(ratios) == 3, stdout
    assert ratios[0].startswith("ratio: relative(skew)/MHSA memory at T=64 = ")
    assert "RSS growth, the allocator keeps no statistics here" in ratios[0]
    assert ratios[1].startswith("ratio: relative(skew)/MHSA time at T=64 = ")
    assert ratios[2].startswith("ratio: full/local time at n=512 = ")
    for line in ratios:
        assert line.endswith((": met", ": NOT met")), line
    work = [line for line in lines if "product work" in line]
    assert len(work) == 1 and work[0].startswith(
        "also at n=512: full/local product work "), stdout
    _check_record(record, rows)
    section = load_script("summary", monkeypatch).render(record)
    rendered = [line for line in section
                if line.startswith(("| relative |", "| local |"))]
    assert len(rendered) == len(rows)
    assert all("| no stats |" in line and line.endswith("| RSS |")
               for line in rendered), rendered


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
        assert row["tensor"] is None  # no allocator statistics
        assert row["memory_source"] == "RSS"
        memory = row["rss"]
        assert math.isfinite(memory["median_mib"])
        assert memory["median_mib"] == memory["min_mib"] == (
            memory["max_mib"])  # one process
        assert memory["median_mib"] > 0
        assert row["memory_ratio"] == pytest.approx(
            memory["median_mib"] / reference["rss"]["median_mib"], rel=1e-12)
        printed = next(line for line in printed_rows
                       if f"| {size} | {row['layer']} |" in line)
        assert printed.split("|")[4].strip() == (
            f"{row['time']['median_ms']:.1f}")
    assert rows["n=512", "local64"]["layer"] == "LocalSelfAttention r=128 b=64"
    memory, time, local = record["targets"]
    assert memory["value"] == pytest.approx(
        rows["T=64", "skew"]["memory_ratio"], rel=1e-12)
    assert memory["note"] == ("the target is for T=2048; RSS growth, the "
                              "allocator keeps no statistics here")
    assert time["value"] == pytest.approx(rows["T=64", "skew"]["time_ratio"],
                                          rel=1e-12)
    assert local["value"] == pytest.approx(
        rows["n=512", "mhsa"]["time"]["median_ms"]
        / rows["n=512", "local"]["time"]["median_ms"], rel=1e-12)
    assert (local["relation"], local["bound"]) == (">=", 10)
    assert local["verdict"] == ("met" if local["value"] >= 10 else "NOT met")
    assert local["note"] == "the target is for n=8192"
    assert any(note.startswith("also at n=512: full/local product work ")
               for note in record["notes"])


def test_a_memory_worker_reads_the_allocator_with_onednn_on(monkeypatch):
    """One memory subprocess with TensorFlow's oneDNN kernels forced on
    (the default on AVX512 CPUs; the quick run above has them off): the
    allocator's peak, at least the (B, N, n, n) float32 attention
    weights."""
    bench = load_script("attention_scaling", monkeypatch)
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    result = bench.memory_in_subprocess("local", "mhsa", 256, None)
    assert result is not None  # the worker did not die
    assert result["rss"] > 0
    assert result["tensor"] >= 1 * 8 * 256 * 256 * 4


def test_product_flops_equal_the_closed_form_counts(monkeypatch):
    """fwd+bwd products: four projections (forward, weight gradient, input
    gradient except for the constant input's three: 9 products of
    2·B·n·D² each) plus attention (q·k and weights·v forward, two
    gradients each: 12·B·N·n·K·H for K keys per query; the block-wise
    kernel's dP - D product has one more column, 2·B·N·n·K)."""
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
        if variant == "mhsa":
            # the block-wise kernel (one block on TensorFlow) computes
            # dP - D as one product, [dO, -D] [V, 1]^T: one more column
            expected += 2 * batch * heads * n * keys[variant]
        assert bench.product_flops(step) == expected, variant
