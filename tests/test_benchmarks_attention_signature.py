"""benchmarks/attention_signature.py: the quick run times both signatures
and writes its JSON record (the machine, the two timings, their ratio)
where it is told, not over the committed results. The Transformer's run
times a translator the suite trains for the decoding tests (`--model-dir`);
the RNN's trains its own, as the script does without one."""

import pytest

from tests.test_benchmarks_summary import check_timing
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark
from tests.trained_translators import trained_translator


@pytest.mark.parametrize("model, class_name", [
    ("transformer", "TransformerTranslator"), ("rnn", "RNNTranslator")])
def test_quick_run_writes_timings_and_ratio(tmp_path, tmp_path_factory,
                                            monkeypatch, model, class_name):
    if model == "transformer":
        source = ["--model-dir",
                  str(trained_translator(tmp_path_factory, "sinusoidal"))]
    else:
        source = ["--model", model]
    stdout, record = run_benchmark(
        "attention_signature.py", tmp_path, "--quick", *source, timeout=300)
    assert record["benchmark"] == f"attention_signature_{model}_quick"
    row, = record["rows"]
    assert row["name"].startswith(f"{class_name}, 8 sentences, ")
    assert (row["ours"], row["reference"]) == ("reuse", "second pass")
    check_timing(row["ours_ms"], runs=3)
    check_timing(row["reference_ms"], runs=3)
    assert row["speedup"] == pytest.approx(
        row["reference_ms"]["median_ms"] / row["ours_ms"]["median_ms"],
        rel=1e-12)
    assert 0 <= row["attention_gap"] < 1e-5
    assert f"reuse is {row['speedup']:.2f}x the speed" in stdout
    section = load_script("summary", monkeypatch).render(record)
    assert section[-2].startswith(f"| {row['name']} (reuse vs second pass) "
                                  f"| {row['ours_ms']['median_ms']:.2f} (")
