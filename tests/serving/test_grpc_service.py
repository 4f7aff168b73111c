"""Our server's gRPC API under load and faults, its config reload, and
request shapes as TF Serving treats them.

- 32 clients, REST and gRPC mixed, send 2,000 predict requests of 1 to 8
  rows to the numeric model with batching off and on: no errors, every
  answer exactly the model's (the single-request answer).
- Malformed protos, wrong dtypes, unknown models and signatures,
  over-size messages, a full batching queue and a client deadline each
  get their status code, and the server keeps serving.
- HandleReloadConfigRequest adds and removes models without a restart
  while requests to the models that stay keep being answered.
- A TF1 SavedModel whose signature declares a tighter shape than its
  placeholder is answered for the shapes the placeholder accepts, over
  both APIs.

These tests start our server (skipped with TF_SERVING_URL/TF_SERVING_GRPC).
"""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.apis import model_management_pb2
from tensorflow_serving.apis import model_service_pb2_grpc
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_service_pb2_grpc
from tensorflow_serving.config import model_server_config_pb2

from keras_attention.serving import main as serving_main
from tests.serving.conftest import EXTERNAL_URL
from tests.serving.conftest import free_port
from tests.serving.load_tools import PREDICT
from tests.serving.load_tools import Connections
from tests.serving.load_tools import answered_version
from tests.serving.load_tools import numeric_rows
from tests.serving.load_tools import serve
from tests.serving.load_tools import write_batching_file

pytestmark = [
    pytest.mark.skipif(EXTERNAL_URL is not None,
                       reason="these tests are about our server"),
    pytest.mark.xdist_group("serving"),
]

CLIENTS = 32
REQUESTS = 2000
MAX_REQUEST_BYTES = 100_000
GOOD = [[1.0, 2.0, 3.0], [-0.5, 0.25, 4.0]]  # two rows: a full fault batch


def predict_request(x, model="numeric", signature_name=None, name="x"):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    if signature_name:
        request.model_spec.signature_name = signature_name
    request.inputs[name].CopyFrom(tf.make_tensor_proto(x))
    return request


class GrpcClients:
    """One channel per thread to `target`."""

    def __init__(self, target):
        self._target = target
        self._local = threading.local()
        self._channels = []
        self._lock = threading.Lock()

    def stub(self):
        stub = getattr(self._local, "stub", None)
        if stub is None:
            channel = grpc.insecure_channel(self._target)
            with self._lock:
                self._channels.append(channel)
            stub = self._local.stub = (
                prediction_service_pb2_grpc.PredictionServiceStub(channel))
        return stub

    def predict(self, rows):
        """(None, predictions) or (status code name, details)."""
        x = np.asarray(rows, np.float32)
        try:
            response = self.stub().Predict(predict_request(x), timeout=120)
        except grpc.RpcError as error:
            return error.code().name, error.details()
        return None, tf.make_ndarray(response.outputs["y"]).tolist()

    def close(self):
        with self._lock:
            for channel in self._channels:
                channel.close()


def check_mixed_load(url, target, seed, log=""):
    """2,000 requests of 1..8 rows from 32 clients, every other one over
    gRPC; each answer is exactly version 2's."""
    rng = np.random.default_rng(seed)
    requests = [numeric_rows(rng, int(size))
                for size in rng.integers(1, 9, size=REQUESTS)]
    connections, channels = Connections(url), GrpcClients(target)

    def ask(index):
        rows = requests[index]
        if index % 2:
            return channels.predict(rows)
        status, body = connections.post(PREDICT.format("numeric"),
                                        {"instances": rows})
        if status != 200:
            return str(status), body[:200]
        return None, json.loads(body)["predictions"]

    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(ask, range(REQUESTS)))
    finally:
        connections.close()
        channels.close()
    failed = [answer for answer in answers if answer[0] is not None]
    assert not failed, f"{len(failed)} failed, e.g. {failed[:3]}\n{log}"
    wrong = [index for index, (rows, (_, predictions))
             in enumerate(zip(requests, answers))
             if answered_version(rows, predictions) != 2]
    assert not wrong, f"{len(wrong)} answers differ from version 2's"


def test_mixed_rest_and_grpc_load_with_batching_off(served):
    url, target = served
    check_mixed_load(url, target, seed=11)


@pytest.fixture(scope="module")
def batching_server(repository, tmp_path_factory):
    parameters = write_batching_file(
        tmp_path_factory.mktemp("grpc-batching") / "batching.txt",
        max_batch_size=32, batch_timeout_micros=2000,
        max_enqueued_batches=1000, num_batch_threads=2)
    with serve(f"--model_base_path={repository / 'numeric'}",
               "--model_name=numeric", "--enable_batching",
               f"--batching_parameters_file={parameters}") as server:
        yield server


def test_mixed_rest_and_grpc_load_with_batching_on(batching_server):
    check_mixed_load(batching_server.url,
                     batching_server.process.grpc_target, seed=12,
                     log=batching_server.log_tail())


# -- faults ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fault_server(repository, tmp_path_factory):
    """The numeric model (version 2): batches of at most 2 rows, one batch
    thread, one enqueued batch and a 60 s batch timeout, so that a lone
    one-row request waits in the open batch (as in test_faults.py)."""
    parameters = write_batching_file(
        tmp_path_factory.mktemp("grpc-faults") / "batching.txt",
        max_batch_size=2, batch_timeout_micros=60_000_000,
        max_enqueued_batches=1, num_batch_threads=1)
    with serve(f"--model_base_path={repository / 'numeric'}",
               "--model_name=numeric", "--enable_batching",
               f"--batching_parameters_file={parameters}",
               f"--max_request_bytes={MAX_REQUEST_BYTES}") as server:
        with grpc.insecure_channel(server.process.grpc_target) as channel:
            server.channel = channel
            server.stub = prediction_service_pb2_grpc.PredictionServiceStub(
                channel)
            yield server


def assert_still_answers(server):
    response = server.stub.Predict(
        predict_request(np.asarray(GOOD, np.float32)), timeout=60)
    assert answered_version(GOOD, tf.make_ndarray(
        response.outputs["y"]).tolist()) == 2, server.log_tail()


def code_of(call, *args, **kwargs):
    with pytest.raises(grpc.RpcError) as caught:
        call(*args, **kwargs)
    return caught.value.code(), caught.value.details()


def test_a_message_that_is_not_a_proto(fault_server):
    raw = fault_server.channel.unary_unary(
        "/tensorflow.serving.PredictionService/Predict",
        request_serializer=None, response_deserializer=None)
    code, _ = code_of(raw, b"\xff\xff\xff\xff not a PredictRequest",
                      timeout=30)
    # A C++ gRPC server (TF Serving) answers it with INTERNAL.
    assert code == grpc.StatusCode.INTERNAL
    assert_still_answers(fault_server)


BAD = {
    "wrong dtype": (predict_request(np.asarray(GOOD, np.float64)),
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "Expects arg[0] to be float but double is provided"),
    "wrong shape": (predict_request(np.ones((2, 5), np.float32)),
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "Matrix size-incompatible"),
    "unknown model": (predict_request(np.asarray(GOOD, np.float32), "nope"),
                      grpc.StatusCode.NOT_FOUND,
                      "Servable not found for request: Latest(nope)"),
    "unknown signature": (
        predict_request(np.asarray(GOOD, np.float32), signature_name="nope"),
        grpc.StatusCode.FAILED_PRECONDITION,
        'Serving signature key "nope" not found.'),
    "more rows than max_batch_size": (
        predict_request(np.ones((3, 3), np.float32)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Task size 3 is larger than maximum input batch size 2"),
    "over-size message": (
        predict_request(np.ones((2, MAX_REQUEST_BYTES), np.float32)),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "Received message larger than max"),
}


@pytest.mark.parametrize("request_, code, message", list(BAD.values()),
                         ids=list(BAD))
def test_bad_request_gets_its_code_and_the_server_keeps_answering(
        fault_server, request_, code, message):
    got, details = code_of(fault_server.stub.Predict, request_, timeout=30)
    assert got == code, details
    assert message in details
    assert_still_answers(fault_server)


def test_deadline_and_full_queue(fault_server):
    """A lone row waits in the open batch past the client's 1 s deadline:
    DEADLINE_EXCEEDED. Then, with one row waiting in the open batch and
    no room for another batch, a two-row request is refused at once with
    TF's batch scheduler's UNAVAILABLE."""
    stub = fault_server.stub
    one_row = predict_request(np.asarray(GOOD[:1], np.float32))
    started = time.monotonic()
    assert code_of(stub.Predict, one_row, timeout=1)[0] == (
        grpc.StatusCode.DEADLINE_EXCEEDED)
    assert time.monotonic() - started < 30
    # The abandoned row still holds the open batch's first place; a row
    # that fills the batch runs it.
    filler = stub.Predict(predict_request(np.asarray([[4.0, 4.0, 4.0]],
                                                     np.float32)), timeout=60)
    assert answered_version([[4.0, 4.0, 4.0]], tf.make_ndarray(
        filler.outputs["y"]).tolist()) == 2
    waiting = stub.Predict.future(one_row, timeout=60)
    time.sleep(0.5)  # it is in the open batch now
    code, details = code_of(stub.Predict, predict_request(
        np.asarray(GOOD, np.float32)), timeout=30)
    assert code == grpc.StatusCode.UNAVAILABLE, details
    assert "The batch scheduling queue to which this task was submitted is " \
           "full" in details
    stub.Predict(predict_request(np.asarray([[0.0, 0.0, 0.0]], np.float32)),
                 timeout=60)  # fills the batch: both run
    assert answered_version(GOOD[:1], tf.make_ndarray(
        waiting.result().outputs["y"]).tolist()) == 2
    assert_still_answers(fault_server)


# -- HandleReloadConfigRequest ----------------------------------------------------

def model_config(repository, names):
    config = model_server_config_pb2.ModelServerConfig()
    for name in names:
        config.model_config_list.config.add(
            name=name, base_path=str(repository / "numeric"),
            model_platform="tensorflow")
    return config


def test_reload_config_swaps_models_while_requests_go_on(repository,
                                                         tmp_path):
    config_file = tmp_path / "models.config"
    config_file.write_text(str(model_config(repository, ["numeric"])))
    with serve(f"--model_config_file={config_file}") as server, \
            grpc.insecure_channel(server.process.grpc_target) as channel:
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        load = GrpcClients(server.process.grpc_target)
        stop, answers = threading.Event(), []

        def keep_asking():
            while not stop.is_set():
                answers.append(load.predict(GOOD))

        threads = [threading.Thread(target=keep_asking) for _ in range(4)]
        for thread in threads:
            thread.start()
        try:
            for names in (["numeric", "numeric_b"], ["numeric"]):
                request = model_management_pb2.ReloadConfigRequest(
                    config=model_config(repository, names))
                response = models.HandleReloadConfigRequest(request,
                                                            timeout=120)
                assert response.status.error_code == 0
                status = get_model_status_pb2.GetModelStatusRequest()
                status.model_spec.name = "numeric_b"
                if "numeric_b" in names:  # loaded when the reply comes
                    states = models.GetModelStatus(status, timeout=30)
                    assert [s.state for s in states.model_version_status] == [
                        get_model_status_pb2.ModelVersionStatus.AVAILABLE]
                    answer = prediction_service_pb2_grpc.PredictionServiceStub(
                        channel).Predict(predict_request(
                            np.asarray(GOOD, np.float32), "numeric_b"),
                            timeout=30)
                    assert answered_version(GOOD, tf.make_ndarray(
                        answer.outputs["y"]).tolist()) == 2
                else:
                    states = models.GetModelStatus(status, timeout=30)
                    assert [s.state for s in states.model_version_status] == [
                        get_model_status_pb2.ModelVersionStatus.END]
        finally:
            stop.set()
            for thread in threads:
                thread.join()
            load.close()
        failed = [answer for answer in answers if answer[0] is not None]
        assert answers and not failed, failed[:3]
        assert all(answered_version(GOOD, predictions) == 2
                   for _, predictions in answers)

        bad = model_management_pb2.ReloadConfigRequest()
        bad.config.custom_model_config.type_url = "x"
        assert code_of(models.HandleReloadConfigRequest, bad, timeout=30) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "ServerModelConfig type not supported by HandleReloadConfigRequest."
            " Only ModelConfigList is currently supported")
        twice = model_management_pb2.ReloadConfigRequest(
            config=model_config(repository, ["numeric", "numeric"]))
        code, details = code_of(models.HandleReloadConfigRequest, twice,
                                timeout=30)
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert details.endswith("Illegal to list model numeric multiple "
                                "times in config list")


# -- shapes: the model decides ------------------------------------------------------

def write_tf1_model(path):
    """A TF1 SavedModel: placeholder x of shape (?, ?), y = 2x, with a
    signature that declares x as (-1, 3), as TF1 exports often do."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        y = tf.identity(2.0 * x, name="y")
        x_info = tf.compat.v1.saved_model.build_tensor_info(x)
        x_info.tensor_shape.dim[1].size = 3
        signature = tf.compat.v1.saved_model.build_signature_def(
            {"x": x_info}, {"y": tf.compat.v1.saved_model.build_tensor_info(y)},
            "tensorflow/serving/predict")
        with tf.compat.v1.Session() as session:
            builder = tf.compat.v1.saved_model.Builder(str(path))
            builder.add_meta_graph_and_variables(
                session, ["serve"],
                signature_def_map={"serving_default": signature})
            builder.save()


def test_a_tf1_signature_narrower_than_its_placeholder(tmp_path):
    write_tf1_model(tmp_path / "tf1" / "1")
    x = np.arange(10, dtype=np.float32).reshape(2, 5)  # not (-1, 3)
    with serve(f"--model_base_path={tmp_path / 'tf1'}", "--model_name=tf1",
               model="tf1") as server:
        connections = Connections(server.url)
        try:
            status, body = connections.post(PREDICT.format("tf1"),
                                            {"instances": x.tolist()})
        finally:
            connections.close()
        assert status == 200, body
        np.testing.assert_array_equal(json.loads(body)["predictions"], 2 * x)
        with grpc.insecure_channel(server.process.grpc_target) as channel:
            response = prediction_service_pb2_grpc.PredictionServiceStub(
                channel).Predict(predict_request(x, "tf1"), timeout=60)
        np.testing.assert_array_equal(
            tf.make_ndarray(response.outputs["y"]), 2 * x)


# -- flags ----------------------------------------------------------------------------

def test_a_grpc_port_in_use_is_one_line(tmp_path, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = serving_main.main([f"--model_base_path={tmp_path}",
                                    f"--rest_api_port={free_port()}",
                                    f"--port={port}"])
    assert status == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"keras-attention: error: 127.0.0.1:{port} is already in "
                    "use (another server listens there): choose another "
                    "--port or --host")


@pytest.mark.parametrize("flags, message", [
    (["--port=8501", "--rest_api_port=8501"],
     "--port (gRPC) and --rest_api_port must differ, received: both 8501"),
    (["--port=70000"], "--port must be in [0, 65535], received: --port=70000"),
    (["--grpc_max_threads=0"],
     "--grpc_max_threads must be >= 1, received: --grpc_max_threads=0"),
    (["--grpc_channel_arguments=grpc.max_receive_message_length"],
     "--grpc_channel_arguments must be comma-separated key=value pairs"),
], ids=["same port", "port range", "threads", "channel arguments"])
def test_bad_grpc_flags_are_one_line(tmp_path, capsys, flags, message):
    status = serving_main.main([f"--model_base_path={tmp_path}", *flags])
    assert status == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("keras-attention: error: " + message)
