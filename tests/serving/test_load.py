"""Our server under concurrent load, and version transitions under load.

- 32 clients send 2,000 predict requests of 1 to 8 rows to the numeric
  model, with batching off, on, and on with `allowed_batch_sizes` (so
  batches are padded): no errors, and every answer is exactly the
  model's. With batching on, 8 translator clients get the in-process
  translations and 16 :regress clients the exact regression values.
- A new version copied in while 4 clients keep asking: by rename, and by
  a plain `copytree` that the server sees half-done (the load fails and
  is retried when the folder changes). No request fails, the answers move
  to the new version and never back. A corrupt version ends with its
  error in the status while the old one keeps serving.

These tests start our server (skipped with TF_SERVING_URL set).
"""

import json
import os
import shutil
import threading
import time

import numpy as np
import pytest

from tests.serving.conftest import EXTERNAL_URL
from tests.serving.load_tools import PREDICT
from tests.serving.load_tools import Connections
from tests.serving.load_tools import answered_version
from tests.serving.load_tools import numeric_rows
from tests.serving.load_tools import post_all
from tests.serving.load_tools import serve
from tests.serving.load_tools import version_states
from tests.serving.load_tools import wait_for
from tests.serving.load_tools import write_batching_file
from tests.serving.model_repository import TEXTS

pytestmark = [
    pytest.mark.skipif(EXTERNAL_URL is not None,
                       reason="load tests are about our server"),
    # One xdist worker runs a module, so its servers start once.
    pytest.mark.xdist_group("serving"),
]

CLIENTS = 32
REQUESTS = 2000
BATCHING = dict(max_batch_size=32, batch_timeout_micros=2000,
                max_enqueued_batches=1000, num_batch_threads=2)


@pytest.fixture(scope="module")
def batching_server(repository, tmp_path_factory):
    """Both models, batching on (batches of up to 32 rows, 2 ms wait)."""
    parameters = write_batching_file(
        tmp_path_factory.mktemp("batching") / "batching.txt", **BATCHING)
    with serve(f"--model_config_file={repository / 'models.config'}",
               "--enable_batching",
               f"--batching_parameters_file={parameters}") as server:
        yield server


@pytest.fixture(scope="module")
def padding_server(repository, tmp_path_factory):
    """The numeric model (version 2), batches padded to 8, 16 or 32."""
    parameters = write_batching_file(
        tmp_path_factory.mktemp("padding") / "batching.txt",
        allowed_batch_sizes=(8, 16, 32), **BATCHING)
    with serve(f"--model_base_path={repository / 'numeric'}",
               "--model_name=numeric", "--enable_batching",
               f"--batching_parameters_file={parameters}") as server:
        yield server


def check_numeric_load(url, seed, server=None):
    """2,000 requests of 1..8 rows from 32 clients; every answer exact."""
    rng = np.random.default_rng(seed)
    documents = [{"instances": numeric_rows(rng, int(size))}
                 for size in rng.integers(1, 9, size=REQUESTS)]
    replies = post_all(url, PREDICT.format("numeric"), documents, CLIENTS)
    failed = [(status, body[:200]) for status, body in replies
              if status != 200]
    assert not failed, (f"{len(failed)} failed, e.g. {failed[:3]}\n"
                        f"{server.log_tail() if server else ''}")
    wrong = [index for index, (document, (_, body))
             in enumerate(zip(documents, replies))
             if answered_version(document["instances"],
                                 json.loads(body)["predictions"]) != 2]
    assert not wrong, f"{len(wrong)} answers differ from version 2's"


def test_concurrent_requests_with_batching_off(server_url):
    check_numeric_load(server_url, seed=1)


def test_concurrent_requests_with_batching_on(batching_server):
    check_numeric_load(batching_server.url, seed=2, server=batching_server)


def test_concurrent_requests_padded_to_allowed_batch_sizes(padding_server):
    check_numeric_load(padding_server.url, seed=3, server=padding_server)


def test_concurrent_translations_with_batching_on(batching_server,
                                                  repository):
    expected = json.loads((repository / "translations.json").read_text())
    rng = np.random.default_rng(4)
    documents = [{"instances": [TEXTS[i] for i in
                                rng.choice(len(TEXTS), int(size))]}
                 for size in rng.integers(1, 4, size=8 * 10)]
    replies = post_all(batching_server.url, PREDICT.format("translator"),
                       documents, clients=8)
    for document, (status, body) in zip(documents, replies):
        assert status == 200, body[:300]
        assert json.loads(body)["predictions"] == [
            expected[text] for text in document["instances"]]


def test_concurrent_regressions_with_batching_on(batching_server):
    """:regress requests (serialized tf.Examples) go through the batcher
    too; each answer is exactly Σx + version."""
    rng = np.random.default_rng(5)
    documents = [{"signature_name": "regress",
                  "examples": [{"x": row} for row in
                               numeric_rows(rng, int(size))]}
                 for size in rng.integers(1, 5, size=200)]
    replies = post_all(batching_server.url, "/v1/models/numeric:regress",
                       documents, clients=16)
    for document, (status, body) in zip(documents, replies):
        assert status == 200, body[:300]
        assert json.loads(body)["results"] == [
            sum(example["x"]) + 2 for example in document["examples"]]


# -- version transitions ---------------------------------------------------------

class SteadyLoad:
    """`clients` threads asking the numeric model until stopped; each
    answer is recorded as (thread, start time, version that answered),
    each failure as (status, body)."""

    def __init__(self, url, clients=4):
        self.answers = []
        self.failures = []
        self._connections = Connections(url)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._ask, args=(index,))
                         for index in range(clients)]

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *error):
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self._connections.close()

    def _ask(self, index):
        rng = np.random.default_rng(100 + index)
        while not self._stop.is_set():
            rows = numeric_rows(rng, int(rng.integers(1, 5)))
            started = time.monotonic()
            status, body = self._connections.post(PREDICT.format("numeric"),
                                                  {"instances": rows})
            if status != 200:
                self.failures.append((status, body[:300]))
                continue
            version = answered_version(rows, json.loads(body)["predictions"])
            self.answers.append((index, started, version))

    def count(self, version, since=0.0):
        return sum(1 for _, started, answered in self.answers
                   if answered == version and started >= since)


def states_are(url, expected):
    """Whether the status lists exactly these {version: state}s."""
    return {version: state for version, (state, _, _)
            in version_states(url).items()} == expected


def failed_to_load(url, version):
    """The (error_code, message) of `version` once it ended in error."""
    state, code, message = version_states(url).get(version, ("", "OK", ""))
    return (code, message) if state == "END" and code != "OK" else None


def copy_pausing_after_first_file(until):
    """A copy function for `shutil.copytree` that, after the first file,
    waits for `until()`: the server polls a half-copied folder."""
    copied = []

    def copy(source, destination):
        shutil.copy2(source, destination)
        if not copied:
            copied.append(destination)
            until()
        return destination

    return copy


@pytest.fixture(scope="module")
def version_three(tmp_path_factory):
    """Version 3 of the numeric model (the repository has 1 and 2)."""
    from tests.serving.numeric_model import export_numeric_model

    base = tmp_path_factory.mktemp("numeric-3")
    export_numeric_model(base, 3)
    return base / "3"


def test_version_transitions_under_load(repository, version_three, tmp_path):
    base = tmp_path / "numeric"
    shutil.copytree(repository / "numeric" / "1", base / "1")
    parameters = write_batching_file(tmp_path / "batching.txt", **BATCHING)
    flags = (f"--model_base_path={base}", "--model_name=numeric",
             "--file_system_poll_wait_seconds=0.2", "--enable_batching",
             f"--batching_parameters_file={parameters}")
    with serve(*flags) as server, SteadyLoad(server.url) as load:
        url = server.url
        wait_for(lambda: load.count(1) >= 20, what="answers of version 1")

        # A copy under a temporary name, then one rename.
        shutil.copytree(repository / "numeric" / "2", base / ".incoming-2")
        os.rename(base / ".incoming-2", base / "2")
        wait_for(lambda: states_are(url, {1: "END", 2: "AVAILABLE"}),
                 what="version 2 to replace version 1")
        moved_to_2 = time.monotonic()
        wait_for(lambda: load.count(2, since=moved_to_2) >= 20,
                 what="answers of version 2")

        # A plain copytree, seen half-done: the load fails, and is tried
        # again once the folder has changed.
        shutil.copytree(version_three, base / "3",
                        copy_function=copy_pausing_after_first_file(
                            lambda: wait_for(lambda: failed_to_load(url, 3),
                                             what="the half copy to fail")))
        wait_for(lambda: states_are(url, {1: "END", 2: "END",
                                          3: "AVAILABLE"}),
                 what="version 3 to load once copied")
        moved_to_3 = time.monotonic()
        wait_for(lambda: load.count(3, since=moved_to_3) >= 20,
                 what="answers of version 3")

        # A corrupt version: it ends in error, version 3 keeps serving.
        (base / ".incoming-4").mkdir()
        (base / ".incoming-4" / "saved_model.pb").write_bytes(b"garbage")
        os.rename(base / ".incoming-4", base / "4")
        code, message = wait_for(lambda: failed_to_load(url, 4),
                                 what="version 4 to fail")
        after_4 = time.monotonic()
        wait_for(lambda: load.count(3, since=after_4) >= 20,
                 what="answers after version 4 failed")
        final = version_states(url)

    assert not load.failures, (f"{len(load.failures)} requests failed, e.g."
                               f" {load.failures[:3]}\n{server.log_tail()}")
    assert {version for _, _, version in load.answers} == {1, 2, 3}
    for start, version in ((moved_to_2, 2), (moved_to_3, 3), (after_4, 3)):
        assert all(answered >= version for _, started, answered
                   in load.answers if started >= start)
    assert all(answered == 3 for _, started, answered in load.answers
               if started >= after_4)
    for thread in range(4):  # no client ever goes back to an older version
        versions = [v for index, _, v in load.answers if index == thread]
        assert versions == sorted(versions)
    assert {v: state for v, (state, _, _) in final.items()} == {
        1: "END", 2: "END", 3: "AVAILABLE", 4: "END"}
    assert code != "OK" and message
