"""examples/bert_pretraining.py runs end to end on a tiny configuration:
pretraining, both fine-tuning runs and the names' picture (the export it can end with is
tested in tests/export/test_bert_classifier_export.py)."""

from tests.test_examples import load


def test_bert_pretraining_runs(capsys, tmp_path):
    plot = tmp_path / "names.png"
    results = load("bert_pretraining").main([
        "--documents", "300", "--held-out-documents", "20",
        "--pretrain-steps", "8", "--batch-size", "16",
        "--hidden-dim", "16", "--intermediate-dim", "32",
        "--num-heads", "2", "--num-layers", "1",
        "--finetune-examples", "32", "--test-examples", "40",
        "--finetune-epochs", "1", "--plot", str(plot),
    ])
    assert set(results) == {"mlm_accuracy", "nsp_accuracy",
                            "pretrained_accuracy", "scratch_accuracy",
                            "seconds"}
    for key, value in results.items():
        if key != "seconds":
            assert 0.0 <= value <= 1.0, (key, value)
    out = capsys.readouterr().out
    assert "MLM accuracy" in out and "from a fresh encoder" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"drawn in {plot}" in out
