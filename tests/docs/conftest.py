"""The documentation site, built once per test run with `mkdocs build
--strict` and shared by test_site.py and test_site_browser.py.

pytest-xdist (`--dist loadfile`) may run the two files in two processes:
the first to get the lock builds into the run's shared temporary folder,
the other waits and reads the result (exit status and log) from there."""

import fcntl
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MKDOCS = pathlib.Path(sys.executable).parent / "mkdocs"


def _shared_folder(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker has basetemp/../popen-gwN: the parent is the
    # run's own folder, shared by the workers.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_site(destination):
    """Run `mkdocs build --strict -d destination`; returns
    `{"returncode", "output", "seconds"}`."""
    import time

    environment = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    start = time.perf_counter()
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "-d", str(destination)],
        cwd=ROOT, env=environment, capture_output=True, text=True,
        timeout=600)
    return {"returncode": result.returncode,
            "output": result.stdout + result.stderr,
            "seconds": time.perf_counter() - start}


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """`(site folder, build record)` of the one build of this run."""
    folder = _shared_folder(tmp_path_factory) / "docs-site"
    folder.mkdir(exist_ok=True)
    record_path = folder / "build.json"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record_path.exists():
            record_path.write_text(json.dumps(build_site(folder / "site")))
    return folder / "site", json.loads(record_path.read_text())


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Overrides the suite's Keras reset: the site tests build no model, and
    clear_session's garbage collection costs about a quarter of a second
    per test."""
    yield
