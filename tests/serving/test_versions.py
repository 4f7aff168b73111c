"""`ModelVersions` with a fake loader over a folder of integer-named
version folders: the version policies, availability-preserving
transitions, failed loads and their retry, labels and the status
messages of TF Serving."""

import threading

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf.message import DecodeError

from keras_attention.serving.config import BatchingParameters
from keras_attention.serving.config import ModelSpec
from keras_attention.serving.core import ModelServer
from keras_attention.serving.core import ServerOptions
from keras_attention.serving.errors import ServingError
from keras_attention.serving.versions import ModelVersions
from tests.serving.load_tools import wait_for

WAIT = 10


class FakeLoader:
    """`load(path, version)` and `on_unload(servable)` that record their
    calls in order. Versions listed in `failures` raise that error."""

    def __init__(self):
        self.events = []
        self.failures = {}
        self.gates = {}  # version -> Event that its load waits for
        self.loading = threading.Event()

    def load(self, path, version):
        self.events.append(("load", version))
        if version in self.gates:
            self.loading.set()
            assert self.gates[version].wait(WAIT)
        if version in self.failures:
            raise self.failures[version]
        return FakeServable(path, version)

    def unload(self, servable):
        self.events.append(("unload", servable.version))


class FakeServable:
    def __init__(self, path, version):
        self.path = path
        self.version = version
        self.signatures = {"serving_default": FakeSignature(version)}


class FakeSignature:
    name = "serving_default"

    def __init__(self, version):
        self.version = version

    def __call__(self, inputs):
        return {"y": inputs["x"] + self.version}


@pytest.fixture
def loader():
    return FakeLoader()


@pytest.fixture
def base(tmp_path):
    """An empty base path; `add(base, *versions)` writes version folders."""
    path = tmp_path / "model"
    path.mkdir()
    return path


def add(base, *versions):
    for version in versions:
        folder = base / str(version)
        folder.mkdir()
        (folder / "saved_model.pb").write_bytes(b"model %d" % version)


def make(base, loader, policy=("latest", 1), labels=None):
    spec = ModelSpec("m", str(base), policy, labels or {})
    return ModelVersions(spec, loader.load, on_unload=loader.unload)


def states(model):
    return {int(entry["version"]): entry["state"] for entry in model.status()}


def error_of(call):
    with pytest.raises(ServingError) as caught:
        call()
    return caught.value.code, caught.value.message


@pytest.mark.parametrize("policy, served", [
    (("latest", 1), [3]),
    (("latest", 2), [2, 3]),
    (("all", None), [1, 2, 3]),
    (("specific", (1, 3, 7)), [1, 3]),  # 7 is not on disk: skipped
])
def test_policy_chooses_the_versions_to_load(base, loader, policy, served):
    add(base, 1, 2, 3)
    model = make(base, loader, policy)
    model.poll()
    assert loader.events == [("load", v) for v in served]
    assert states(model) == dict.fromkeys(served, "AVAILABLE")
    assert model.servable().version == max(served)


def test_only_ascii_integer_folders_are_versions(base, loader):
    add(base, 4)
    for name in ("tmp-5", "6.0", "²", "-7", "99999999999999999999"):
        (base / name).mkdir()
    (base / "8").write_text("a file, not a folder")
    model = make(base, loader, ("all", None))
    model.poll()
    assert states(model) == {4: "AVAILABLE"}


def test_new_version_is_loaded_before_the_old_one_is_unloaded(base, loader):
    add(base, 1)
    model = make(base, loader)
    model.poll()
    add(base, 2)
    model.poll()
    assert loader.events == [("load", 1), ("load", 2), ("unload", 1)]
    assert model.status() == [  # newest first, as TF Serving lists them
        {"version": "2", "state": "AVAILABLE",
         "status": {"error_code": "OK", "error_message": ""}},
        {"version": "1", "state": "END",
         "status": {"error_code": "OK", "error_message": ""}},
    ]
    assert model.servable().version == 2


def test_old_version_serves_while_the_new_one_loads(base, loader):
    add(base, 1)
    model = make(base, loader)
    model.poll()
    add(base, 2)
    loader.gates[2] = threading.Event()
    poller = threading.Thread(target=model.poll)
    poller.start()
    try:
        assert loader.loading.wait(WAIT)
        assert states(model) == {1: "AVAILABLE", 2: "LOADING"}
        assert model.servable().version == 1
    finally:
        loader.gates[2].set()
        poller.join(WAIT)
    assert states(model) == {1: "END", 2: "AVAILABLE"}


@pytest.mark.parametrize("error, code", [
    (ValueError("not a SavedModel"), "UNKNOWN"),
    (FileNotFoundError("saved_model.pb: no such file"), "NOT_FOUND"),
    (tf.errors.InvalidArgumentError(None, None, "bad graph"),
     "INVALID_ARGUMENT"),
    (DecodeError("Error parsing message"), "DATA_LOSS"),
])
def test_failed_load_ends_with_its_error_and_the_old_version_serves(
        base, loader, error, code):
    add(base, 1)
    model = make(base, loader)
    model.poll()
    add(base, 2)
    loader.failures[2] = error
    model.poll()
    assert model.status() == [
        {"version": "2", "state": "END",
         "status": {"error_code": code, "error_message": str(error)}},
        {"version": "1", "state": "AVAILABLE",
         "status": {"error_code": "OK", "error_message": ""}},
    ]
    assert model.servable().version == 1
    assert ("unload", 1) not in loader.events


def test_failed_version_is_retried_only_when_its_folder_changes(base, loader):
    add(base, 1)
    model = make(base, loader)
    model.poll()
    add(base, 2)
    loader.failures[2] = OSError("variables/variables.index not found")
    model.poll()
    model.poll()  # nothing changed: no second attempt
    assert loader.events.count(("load", 2)) == 1

    del loader.failures[2]
    (base / "2" / "variables.index").write_bytes(b"the rest of the copy")
    model.poll()
    assert loader.events[-2:] == [("load", 2), ("unload", 1)]
    assert states(model) == {1: "END", 2: "AVAILABLE"}


def test_first_version_failing_leaves_nothing_to_serve(base, loader):
    add(base, 1)
    loader.failures[1] = ValueError("broken")
    model = make(base, loader)
    model.poll()
    assert model.status()[0]["state"] == "END"
    assert model.status()[0]["status"]["error_code"] == "UNKNOWN"
    assert error_of(model.servable) == (
        "NOT_FOUND", "Servable not found for request: Latest(m)")


def test_version_removed_from_disk_is_unloaded(base, loader):
    add(base, 1, 2)
    model = make(base, loader, ("all", None))
    model.poll()
    (base / "2" / "saved_model.pb").unlink()
    (base / "2").rmdir()
    model.poll()
    assert states(model) == {1: "AVAILABLE", 2: "END"}
    assert model.servable().version == 1


def test_missing_base_path_changes_nothing_but_an_empty_one_unloads(
        base, loader):
    add(base, 1)
    model = make(base, loader)
    model.poll()
    moved = base.rename(base.with_name("elsewhere"))
    model.poll()  # e.g. a storage mount gone for a moment
    assert states(model) == {1: "AVAILABLE"}
    base.mkdir()
    model.poll()  # no version folders: nothing is aspired
    assert states(model) == {1: "END"}
    assert moved.exists()


def test_older_version_comes_back_when_the_newest_is_removed(base, loader):
    add(base, 1, 2)
    model = make(base, loader)
    model.poll()
    (base / "2" / "saved_model.pb").unlink()
    (base / "2").rmdir()
    model.poll()
    assert loader.events == [("load", 2), ("load", 1), ("unload", 2)]
    assert states(model) == {1: "AVAILABLE", 2: "END"}


def test_policy_update_applies_at_the_next_poll(base, loader):
    add(base, 1, 2)
    model = make(base, loader)
    model.poll()
    model.update(ModelSpec("m", str(base), ("all", None)))
    model.poll()
    assert states(model) == {1: "AVAILABLE", 2: "AVAILABLE"}


def test_unload_all(base, loader):
    add(base, 1, 2)
    model = make(base, loader, ("all", None))
    model.poll()
    model.unload_all()
    assert states(model) == {1: "END", 2: "END"}
    assert sorted(loader.events[-2:]) == [("unload", 1), ("unload", 2)]


def test_labels_resolve_at_request_time(base, loader):
    add(base, 1, 2)
    model = make(base, loader, ("all", None), {"stable": 1, "canary": 2,
                                                "gone": 5})
    model.poll()
    assert model.servable(label="stable").version == 1
    assert model.servable(label="canary").version == 2
    assert error_of(lambda: model.servable(label="beta")) == (
        "INVALID_ARGUMENT", "Unrecognized servable version label: beta")
    assert error_of(lambda: model.servable(label="gone")) == (
        "NOT_FOUND", "Servable not found for request: Specific(m, 5)")


def test_status_and_servable_messages_for_unknown_versions(base, loader):
    model = make(base, loader)
    model.poll()  # an empty base path
    assert error_of(model.status) == (
        "NOT_FOUND", "Could not find any versions of model m")
    add(base, 3)
    model.poll()
    assert error_of(lambda: model.status(50)) == (
        "NOT_FOUND", "Could not find version 50 of model m")
    assert model.status(3)[0]["state"] == "AVAILABLE"
    assert error_of(lambda: model.servable(version=50)) == (
        "NOT_FOUND", "Servable not found for request: Specific(m, 50)")
    assert model.servable(version=3).version == 3


# -- the server's poller and its batchers ----------------------------------------

@pytest.fixture
def make_server(loader):
    """ModelServers over the fake loader; closed after the test."""
    servers = []

    def make(**options):
        server = ModelServer(ServerOptions(**options), load=loader.load)
        servers.append(server)
        server.poll()
        server.start_polling()
        return server

    yield make
    for server in servers:
        server.close()


def server_states(server, name="m"):
    try:
        return states(server.models[name])
    except (KeyError, ServingError):
        return {}


def test_server_polls_the_base_path(base, make_server):
    server = make_server(models=[ModelSpec("m", str(base))],
                         file_system_poll_wait_seconds=0.05)
    add(base, 1)
    wait_for(lambda: server_states(server) == {1: "AVAILABLE"})
    add(base, 2)
    wait_for(lambda: server_states(server) == {1: "END", 2: "AVAILABLE"})


def test_without_file_system_polling_a_config_change_still_loads(
        base, tmp_path, make_server):
    other = tmp_path / "other"
    other.mkdir()
    add(other, 7)
    config = tmp_path / "models.config"
    entry = 'config {{ name: "{}" base_path: "{}" }}'
    config.write_text(f"model_config_list {{ {entry.format('m', base)} }}")
    add(base, 1)
    server = make_server(models=[ModelSpec("m", str(base))],
                         file_system_poll_wait_seconds=0,
                         model_config_file=str(config),
                         model_config_file_poll_wait_seconds=0.05)
    assert server_states(server) == {1: "AVAILABLE"}  # read at start
    config.write_text(f"model_config_list {{ {entry.format('m', base)} "
                      f"{entry.format('n', other)} }}")
    wait_for(lambda: server_states(server, "n") == {7: "AVAILABLE"})


def test_request_holding_an_unloaded_version_still_runs(base, make_server):
    """A request that found version 1 just before it was unloaded runs on
    it without batching; version 1's batcher does not outlive it."""
    add(base, 1)
    server = make_server(
        models=[ModelSpec("m", str(base))],
        batching=BatchingParameters(num_batch_threads=1),
        file_system_poll_wait_seconds=60)  # polled by hand here
    old = server.models["m"].servable()
    signature = old.signatures["serving_default"]
    inputs = {"x": np.zeros((2, 3))}
    np.testing.assert_array_equal(
        server._submit(old, signature, inputs).result(WAIT)["y"],
        np.ones((2, 3)))
    add(base, 2)
    server.poll()  # unloads version 1 and closes its batcher

    np.testing.assert_array_equal(
        server._submit(old, signature, inputs).result(WAIT)["y"],
        np.ones((2, 3)))
    wait_for(lambda: not [thread for thread in threading.enumerate()
                          if thread.name.startswith("batch-1-")],
             timeout=WAIT, what="version 1's batch threads to end")
