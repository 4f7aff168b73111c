"""reproductions/systems/captioner_hard_soft.py: a tiny run on made-up digits trains a
soft and a hard captioner, selects each on validation BLEU, tests once
with greedy and beam search (and the hard model's argmax location),
prints the rule with no weights beside them, measures the estimator's
variance, writes the paper's rows and the claim; the scorer counts digits
at their place; mistakes are one line."""

import json
import subprocess
import sys

import numpy as np
import pytest

from keras_attention.data import mnist
from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark


@pytest.fixture
def digits(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "mnist10k.npz"
    np.savez(path, x=rng.integers(0, 256, (90, 28, 28)).astype("uint8"),
             y=(np.arange(90) % 10).astype("uint8"))
    return path


def test_scores_count_digits_at_their_place(monkeypatch):
    script = load_script("captioner_hard_soft", monkeypatch)
    scenes = mnist.Scenes(np.zeros((2, 4, 4)), [
        "a one left of a two left of a three",
        "an eight left of a zero left of a nine"],
        np.array([[1, 2, 3], [8, 0, 9]]), np.zeros((2, 3, 4)))
    found = script.scores(["a one left of a two left of a three",
                           "an eight left of a nine"], scenes)
    assert found["exact"] == 0.5
    assert found["digits"] == pytest.approx(4 / 6)  # 8 and 9 misplaced: 1
    assert 0 < found["bleu"] < 100
    rule = script.frequent_digits_rule(scenes, scenes)
    assert rule["caption"] == "a one left of a zero left of a three"
    assert rule["digits"] == pytest.approx(3 / 6)


def test_coordinates_are_two_more_channels(monkeypatch):
    script = load_script("captioner_hard_soft", monkeypatch)
    images = np.random.default_rng(0).random((2, 3, 5)).astype("float32")
    found = script.pixels(images, 1)
    assert found.shape == (2, 3, 5, 3)
    np.testing.assert_array_equal(found[..., 0], images)
    np.testing.assert_allclose(found[1, :, 0, 1], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(found[0, 2, :, 2], [0, 0.25, 0.5, 0.75, 1])
    assert script.pixels(images, 0) is images


def test_tiny_run_writes_rows_summary_and_claims(tmp_path, digits,
                                                 monkeypatch):
    stdout, record = run_benchmark(
        "captioner_hard_soft.py", tmp_path / "results", "--data",
        str(digits), "--epochs", "2", "--scenes", "96",
        "--validation-scenes", "20", "--test-scenes", "30", "--validation",
        "20", "--test", "20", "--batch-size", "32", "--variance-draws", "2",
        "--verbose", "0", "--seeds", "0", "--off-scoreboard",
        "a smoke run", timeout=600)
    rows = record["rows"]
    assert record["off_scoreboard"] == "a smoke run"
    assert [(row["variant"], row["seed"]) for row in rows] == [
        ("soft", 0), ("hard", 0)]
    for row in rows:
        assert row["epochs"] == 2 and len(row["validation_curve"]) == 2
        assert row["late_gain"] is None  # two epochs: no five before
        assert row["validation_bleu"] == pytest.approx(
            max(row["validation_curve"]), abs=0.01)
        assert row["test_bleu"] == row["beam3"]["bleu"]
        # The best epoch's share of validation digits, and the setting
        # each row ran at (an --append of another setting keeps both).
        assert 0 <= row["validation_digits"] <= 1
        assert row["setting"] == {"filters": [16, 32, 32], "coordinates": 1,
                                  "pretrain_epochs": 3,
                                  "reinforce_weight": 0.1}
        for key in ("greedy", "beam3"):
            assert 0 <= row[key]["exact"] <= 1
            assert 0 <= row[key]["digits"] <= 1
        assert row["scenes_per_second"] > 0 and row["cpu"]
    soft, hard = rows
    assert "greedy_argmax" in hard and "greedy_argmax" not in soft
    for when in ("before", "after"):
        figures = hard["variance"][when]
        assert figures["none"] > 0 and figures["baseline"] > 0
    summary = record["summary"]
    assert summary["soft"]["bleu_mean"] == pytest.approx(soft["test_bleu"])
    assert summary["hard"]["paper_bleu4"] == 21.3
    assert record["baselines"]["frequent_digits"]["digits"] < 0.5
    assert "no weights" in stdout
    from reproductions import claims
    from reproductions import scoreboard

    assert "claims" not in record  # judged from the rows, one comparator
    [claim] = scoreboard.judged_claims(record)
    assert claim["theirs"] == "21.3 against 19.5"
    assert claim["reproduced"] == claims.ordering_verdict(
        [hard["test_bleu"] - soft["test_bleu"]], [0.0], 1)
    # The sizes recorded are the run's: --filters' default, 16,32,32.
    assert record["sizes"]["filters"] == [16, 32, 32]
    assert record["data"]["digits"] == {"test": 20, "validation": 20,
                                        "train": 50}
    page = "\n".join(load_script("summary", monkeypatch).render(record))
    assert "| soft attention (`soft`) | 1 | **" in page
    assert "no weights" in page and "| 21.3 |" in page


def test_late_gain_says_whether_validation_still_rose(monkeypatch):
    """The last five epochs' best less the best before them: positive
    while a run still improves, <= 0 once it has stopped."""
    late_gain = load_script("captioner_hard_soft", monkeypatch).late_gain
    assert late_gain([50, 60, 70, 80, 90, 91, 92, 93]) == 23  # 93 - 70
    assert late_gain([90, 96, 95.5, 95.8, 95.9, 96.0, 95.7]) == 0.0
    assert late_gain([90, 97, 96, 96.5, 96.2, 96.4, 96.9]) == -0.1
    assert late_gain([1, 2, 3, 4, 5]) is None  # no epoch before the five


def test_the_verdict_is_the_reproductions_pages():
    """Yes: hard ahead of soft by more than the seeds' spread; partly:
    ahead within it (the paper's ordering); no: behind, by any margin."""
    from reproductions.claims import ordering_verdict

    assert ordering_verdict([0.5], [0.2], 3) == "yes"
    assert ordering_verdict([0.1], [0.2], 3) == "partly"
    assert ordering_verdict([-0.86], [0.18], 3) == "no"  # 15 epochs: behind
    assert ordering_verdict([0.0], [0.0], 3) == "no"


@pytest.mark.parametrize("arguments, message", [
    (["--epochs", "0"], "--epochs must be positive, received: 0"),
    (["--variants", "firm"], "--variants must name some of soft, hard"),
    (["--objects", "4"], "--objects must be at most 3"),
    (["--variance-draws", "1"], "--variance-draws must be 0 or at least 2"),
    (["--data", "/nowhere/mnist.npz"], "/nowhere"),
])
def test_mistakes_are_one_line(arguments, message):
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "captioner_hard_soft.py"),
         *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_the_pages_figures_are_the_results_files(monkeypatch):
    """docs/models/captioner.md states the committed run's figures: each
    variant's mean and spread, the verdict of its claim, how much the last
    epochs still added, and the epochs it trained; then the 15-epoch run's
    (kept as captioner_hard_soft_15_epochs.json, its table rendered under
    the page's marker) and what doubling the epochs changed. The README
    states the committed run's means, the rule with no weights, the
    paper's figures and the command."""
    def load(name):
        return json.loads((BENCHMARKS / "results" / f"{name}.json"
                           ).read_text())

    record = load("captioner_hard_soft")
    page = " ".join((BENCHMARKS.parent / "docs" / "models" / "captioner.md"
                     ).read_text().split())
    readme = " ".join((BENCHMARKS.parent / "README.md").read_text().split())
    soft, hard = record["summary"]["soft"], record["summary"]["hard"]
    from reproductions import scoreboard

    (claim,) = scoreboard.judged_claims(record)
    assert (f"{hard['bleu_mean']:.2f} ± {hard['bleu_std']:.2f} for hard "
            f"attention and {soft['bleu_mean']:.2f} ± {soft['bleu_std']:.2f} "
            "for soft") in page
    assert f"**Hard ahead of soft: {claim['reproduced']}.**" in page
    assert (f"by at most {soft['late_gain_max']:.2f} (soft) and "
            f"{hard['late_gain_max']:.2f} (hard)") in page
    epochs = {row["epochs"] for row in record["rows"]}
    assert len(epochs) == 1 and epochs.pop() >= 25
    assert f"--epochs {record['rows'][0]['epochs']}" in page
    assert record["settings"]["variants"] == "soft,hard"
    assert record["settings"]["seeds"] == "0,1,2"

    # The README's line: hard's mean in bold, soft's, the rule with no
    # weights, the paper's ordering, the seeds, epochs and command.
    seeds = sorted({row["seed"] for row in record["rows"]})
    rule = record["baselines"]["frequent_digits"]
    assert seeds == [0, 1, 2]  # "three seeds"
    assert (f"**{hard['bleu_mean']:.2f}** BLEU-4 against soft attention's "
            f"{soft['bleu_mean']:.2f} (three seeds, "
            f"{record['rows'][0]['epochs']} epochs; no weights: "
            f"{rule['bleu']:.2f}; the paper has hard ahead, "
            f"{hard['paper_bleu4']} against {soft['paper_bleu4']};") in readme
    # Its command: the setting's, of these seeds and epochs.
    from reproductions import runner

    setting = runner.load("captioner_hard_soft")
    assert setting["seeds"]["seeds"] == seeds
    assert setting["stopping"]["epochs"] == record["rows"][0]["epochs"]
    assert "`python -m reproductions run captioner_hard_soft`" in readme

    # The 15-epoch run, kept beside it: its figures, what twice the epochs
    # gained, and its table under the page's marker.
    early = load("captioner_hard_soft_15_epochs")
    assert early["benchmark"] == "captioner_hard_soft"
    assert {row["epochs"] for row in early["rows"]} == {15}
    assert record["rows"][0]["epochs"] == 2 * 15  # "twice as long"
    assert early["machine"]["cpu"].startswith("AMD EPYC")
    soft15, hard15 = early["summary"]["soft"], early["summary"]["hard"]
    assert (f"15-epoch runs on an AMD EPYC: {hard15['bleu_mean']:.2f} ± "
            f"{hard15['bleu_std']:.2f} against {soft15['bleu_mean']:.2f} ± "
            f"{soft15['bleu_std']:.2f})") in page
    gap15 = soft15["bleu_mean"] - hard15["bleu_mean"]
    gap = soft["bleu_mean"] - hard["bleu_mean"]
    assert 0 < gap < 0.5  # "within half a BLEU", behind
    assert f"where 15 epochs left it {gap15:.2f} behind" in page
    gained = {variant: record["summary"][variant]["bleu_mean"]
              - early["summary"][variant]["bleu_mean"]
              for variant in ("hard", "soft")}
    assert (f"hard attention gained {gained['hard']:.2f} BLEU and soft "
            f"{gained['soft']:.2f}") in page
    assert (f"the gap closed from {gap15:.2f} to {gap:.2f}, still behind on "
            "every seed") in page
    for rows in (record["rows"], early["rows"]):
        bleu = {(row["variant"], row["seed"]): row["test_bleu"]
                for row in rows}
        assert all(bleu["hard", seed] < bleu["soft", seed] for seed in seeds)
    assert "<!-- results captioner_hard_soft_15_epochs -->" in page
    section = load_script("summary", monkeypatch).render(
        early, "captioner_hard_soft_15_epochs")
    assert section[0] == ("## captioner_hard_soft "
                          "(`results/captioner_hard_soft_15_epochs.json`)")
    assert (f"**{hard15['bleu_mean']:.2f} ± {hard15['bleu_std']:.2f}**"
            in "\n".join(section))


def test_the_30_epoch_sections_figures_are_its_results_file(monkeypatch):
    """Every figure the page states under `<!-- results
    captioner_hard_soft -->` (and in the paragraph introducing those rows)
    that the 30-epoch results file holds, formatted from it: the epochs
    and best epochs, the means, the gap and the seed-by-seed BLEU, the
    digits named, the rule with no weights, the argmax location's greedy
    BLEU, the estimator's variance ratios, the speed and minutes, and the
    validation curves. The `--speed` comparison of the backends is not in
    the file, nor are the exploratory runs above it."""
    record = json.loads((BENCHMARKS / "results" / "captioner_hard_soft.json"
                         ).read_text())
    page = " ".join((BENCHMARKS.parent / "docs" / "models" / "captioner.md"
                     ).read_text().split())
    script = load_script("captioner_hard_soft", monkeypatch)
    words = {2: "two", 3: "three", 6: "six", 30: "Thirty"}

    def span(values, form):
        return f"{min(values):{form}}–{max(values):{form}}"

    rows = sorted(record["rows"], key=lambda row: row["seed"])
    runs = {variant: [row for row in rows if row["variant"] == variant]
            for variant in ("soft", "hard")}
    seeds = [row["seed"] for row in runs["hard"]]
    assert seeds == [row["seed"] for row in runs["soft"]] == [0, 1, 2]
    # The file's summary is the benchmark's over its rows.
    assert script.summary(record["rows"],
                          record["settings"]["beam_size"]) == record["summary"]
    soft, hard = record["summary"]["soft"], record["summary"]["hard"]
    settings, machine = record["settings"], record["machine"]

    # The paragraph introducing the rows: the six runs one at a time, the
    # machine, the epochs and `late_gain`'s window.
    (epochs,) = {row["epochs"] for row in rows}
    assert settings["parallel"] == 1  # one after another, on one core
    assert machine["cpu"].startswith("Intel(R) Xeon(R)")
    assert {"avx512_bf16", "amx_bf16"} <= set(machine["cpu_flags"])
    tensorflow = ".".join(machine["tensorflow"].split(".")[:2])
    assert (f"the {words[len(rows)]} runs one after another on one core of an "
            f"Intel Xeon (AVX512-BF16, AMX), {machine['cores']} cores "
            f"(`lscpu`), TensorFlow {tensorflow},") in page
    assert (f"{words[epochs]} epochs, twice the earlier runs'" in page
            and f"decays to zero over {epochs}," in page)
    assert f"what its last {script.LATE_EPOCHS} epochs added" in page

    # Trained until validation stopped rising.
    for row in rows:
        assert row["late_gain"] == script.late_gain(row["validation_curve"])
        assert row["best_epoch"] == 1 + row["validation_curve"].index(
            max(row["validation_curve"]))
    best = {variant: ", ".join(str(row["best_epoch"]) for row in runs[variant])
            for variant in runs}
    assert (f"Trained until validation stopped rising:** {epochs} epochs "
            f"each, the learning rate decayed to zero over them (cosine); the "
            f"last {script.LATE_EPOCHS} epochs raised the best validation "
            f"BLEU by at most {soft['late_gain_max']:.2f} (soft) and "
            f"{hard['late_gain_max']:.2f} (hard) over the best before them "
            f"(`late_gain`); best epochs {best['soft']} (soft) and "
            f"{best['hard']} (hard).") in page

    # Hard against soft: means, the gap, seed by seed, the paper's, digits.
    gap = hard["bleu_mean"] - soft["bleu_mean"]
    from reproductions import claims
    from reproductions import scoreboard

    (claim,) = scoreboard.judged_claims(record)
    assert claim["reproduced"] == claims.ordering_verdict(
        [gap], [max(soft["bleu_std"], hard["bleu_std"])], hard["seeds"])
    by_seed = ", ".join(
        f"{h['test_bleu']:.2f} against {s['test_bleu']:.2f}"
        for h, s in zip(runs["hard"], runs["soft"]))
    assert (f"**Hard ahead of soft: {claim['reproduced']}.** Over "
            f"{words[hard['seeds']]} seeds, test BLEU-4 (beam "
            f"{settings['beam_size']}) is {hard['bleu_mean']:.2f} ± "
            f"{hard['bleu_std']:.2f} for hard attention and "
            f"{soft['bleu_mean']:.2f} ± {soft['bleu_std']:.2f} for soft "
            f"({gap:.2f}); seed by seed {by_seed}. Xu et al. have hard ahead "
            f"on Flickr8k (BLEU-4 {hard['paper_bleu4']} against "
            f"{soft['paper_bleu4']}). Digits named at their place: "
            f"{hard['digits_mean']:.1f}% (hard) against "
            f"{soft['digits_mean']:.1f}% (soft).") in page

    # The rule with no weights.
    rule = record["baselines"]["frequent_digits"]
    assert (f"scores {rule['bleu']:.2f} and names {rule['digits']:.1%} of "
            "the digits.") in page

    # The hard model decoding its most likely location.
    argmax = [row["greedy_argmax"]["bleu"] for row in runs["hard"]]
    expected = [row["greedy"]["bleu"] for row in runs["hard"]]
    assert (f"greedy BLEU {span(argmax, '.2f')} against "
            f"{span(expected, '.2f')} with the expectation.") in page

    # The baseline's effect on the REINFORCE gradient's variance.
    ratio = {when: [row["variance"][when]["none"]
                    / row["variance"][when]["baseline"]
                    for row in runs["hard"]] for when in ("before", "after")}
    assert (f"({settings['variance_draws']} draws on 64 training scenes, "
            "fixed weights): before training the variance of the REINFORCE "
            f"gradient is {span(ratio['before'], '.0f')}× larger without the "
            f"baseline; after training, {span(ratio['after'], '.1f')}×."
            ) in page

    # Speed and minutes of training.
    assert machine["backend"] == "tensorflow"
    assert (f"**Speed.** {span([r['scenes_per_second'] for r in rows], '.0f')}"
            " scenes per second per model on one core (TensorFlow); each run "
            f"took {span([r['train_seconds'] / 60 for r in rows], '.1f')} "
            "minutes of training.") in page

    # The validation curves: the epoch each passes 90 BLEU, on every seed;
    # hard's seed 0 until then.
    passes = {variant: {next(epoch for epoch, bleu in enumerate(
        row["validation_curve"], 1) if bleu > 90) for row in runs[variant]}
        for variant in runs}
    (soft_passes,), (hard_passes,) = passes["soft"], passes["hard"]
    seed0 = ", ".join(f"{bleu:.1f}" for bleu in
                      runs["hard"][0]["validation_curve"][:hard_passes])
    assert (f"Soft attention passes 90 validation BLEU after {soft_passes} "
            f"epochs on every seed; hard attention after {hard_passes} "
            f"({seed0} for seed {runs['hard'][0]['seed']}).") in page


def test_runs_at_different_settings_render_one_line_each(monkeypatch):
    """The file of the choices (rows at different settings,
    `captioner_hard_soft_choices`) renders each run beside its setting,
    not a mean over settings."""
    def row(variant, filters, coordinates, pretrain, digits, pretrained):
        return {"variant": variant, "seed": 0, "epochs": 9, "best_epoch": 9,
                "validation_bleu": 70.0, "validation_digits": digits,
                "pretrained_accuracy": pretrained, "train_seconds": 600.0,
                "test_bleu": 70.0, "beam3": {"bleu": 70.0},
                "setting": {"filters": filters, "coordinates": coordinates,
                            "pretrain_epochs": pretrain,
                            "reinforce_weight": 0.1}}
    record = {"benchmark": "captioner_hard_soft_choices", "command": "c",
              "when": "w", "machine": {
                  "backend": "tensorflow", "device": "cpu", "cpu": "x",
                  "cores": 2, "cpu_flags": [], "keras": "3"},
              "rows": [row("soft", [16, 32], 0, 0, 0.294, None),
                       row("hard", [16, 32, 32], 1, 3, 0.908, 0.872)]}
    text = "\n".join(load_script("summary", monkeypatch).render(record))
    assert ("| `soft` | 0 | 16, 32 | no | 0 | — | 0.1 | **29.4%** (9) "
            "| 70.00 | 9 | 10.0 |") in text
    assert ("| `hard` | 0 | 16, 32, 32 | yes | 3 | 87.2% | 0.1 | "
            "**90.8%** (9) |") in text
    assert "paper_bleu4" not in text and "Xu et al." not in text


def test_the_choices_figures_are_their_results_file():
    """The page's design choices (CoordConv, 200 against 50 locations,
    the pretrained encoder) state `captioner_hard_soft_choices.json`
    and the claim's file, which stays the only one on the scoreboard."""
    results = BENCHMARKS / "results"
    record = json.loads((results / "captioner_hard_soft_choices.json")
                        .read_text())
    assert record["off_scoreboard"]
    page = " ".join((BENCHMARKS.parent / "docs" / "models" / "captioner.md")
                    .read_text().split())
    assert "<!-- results captioner_hard_soft_choices -->" in page

    def run(variant, filters, coordinates):
        (found,) = [row for row in record["rows"]
                    if row["variant"] == variant
                    and row["setting"]["filters"] == filters
                    and row["setting"]["coordinates"] == coordinates]
        assert found["seed"] == 0 and found["epochs"] == 9
        return found["validation_digits"]

    blind, placed = run("soft", [16, 32], 0), run("soft", [16, 32], 1)
    assert blind < placed
    assert (f"named {blind:.1%} of the validation digits at their place, "
            f"{placed:.1%} with them") in page
    many, few = run("hard", [16, 32], 1), run("hard", [16, 32, 32], 1)
    rule = record["baselines"]["frequent_digits"]["digits"]
    assert many < rule + 0.02 < few  # the prior, then learning
    assert (f"never left the caption prior: {many:.1%} of the digits, where "
            f"always writing the most frequent digit at each place names "
            f"{rule:.1%}") in page
    assert f"each seeing about one digit) it learns: {few:.1%}" in page
    pretrained = [row["pretrained_accuracy"] for row in json.loads(
        (results / "captioner_hard_soft.json").read_text())["rows"]]
    assert (f"(3 epochs; {100 * min(pretrained):.1f}–"
            f"{100 * max(pretrained):.1f}% of validation digits in the runs "
            f"below)") in page
