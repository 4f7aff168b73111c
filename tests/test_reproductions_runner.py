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


def test_settings_differ_as_their_command_lines_do():
    """false, null and absent are one; a list is its commas; where files
    go and a piece's minutes are not the setting."""
    mine = {"data": {"tasks": [1, 2], "joint": False},
            "run": {"minutes": 5, "backend": "jax"}}
    same = {"data": {"tasks": "1,2"},
            "run": {"minutes": 60, "results_dir": "/tmp/x",
                    "backend": "jax"}}
    assert runner.differences(mine, same) == []
    other = {"data": {"tasks": [1, 2], "joint": True},
             "run": {"backend": "tensorflow"}}
    assert runner.differences(mine, other) == [
        "--backend tensorflow there, jax here",
        "--joint true there, None here"]


def _published(name):
    """The setting `name` and its results file (None if not written)."""
    setting = runner.load(name)
    path = runner.results_path(setting)
    return setting, json.loads(path.read_text()) if path.is_file() else None


# Options that say where files go or how a command was split into pieces,
# not what ran.
NOT_THE_RUN = {"results_dir", "results_name", "append", "resume", "minutes",
               "checkpoint_dir", "deadline", "verbose", "logs", "save_dir",
               "output_dir", "figures", "cache_dir", "parallel", "data",
               "plot", "plot_task", "backend", "variant_list", "seed_list"}


@pytest.mark.parametrize("name", [name for name in runner.names()
                                  if _published(name)[1] is not None])
def test_a_published_setting_is_the_run_its_file_records(name, tmp_path,
                                                         monkeypatch):
    """Each setting with a results file is the run that file records: its
    options parsed by the system equal the settings the file records,
    or where it records none, those of its commands (their variants
    together: a file grown by `--append`). Parsed in an empty folder: a
    run in progress keeps its checkpoints under the repository, which a
    system's checks of a new run's `--checkpoint-dir` would refuse."""
    import shlex

    setting, record = _published(name)
    monkeypatch.chdir(tmp_path)
    module = runner.system(setting["system"])

    def parsed(words):  # the options as the system runs them
        p = module.parser()
        args = p.parse_args(words)
        finish = getattr(module, "finish_arguments", None)
        return vars(finish(p, args) if finish else args)

    if "setting" in record:  # the runner ran it
        assert runner.differences(setting, record["setting"]) == []
    ours = parsed(runner.argv(setting))
    theirs = dict(record.get("settings") or {})
    if not theirs:
        variants = []
        for line in record.get("commands", [record["command"]]):
            words = shlex.split(line)
            if words[:3] == ["python", "-m", "reproductions"]:
                continue  # the runner ran this setting
            if words[0] == "python":  # the runner's system command line
                words = words[1:]
            theirs.update(parsed(words[1:]))
            variants += [v for v in str(theirs.get("variants") or "")
                         .split(",") if v]
        theirs["variants"] = variants or ours.get("variants")
    for key in set(theirs) & set(ours) - NOT_THE_RUN - {"seeds", "tasks"}:
        value, mine = theirs[key], ours[key]
        if key == "variants":
            value = value.split(",") if isinstance(value, str) else value
            value, mine = set(value), set(mine.split(","))
        elif isinstance(value, list):
            value = ",".join(map(str, value))
        assert value == mine, f"{key}: {value!r} in the file, {mine!r} here"
    # The rows: their variants, seeds and the options they record.
    variants = set(str(ours.get("variants") or "").split(","))
    for row in record["rows"]:
        if "variant" in row and ours.get("variants"):
            assert row["variant"] in variants, row["variant"]
        if isinstance(ours.get("seeds"), str):
            assert str(row["seed"]) in ours["seeds"].split(","), row["seed"]
        for key in ("location_std", "first_glimpse", "model", "size"):
            if key in row and key in ours:
                assert row[key] == ours[key], key
    # Seeds run apart and merged: the memory network's 5 + 5, the UT's
    # one by one, the Image Transformer digits' 2 + 1.
    merged = ("babi_memory_network", "babi_universal_transformer_10k_task2",
              "image_transformer_digits")
    assert theirs.get("seeds") in (None, ours["seeds"]) or name in merged


def test_the_memory_network_setting_is_the_published_run():
    setting, record = _published("babi_memory_network")
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
    assert ("tiny: babi -> tiny.json (in progress: 0 run(s) finished, 1 "
            "stopped)") in listed.stdout
    shown = _run("--settings", str(settings), "show", "tiny")
    assert shown.stdout.strip().endswith("--results-name tiny")
    wrong = _run("--settings", str(settings), "show", "missing")
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "no setting 'missing'" in wrong.stderr


def test_seeds_run_apart_merge_and_render(tmp_path):
    """Seeds run in pieces, each to its own file, merge into one: the rows
    and commands of both, the summary and claims over both seeds. A file
    of another setting, or one that repeats a run, is a one-line error;
    so is `resume` with a setting changed; `render` recomputes a summary
    (a stale `claims` goes). (Two tiny memory-network runs serve all.)"""
    root = _release(tmp_path / "babi")
    settings = tmp_path / "settings"
    settings.mkdir()
    tiny = {"system": "babi", "results": "mn", "paper": "a test",
            "data": {"data": str(root), "tasks": [1]},
            "model": {"model": "memory_network", "hops": 3},
            "stopping": {"epochs": 2, "linear_epochs": 1},
            "seeds": {"seed": 0},
            "run": {"backend": "jax", "results_dir": str(tmp_path / "a")}}
    (settings / "mn.json").write_text(json.dumps(tiny))
    other = dict(tiny, seeds={"seed": 1},
                 run=dict(tiny["run"], results_dir=str(tmp_path / "b")))
    (settings / "mn1.json").write_text(json.dumps(other))
    for name in ("mn", "mn1"):
        result = _run("--settings", str(settings), "run", name)
        assert result.returncode == 0, result.stderr[-2000:]
    into = tmp_path / "a" / "mn.json"
    first = json.loads(into.read_text())
    assert first["setting"]["name"] == "mn"
    assert first["setting"]["model"] == tiny["model"]
    assert "settings" not in first  # the setting, not the options
    seed1 = tmp_path / "b" / "mn.json"

    def merge(*files):
        return _run("--settings", str(settings), "merge", "mn",
                    *map(str, files))

    result = merge(seed1)
    assert result.returncode == 0, result.stderr[-2000:]
    merged = json.loads(into.read_text())
    assert [row["seed"] for row in merged["rows"]] == [0, 1]
    assert merged["rows"][1] == json.loads(seed1.read_text())["rows"][0]
    assert len(merged["commands"]) == 2
    assert merged["summary"][0]["seeds"] == 2
    assert merged["summary"][0]["mean_error"] == pytest.approx(
        sum(row["test_error"] for row in merged["rows"]) / 2)

    again = merge(seed1)
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert "repeats the run" in again.stderr
    stopped = json.loads(seed1.read_text())
    stopped["rows"][0].update(seed=2, finished=False)
    (tmp_path / "stopped.json").write_text(json.dumps(stopped))
    unfinished = merge(tmp_path / "stopped.json")
    assert unfinished.returncode == 2 and "not finished" in \
        unfinished.stderr
    changed = json.loads(seed1.read_text())
    changed["setting"]["model"]["hops"] = 2
    (tmp_path / "c.json").write_text(json.dumps(changed))
    differ = merge(tmp_path / "c.json")
    assert differ.returncode == 2 and "Traceback" not in differ.stderr
    assert "--hops 2 there, 3 here" in differ.stderr

    (settings / "mn.json").write_text(json.dumps(
        dict(tiny, model={"model": "memory_network", "hops": 2})))
    resumed = _run("--settings", str(settings), "resume", "mn")
    assert resumed.returncode == 2 and "Traceback" not in resumed.stderr
    assert "--hops 3 there, 2 here" in resumed.stderr

    into.write_text(json.dumps(dict(merged, summary=[], claims=[])))
    setting = dict(tiny, name="mn")
    runner.rerender(setting, runner.system("babi"))
    record = json.loads(into.read_text())
    assert record["summary"] == merged["summary"] and "claims" not in record


def test_a_system_of_one_piece_is_not_resumed():
    """A system with no --resume (an example measured over seeds) says
    so in one line instead of argparse's 'unrecognized arguments'."""
    done = _run("resume", "sagan_digits")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(
        "error: system 'sagan_digits' has no --resume: its runs go in one "
        "piece (`run` runs them anew)")
