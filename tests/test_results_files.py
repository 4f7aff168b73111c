"""Every results file in benchmarks/results/ is strict JSON (no NaN or
Infinity, which Python's `json` writes and reads but strict parsers
reject), and `harness.write_results` writes only strict JSON."""

import json
import math

import numpy as np
import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import load_script

RESULTS = sorted((BENCHMARKS / "results").glob("*.json"))


def _reject(constant):
    raise ValueError(f"not strict JSON: {constant}")


def strict_loads(text):
    """`json.loads`, refusing NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_reject)


def test_there_are_results_files():
    assert len(RESULTS) > 10


@pytest.mark.parametrize("path", RESULTS, ids=[path.name for path in RESULTS])
def test_a_results_file_is_strict_json(path):
    strict_loads(path.read_text())


@pytest.mark.parametrize("path", RESULTS, ids=[path.name for path in RESULTS])
def test_a_results_file_has_one_row_a_line(path, monkeypatch):
    """Written by `harness.dumps`: one row (curves and all) a line, so a
    file stays short and a diff shows the rows that changed."""
    harness = load_script("harness", monkeypatch)
    text = path.read_text()
    assert text == harness.dumps(json.loads(text))


def test_dumps_puts_a_row_on_a_line(monkeypatch):
    harness = load_script("harness", monkeypatch)
    record = {"benchmark": "b", "settings": {"a": 1, "b": [1, 2]},
              "rows": [{"x": 1, "curve": [0.5, 0.25]}, {"x": 2}],
              "empty": [], "note": "é"}
    text = harness.dumps(record)
    assert json.loads(text) == record
    assert text.splitlines() == [
        "{", '  "benchmark": "b",', '  "settings": {', '    "a": 1,',
        '    "b": [1, 2]', "  },", '  "rows": [',
        '    {"x": 1, "curve": [0.5, 0.25]},', '    {"x": 2}', "  ],",
        '  "empty": [],', '  "note": "é"', "}"]


def test_the_strict_parser_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        strict_loads('{"a": NaN}')


def test_write_results_writes_non_finite_numbers_as_null(tmp_path,
                                                          monkeypatch):
    harness = load_script("harness", monkeypatch)
    rows = [{"loss": math.nan, "speed": 1.5, "curve": [1.0, math.inf],
             "nested": {"deeper": [{"x": -math.inf}], "fine": 0.25},
             "numpy": np.float32("nan"), "numpy_finite": np.float64(2.5),
             "count": np.int64(3), "flag": True, "name": "nan"}]
    path = harness.write_results("strict", rows, directory=tmp_path,
                                 extra=(math.nan, 1))
    record = strict_loads(path.read_text())
    assert record["rows"] == [{
        "loss": None, "speed": 1.5, "curve": [1.0, None],
        "nested": {"deeper": [{"x": None}], "fine": 0.25}, "numpy": None,
        "numpy_finite": 2.5, "count": 3, "flag": True, "name": "nan"}]
    assert record["extra"] == [None, 1]
    assert path.read_text().endswith("}\n")


def in_progress_checkpoints(records):
    """The checkpoint folders of the runs the results files list as in
    progress (`in_progress[*]["checkpoint"]`)."""
    return {entry["checkpoint"] for record in records
            for entry in record.get("in_progress", [])
            if entry.get("checkpoint")}


def stray_checkpoints(tracked, folders):
    """The tracked files under no folder of a run in progress."""
    return [name for name in tracked
            if not any(name.startswith(folder.rstrip("/") + "/")
                       for folder in folders)]


def test_tracked_checkpoints_are_only_those_of_runs_in_progress():
    """benchmarks/checkpoints/ keeps a run's checkpoints while a results
    file lists the run as in progress; a published run's are removed (its
    rows name them by hash and by the commit that still holds them)."""
    import subprocess

    root = BENCHMARKS.parent
    tracked = subprocess.run(
        ["git", "ls-files", "benchmarks/checkpoints"], cwd=root,
        capture_output=True, text=True, check=True).stdout.split()
    records = [json.loads(path.read_text()) for path in RESULTS]
    assert stray_checkpoints(tracked, in_progress_checkpoints(records)) == []


CHECKPOINTS_CAP = 40 * 2**20
"""The most bytes the tracked checkpoints of the runs in progress may
hold together (a Music Transformer run's weights, optimizer and best
weights are about 10 MB; finished runs keep only their state)."""


def test_the_tracked_checkpoints_are_capped_in_size():
    import subprocess

    root = BENCHMARKS.parent
    tracked = subprocess.run(
        ["git", "ls-files", "benchmarks/checkpoints"], cwd=root,
        capture_output=True, text=True, check=True).stdout.split()
    size = sum((root / name).stat().st_size for name in tracked
               if (root / name).is_file())
    assert size <= CHECKPOINTS_CAP, (
        f"benchmarks/checkpoints holds {size / 2**20:.1f} MB in git, over "
        f"the cap of {CHECKPOINTS_CAP / 2**20:.0f} MB")


def test_a_published_runs_checkpoint_is_found_stray():
    records = [{"in_progress": [{"checkpoint":
                                 "benchmarks/checkpoints/run/seed1"}]},
               {"rows": []}]
    tracked = ["benchmarks/checkpoints/run/seed1/state.json",
               "benchmarks/checkpoints/run/seed0/state.json"]
    assert stray_checkpoints(tracked, in_progress_checkpoints(records)) == [
        "benchmarks/checkpoints/run/seed0/state.json"]


def test_the_published_ut_rows_name_their_checkpoints():
    record = json.loads((BENCHMARKS / "results" /
                         "babi_universal_transformer_10k_task2.json")
                        .read_text())
    for row in record["rows"]:
        files = row["checkpoint"]["files"]
        assert sorted(files) == ["best.npz", "last.weights.h5"]
        assert all(len(digest) == 64 for digest in files.values())
        assert row["checkpoint"]["in_git_at"].split(":")[1].startswith(
            "benchmarks/checkpoints/")
