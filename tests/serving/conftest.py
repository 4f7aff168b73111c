"""Fixtures of the serving tests: the model repository and a server.

By default the tests start our server (`python -m keras_attention.serving`)
on free loopback ports (REST and gRPC). With TF_SERVING_URL (REST, e.g.
http://localhost:8501) and/or TF_SERVING_GRPC (gRPC, e.g. localhost:8500)
set they talk to that server instead, which must serve the repository
written by `python -m tests.serving.model_repository` (see that module),
found at TF_SERVING_MODEL_DIR; the tests of the API not given skip.
"""

import contextlib
import fcntl
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.serving import model_repository
from tests.trained_translators import trained_translator

EXTERNAL_GRPC = os.environ.get("TF_SERVING_GRPC")
# Either API of a real TF Serving: the tests then start no server.
EXTERNAL_URL = os.environ.get("TF_SERVING_URL") or (
    "" if EXTERNAL_GRPC else None)
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """No per-test Keras reset here: the tests talk to servers and load
    SavedModels; the suite-wide reset would free resources that
    session-wide fixtures hold (see tests/translator/conftest.py)."""
    yield


@pytest.fixture(scope="session")
def repository(tmp_path_factory):
    if EXTERNAL_URL is not None:
        root = os.environ.get("TF_SERVING_MODEL_DIR")
        if not root:
            pytest.fail("TF_SERVING_URL or TF_SERVING_GRPC is set: set "
                        "TF_SERVING_MODEL_DIR to the folder that server "
                        "serves")
        return pathlib.Path(root)
    prebuilt = os.environ.get("KERAS_ATTENTION_TEST_REPOSITORY")
    if prebuilt and (pathlib.Path(prebuilt) / "models.config").exists():
        return pathlib.Path(prebuilt)  # a developer's shortcut, see README
    # The translators the decoding and export tests train too, trained
    # once per run (by whichever worker needs one first).
    variants = list(model_repository.TRANSLATORS.values())
    trained = {name: trained_translator(tmp_path_factory, variant,
                                        then=variants)
               for name, variant in model_repository.TRANSLATORS.items()}
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.mktemp("models")
        return model_repository.build(root, trained=trained)
    # Under xdist every worker has its own base temp inside this run's
    # folder; the first worker to get the lock builds, the others reuse.
    shared = tmp_path_factory.getbasetemp().parent
    with open(shared / "serving-models.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        root = shared / "serving-models"
        if not (root / "models.config").exists():
            model_repository.build(root, trained=trained)
    return root


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_ready(url, process=None, timeout=180, model="numeric"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:"
                               f" {process.stderr.read()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/v1/models/{model}",
                                        timeout=2) as reply:
                states = [v["state"] for v in
                          json.loads(reply.read())["model_version_status"]]
                if "AVAILABLE" in states:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not serve {model} in {timeout} s")


@contextlib.contextmanager
def running_server(*flags, model="numeric"):
    """Our server in a subprocess with `flags`; yields (url, process).
    Its gRPC API listens on `process.grpc_target` (host:port) unless the
    flags say `--port=0`."""
    port, grpc_port = free_port(), free_port()
    command = [sys.executable, "-m", "keras_attention.serving",
               f"--rest_api_port={port}", f"--port={grpc_port}", *flags]
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=environment,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    process.grpc_target = f"127.0.0.1:{grpc_port}"
    try:
        wait_until_ready(url, process, model=model)
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stderr.close()


@pytest.fixture(scope="session")
def served(repository):
    """(REST url, gRPC host:port) of a server serving `repository`
    (batching off); either is None when a real TF Serving is named
    without it."""
    if EXTERNAL_URL is not None:
        yield EXTERNAL_URL.rstrip("/") or None, EXTERNAL_GRPC
        return
    flags = [f"--model_config_file={repository / 'models.config'}",
             "--monitoring_config_file="
             f"{REPO_ROOT / 'serving' / 'monitoring.config'}"]
    with running_server(*flags) as (url, process):
        for name in ("translator", "rnn_translator"):
            wait_until_ready(url, model=name)
        yield url, process.grpc_target


@pytest.fixture(scope="session")
def server_url(served):
    if served[0] is None:
        pytest.skip("TF_SERVING_GRPC is set without TF_SERVING_URL")
    return served[0]


@pytest.fixture(scope="session")
def grpc_target(served):
    if served[1] is None:
        pytest.skip("TF_SERVING_URL is set without TF_SERVING_GRPC")
    return served[1]
