"""reproductions/systems/recurrent_attention_digits.py: the recurrent attention
example's figures over seeds, one row per model, setting and seed beside
the most common class (no weights), the mean and spread of each model
and setting, rendered into RESULTS.md and the page; a wrong option is
one line."""

import json
import statistics
import subprocess
import sys

import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import load_script

# What the example's main returns for one seed (made up; the names are
# the example's).
MADE_UP = {0: [0.39, 0.61, 0.94], 1: [0.37, 0.58, 0.95], 2: [0.38, 0.60, 0.93]}
NAMES = ["RAM, 1 glimpse", "RAM, 4 glimpses", "CNN, 3 conv layers"]


class _Example:
    """Stands in for the example: records its arguments and returns, as
    its `--results` file gives them, the made-up figures of the seed
    asked after its rule with no weights (the most common training
    class, right on 2 of 5 test canvases)."""

    def __init__(self):
        self.calls = []

    def main(self, argv):
        self.calls.append(argv)
        seed = int(argv[argv.index("--seed") + 1])
        results = {"most common training class": {
            "accuracy": 0.4, "parameters": 0, "seconds": 0.0}}
        results.update({name: {"accuracy": accuracy,
                               "parameters": 63_629 + i,
                               "seconds": 10.0 * (i + 1)}
                        for i, (name, accuracy) in enumerate(zip(
                            NAMES, MADE_UP[seed]))})
        return results


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("recurrent_attention_digits", monkeypatch)
    example = _Example()
    monkeypatch.setattr(module.processes, "run_example",
                        lambda name, argv: example.main(argv))
    return module, example


def read(tmp_path, name="recurrent_attention_digits"):
    return json.loads((tmp_path / f"{name}.json").read_text())


def test_rows_and_summary(script, tmp_path):
    module, example = script
    module.main(["--seeds", "0,1,2", "--location-std", "0.3",
                 "--results-dir", str(tmp_path)])
    # The example ran once per seed with the settings asked, quietly.
    assert [call[call.index("--seed") + 1] for call in example.calls] == [
        "0", "1", "2"]
    for call in example.calls:
        assert call[call.index("--location-std") + 1] == "0.3"
        assert call[call.index("--pictures") + 1] == "0"
    rows = read(tmp_path)["rows"]
    assert [(row["variant"], row["seed"]) for row in rows] == [
        (variant, seed) for seed in (0, 1, 2)
        for variant in ("majority", "ram1", "ram4", "cnn")]
    assert all(row["location_std"] == 0.3 and row["epochs"] == 15
               and row["cpu"] for row in rows)
    # The most common training class (3) names 2 of the 5 test canvases.
    assert rows[0]["test_accuracy"] == 0.4 and "parameters" not in rows[0]
    assert rows[2]["parameters"] == 63_630 and rows[2]["seconds"] == 20.0
    found = read(tmp_path)["summary"]
    line = found["ram4, sigma 0.3, lr 0.001, 15 epochs"]
    values = [MADE_UP[seed][1] for seed in (0, 1, 2)]
    assert line["test_accuracy"] == values and line["seeds"] == [0, 1, 2]
    assert line["test_accuracy_mean"] == pytest.approx(
        statistics.fmean(values))
    assert line["test_accuracy_std"] == pytest.approx(statistics.stdev(values))
    assert line["label"] == "RAM, 4 glimpses" and line["seconds_mean"] == 20.0


def test_a_setting_appended_sits_beside_the_first(script, tmp_path):
    module, _ = script
    module.main(["--seeds", "0", "--results-dir", str(tmp_path)])
    module.main(["--seeds", "0,1", "--location-std", "0.1", "--append",
                 "--results-dir", str(tmp_path)])
    record = read(tmp_path)
    assert len(record["rows"]) == 4 + 8 and len(record["commands"]) == 2
    found = record["summary"]
    assert found["ram4, sigma 0.2, lr 0.001, 15 epochs"]["seeds"] == [0]
    assert found["ram4, sigma 0.1, lr 0.001, 15 epochs"]["seeds"] == [0, 1]


def test_renders_into_results_md(script, tmp_path, monkeypatch):
    module, _ = script
    module.main(["--seeds", "0,1,2", "--results-dir", str(tmp_path)])
    text = "\n".join(load_script("summary", monkeypatch).render(
        read(tmp_path)))
    assert ("| RAM, 4 glimpses (`ram4`) | 0.2 | 0.001 | 15 | 3 | **59.7%** "
            "| ±1.5% | 61.0%, 58.0%, 60.0% | 20 |") in text
    assert "| `ram4` | 0 | 0.2 | 0.001 | 15 | 61.0% | 63,630 |" in text
    assert ("| the most common training class (no weights) (`majority`) "
            "| 0.2 | 0.001 | 15 | 3 | **40.0%** | ±0.0% |") in text


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", "1,x"], "--seeds: must be comma-separated ints >= 0, "
                         "received: '1,x'"),
    (["--location-std", "0"], "--location-std must be > 0, received: 0.0"),
    (["--glimpses", "2,0"], "--glimpses must be comma-separated ints >= 1, "
                            "received: '2,0'"),
])
def test_a_wrong_option_is_one_line(arguments, message):
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "recurrent_attention_digits.py"),
         *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def _points(line):
    return (f"{100 * line['test_accuracy_mean']:.1f}% ± "
            f"{100 * line['test_accuracy_std']:.1f}")


def test_the_page_states_the_results_files_figures(monkeypatch):
    """docs/models/recurrent_attention.md renders both committed files
    and states their figures: each model's mean and spread, the seeds
    where 6 glimpses beat 4, the CNN's lead, the minutes a seed, and the
    trials' gaps to σ 0.2 against the larger spread."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("recurrent_attention_digits", monkeypatch)
    results = BENCHMARKS / "results"
    main = json.loads((results / "recurrent_attention_digits.json")
                      .read_text())
    trials = json.loads((results / "recurrent_attention_digits_trials.json")
                        .read_text())
    text = (BENCHMARKS.parent / "docs" / "models"
            / "recurrent_attention.md").read_text()
    page = " ".join(text.split())
    for name, record in (("recurrent_attention_digits", main),
                         ("recurrent_attention_digits_trials", trials)):
        assert f"<!-- results {name} -->" in text
        assert module.summary(record["rows"]) == record["summary"]
    found = {line["variant"]: line for line in main["summary"].values()}
    assert sorted(found) == ["cnn", "majority", "ram1", "ram2", "ram4",
                             "ram6", "told"]
    assert all(len(line["seeds"]) == 3 for line in found.values())
    assert (f"One fixed look at the centre reads {_points(found['ram1'])} "
            f"of the held-out canvases, 2 glimpses {_points(found['ram2'])},"
            f" 4 glimpses {_points(found['ram4'])} and 6 glimpses "
            f"{_points(found['ram6'])}") in page
    wins = sum(six > four for six, four in zip(
        found["ram6"]["test_accuracy"], found["ram4"]["test_accuracy"]))
    assert f"(6 beat 4 in {wins} seed{'s' * (wins != 1)} of 3)" in page
    assert (f"most common training class reads "
            f"{100 * found['majority']['test_accuracy_mean']:.1f}%") in page
    lead = 100 * (found["cnn"]["test_accuracy_mean"]
                  - found["ram6"]["test_accuracy_mean"])
    assert (f"The CNN of its size reads {_points(found['cnn'])}, "
            f"{lead:.1f} points above 6 glimpses") in page
    assert f"given one glimpse at the digit's true place, read " \
           f"{_points(found['told'])}" in page
    minutes = {}
    for row in main["rows"]:
        minutes[row["seed"]] = minutes.get(row["seed"], 0) + row.get(
            "seconds", 0) / 60
    assert (f"a seed's six models took {min(minutes.values()):.1f}–"
            f"{max(minutes.values()):.1f} minutes") in page
    # The trials' sigma 0.2 runs are the table's 4-glimpse runs, to the
    # digit: the same seeds give the same model.
    same = [row["test_accuracy"] for row in trials["rows"]
            if row["variant"] == "ram4" and row["location_std"] == 0.2
            and row["learning_rate"] == 0.001]
    assert same == found["ram4"]["test_accuracy"]
    lines = {(line["location_std"], line["learning_rate"]): line
             for line in trials["summary"].values()
             if line["variant"] == "ram4"}
    best = lines[(0.2, 0.001)]
    assert max(lines.values(), key=lambda line: line[
        "test_accuracy_mean"]) is best
    assert f"**σ 0.2 reads best**, {_points(best)}" in page
    for key, name in (((0.1, 0.001), "σ 0.1"), ((0.3, 0.001), "σ 0.3"),
                      ((0.2, 0.002), "Adam 2·10⁻³")):
        other = lines[key]
        gap = 100 * (best["test_accuracy_mean"] - other["test_accuracy_mean"])
        spread = 100 * max(best["test_accuracy_std"],
                           other["test_accuracy_std"])
        where = "beyond" if gap > spread else "within"
        assert f"{name} reads {_points(other)}" in page or (
            f"{name} {_points(other)}" in page), name
        assert f"({gap:.1f} points lower, {where} the larger spread)" in page \
            or f"({gap:.1f} lower, {where} it)" in page, name


def test_the_example_itself_through_the_system(tmp_path):
    """The system runs the real example as a command and keeps what its
    `--results` file gives, the rule with no weights first."""
    done = subprocess.run(
        [sys.executable, str(SYSTEMS / "recurrent_attention_digits.py"),
         "--seeds", "0", "--train-size", "64", "--epochs", "1",
         "--glimpses", "1", "--no-cnn", "--oracle", "0", "--results-dir",
         str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "most common training class" in done.stdout
    majority, ram = read(tmp_path)["rows"]
    assert (majority["variant"], ram["variant"]) == ("majority", "ram1")
    assert "parameters" not in majority and ram["parameters"] > 0
    assert 0.0 < majority["test_accuracy"] < 0.5
    assert ram["epochs"] == 1 and ram["location_std"] == 0.2
