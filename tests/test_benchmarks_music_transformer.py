"""benchmarks/music_transformer_jsb.py: a tiny run on made-up chorales
trains each variant, scores the validation chorales whole, writes the
samples (MIDI and piano roll) and checks cached against uncached
sampling."""

import gzip
import json

import numpy as np

from keras_attention.data import chorales
from tests.test_benchmarks_summary import run_benchmark


def _made_up(path, seed=0):
    """Write chorales of 12-30 steps, each voice a slow random walk."""
    rng = np.random.default_rng(seed)

    def chorale():
        pitches, steps = np.array([72, 64, 57, 48]), []
        for _ in range(int(rng.integers(12, 30))):
            move = rng.integers(-2, 3, 4) * (rng.random(4) < 0.3)
            pitches = np.clip(pitches + move, 40, 78)
            steps.append(pitches.tolist())
        return steps

    data = {"train": [chorale() for _ in range(12)],
            "valid": [chorale() for _ in range(4)]}
    path.write_bytes(gzip.compress(json.dumps(data).encode()))


def test_tiny_run_scores_every_variant_and_writes_samples(tmp_path):
    _made_up(tmp_path / "chorales.json.gz")
    output = tmp_path / "samples"
    stdout, record = run_benchmark(
        "music_transformer_jsb.py", tmp_path / "results", "--data",
        str(tmp_path / "chorales.json.gz"), "--variants",
        "absolute,relative_voices",
        "--minutes", "0.01", "--layers", "1", "--hidden", "16", "--heads",
        "2", "--ff", "32", "--bucket", "32", "--batch", "4", "--primer", "2",
        "--sample-steps", "3", "--warmup", "5", "--output-dir", str(output),
        timeout=600)
    rows = record["rows"]
    assert [row["variant"] for row in rows] == ["absolute", "relative_voices"]
    for row in rows:
        assert row["epochs"] >= 1 and row["steps"] >= 1
        # Near-uniform after a few steps: about log(49) nats per token.
        assert 0.5 < row["best_nll"] <= row["last_nll"] + 1e-9 < 6.0
        curve = record["curves"][row["variant"]]
        assert min(epoch[3] for epoch in curve) == row["best_nll"]
    assert "note-wise validation NLL" in stdout and "0.335" in stdout
    samples = record["samples"]
    assert samples["cached_equals_uncached"] is True
    for kind in ("unconditional", "continuation"):
        midi = chorales.read_midi(samples[kind] + ".mid")
        assert midi.shape[1] == 4 and len(midi) <= 3 + 2
        assert (output / (samples[kind].rsplit("/", 1)[-1] + ".png")).exists()
