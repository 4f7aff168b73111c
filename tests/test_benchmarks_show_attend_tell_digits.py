"""reproductions/systems/show_attend_tell_digits.py: the captioner example's
figures over seeds, one row per attention, λ and seed beside the most
common training caption (no weights), the mean and spread of each, the
hard model's variance ratios, rendered into RESULTS.md; a wrong option
is one line."""

import json
import statistics
import subprocess
import sys

import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import load_script

EXACT = {("soft", 0.0): [0.85, 0.78, 0.88], ("hard", 0.0): [0.75, 0.61, 0.73]}


class _Example:
    """Stands in for the example: records its arguments and returns, as
    its `--results` file gives them, made-up scores per run and the most
    common training caption ("1 2", right for 1 of 4 test scenes)."""

    def __init__(self):
        self.calls = []

    def main(self, argv):
        self.calls.append(argv)
        seeds = [int(s) for s in argv[argv.index("--seeds") + 1].split(",")]
        attentions = argv[argv.index("--attention") + 1].split(",")
        lambdas = [float(x) for x in
                   argv[argv.index("--lambdas") + 1].split(",")]
        runs = []
        for attention in attentions:
            for penalty in lambdas:
                for seed in seeds:
                    exact = EXACT[(attention, penalty)][seed]
                    figures = {"greedy": {"exact": exact, "bleu": 90.0},
                               "beam4": {"exact": exact, "bleu": 91.0},
                               "seconds": 100.0 + seed}
                    if attention == "hard":
                        figures["greedy (argmax)"] = {"exact": 0.6,
                                                      "bleu": 80.0}
                        figures["variance"] = {
                            "before": {"mean_nll": 21.1, "baseline": 1e-5,
                                       "none": 7e-4},
                            "after": {"mean_nll": 0.9, "baseline": 1e-3,
                                      "none": 1.4e-3}}
                    runs.append({"attention": attention, "penalty": penalty,
                                 "seed": seed, **figures})
        return {"most_common_caption": {"caption": "1 2", "exact": 0.25,
                                        "bleu": 25.0},
                "runs": runs}


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("show_attend_tell_digits", monkeypatch)
    example = _Example()
    monkeypatch.setattr(module.processes, "run_example",
                        lambda name, argv: example.main(argv))
    return module, example


def read(tmp_path):
    return json.loads((tmp_path / "show_attend_tell_digits.json")
                      .read_text())


def test_rows_summary_and_the_rule_with_no_weights(script, tmp_path):
    module, example = script
    module.main(["--models", "soft:0,hard:0", "--results-dir",
                 str(tmp_path)])
    # One run of the example per attention, with that attention's lambdas.
    assert [(call[call.index("--attention") + 1],
             call[call.index("--lambdas") + 1]) for call in example.calls
            ] == [("soft", "0"), ("hard", "0")]
    for call in example.calls:
        assert call[call.index("--seeds") + 1] == "0,1,2"
        assert call[call.index("--pictures") + 1] == "0"
    record = read(tmp_path)
    rows = record["rows"]
    assert rows[0] == {"variant": "most common caption", "caption": "1 2",
                       "greedy_exact": 0.25, "greedy_bleu": 25.0,
                       "cpu": rows[0]["cpu"]}
    assert [(row["variant"], row["seed"]) for row in rows[1:]] == [
        (f"{attention}, lambda 0", seed) for attention in ("soft", "hard")
        for seed in (0, 1, 2)]
    hard = rows[4]
    assert hard["argmax_exact"] == 0.6 and "argmax_exact" not in rows[1]
    assert hard["variance_before"] == {"mean_nll": 21.1,
                                       "with_baseline": 1e-5,
                                       "without_baseline": 7e-4}
    line = record["summary"]["hard, lambda 0"]
    values = EXACT[("hard", 0.0)]
    assert line["greedy_exact_mean"] == pytest.approx(statistics.fmean(values))
    assert line["greedy_exact_std"] == pytest.approx(statistics.stdev(values))
    assert line["variance_ratio"]["before"] == pytest.approx([70.0] * 3)
    assert line["variance_ratio"]["after"] == pytest.approx([1.4] * 3)


def test_append_keeps_one_rule_row(script, tmp_path):
    module, _ = script
    module.main(["--models", "soft:0", "--results-dir", str(tmp_path)])
    module.main(["--models", "hard:0", "--append", "--results-dir",
                 str(tmp_path)])
    record = read(tmp_path)
    assert [row["variant"] for row in record["rows"]].count(
        "most common caption") == 1
    assert len(record["rows"]) == 7 and len(record["commands"]) == 2


def test_renders_into_results_md(script, tmp_path, monkeypatch):
    module, _ = script
    module.main(["--models", "soft:0,hard:0", "--results-dir",
                 str(tmp_path)])
    text = "\n".join(load_script("summary", monkeypatch).render(
        read(tmp_path)))
    assert ("| hard, lambda 0 | 3 | **69.7% ± 7.6%** | 90.0 ± 0.0 | "
            "69.7% ± 7.6% | 91.0 ± 0.0 | 60.0% ± 0.0%; 80.0 ± 0.0 | 101 |"
            ) in text
    assert "| most common caption | — | **25.0%** | 25.0 |" in text
    assert "| hard, lambda 0, 2 | 21.10 | 1.0e-05 | 7.0e-04 |" in text


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", ""], "--seeds: must be comma-separated ints >= 0, "
                      "received: ''"),
    (["--models", "both"], "--models: must be comma-separated "
                           "ATTENTION:LAMBDA (attention soft or hard, lambda "
                           ">= 0), received: 'both'"),
    (["--models", "soft:-1"], "received: 'soft:-1'"),
    (["--models", "soft:0,soft:0"], "--models: names a model twice, "
                                    "received: 'soft:0,soft:0'"),
    (["--epochs", "0"], "--epochs and --train-size must be ints >= 1, "
                        "received: 0, 8000"),
])
def test_a_wrong_option_is_one_line(arguments, message):
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "show_attend_tell_digits.py"),
         *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def _pm(line, metric):
    return (f"{100 * line[f'{metric}_mean']:.1f}% ± "
            f"{100 * line[f'{metric}_std']:.1f}")


def test_the_page_states_the_results_files_figures(monkeypatch):
    """docs/models/captioner.md renders the committed file and states
    its figures: λ 1 against 0, soft against hard, the argmax decoding,
    the rule with no weights, the variance ratios and the minutes; "on
    every seed" only where every seed says so."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = load_script("show_attend_tell_digits", monkeypatch)
    record = json.loads((BENCHMARKS / "results"
                         / "show_attend_tell_digits.json").read_text())
    text = (BENCHMARKS.parent / "docs" / "models" / "captioner.md").read_text()
    page = " ".join(text.split())
    assert "<!-- results show_attend_tell_digits -->" in text
    found = module.summary(record["rows"])
    assert found == record["summary"]
    one, zero, hard = (found["soft, lambda 1"], found["soft, lambda 0"],
                       found["hard, lambda 0"])
    assert one["seeds"] == zero["seeds"] == hard["seeds"] == [0, 1, 2]

    def exact(variant):
        return [row["greedy_exact"] for row in record["rows"]
                if row["variant"] == variant]

    assert all(a > b for a, b in zip(exact("soft, lambda 0"),
                                     exact("soft, lambda 1")))
    assert (f"With λ = 1 the greedy captions are exactly right on "
            f"{_pm(one, 'greedy_exact')} of the held-out scenes, with λ = 0 "
            f"on {_pm(zero, 'greedy_exact')}, ahead on every seed") in page
    rule = found["most common caption"]
    assert (f"exactly right on {100 * rule['greedy_exact_mean']:.1f}% of "
            f"them (BLEU {rule['greedy_bleu_mean']:.1f})") in page
    assert all(a < b for a, b in zip(exact("hard, lambda 0"),
                                     exact("soft, lambda 0")))
    gap = 100 * (zero["greedy_exact_mean"] - hard["greedy_exact_mean"])
    assert (f"Hard attention is behind soft by {gap:.1f} points** of greedy "
            f"exact match, {_pm(hard, 'greedy_exact')} against "
            f"{_pm(zero, 'greedy_exact')}, behind on every seed") in page
    assert hard["argmax_exact_mean"] < hard["greedy_exact_mean"]
    assert (f"instead of the expectation gives {_pm(hard, 'argmax_exact')},"
            f" a little worse") in page
    variances = [row for row in record["rows"] if "variance_before" in row]

    def span(values, spec):
        return f"{min(values):{spec}}–{max(values):{spec}}"

    for when, spec in (("before", ".1f"), ("after", ".1f")):
        assert (f"{span(hard['variance_ratio'][when], spec)}×") in page, when
    assert (f"(a mean NLL of "
            f"{span([r['variance_before']['mean_nll'] for r in variances], '.2f')})"
            ) in page
    assert (f"the NLL is near zero ("
            f"{span([r['variance_after']['mean_nll'] for r in variances], '.2f')})"
            ) in page
    minutes = [row["seconds"] / 60 for row in record["rows"]
               if "seconds" in row]
    assert f"a model took {span(minutes, '.1f')} minutes" in page
    # The real-digit benchmark's gap the section points to.
    real = json.loads((BENCHMARKS / "results" / "captioner_hard_soft.json")
                      .read_text())["summary"]
    behind = real["soft"]["bleu_mean"] - real["hard"]["bleu_mean"]
    assert f"hard attention comes within {behind:.2f} BLEU of soft" in page
