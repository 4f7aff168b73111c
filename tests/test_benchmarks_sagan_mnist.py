"""benchmarks/sagan_mnist.py: a tiny run on made-up digits trains both
variants, writes a row per run (distance, curves, time, CPU), logs each
block's γ and where it looks, prints the floor and ceiling computed by
the committed code, caches the judge's classifier for the next command
(which `--append`s its rows), and says each mistake in one line."""

import subprocess
import sys

import numpy as np
import pytest

from tests.test_benchmarks_summary import BENCHMARKS
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
        # is tested; the last epoch's test distance is kept beside it.
        epochs, values = zip(*row["validation_curve"])
        assert row["selection"] == "best"
        assert dict(row["validation_curve"])[row["selected_epoch"]] == min(
            values)  # (a tie may pick either epoch)
        assert np.isfinite(row["final_frechet_distance"])
        if row["selected_epoch"] == 2:
            assert row["final_frechet_distance"] == row["frechet_distance"]
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
    reproductions = load_script("reproductions", monkeypatch)
    reproductions.validate(record["claims"], "sagan_mnist")
    assert record["claims"][0]["reproduced"] == (
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
        [sys.executable, str(BENCHMARKS / "sagan_mnist.py"), "--validation",
         "50", "--test", "100", *arguments],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_parallel_jobs_keep_every_option_but_their_own(monkeypatch):
    harness = load_script("harness", monkeypatch)
    given = ["--epochs", "3", "--variants", "plain", "--seeds=0,1",
             "--append", "--parallel", "2", "--dataset", "fashion"]
    assert harness.strip_options(given, {"--variants", "--seeds",
                                         "--parallel", "--append"},
                                 {"--append"}) == [
        "--epochs", "3", "--dataset", "fashion"]
