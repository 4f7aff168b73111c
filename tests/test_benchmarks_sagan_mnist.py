"""reproductions/systems/sagan_mnist.py: a tiny run on made-up digits trains both
variants, writes a row per run (distance, curves, time, CPU), logs each
block's γ and where it looks, prints the floor and ceiling computed by
the committed code, caches the judge's classifier for the next command
(which `--append`s its rows), and says each mistake in one line."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import SYSTEMS
from tests.test_benchmarks_summary import load_script
from tests.test_benchmarks_summary import run_benchmark

TINY = ["--epochs", "2", "--width", "4", "--latent", "8", "--batch-size",
        "32", "--samples", "100", "--validation", "50", "--test", "100",
        "--eval-every", "1", "--classifier-epochs", "1"]


@pytest.fixture
def digits(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "mnist10k.npz"
    np.savez(path, x=rng.integers(0, 256, (300, 28, 28)).astype("uint8"),
             y=rng.integers(0, 10, 300).astype("uint8"))
    return path


def test_tiny_run_logs_gamma_attention_and_references(digits, tmp_path,
                                                      monkeypatch):
    cache, figures = tmp_path / "cache", tmp_path / "figures"
    common = ["--data", str(digits), *TINY, "--cache-dir", str(cache)]
    stdout, record = run_benchmark(
        "sagan_mnist.py", tmp_path / "results", *common, "--seeds", "0",
        "--figures", str(figures), "--select", "best", timeout=600)
    rows = record["rows"]
    assert [(row["variant"], row["seed"]) for row in rows] == [
        ("plain", 0), ("attention", 0)]
    for row in rows:
        assert row["epochs"] == 2 and row["steps"] == 2 * (150 // 32)
        assert row["cpu"] and row["backend"] == "tensorflow"
        assert np.isfinite(row["frechet_distance"])
        assert row["frechet_distance"] > 0
        assert row["train_seconds"] > 0 and row["examples_per_second"] > 0
        assert [point[0] for point in row["validation_curve"]] == [1, 2]
        # --select best: the generator of the lowest validation distance
        # is tested, once (the package's loop): no other test figure.
        epochs, values = zip(*row["validation_curve"])
        assert row["selection"] == "best"
        assert dict(row["validation_curve"])[row["selected_epoch"]] == min(
            values)  # (a tie may pick either epoch)
        assert "final_frechet_distance" not in row
        assert [point[0] for point in row["loss_curve"]] == [1, 2]
        assert (figures / f"{row['variant']}_seed0_samples.png").is_file()
    plain, attention = rows
    assert "gamma_curve" not in plain and "attention" not in plain
    # γ starts at 0 and is logged after each epoch, for G and D.
    curve = attention["gamma_curve"]
    assert curve[0] == [0, 0.0, 0.0] and [p[0] for p in curve] == [0, 1, 2]
    assert curve[-1][1] != 0.0 and curve[-1][2] != 0.0
    for network in ("generator", "discriminator"):
        looked = attention["attention"][network]
        assert 0 < looked["distance_px"] < 28 * 2 ** 0.5
        assert looked["uniform_distance_px"] == pytest.approx(
            attention["attention"]["generator"]["uniform_distance_px"])
        assert 0 <= looked["on_ink"] <= 1 and 0 <= looked["ink_share"] <= 1
        assert 0 < looked["entropy_over_uniform"] <= 1 + 1e-6
    assert (figures / "attention_seed0_attention.png").is_file()
    summary = record["summary"]
    assert summary["plain"]["seeds"] == 1
    assert summary["attention"]["mean"] == pytest.approx(
        attention["frechet_distance"])
    verdict = summary["verdict"]
    # One run each: a one-sided rank test cannot go below p = 1/2.
    assert verdict["p_value"] == pytest.approx(
        0.5 if attention["frechet_distance"] < plain["frechet_distance"]
        else 1.0)
    assert verdict["block_helps"] is False
    assert summary["plain"]["median"] == plain["frechet_distance"]
    assert record["paper"]["rows"][0] == ["no attention", 22.96]
    from reproductions import scoreboard

    assert "claims" not in record  # judged from the rows, one comparator
    claims = scoreboard.judged_claims(record)
    scoreboard.validate(claims, "sagan_mnist")
    assert claims[0]["reproduced"] == (
        "partly" if summary["verdict"]["median_gain"] > 0 else "no")
    # The floor and ceiling are the committed functions' on the same
    # classifier, and were printed.
    judge = record["judge"]
    assert judge["trained_now"] is True and 0 <= judge["test_accuracy"] <= 1
    sagan = load_script("sagan_mnist", monkeypatch)
    import keras

    p = sagan.parser()
    args = sagan.finish_arguments(p, p.parse_args(common))
    data = sagan.load(args, p)
    model = keras.saving.load_model(judge["file"])
    features = keras.Model(model.inputs, model.get_layer("features").output)
    for name, value in sagan.references(args, data, features).items():
        assert record["references"][name] == pytest.approx(value, rel=1e-4)
    assert "floor (training images)" in stdout and "ceiling" in stdout

    # The next command reads the cached classifier and appends its rows.
    _, appended = run_benchmark(
        "sagan_mnist.py", tmp_path / "results", *common, "--variants",
        "attention", "--seeds", "1", "--epochs", "1", "--append",
        timeout=600)
    assert [(row["variant"], row["seed"]) for row in appended["rows"]] == [
        ("plain", 0), ("attention", 0), ("attention", 1)]
    assert appended["judge"]["trained_now"] is False
    assert appended["judge"]["sha256"] == judge["sha256"]
    assert appended["summary"]["attention"]["seeds"] == 2
    assert len(appended["commands"]) == 2
    page = "\n".join(load_script("summary", monkeypatch).render(appended))
    assert "| attention | 1 |" in page and "(the floor)" in page
    assert "The block lowers the median distance by" in page
    assert "Mann-Whitney U = " in page and "| epoch tested / trained |" in page


@pytest.mark.parametrize("arguments, message", [
    (["--variants", "plain,nope"], "--variants must name some of"),
    (["--seeds", "a"], "--seeds must be comma-separated ints"),
    (["--width", "6"], "--width must be a multiple of 4"),
    (["--epochs", "0"], "--epochs must be positive, received: 0"),
    (["--eval-every", "-1"], "--eval-every must be >= 0"),
    (["--eval-every", "0"], "--select best needs --eval-every > 0"),
    (["--data", "/no/such/mnist.npz"], "No MNIST file at"),
    (["--data", "{data}", "--samples", "5000"],
     "--samples must be at most the 150 training images"),
    (["--data", "{data}", "--test", "300"], "`validation` + `test` must"),
    (["--dataset", "fashion", "--data", "/no/such/folder"],
     "No train-images-idx3-ubyte"),
])
def test_mistakes_are_one_line(arguments, message, digits):
    arguments = [argument.format(data=digits) for argument in arguments]
    if "--data" not in arguments:
        arguments += ["--data", str(digits)]
    result = subprocess.run(
        [sys.executable, str(SYSTEMS / "sagan_mnist.py"), "--validation",
         "50", "--test", "100", *arguments],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_parallel_jobs_keep_every_option_but_their_own():
    from reproductions import common

    given = ["--epochs", "3", "--variants", "plain", "--seeds=0,1",
             "--append", "--parallel", "2", "--dataset", "fashion"]
    assert common.strip_options(given, {"--variants", "--seeds",
                                        "--parallel", "--append"},
                                {"--append"}) == [
        "--epochs", "3", "--dataset", "fashion"]


def test_the_page_states_the_results_files_figures(monkeypatch):
    """docs/models/sagan.md states the committed runs' figures, under the
    results marker: each variant's median, mean and spread as `summary`
    computes them, the verdict of `common.block_verdict` (U, p, the gains against
    the spread), the Reproductions page's word, the best and worst runs,
    the runs whose earlier generator was chosen, the blocks' γ at the end,
    where the generator's block looks, and the distances with no GAN; and
    above the marker, how the runs were made."""
    record = json.loads((BENCHMARKS / "results" / "sagan_mnist.json"
                         ).read_text())
    sagan = load_script("sagan_mnist", monkeypatch)
    marker = "<!-- results sagan_mnist -->"
    raw = (BENCHMARKS.parent / "docs" / "models" / "sagan.md").read_text()
    assert marker in raw
    before, after = raw.split(marker, 1)
    run = " ".join(before.strip().split("\n\n")[-1].split())
    section = " ".join(after.split("\n\nThe learning test", 1)[0].split())
    rows = record["rows"]
    found = sagan.summary(rows)
    for variant in ("plain", "attention"):  # the file's, not edited
        for key in ("seeds", "mean", "std", "median"):
            assert found[variant][key] == pytest.approx(
                record["summary"][variant][key]), (variant, key)
    verdict = found["verdict"]
    for key, value in record["summary"]["verdict"].items():
        assert verdict[key] == pytest.approx(value), key
    plain, attention = found["plain"], found["attention"]

    def stated(line):
        return f"{line['mean']:.2f} ± {line['std']:.2f}"

    headline = "Reproduced" if verdict["block_helps"] else "Not reproduced"
    for figure in (
            f"**{headline} at p < {verdict['level']:g}.**",
            f"median {attention['median']:.2f} against "
            f"{plain['median']:.2f} without",
            f"mean {stated(attention)} against {stated(plain)}",
            f"Mann–Whitney U = {verdict['mann_whitney_u']:g} of "
            f"{plain['seeds'] * attention['seeds']}",
            f"one-sided p = {verdict['p_value']:.3f}",
            "The gain in the mean is "
            f"{verdict['gain'] / verdict['spread']:.2f} of the larger spread"
            f" ({verdict['gain']:.2f} against "
            f"{verdict['spread']:.2f}), in the median "
            f"{verdict['median_gain'] / verdict['spread']:.2f} of it"):
        assert figure in section, figure
    from reproductions import scoreboard

    claims = scoreboard.judged_claims(record)
    assert (f'The Reproductions page reads "{claims[0]["reproduced"]}"'
            in section)
    ranked = sorted(rows, key=lambda row: row["frechet_distance"])
    assert [row["variant"] for row in ranked[:2]] == ["attention"] * 2
    assert [row["variant"] for row in ranked[-2:]] == ["plain"] * 2
    best, worst = ranked[:2], ranked[:-3:-1]
    assert ("The two best runs have the block ("
            + " and ".join(f"{row['frechet_distance']:.1f}" for row in best)
            + ") and the two worst have none ("
            + " and ".join(f"{row['frechet_distance']:.1f}" for row in worst)
            + "); between them the variants interleave") in section
    between = [row["variant"] for row in ranked[2:-2]]
    assert sum(a != b for a, b in zip(between, between[1:])) > 1
    paper = dict(record["paper"]["rows"])
    assert "128x128" in record["paper"]["source"]
    assert (f"paper's gain ({paper['no attention']:.2f} to "
            f"{paper['SAGAN, feat32']:.2f}) is on 128×128 images") in section
    assert record["data"]["dataset"] == "mnist"
    assert claims[0]["data"].startswith("28x28 ")
    assert "more seeds at 28×28" in section
    assert "14x14" in sagan.LABELS["attention"]
    assert "On 28×28 digits" in section and "convolutions at 14×14" in section

    # Selection: the validation distance's generator, not the last one's.
    assert {row["selection"] for row in rows} == {"best"}
    earlier = sorted({row["selected_epoch"] for row in rows
                      if row["selected_epoch"] < row["epochs"]})
    count = sum(row["selected_epoch"] < row["epochs"] for row in rows)
    epochs = (", ".join(map(str, earlier[:-1])) + " or "
              if len(earlier) > 1 else "") + str(earlier[-1])
    assert (f"than the last in {count} of the {len(rows)} runs (epoch "
            f"{epochs})") in section

    # γ at the end: away from 0 in every run, D's further than G's.
    blocks = [row for row in rows if row["variant"] == "attention"]
    ends = [row["gamma_curve"][-1] for row in blocks]
    assert all(end[0] == row["epochs"] for end, row in zip(ends, blocks))
    assert all(end[1] != 0 and end[2] != 0 for end in ends)
    assert "it leaves 0 in every run" in section
    made = [abs(end[1]) for end in ends]
    judged = [abs(end[2]) for end in ends]
    assert min(judged) > max(made)
    assert (f"(|γ_D| {min(judged):.2f}–{max(judged):.2f} at the end, "
            f"|γ_G| {min(made):.2f}–{max(made):.2f})") in section

    # Where the generator's block looks.
    looked = [row["attention"]["generator"] for row in blocks]
    distance = [line["distance_px"] for line in looked]
    even = {f"{line['uniform_distance_px']:.1f}" for line in looked}
    assert len(even) == 1
    assert (f"attends keys {min(distance):.1f}–{max(distance):.1f} pixels "
            f"from the query on average, against {even.pop()} for "
            f"attention spread evenly") in section
    ratio = [line["on_ink"] / line["ink_share"] for line in looked]
    on_ink = [line["on_ink"] for line in looked]
    share = [line["ink_share"] for line in looked]
    assert (f"weights inked keys {min(ratio):.1f}–{max(ratio):.1f} times "
            f"their share ({min(on_ink):.2f}–{max(on_ink):.2f} of the "
            f"attention on {100 * min(share):.0f}–{max(share):.0%} of the "
            f"keys)") in section

    references = record["references"]
    assert (f"the distance is {references['floor_train_vs_test']:.2f} "
            "(training images against the test images, the floor) and "
            f"{references['ceiling_pixel_noise_vs_test']:.1f} (per-pixel "
            "Gaussian noise, the ceiling)") in section

    # Above the marker: the machine, the command, the date, the time.
    machine = record["machine"]
    assert "Xeon" in machine["cpu"] and machine["backend"] == "tensorflow"
    assert {"avx512_bf16", "amx_bf16"} <= set(machine["cpu_flags"])
    (trained,) = {row["epochs"] for row in rows}
    assert (f"Measured on an Intel Xeon ({machine['cores']} cores, "
            f"AVX512-BF16 and AMX; `lscpu`), TensorFlow, {trained} epochs"
            ) in run
    assert record["commands"] == [record["command"]]
    assert f"`python reproductions/systems/{record['command']}`" in run
    assert "--parallel 2 " in record["command"] and "two at a time" in run
    assert all(row["seconds_per_epoch"] > row["cpu_seconds_per_epoch"]
               for row in rows)
    assert f"`, {record['when'][:10]}, about " in run
    minutes = sum(row["train_seconds"] for row in rows) / 2 / 60
    assert f"about {round(minutes, -1):.0f} minutes" in run


def test_the_page_states_the_earlier_sweeps_figures():
    """The earlier sweep (the last epoch's generator tested), kept as
    `sagan_mnist_last_epoch.json` off the scoreboard: the collapse, the
    means and the ranges the page's Selection bullet states."""
    record = json.loads((BENCHMARKS / "results"
                         / "sagan_mnist_last_epoch.json").read_text())
    assert record["off_scoreboard"]
    page = " ".join((BENCHMARKS.parent / "docs" / "models" / "sagan.md")
                    .read_text().split())
    distances = {variant: [row["frechet_distance"] for row in record["rows"]
                           if row["variant"] == variant]
                 for variant in ("plain", "attention")}
    collapse = max(distances["attention"])
    others = sorted(set(distances["attention"]) - {collapse}, reverse=True)
    summary = record["summary"]
    assert (f"one late collapse ({collapse:.2f}) decided the mean: "
            f"{summary['attention']['mean']:.2f} ± "
            f"{summary['attention']['std']:.2f} with the block against "
            f"{summary['plain']['mean']:.2f} ± {summary['plain']['std']:.2f}"
            f" without, where the other two runs with it ("
            + ", ".join(f"{value:.2f}" for value in others)
            + f") were below every run without it "
            f"({min(distances['plain']):.2f}–{max(distances['plain']):.2f})"
            ) in page
    assert max(others) < min(distances["plain"])


def test_the_page_states_the_runs_processor_seconds_and_minutes():
    record = json.loads((BENCHMARKS / "results" / "sagan_mnist.json")
                        .read_text())
    page = " ".join((BENCHMARKS.parent / "docs" / "models" / "sagan.md")
                    .read_text().split())

    def span(values, spec=".1f"):
        return f"{min(values):{spec}}–{max(values):{spec}}"

    cpu = {variant: [row["cpu_seconds_per_epoch"] for row in record["rows"]
                     if row["variant"] == variant]
           for variant in ("plain", "attention")}
    minutes = [row["train_seconds"] / 60 for row in record["rows"]]
    assert (f"an epoch of {record['data']['sizes']['train']:,} images took "
            f"{span(cpu['attention'])} s of processor time with the block "
            f"and {span(cpu['plain'])} s without, and a run "
            f"{span(minutes)} minutes of training") in page
