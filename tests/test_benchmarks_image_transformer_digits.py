"""reproductions/systems/image_transformer_digits.py: the Image Transformer
example's figures over seeds, one row per model and seed, the mean and
spread of each model, local against full judged by the 28x28
benchmark's rule, rendered into RESULTS.md and the page; a wrong option
is one line."""

import json
import statistics
import subprocess
import sys

import pytest

from reproductions import common
from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import load_script

# What the example's main returns for one seed (made up; the keys are
# the example's).
MADE_UP = {
    0: {"independent": 2.366, "full": 1.848, "local": 1.879},
    1: {"independent": 2.366, "full": 1.852, "local": 1.860},
    2: {"independent": 2.366, "full": 1.844, "local": 1.890},
}


class _Example:
    """Stands in for the example: records its arguments, returns the
    made-up figures of the seed asked."""

    def __init__(self):
        self.calls = []

    def main(self, argv):
        self.calls.append(argv)
        seed = int(argv[argv.index("--seed") + 1])
        results = {"seconds": 10.0}
        for name, bits in MADE_UP[seed].items():
            results[f"{name}_bits_per_dim"] = bits
            if name != "independent":
                results.update({
                    f"{name}_train_bits_per_dim": bits - 0.2,
                    f"{name}_seconds": 100.0 + seed,
                    f"{name}_parameters": 68_000,
                    f"{name}_cached_equals_uncached": True})
        return results


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(SYSTEMS))  # its sibling import
    module = load_script("image_transformer_digits", monkeypatch)
    example = _Example()
    monkeypatch.setattr(module.processes, "run_example",
                        lambda name, argv: example.main(argv))
    return module, example


def test_rows_summary_and_verdict(script, tmp_path):
    module, example = script
    module.main(["--seeds", "0,1,2", "--epochs", "3",
                 "--results-dir", str(tmp_path)])
    # The example ran once per seed, at the epochs asked.
    assert [call[call.index("--seed") + 1] for call in example.calls] == [
        "0", "1", "2"]
    assert all(call[call.index("--epochs") + 1] == "3"
               for call in example.calls)
    record = json.loads((tmp_path / "image_transformer_digits.json")
                        .read_text())
    rows = record["rows"]
    assert [(row["variant"], row["seed"]) for row in rows] == [
        (variant, seed) for seed in (0, 1, 2)
        for variant in ("independent", "full", "local_2d")]
    assert all(row["cpu"] for row in rows)
    assert "train_seconds" not in rows[0]  # no weights, no training
    assert rows[1]["epochs"] == 3 and rows[1]["train_seconds"] == 100.0
    summary = record["summary"]
    local = [MADE_UP[seed]["local"] for seed in (0, 1, 2)]
    full = [MADE_UP[seed]["full"] for seed in (0, 1, 2)]
    assert summary["local_2d"]["test_bits_per_dim_mean"] == pytest.approx(
        statistics.fmean(local))
    assert summary["local_2d"]["test_bits_per_dim_std"] == pytest.approx(
        statistics.stdev(local))
    assert summary["independent"]["test_bits_per_dim_std"] == 0.0
    # full 1.848 against local 1.8763: 0.028 apart, local's spread 0.015:
    # full is ahead beyond it.
    difference = statistics.fmean(full) - statistics.fmean(local)
    assert record["comparison"] == {
        "difference": round(difference, 3),
        "spread": round(statistics.stdev(local), 3),
        "outcome": "full lower"}


def test_append_adds_to_the_files_rows(script, tmp_path):
    module, _ = script
    module.main(["--seeds", "0", "--results-dir", str(tmp_path)])
    module.main(["--seeds", "1", "--append", "--results-dir",
                 str(tmp_path)])
    record = json.loads((tmp_path / "image_transformer_digits.json")
                        .read_text())
    assert [row["seed"] for row in record["rows"]] == [0] * 3 + [1] * 3
    assert len(record["commands"]) == 2
    assert record["summary"]["full"]["seeds"] == 2


def test_renders_into_results_md(script, tmp_path, monkeypatch):
    module, _ = script
    module.main(["--seeds", "0,1,2", "--results-dir", str(tmp_path)])
    record = json.loads((tmp_path / "image_transformer_digits.json")
                        .read_text())
    text = "\n".join(load_script("summary", monkeypatch).render(record))
    mean = record["summary"]["full"]["test_bits_per_dim_mean"]
    assert f"| full causal attention (`full`) | 3 | **{mean:.3f}** |" in text
    assert "full attention lower beyond the spread." in text
    assert "| `independent` | 0 | 2.366 | — | — | — | — |" in text


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", "a"], "--seeds: must be comma-separated ints >= 0, "
                       "received: 'a'"),
    (["--epochs", "0"], "--epochs must be an int >= 1, received: 0"),
    (["--train-size", "2000"], "--train-size must be in 1..1500, "
                               "received: 2000"),
])
def test_a_wrong_option_is_one_line(arguments, message):
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "image_transformer_digits.py"),
         *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_the_page_states_the_results_files_figures(monkeypatch):
    """docs/models/image-transformer.md renders the committed file and
    states its figures: each model's mean and spread, local against full
    as `comparison` judges it, and the minutes of training."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("image_transformer_digits", monkeypatch)
    record = json.loads((BENCHMARKS / "results"
                         / "image_transformer_digits.json").read_text())
    text = (BENCHMARKS.parent / "docs" / "models"
            / "image-transformer.md").read_text()
    assert "<!-- results image_transformer_digits -->" in text
    page = " ".join(text.split())
    found = module.summary(record["rows"])
    assert found == record["summary"]
    assert len(record["rows"]) == 9  # three models, three seeds
    for variant, line in found.items():
        figure = f"{line['test_bits_per_dim_mean']:.3f}"
        if variant != "independent":
            figure += f" ± {line['test_bits_per_dim_std']:.3f}"
        assert figure in page, (variant, figure)
    judged = common.local_against_full(found, "test_bits_per_dim",
                                     digits=3)
    assert judged == record["comparison"]
    assert {"tie": "**A tie", "local lower": "**Local attention lower",
            "full lower": "**Full attention lower"}[judged["outcome"]] in page
    assert f"{judged['difference']:+.3f} bits/dim" in page
    assert all(row["cached_equals_uncached"] for row in record["rows"]
               if "cached_equals_uncached" in row)
    seconds = {variant: [row["train_seconds"] for row in record["rows"]
                         if row["variant"] == variant]
               for variant in ("local_2d", "full")}
    assert (f"{min(seconds['local_2d']):.0f}–{max(seconds['local_2d']):.0f}"
            f" s a run against {min(seconds['full']):.0f}–"
            f"{max(seconds['full']):.0f} s for full attention") in page
