"""benchmarks/attention_signature.py: the quick run times both signatures
and writes its JSON record (the machine, the two timings, their ratio)
where it is told, not over the committed results."""

import pytest

from tests.test_benchmarks_summary import check_timing
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark


@pytest.mark.parametrize("model, class_name", [
    ("transformer", "TransformerTranslator"), ("rnn", "RNNTranslator")])
def test_quick_run_writes_timings_and_ratio(tmp_path, monkeypatch, model,
                                            class_name):
    stdout, record = run_benchmark(
        "attention_signature.py", tmp_path, "--quick", "--model", model,
        timeout=300)
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
