"""reproductions/processes.py's `run_pinned`: each job in a process of its
own, its rows back in the order of the jobs, and none begun once the
shared deadline (`--minutes`) has passed, so a run is never started only
to train one stray epoch after it; `run_example`: an example run as a
command, its `--results` read back, a failure one line."""

import json
import time

import pytest

from reproductions import common
from reproductions import processes

# A stand-in for a benchmark: sleeps, then writes its one row where
# run_pinned asks (--results-dir, --results-name).
JOB = """
import json, pathlib, sys, time
arguments = dict(zip(sys.argv[1::2], sys.argv[2::2]))
time.sleep(float(arguments["--sleep"]))
folder = pathlib.Path(arguments["--results-dir"])
(folder / (arguments["--results-name"] + ".json")).write_text(
    json.dumps({"rows": [{"job": arguments["--results-name"]}]}))
"""


def _jobs(names, sleep):
    return [(name, ["--sleep", str(sleep)]) for name in names]


def test_every_job_gives_its_rows_in_order(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    seen = []
    found = processes.run_pinned(script, _jobs(["a", "b", "c"], 0), 2,
                               tmp_path / "logs", on_rows=seen.append)
    assert found == [[{"job": "a"}], [{"job": "b"}], [{"job": "c"}]]
    # As each job finished, the rows of those finished so far, in order.
    assert [len(rows) for rows in seen] == [1, 2, 3]
    assert seen[-1] == [{"job": "a"}, {"job": "b"}, {"job": "c"}]
    assert all(rows == sorted(rows, key=lambda row: row["job"])
               for rows in seen)
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [
        "a.log", "b.log", "c.log"]


def test_no_job_begins_after_the_deadline(tmp_path, capsys):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    # Passed before the call: nothing runs.
    assert processes.run_pinned(script, _jobs(["a", "b"], 0), 2,
                              tmp_path / "logs", deadline=1.0) == []
    assert "not started" in capsys.readouterr().out
    # One core: "a" begins before the deadline and finishes after it, so
    # "b", still waiting then, is never begun.
    started = time.time()
    found = processes.run_pinned(script, _jobs(["a", "b"], 3), 1,
                               tmp_path / "logs2", deadline=started + 1.5)
    assert found == [[{"job": "a"}]]
    out = capsys.readouterr().out
    assert "started a on core" in out and "started b" not in out
    assert "not started (the deadline had passed; --resume starts them): b" \
        in out
    assert time.time() - started < 30


# A job that writes its run in progress (as a row; job "b" as babi.py
# does, in `in_progress` with no row), says it began (its process id in
# --pids), then runs on.
LONG_JOB = """
import json, os, pathlib, sys, time
arguments = dict(zip(sys.argv[1::2], sys.argv[2::2]))
name = arguments["--results-name"]
record = ({"rows": [{"job": name, "finished": False}]} if name == "a" else
          {"rows": [], "in_progress": [{"epoch": 3}]})
(pathlib.Path(arguments["--results-dir"]) / (name + ".json")).write_text(
    json.dumps(record))
(pathlib.Path(arguments["--pids"]) / str(os.getpid())).write_text("")
time.sleep(120)
"""


def test_stopped_it_stops_its_jobs(tmp_path):
    """SIGTERM to the process running the jobs ends the jobs too: none
    goes on writing (a checkpoint) behind a later --resume; their runs in
    progress, as they last wrote them as rows, go to `on_rows`."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from tests.test_benchmarks_summary import BENCHMARKS

    (tmp_path / "job.py").write_text(LONG_JOB)
    pids = tmp_path / "pids"
    pids.mkdir()
    parent = subprocess.Popen([sys.executable, "-c", (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from reproductions import processes; "
        "import json; "
        "processes.run_pinned(sys.argv[2], [(n, ['--pids', sys.argv[3]]) "
        "for n in 'ab'], 2, sys.argv[4], on_rows=lambda rows: print("
        "'rows', json.dumps(rows), flush=True))"), str(BENCHMARKS.parent),
        str(tmp_path / "job.py"), str(pids), str(tmp_path / "logs")],
        stdout=subprocess.PIPE, text=True)
    cores = min(2, len(os.sched_getaffinity(0)))  # jobs at a time
    deadline = time.time() + 60
    while len(list(pids.iterdir())) < cores and time.time() < deadline:
        time.sleep(0.2)
    jobs = [int(path.name) for path in pids.iterdir()]
    assert len(jobs) == cores
    parent.send_signal(signal.SIGTERM)
    out, _ = parent.communicate(timeout=60)
    assert parent.returncode == 128 + signal.SIGTERM
    assert out.count("stopped ") == cores
    # Job "a"'s row in progress; "b" (babi.py's way) gives none.
    (line,) = [line for line in out.splitlines() if line.startswith("rows")]
    assert json.loads(line[len("rows "):]) == [{"job": "a",
                                                 "finished": False}]
    for pid in jobs:  # gone (reaped by the parent), not running on
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"job {pid} outlived the run")


# A job that writes its file twice: a run in progress, then finished.
TWO_WRITES = """
import json, pathlib, sys, time
arguments = dict(zip(sys.argv[1::2], sys.argv[2::2]))
path = pathlib.Path(arguments["--results-dir"]) / (
    arguments["--results-name"] + ".json")
path.write_text(json.dumps({"rows": [], "epoch": 1}))
time.sleep(5)
path.write_text(json.dumps({"rows": [{"done": True}], "epoch": 2}))
"""


def test_progress_is_read_as_jobs_write_it(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(TWO_WRITES)
    seen = []
    found = processes.run_pinned(script, [("a", [])], 1, tmp_path / "logs",
                               on_progress=seen.append)
    assert found == [[{"done": True}]]
    # Read while it ran: its first file, once (the second is its rows).
    assert seen == [{"a": {"rows": [], "epoch": 1}}]


def test_late_gain_counts_a_fall_for_a_loss():
    late_gain = common.late_gain
    # A loss: the last two epochs fell 0.6 below the best before (3).
    assert late_gain([5, 4, 3, 2.5, 2.4], 2, lower_is_better=True) == 0.6
    assert late_gain([5, 4, 3, 2.5, 2.4], 2) == -2.5  # read as a score
    assert late_gain([1, 2, 3, 2.5, 2.4], 2) == -0.5
    assert late_gain([1, 2, 3, 2.5, 2.4], 2, lower_is_better=True) == -1.4
    assert late_gain([1, 2], 2) is None


# A stand-in for an example: writes its arguments to --results, or fails.
EXAMPLE = """
import json, pathlib, sys
if "--fail" in sys.argv:
    sys.exit("an error of its own")
where = sys.argv.index("--results")
pathlib.Path(sys.argv[where + 1]).write_text(
    json.dumps({"argv": sys.argv[1:where]}))
"""


def test_an_example_runs_as_a_command(tmp_path, monkeypatch, capfd):
    (tmp_path / "made_up.py").write_text(EXAMPLE)
    monkeypatch.setattr(processes, "EXAMPLES_DIR", tmp_path)
    assert processes.run_example("made_up", ["--seed", "3"]) == {
        "argv": ["--seed", "3"]}
    with pytest.raises(SystemExit) as failed:
        processes.run_example("made_up", ["--fail"])
    assert str(failed.value) == ("examples/made_up.py --fail failed (exit "
                                 "status 1); its error is above")
    assert "an error of its own" in capfd.readouterr().err
    # Exit 0 and no file: said so.
    (tmp_path / "silent.py").write_text("")
    with pytest.raises(SystemExit) as failed:
        processes.run_example("silent", [])
    assert str(failed.value) == ("examples/silent.py wrote no --results "
                                 "file")


def _resume_args(checkpoints, resume=True):
    import argparse

    return argparse.Namespace(
        checkpoint_dir=checkpoints, resume=resume, variant_list=["a", "b"],
        seed_list=[0, 1], run_settings={"epochs": 3})


def test_each_run_not_finished_is_in_progress_with_its_own_checkpoint():
    args = _resume_args("ckpt")
    jobs = [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    rows = [{"variant": "a", "seed": 0, "finished": True},
            {"variant": "a", "seed": 1, "finished": False}]
    assert common.runs_in_progress(args, rows, jobs) == [
        {"variant": variant, "seed": seed,
         "checkpoint": f"ckpt/{variant}_seed{seed}"}
        for variant, seed in [("a", 1), ("b", 0), ("b", 1)]]
    assert common.runs_in_progress(args, [
        {"variant": v, "seed": s} for v, s in jobs], jobs) == []
    assert common.runs_in_progress(_resume_args(None), rows, jobs) == []


def test_resume_gives_finished_rows_of_the_same_settings_only(tmp_path):
    path = tmp_path / "run.json"
    rows = [{"variant": "a", "seed": 0, "finished": True, "test": 0.1},
            {"variant": "a", "seed": 1, "finished": False},
            {"variant": "c", "seed": 0, "finished": True}]
    path.write_text(json.dumps({"rows": rows,
                                "run_settings": {"epochs": 3}}))
    assert common.finished_earlier(_resume_args("ckpt"), path) == {
        ("a", 0): rows[0]}
    # A checkpoint newer than the file wins: a run begun again (not
    # finished), or finished with other weights; the same one does not.
    args = _resume_args(str(tmp_path / "ckpt"))
    state = tmp_path / "ckpt" / "a_seed0" / "state.json"
    state.parent.mkdir(parents=True)
    for saved, given in (({"finished": False}, {}),
                         ({"finished": True, "weights_sha256": "x"}, {}),
                         ({"finished": True}, {("a", 0): rows[0]})):
        state.write_text(json.dumps(saved))
        assert common.finished_earlier(args, path) == given
    # Nor with --append: the file holds other commands' rows too.
    args = _resume_args("ckpt")
    args.append = True
    assert common.finished_earlier(args, path) == {}
    # Not without --resume, nor from a file of other settings (or of
    # none: written before files named them), nor from no file.
    assert common.finished_earlier(_resume_args("ckpt", False), path) == {}
    path.write_text(json.dumps({"rows": rows,
                                "run_settings": {"epochs": 4}}))
    assert common.finished_earlier(_resume_args("ckpt"), path) == {}
    path.write_text(json.dumps({"rows": rows}))
    assert common.finished_earlier(_resume_args("ckpt"), path) == {}
    assert common.finished_earlier(_resume_args("ckpt"),
                                   tmp_path / "none.json") == {}


def test_skipped_runs_are_not_trained():
    args = _resume_args(None)
    args.parallel = 1
    trained = []

    def train(variant, seed):
        trained.append((variant, seed))
        return {"variant": variant, "seed": seed}

    rows = processes.variant_seed_runs("x.py", [], args, set(), train,
                                       skip={("a", 0): {}, ("b", 1): {}})
    assert trained == [("a", 1), ("b", 0)] and len(rows) == 2


def test_the_rows_so_far_are_given_as_each_run_finishes():
    args = _resume_args(None)
    args.parallel = 1
    seen = []
    processes.variant_seed_runs(
        "x.py", [], args, set(), lambda variant, seed: {"run": seed},
        skip={("b", 0), ("b", 1)}, on_rows=seen.append)
    assert seen == [[{"run": 0}], [{"run": 0}, {"run": 1}]]
