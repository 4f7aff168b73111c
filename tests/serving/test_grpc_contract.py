"""TF Serving's gRPC contract on the numeric model
(tests/serving/numeric_model.py): PredictionService and ModelService with
the messages of tensorflow-serving-api, TF Serving's status codes and
words, the answers' model_spec, and parity with the REST API.

Runs against our server, or a real TF Serving with TF_SERVING_GRPC
(see conftest.py).
"""

import json
import subprocess
import sys

import grpc
import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import json_format
from tensorflow_serving.apis import classification_pb2
from tensorflow_serving.apis import get_model_metadata_pb2
from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.apis import inference_pb2
from tensorflow_serving.apis import input_pb2
from tensorflow_serving.apis import model_service_pb2_grpc
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_service_pb2_grpc
from tensorflow_serving.apis import regression_pb2

from keras_attention.serving import Client
from keras_attention.serving import ServingClientError
from tests.serving import http
from tests.serving.conftest import free_port
from tests.serving.model_repository import TEXTS
from tests.serving.model_repository import TRANSLATIONS
from tests.serving.numeric_model import expected_y

X = np.array([[1.0, 2.0, 0.5], [-4.0, 0.5, 0.25], [0.0, 0.0, 0.0]],
             np.float32)
LATEST = 2
WHERE = [({}, LATEST), ({"version": 1}, 1), ({"version": 2}, 2),
         ({"label": "stable"}, 1), ({"label": "canary"}, 2)]
WHERE_IDS = ["latest", "version 1", "version 2", "stable", "canary"]
CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"


@pytest.fixture(scope="module")
def channel(grpc_target):
    with grpc.insecure_channel(grpc_target) as opened:
        yield opened


@pytest.fixture(scope="module")
def predictions(channel):
    return prediction_service_pb2_grpc.PredictionServiceStub(channel)


@pytest.fixture(scope="module")
def models(channel):
    return model_service_pb2_grpc.ModelServiceStub(channel)


def spec(request, model="numeric", signature_name=None, version=None,
         label=None):
    request.model_spec.name = model
    if signature_name is not None:
        request.model_spec.signature_name = signature_name
    if version is not None:
        request.model_spec.version.value = version
    if label is not None:
        request.model_spec.version_label = label
    return request


def predict_request(inputs, **where):
    request = spec(predict_pb2.PredictRequest(), **where)
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    return request


def examples(rows):
    return [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}))
        for row in rows]


def example_input(rows):
    return input_pb2.Input(example_list=input_pb2.ExampleList(
        examples=examples(rows)))


def failure(call, request):
    """(code, details) of a call that must fail."""
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=60)
    return caught.value.code(), caught.value.details()


def outputs(response):
    return {name: tf.make_ndarray(proto)
            for name, proto in response.outputs.items()}


# -- Predict -------------------------------------------------------------------

@pytest.mark.parametrize("where, version", WHERE, ids=WHERE_IDS)
def test_predict_answers_and_names_the_version(predictions, where, version):
    response = predictions.Predict(predict_request({"x": X}, **where),
                                   timeout=60)
    np.testing.assert_array_equal(outputs(response)["y"],
                                  expected_y(X, version))
    assert response.model_spec.name == "numeric"
    assert response.model_spec.version.value == version
    assert response.model_spec.signature_name == "serving_default"


def test_outputs_are_written_in_the_typed_fields(predictions):
    response = predictions.Predict(predict_request({"x": X}), timeout=60)
    proto = response.outputs["y"]
    assert proto.dtype == tf.float32.as_datatype_enum
    assert [d.size for d in proto.tensor_shape.dim] == [3, 2]
    assert not proto.tensor_content  # AsProtoField, as TF Serving
    np.testing.assert_array_equal(np.array(proto.float_val, np.float32),
                                  expected_y(X, LATEST).reshape(-1))


def test_an_empty_signature_name_is_the_default(predictions):
    request = predict_request({"x": X}, signature_name="")
    response = predictions.Predict(request, timeout=60)
    assert response.model_spec.signature_name == "serving_default"


def test_output_filter_returns_only_the_outputs_named(predictions):
    request = predict_request({"x": X}, signature_name="two_outputs")
    request.output_filter.append("total")
    answer = outputs(predictions.Predict(request, timeout=60))
    assert set(answer) == {"total"}
    np.testing.assert_array_equal(answer["total"], X.sum(axis=1) + LATEST)
    request.output_filter[:] = []
    assert set(outputs(predictions.Predict(request, timeout=60))) == {
        "y", "total"}


def test_every_dtype_of_the_mixed_signature(predictions):
    words = np.array(["a", "Ünï", ""], dtype=object)
    request = predict_request({
        "count": np.array([1, -2, 2**40], np.int64), "word": words,
        "flag": np.array([True, False, True])}, signature_name="mixed")
    answer = outputs(predictions.Predict(request, timeout=60))
    np.testing.assert_array_equal(answer["count_plus"],
                                  np.array([3, 0, 2**40 + 2], np.int64))
    assert answer["word_bytes"].tolist() == [b"a", "Ünï".encode(), b""]
    np.testing.assert_array_equal(answer["word_length"], [1, 5, 0])
    np.testing.assert_array_equal(answer["not_flag"], [False, True, False])
    assert answer["half"].dtype == np.float64


def test_a_shape_the_signature_accepts_is_not_refused(predictions):
    """`sequence` declares (-1, -1): a (2, 5) request is the model's to
    answer (see also test_grpc_service's TF1 model)."""
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    request = predict_request({"x": x}, signature_name="sequence")
    np.testing.assert_array_equal(
        outputs(predictions.Predict(request, timeout=60))["y"], 2 * x)


PREDICT_ERRORS = [
    ("unknown model", {"x": X}, {"model": "nope"}, "NOT_FOUND",
     "Servable not found for request: Latest(nope)"),
    ("unknown version", {"x": X}, {"version": 7}, "NOT_FOUND",
     "Servable not found for request: Specific(numeric, 7)"),
    ("unknown label", {"x": X}, {"label": "beta"}, "INVALID_ARGUMENT",
     "Unrecognized servable version label: beta"),
    ("unknown signature", {"x": X}, {"signature_name": "nope"},
     "FAILED_PRECONDITION", 'Serving signature key "nope" not found.'),
    ("no input", {}, {}, "INVALID_ARGUMENT",
     "input size does not match signature: 0!=1 len({}) != len({x}). Sent "
     "extra: {}. Missing but required: {x}."),
    ("an extra input", {"x": X, "z": X}, {}, "INVALID_ARGUMENT",
     "input size does not match signature: 2!=1 len({x,z}) != len({x}). "
     "Sent extra: {z}. Missing but required: {}."),
    ("a wrong input name", {"z": X}, {}, "INVALID_ARGUMENT",
     "Signature input alias: x(feed name: serving_default_x:0) not found in "
     "request and no default value provided. Inputs expected to be in the "
     "request {z}, or default input alias set: "),
    ("a wrong dtype", {"x": X.astype(np.int32)}, {}, "INVALID_ARGUMENT",
     "Expects arg[0] to be float but int32 is provided"),
]


@pytest.mark.parametrize("inputs, where, code, message",
                         [case[1:] for case in PREDICT_ERRORS],
                         ids=[case[0] for case in PREDICT_ERRORS])
def test_predict_errors(predictions, inputs, where, code, message):
    assert failure(predictions.Predict, predict_request(inputs, **where)) == (
        getattr(grpc.StatusCode, code), message)


def test_output_filter_errors(predictions):
    request = predict_request({"x": X}, signature_name="two_outputs")
    request.output_filter.append("nope")
    assert failure(predictions.Predict, request) == (
        grpc.StatusCode.INVALID_ARGUMENT, "output tensor alias not found in "
        "signature: nope Outputs expected to be in the set {total,y}.")
    request.output_filter[:] = ["y", "y"]
    assert failure(predictions.Predict, request) == (
        grpc.StatusCode.INVALID_ARGUMENT, "duplicate output tensor alias: y")


def test_a_tensor_proto_that_is_not_a_tensor(predictions):
    request = predict_request({})
    proto = request.inputs["x"]
    proto.dtype = tf.float32.as_datatype_enum
    proto.tensor_shape.dim.add(size=1)
    proto.tensor_shape.dim.add(size=3)
    proto.float_val.extend([1.0, 2.0, 3.0, 4.0])  # 4 values for 3 elements
    assert failure(predictions.Predict, request) == (
        grpc.StatusCode.INVALID_ARGUMENT, "tensor parsing error: x")


def test_a_shape_the_model_refuses_is_invalid_argument(predictions):
    x = np.ones((2, 4), np.float32)  # (2, 4) @ (3, 2) cannot be
    code, message = failure(predictions.Predict, predict_request({"x": x}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "Matrix size-incompatible: In[0]: [2,4], In[1]: [3,2]" in message


# -- Classify, Regress, MultiInference -------------------------------------------

def test_classify(predictions):
    request = spec(classification_pb2.ClassificationRequest(),
                   signature_name="classify", version=1)
    request.input.CopyFrom(example_input(X.tolist()))
    response = predictions.Classify(request, timeout=60)
    totals = X.sum(axis=1) + 1
    for row, total in zip(response.result.classifications, totals):
        assert [c.label for c in row.classes] == ["low", "high"]
        high = 1 / (1 + np.exp(-total))
        np.testing.assert_allclose([c.score for c in row.classes],
                                   [1 - high, high], rtol=1e-5, atol=1e-7)
    assert (response.model_spec.name, response.model_spec.signature_name,
            response.model_spec.version.value) == ("numeric", "classify", 1)


def test_regress_with_a_context(predictions):
    """The context's feature is overridden by each example's own."""
    request = spec(regression_pb2.RegressionRequest(),
                   signature_name="regress")
    context = examples([[100.0, 100.0, 100.0]])[0]
    request.input.example_list_with_context.context.CopyFrom(context)
    request.input.example_list_with_context.examples.extend(
        examples(X.tolist()))
    response = predictions.Regress(request, timeout=60)
    np.testing.assert_array_equal(
        np.array([r.value for r in response.result.regressions], np.float32),
        X.sum(axis=1) + LATEST)
    assert response.model_spec.signature_name == "regress"


EXAMPLE_ERRORS = [
    ("Classify", "serving_default", X.tolist(), "INVALID_ARGUMENT",
     "No classification inputs found in SignatureDef: serving_default"),
    ("Classify", "nope", X.tolist(), "INVALID_ARGUMENT",
     "No signature was found with the name: nope"),
    ("Regress", "classify", X.tolist(), "INVALID_ARGUMENT",
     "Expected one output Tensor."),
    ("Classify", "classify", [], "INVALID_ARGUMENT", "Input is empty."),
]


@pytest.mark.parametrize("method, signature_name, rows, code, message",
                         EXAMPLE_ERRORS,
                         ids=[" ".join(case[:2]) + (" empty" if not case[2]
                                                    else "")
                              for case in EXAMPLE_ERRORS])
def test_classify_and_regress_errors(predictions, method, signature_name,
                                     rows, code, message):
    request_type = (classification_pb2.ClassificationRequest
                    if method == "Classify"
                    else regression_pb2.RegressionRequest)
    request = spec(request_type(), signature_name=signature_name)
    request.input.CopyFrom(example_input(rows))
    assert failure(getattr(predictions, method), request) == (
        getattr(grpc.StatusCode, code), message)


def multi_inference(tasks, rows=None):
    request = inference_pb2.MultiInferenceRequest()
    for model, signature_name, method in tasks:
        task = request.tasks.add(method_name=method)
        task.model_spec.name = model
        task.model_spec.signature_name = signature_name
    request.input.CopyFrom(example_input(X.tolist() if rows is None
                                         else rows))
    return request


def test_multi_inference_runs_every_task_on_the_same_examples(predictions):
    request = multi_inference([("numeric", "classify", CLASSIFY),
                               ("numeric", "regress", REGRESS)])
    response = predictions.MultiInference(request, timeout=60)
    classified, regressed = response.results
    totals = X.sum(axis=1) + LATEST
    np.testing.assert_allclose(
        [row.classes[1].score for row in
         classified.classification_result.classifications],
        1 / (1 + np.exp(-totals)), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(
        np.array([r.value for r in
                  regressed.regression_result.regressions], np.float32),
        totals)
    assert [(r.model_spec.signature_name, r.model_spec.version.value)
            for r in response.results] == [("classify", LATEST),
                                           ("regress", LATEST)]


MULTI_ERRORS = [
    ("duplicate", [("numeric", "classify", CLASSIFY),
                   ("numeric", "classify", CLASSIFY)], "INVALID_ARGUMENT",
     "Duplicate evaluation of signature: classify"),
    ("two models", [("numeric", "classify", CLASSIFY),
                    ("translator", "regress", REGRESS)], "INVALID_ARGUMENT",
     "All ModelSpecs in a MultiInferenceRequest must access the same model "
     "name."),
    ("unknown signature", [("numeric", "nope", CLASSIFY)],
     "INVALID_ARGUMENT", "Requested signature not found in model graph: nope"),
    ("a predict task", [("numeric", "serving_default",
                         "tensorflow/serving/predict")], "UNIMPLEMENTED",
     "Unsupported signature method_name: tensorflow/serving/predict"),
]


@pytest.mark.parametrize("tasks, code, message",
                         [case[1:] for case in MULTI_ERRORS],
                         ids=[case[0] for case in MULTI_ERRORS])
def test_multi_inference_errors(predictions, tasks, code, message):
    assert failure(predictions.MultiInference, multi_inference(tasks)) == (
        getattr(grpc.StatusCode, code), message)


# -- metadata and status -----------------------------------------------------------

def metadata_request(fields=("signature_def",), **where):
    return spec(get_model_metadata_pb2.GetModelMetadataRequest(
        metadata_field=list(fields)), **where)


def test_metadata_is_the_rest_metadata(predictions, server_url):
    response = predictions.GetModelMetadata(metadata_request(version=1),
                                            timeout=60)
    assert (response.model_spec.name, response.model_spec.version.value,
            response.model_spec.signature_name) == ("numeric", 1, "")
    signatures = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signatures)
    as_dict = json_format.MessageToDict(
        signatures, preserving_proto_field_name=True,
        always_print_fields_with_no_presence=True)
    rest = http.get(http.model_url(server_url, "numeric", 1) + "/metadata")
    assert as_dict == rest.json["metadata"]["signature_def"]


@pytest.mark.parametrize("fields, message", [
    ((), "GetModelMetadataRequest must specify at least one metadata_field"),
    (("signature_def", "graph"), "Metadata field graph is not supported"),
], ids=["no field", "unknown field"])
def test_metadata_errors(predictions, fields, message):
    assert failure(predictions.GetModelMetadata,
                   metadata_request(fields)) == (
        grpc.StatusCode.INVALID_ARGUMENT, message)
    request = get_model_metadata_pb2.GetModelMetadataRequest(
        metadata_field=["signature_def"])
    assert failure(predictions.GetModelMetadata, request) == (
        grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec")


def test_status_is_the_rest_status(models, server_url):
    for version in (None, 1):
        request = spec(get_model_status_pb2.GetModelStatusRequest(),
                       version=version)
        response = models.GetModelStatus(request, timeout=60)
        as_dict = json_format.MessageToDict(
            response, preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True)
        rest = http.get(http.model_url(server_url, "numeric", version))
        assert as_dict == rest.json
    assert [s.state for s in response.model_version_status] == [
        get_model_status_pb2.ModelVersionStatus.AVAILABLE]


def test_status_errors(models):
    request = spec(get_model_status_pb2.GetModelStatusRequest(), version=7)
    assert failure(models.GetModelStatus, request) == (
        grpc.StatusCode.NOT_FOUND, "Could not find version 7 of model numeric")
    request = spec(get_model_status_pb2.GetModelStatusRequest(), model="nope")
    assert failure(models.GetModelStatus, request) == (
        grpc.StatusCode.NOT_FOUND, "Could not find any versions of model nope")
    assert failure(models.GetModelStatus,
                   get_model_status_pb2.GetModelStatusRequest()) == (
        grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec")


# -- the client: the same answers over either API ---------------------------------

@pytest.fixture(scope="module")
def clients(grpc_target, server_url):
    return (Client(server_url, "numeric", timeout=60),
            Client(f"grpc://{grpc_target}", "numeric", timeout=60))


@pytest.mark.parametrize("call", [
    lambda c: c.predict(instances=X.tolist()),
    lambda c: c.predict(inputs=X.tolist(), version=1),
    lambda c: c.predict(instances=[{"x": row} for row in X.tolist()],
                        label="stable"),
    lambda c: c.predict(inputs={"x": X.tolist()},
                        signature_name="two_outputs"),
    lambda c: c.predict(instances=[{"count": 3, "word": "Ünï", "flag": True}],
                        signature_name="mixed"),
    lambda c: c.classify([{"x": row} for row in X.tolist()],
                         signature_name="classify"),
    lambda c: c.regress([{"x": row} for row in X.tolist()],
                        context={"x": [9.0, 9.0, 9.0]},
                        signature_name="regress", version=1),
    lambda c: c.status(),
    lambda c: c.metadata(version=2),
], ids=["row", "columnar version", "row objects label", "two outputs",
        "mixed", "classify", "regress", "status", "metadata"])
def test_the_grpc_client_answers_as_the_rest_client(clients, call):
    rest, over_grpc = clients
    assert call(over_grpc) == call(rest)


def test_the_grpc_client_reports_the_servers_error(clients):
    _, over_grpc = clients
    with pytest.raises(ServingClientError) as caught:
        over_grpc.predict(instances=X.tolist(), version=7)
    assert caught.value.code == "NOT_FOUND"
    assert str(caught.value).endswith(
        ": NOT_FOUND: Servable not found for request: Specific(numeric, 7)")


# -- the translators ----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(TRANSLATIONS))
def test_a_grpc_translation_is_the_rest_and_the_in_process_one(
        grpc_target, server_url, repository, name):
    expected = json.loads((repository / TRANSLATIONS[name]).read_text("utf-8"))
    over_grpc = Client(f"grpc://{grpc_target}", name, timeout=120)
    over_rest = Client(server_url, name, timeout=120)
    translations = over_grpc.translate(TEXTS)
    assert translations == [expected[text] for text in TEXTS]
    assert translations == over_rest.translate(TEXTS)
    details = over_grpc.predict(instances=TEXTS[:3],
                                signature_name="translate_with_attention")
    assert details == over_rest.predict(
        instances=TEXTS[:3], signature_name="translate_with_attention")


def test_a_raw_string_tensor_to_the_translator(predictions, repository):
    expected = json.loads((repository / "translations.json").read_text())
    request = predict_request({"text": np.array(TEXTS, dtype=object)},
                              model="translator")
    answer = outputs(predictions.Predict(request, timeout=120))
    (name,) = answer  # the serving_default signature has one output
    assert [t.decode("utf-8") for t in answer[name]] == [
        expected[text] for text in TEXTS]


def test_grpc_latency_is_recorded_with_its_entrypoint(predictions,
                                                      server_url):
    predictions.Predict(predict_request({"x": X}), timeout=60)
    reply = http.get(f"{server_url}/monitoring/prometheus/metrics")
    if reply.status != 200:
        pytest.skip("the server does not serve Prometheus metrics")
    assert (':tensorflow:serving:request_latency_count{model_name="numeric",'
            'API="predict",entrypoint="GRPC"}') in reply.text


# -- the command line -----------------------------------------------------------

def test_translate_with_a_grpc_url(grpc_target, repository, tmp_path):
    expected = json.loads((repository / "translations.json").read_text())
    result = subprocess.run(
        [sys.executable, "-m", "keras_attention", "translate", "--url",
         f"grpc://{grpc_target}", "--model-name", "translator", TEXTS[0],
         TEXTS[3]], cwd=tmp_path, capture_output=True, text=True,
        timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [expected[TEXTS[0]],
                                          expected[TEXTS[3]]]


def test_a_closed_grpc_port_is_one_line(tmp_path):
    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "keras_attention", "translate", "--url",
         f"grpc://127.0.0.1:{port}", "--timeout", "5", "A dog runs."],
        cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"keras-attention: error: grpc://127.0.0.1:{port}"
                           " GetModelMetadata: no answer")


def test_the_serving_guides_grpc_snippet(grpc_target, server_url, capsys):
    """docs/serving.md's request with TF Serving's own stubs."""
    from tests.test_readme import ROOT
    from tests.test_readme import python_blocks

    guide = ROOT / "docs" / "serving.md"
    (block,) = [block for block in python_blocks(guide)
                if 'insecure_channel("localhost:8500")' in block]
    exec(compile(block.replace("localhost:8500", grpc_target), str(guide),
                 "exec"), {})  # noqa: S102
    (expected,) = Client(server_url, "translator").translate(["A dog runs."])
    # The snippet prints the array of translations (bytes).
    assert repr(expected.encode()) in capsys.readouterr().out
