"""reproductions/systems/sagan_digits.py: the SAGAN example's figures over seeds,
one row per variant and seed with γ, the floor once, each variant's
mean, median and spread, the 28x28 benchmark's rank test, rendered into
RESULTS.md; a wrong option is one line."""

import json
import statistics
import subprocess
import sys

import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import load_script

PLAIN = {0: 20.0, 1: 17.0, 2: 15.0, 3: 30.0}
ATTENTION = {0: 18.0, 1: 28.0, 2: 27.0, 3: 12.0}


class _Example:
    def __init__(self):
        self.calls = []

    def main(self, argv):
        self.calls.append(argv)
        seeds = [int(s) for s in argv[argv.index("--seeds") + 1].split(",")]
        runs = []
        for seed in seeds:
            runs.append({"seed": seed, "attention": False,
                         "distance": PLAIN[seed], "seconds": 100.0})
            runs.append({"seed": seed, "attention": True,
                         "distance": ATTENTION[seed], "seconds": 160.0,
                         "gammas": {"generator": 0.1 * seed,
                                    "discriminator": -0.2}})
        return {"floor": 2.44, "classifier_accuracy": 0.983,
                "plain": [PLAIN[s] for s in seeds],
                "attention": [ATTENTION[s] for s in seeds], "runs": runs}


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("sagan_digits", monkeypatch)
    example = _Example()
    monkeypatch.setattr(module.processes, "run_example",
                        lambda name, argv: example.main(argv))
    return module, example


def read(tmp_path):
    return json.loads((tmp_path / "sagan_digits.json").read_text())


def test_rows_summary_and_verdict(script, tmp_path):
    module, example = script
    module.main(["--seeds", "0,1,2", "--steps", "50", "--results-dir",
                 str(tmp_path)])
    (call,) = example.calls
    assert call[call.index("--steps") + 1] == "50"
    record = read(tmp_path)
    rows = record["rows"]
    assert rows[0]["variant"] == "floor" and rows[0]["frechet_distance"] == 2.44
    assert [(row["variant"], row["seed"]) for row in rows[1:]] == [
        (variant, seed) for seed in (0, 1, 2)
        for variant in ("plain", "attention")]
    assert rows[2]["gamma_generator"] == 0.0 and "gamma_generator" not in rows[1]
    found = record["summary"]
    plain = [PLAIN[s] for s in (0, 1, 2)]
    assert found["plain"]["frechet_distance_mean"] == pytest.approx(
        statistics.fmean(plain))
    assert found["plain"]["frechet_distance_std"] == pytest.approx(
        statistics.stdev(plain))
    assert found["attention"]["frechet_distance_median"] == 27.0
    # Attention 18, 28, 27 against 20, 17, 15: scipy's U counts the
    # pairs where attention is higher: 2 + 3 + 3 = 8 of 9.
    assert found["verdict"]["mann_whitney_u"] == 8.0
    assert found["verdict"]["block_helps"] is False


def test_append_keeps_one_floor(script, tmp_path):
    module, _ = script
    module.main(["--seeds", "0,1", "--results-dir", str(tmp_path)])
    module.main(["--seeds", "2,3", "--append", "--results-dir",
                 str(tmp_path)])
    record = read(tmp_path)
    assert [row["variant"] for row in record["rows"]].count("floor") == 1
    assert record["summary"]["attention"]["seeds"] == 4


def test_renders_into_results_md(script, tmp_path, monkeypatch):
    module, _ = script
    module.main(["--seeds", "0,1,2", "--results-dir", str(tmp_path)])
    text = "\n".join(load_script("summary", monkeypatch).render(
        read(tmp_path)))
    assert ("| without self-attention | 3 | **17.33** | ±2.52 | 17.00 | "
            "100 |") in text
    assert "| the training digits themselves (no weights) | — | 2.44 |" in text
    assert "Mann-Whitney U = 8, one-sided p = **" in text
    assert "| 2 | 15.00 | — | — | — |" in text  # plain, seed 2
    assert "| +0.200 | -0.200 | — |" in text


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", "-1"], "--seeds: must be comma-separated ints >= 0, "
                        "received: '-1'"),
    (["--steps", "0"], "--steps must be an int >= 1, received: 0"),
])
def test_a_wrong_option_is_one_line(arguments, message):
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "sagan_digits.py"), *arguments],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_the_page_states_the_results_files_figures(monkeypatch):
    """docs/models/sagan.md renders the committed file and states its
    figures: means, spreads, medians, the rank test, the floor, γ and
    the minutes; "every seed" only if every seed says so."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("sagan_digits", monkeypatch)
    record = json.loads((BENCHMARKS / "results" / "sagan_digits.json")
                        .read_text())
    text = (BENCHMARKS.parent / "docs" / "models" / "sagan.md").read_text()
    page = " ".join(text.split())
    assert "<!-- results sagan_digits -->" in text
    found = module.summary(record["rows"])
    assert found == record["summary"]
    plain, attention, verdict = (found["plain"], found["attention"],
                                 found["verdict"])
    assert plain["seeds"] == attention["seeds"] == 3
    assert (f"{plain['frechet_distance_mean']:.2f} ± "
            f"{plain['frechet_distance_std']:.2f} without the block against "
            f"{attention['frechet_distance_mean']:.2f} ± "
            f"{attention['frechet_distance_std']:.2f} with it (medians "
            f"{plain['frechet_distance_median']:.2f} and "
            f"{attention['frechet_distance_median']:.2f}; Mann-Whitney U = "
            f"{verdict['mann_whitney_u']:g} of 9, one-sided p = "
            f"{verdict['p_value']:.3f}") in page
    by_seed = {}
    for row in record["rows"]:
        if row["variant"] != "floor":
            by_seed.setdefault(row["seed"], {})[row["variant"]] = row
    if "Every seed favours the plain GAN" in page:
        assert all(pair["plain"]["frechet_distance"]
                   < pair["attention"]["frechet_distance"]
                   for pair in by_seed.values())
    assert not verdict["block_helps"]
    assert "**At this size the block does not help.**" in page
    (floor,) = [row for row in record["rows"] if row["variant"] == "floor"]
    assert f"held-out ones, is {floor['frechet_distance']:.2f}" in page
    gammas = [by_seed[seed]["attention"]["gamma_generator"]
              for seed in sorted(by_seed)]
    assert ("γ stays small after 3,000 steps ("
            + ", ".join(f"{g:+.3f}".replace("-", "−") for g in gammas)
            + ")") in page
    sizes = [abs(by_seed[seed]["attention"]["gamma_discriminator"])
             for seed in by_seed]
    assert f"reaches {min(sizes):.2f}–{max(sizes):.2f} in size" in page
    minutes = sum(row.get("seconds", 0) for row in record["rows"]) / 60
    assert f"the six GANs took {minutes:.0f} minutes" in page
