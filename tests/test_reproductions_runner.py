"""`python -m reproductions`: every setting is one its system reads, the
published memory-network setting is the one its results file records,
and a tiny setting runs through the runner."""

import json
import subprocess
import sys

import pytest

from reproductions import runner
from tests.test_benchmarks_babi import _release

ROOT = runner.ROOT


@pytest.mark.parametrize("name", runner.names())
def test_every_setting_is_read_by_its_system(name):
    setting = runner.load(name)
    runner.check(setting, runner.system(setting["system"]))
    assert setting.get("paper"), "a setting names the paper it compares with"


def test_the_command_line_of_a_setting():
    setting = {"system": "babi", "results": "r",
               "data": {"tasks": [1, 2], "joint": False},
               "model": {"steps": 4, "no_act": True}, "run": {"plot": None}}
    assert runner.argv(setting, ["--resume"]) == [
        "--tasks", "1,2", "--steps", "4", "--no-act", "--results-name", "r",
        "--resume"]
    with pytest.raises(runner.SettingError, match="'steps' is given twice"):
        runner.options({**setting, "budget": {"steps": 5}})
    with pytest.raises(runner.SettingError, match="has no option --stepz"):
        runner.check({**setting, "model": {"stepz": 4}},
                     runner.system("babi"))


def test_the_memory_network_setting_is_the_published_run():
    setting = runner.load("babi_memory_network")
    record = json.loads((ROOT / "benchmarks" / "results" /
                         "babi_memory_network.json").read_text())
    published = dict(record["settings"], tasks="all")
    for key, value in runner.options(setting).items():
        if key != "seeds":  # the file merged two commands of 5 seeds
            assert published[key] == value, key
    assert len({row["seed"] for row in record["rows"]}) == 10


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "reproductions", *args],
                          capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_a_setting_runs_and_is_listed(tmp_path):
    """One piece of a tiny setting through the runner (its resume is
    babi.py's, tested in test_benchmarks_babi.py)."""
    root = _release(tmp_path / "babi")
    settings = tmp_path / "settings"
    settings.mkdir()
    (settings / "tiny.json").write_text(json.dumps({
        "system": "babi", "results": "tiny", "paper": "a test",
        "data": {"data": str(root), "tasks": [1]},
        "model": {"hidden": 16, "heads": 2, "ff": 32, "steps": 2,
                  "memory_size": 10},
        "stopping": {"epochs": 2}, "run": {
            "backend": "tensorflow", "results_dir": str(tmp_path / "out"),
            "checkpoint_dir": str(tmp_path / "ck")}}))
    first = _run("--settings", str(settings), "run", "tiny", "--minutes",
                 "0.0001")
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.startswith("python reproductions/systems/babi.py --data ")
    record = json.loads((tmp_path / "out" / "tiny.json").read_text())
    assert record["complete"] is False and record["rows"][0]["epochs"] == 1
    listed = _run("--settings", str(settings), "list")
    assert "tiny: babi -> tiny.json (in progress)" in listed.stdout
    shown = _run("--settings", str(settings), "show", "tiny")
    assert shown.stdout.strip().endswith("--results-name tiny")
    wrong = _run("--settings", str(settings), "show", "missing")
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "no setting 'missing'" in wrong.stderr
