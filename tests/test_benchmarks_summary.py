"""benchmarks/summary.py renders each benchmark's JSON file as a section of
RESULTS.md, and leaves out smoke runs (`NAME_quick.json`).

Also the helpers that the benchmark scripts' tests share: load a script
as a module, run one into a temporary results folder and read the record
it writes, check the machine record and a timing record.
"""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SYSTEMS = Path(__file__).resolve().parents[1] / "reproductions" / "systems"
MACHINE = {"cpu": "AMD EPYC", "cpu_flags": ["avx2"], "cores": 2,
           "python": "3.11.7", "keras": "3.15.1", "backend": "tensorflow",
           "device": "cpu", "tensorflow": "2.20.0"}


def script_path(name):
    """A reproduction's system (`reproductions/systems/NAME`), else a
    benchmark (`benchmarks/NAME`)."""
    system = SYSTEMS / name
    return system if system.is_file() else BENCHMARKS / name


def load_script(name, monkeypatch):
    """`benchmarks/NAME.py` or `reproductions/systems/NAME.py` as a
    module; its `import harness` finds `benchmarks/harness.py`, and a
    system its siblings, until the test ends."""
    monkeypatch.syspath_prepend(str(SYSTEMS))
    modules = {}
    for module_name in ("harness", name):
        spec = importlib.util.spec_from_file_location(
            module_name, script_path(f"{module_name}.py"))
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, module_name, module)
        spec.loader.exec_module(module)
        modules[module_name] = module
    return modules[name]


def _committed_results():
    return {path.name: path.stat().st_mtime_ns
            for path in (BENCHMARKS / "results").glob("*")}


def run_benchmark(script, results_dir, *arguments, timeout):
    """Run `SCRIPT` (`script_path`) with `arguments` and `--results-dir
    results_dir`; returns its stdout and the one JSON record it wrote
    there. benchmarks/results/ must stay as it was."""
    before = _committed_results()
    result = subprocess.run(
        [sys.executable, str(script_path(script)), *arguments,
         "--results-dir", str(results_dir)],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert _committed_results() == before
    files = sorted(Path(results_dir).glob("*.json"))
    assert len(files) == 1, files
    record = json.loads(files[0].read_text())
    assert record["benchmark"] == files[0].stem
    assert record["command"].startswith(script + " ")
    machine = record["machine"]
    for key in ("cpu", "python", "keras", "backend", "device"):
        assert isinstance(machine[key], str) and machine[key], key
    assert machine["cores"] >= 1
    assert machine["tensorflow"]  # these scripts run on TensorFlow
    return result.stdout, record


def check_timing(timing, runs):
    """A harness timing record of `runs` runs: finite, positive,
    ordered quartiles."""
    assert timing["runs"] == runs
    assert math.isfinite(timing["median_ms"]) and timing["median_ms"] > 0
    assert 0 < timing["q1_ms"] <= timing["median_ms"] <= timing["q3_ms"]


def _summary(monkeypatch):
    return load_script("summary", monkeypatch)


def _record(name, rows, **extra):
    return {"benchmark": name, "when": "2026-11-23T00:00:00+00:00",
            "command": f"{name}.py", "machine": MACHINE, "rows": rows,
            **extra}


def _timing(median, q1, q3, runs=5):
    return {"median_ms": median, "q1_ms": q1, "q3_ms": q3, "runs": runs}


def test_render_timing_pair(monkeypatch):
    record = _record("attention_signature_rnn", [{
        "name": "RNNTranslator, 64 sentences, 67 positions",
        "ours": "reuse", "reference": "second pass",
        "ours_ms": _timing(87.4, 62.0, 95.0, runs=7),
        "reference_ms": _timing(142.8, 124.0, 161.0, runs=7),
        "speedup": 142.8 / 87.4, "attention_gap": 0.0}])
    lines = _summary(monkeypatch).render(record)
    assert lines[0] == ("## attention_signature_rnn "
                        "(`results/attention_signature_rnn.json`)")
    assert "Median (IQR) of 7 interleaved runs." in lines
    # A run kept beside a newer one is named by its own file.
    kept = _summary(monkeypatch).render(record, "attention_signature_old")
    assert kept[0] == ("## attention_signature_rnn "
                       "(`results/attention_signature_old.json`)")
    assert lines[-2] == (
        "| RNNTranslator, 64 sentences, 67 positions (reuse vs second pass) "
        "| 87.40 (62.00–95.00) | 142.80 (124.00–161.00) | 1.63× |")


def test_render_scaling(monkeypatch):
    def row(variant, layer, median, time_ratio, tensor, memory_ratio,
            size="T=2048", **source):
        return {"section": "relative", "size": size, "length": 2048,
                "variant": variant, "layer": layer,
                "time": _timing(median, median - 5, median + 5),
                "time_ratio": time_ratio, "gflop": 48.32,
                "gflop_per_s": 48.32 / median * 1e3, "tensor": tensor,
                "memory_ratio": memory_ratio,
                "rss": {"median_mib": 600.0, "min_mib": 599.8,
                        "max_mib": 600.3}, "memory_runs": 3, **source}

    record = _record(
        "attention_scaling",
        [row("mhsa", "MultiHeadSelfAttention (ref)", 280.2, 1.0,
             {"median_mib": 422.0, "min_mib": 420.0, "max_mib": 500.0}, 1.0),
         row("skew", "RelativeAttention skew", 390.4, 390.4 / 280.2,
             None, None),
         # Measured where the allocator keeps no statistics (oneDNN off).
         row("skew", "RelativeAttention skew", 390.4, 1.39, None, 1.0,
             size="T=1024", memory_source="RSS")],
        targets=[{"name": "relative(skew)/MHSA time at T=2048",
                  "value": 1.39, "relation": "<=", "bound": 1.5,
                  "verdict": "met", "note": ""},
                 {"name": "full/local time at n=512", "value": 0.95,
                  "relation": ">=", "bound": 10, "verdict": "NOT met",
                  "note": "the target is for n=8192"}],
        notes=["also at T=2048: naive/skew time 2.00x"],
        parameters={"batch": 1, "heads": 8, "dim": 512, "window": 128,
                    "max_relative_position": None, "repeats": 5,
                    "memory_runs": 3})
    lines = _summary(monkeypatch).render(record)
    assert lines[6].startswith("B=1, 8 heads, D=512; relative: causal, "
                               "δ = T−1; local: window 128. Time: median "
                               "(IQR) of 5 fwd+bwd runs")
    assert ("| relative | T=2048 | MultiHeadSelfAttention (ref) "
            "| 280.20 (275.20–285.20) | 1.00 | 48.32 | 172 | 422 (420–500) "
            "| 1.00 | 600 | allocator |") in lines
    assert ("| relative | T=2048 | RelativeAttention skew "
            "| 390.40 (385.40–395.40) | 1.39 | 48.32 | 124 | — | — "
            "| 600 | allocator |") in lines
    assert ("| relative | T=1024 | RelativeAttention skew "
            "| 390.40 (385.40–395.40) | 1.39 | 48.32 | 124 | no stats "
            "| 1.00 | 600 | RSS |") in lines
    assert ("- relative(skew)/MHSA time at T=2048: 1.39× (target ≤ 1.5×): "
            "met") in lines
    assert ("- full/local time at n=512: 0.95× (target ≥ 10×; the target "
            "is for n=8192): NOT met") in lines
    assert "- also at T=2048: naive/skew time 2.00x" in lines


def test_render_serving(monkeypatch):
    rows = [{"model": "numeric", "api": api, "batching": batching,
             "concurrency": 32, "requests": requests,
             "requests_per_s": requests / 5.0, "p50_ms": p50,
             "p99_ms": 2 * p50, "errors": 0}
            for api, batching, requests, p50 in (
                ("rest", False, 6400, 23.64), ("rest", True, 13802, 11.15),
                ("grpc", False, 12800, 12.5))]
    record = _record("serving_load", rows, seconds_per_cell=5.0, models=[{
        "model": "numeric", "batching_ratio_c32": 13802 / 6400,
        "in_process_p50_ms": 0.18, "server_p50_ms": 1.19,
        "overhead_p50_ms": 1.01, "grpc_p50_ms": 0.98,
        "grpc_overhead_p50_ms": 0.8, "grpc_over_rest_c32_batching_off": 2.0,
        "grpc_over_rest_c32_batching_on": 1.5}])
    lines = _summary(monkeypatch).render(record)
    assert lines[6].startswith("Closed-loop clients in this process, the "
                               "server in another, 5.0 s per cell")
    assert "| numeric | rest | off | 32 | 1280.0 | 23.64 | 47.28 | 0 |" in lines
    assert "| numeric | rest | on | 32 | 2760.4 | 11.15 | 22.30 | 0 |" in lines
    assert "| numeric | grpc | off | 32 | 2560.0 | 12.50 | 25.00 | 0 |" in lines
    assert ("- numeric: batching gives 2.16× the throughput at concurrency "
            "32 (target ≥ 3×); server overhead at p50 1.01 ms (1.19 ms "
            "served at concurrency 1 − 0.18 ms in process; target < 5 ms)"
            ) in lines
    assert ("- numeric over gRPC: 2.00× the REST throughput at concurrency 32"
            " with batching off, 1.50× with it on (target ≥ 2× for numeric);"
            " server overhead at p50 0.80 ms (target < 1 ms for numeric)"
            ) in lines


@pytest.mark.parametrize("name", ["local_scaling", "custom"])
def test_other_records_keep_the_generic_table(monkeypatch, name):
    record = _record(name, [{"name": "x", "short_ms": 411.0,
                             "time_ratio": 8.02}])
    lines = _summary(monkeypatch).render(record)
    assert lines[-4:] == ["| name | short_ms | time_ratio |",
                          "| --- | --- | --- |", "| x | 411 | 8.02 |", ""]


def test_main_leaves_out_quick_runs(monkeypatch, tmp_path):
    summary = _summary(monkeypatch)
    results = tmp_path / "results"
    results.mkdir()
    for name in ("local_scaling", "serving_load_numeric_quick"):
        (results / f"{name}.json").write_text(json.dumps(_record(
            name, [{"name": "x", "time_ratio": 8.0}])))
    monkeypatch.setattr(summary, "RESULTS", results)
    monkeypatch.setattr(summary, "OUTPUT", tmp_path / "RESULTS.md")
    summary.main()
    text = (tmp_path / "RESULTS.md").read_text()
    assert "## local_scaling (`results/local_scaling.json`)" in text
    assert "quick" not in text


def test_render_long_attention(monkeypatch):
    rows = [{"candidate": "ours", "length": 16384, "rss_bytes": 2**30,
             "tensor_bytes": 2**29, "first_ms": 13000.0,
             **_timing(12500.0, 12500.0, 12500.0, runs=1)},
            {"candidate": "keras", "length": 16384,
             "failed": "over the 14 GiB cap", "rss_bytes": 15 * 2**30}]
    long_attention = load_script("long_attention", monkeypatch)
    timing = {"ours": _timing(2000.0, 1, 3),
              "ours dense": _timing(5000.0, 1, 3),
              "keras": _timing(9000.0, 1, 3)}
    record = _record("long_attention", rows, comparison={
        "length": 8192, "timing": timing,
        **long_attention.comparison_ratios(timing)})
    assert record["comparison"]["ours_vs_dense"] == 2.5
    lines = _summary(monkeypatch).render(record)
    assert lines[6].startswith("fwd+bwd of causal self-attention, B=1, 8 "
                               "heads of 64, D=512, float32;")
    assert "| 16,384 | ours | 12,500 | 1.00 | 0.50 |" in lines
    assert "| 16,384 | keras | over the 14 GiB cap | 15.00 | — |" in lines
    assert "Interleaved at T = 8,192, median of the runs:" in lines
    assert "| ours dense | 5,000 |" in lines
    assert "- ours / ours dense: 2.50× (target ≥ 2×)" in lines
    assert "- ours / keras: 4.50× (target ≥ 2.5×)" in lines
    record["profile"] = {"ours": long_attention.profile_summary(
        {"wall_ms": 2000.0, "op_ms": {"_MklBatchMatMulV2": 1500.0,
                                      "Mul": 500.0}})}
    assert ("Profile of one ours step (2,000 ms; TensorFlow's profiler, op "
            "time summed over its threads, 2,000 ms, of it matrix products "
            "1,500 ms, 75%): _MklBatchMatMulV2 1,500, Mul 500 ms."
            ) in _summary(monkeypatch).render(record)
