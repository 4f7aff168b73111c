"""Model warm-up (`keras_attention.serving.warmup`) as TF Serving does it:
the file's round trip, the replay of every record on a real SavedModel
(the numeric test model, with spies on its signatures), TF Serving's
errors, and the translator export's warm-up file."""

import dataclasses
import types

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2
from tensorflow_serving.apis import inference_pb2
from tensorflow_serving.apis import input_pb2
from tensorflow_serving.apis import prediction_log_pb2
from tensorflow_serving.apis import regression_pb2

from keras_attention.export.warmup_requests import predict_request
from keras_attention.export.warmup_requests import write_warmup_requests
from keras_attention.serving import warmup
from keras_attention.serving.servable import CLASSIFY
from keras_attention.serving.servable import REGRESS
from keras_attention.serving.servable import Servable
from keras_attention.serving.warmup import read_warmup_requests
from keras_attention.serving.warmup import warm_up
from tests.serving.numeric_model import export_numeric_model

X = np.array([[0.5, -1.0, 2.0], [1.0, 2.0, 3.0]], np.float32)


@pytest.fixture(scope="module")
def numeric(tmp_path_factory):
    """The numeric model, version 7, loaded once."""
    path = export_numeric_model(tmp_path_factory.mktemp("numeric"), 7)
    return Servable(path, 7)


@pytest.fixture
def spied(numeric, tmp_path):
    """The numeric servable at a fresh path (for its warm-up file) whose
    signatures record the NumPy value of every input they are called with."""
    calls = []

    def spy(name, function):
        def call(**tensors):
            calls.append((name, {k: v.numpy() for k, v in tensors.items()}))
            return function(**tensors)
        return call

    signatures = {name: dataclasses.replace(s, function=spy(name, s.function))
                  for name, s in numeric.signatures.items()}
    servable = types.SimpleNamespace(path=tmp_path, signatures=signatures,
                                     signature_defs=numeric.signature_defs)
    return servable, calls


def _input(rows):
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}))
        for row in rows]
    return input_pb2.Input(example_list=input_pb2.ExampleList(
        examples=examples))


def _classify(rows, signature_name="classify"):
    request = classification_pb2.ClassificationRequest(input=_input(rows))
    request.model_spec.signature_name = signature_name
    return request


def _regress(rows, signature_name="regress"):
    request = regression_pb2.RegressionRequest(input=_input(rows))
    request.model_spec.signature_name = signature_name
    return request


def _multi_inference(rows):
    request = inference_pb2.MultiInferenceRequest(input=_input(rows))
    for name, method in (("classify", CLASSIFY),
                         ("regress", REGRESS)):
        task = request.tasks.add(method_name=method)
        task.model_spec.name = "numeric"
        task.model_spec.signature_name = name
    return request


def _bad_tensor():
    """A predict request whose float tensor has 3 bytes for 4 values."""
    request = predict_request({"x": X})
    request.inputs["x"].tensor_content = b"abc"
    return request


def _parsed_x(serialized):
    return tf.io.parse_example(serialized, {
        "x": tf.io.FixedLenFeature([3], tf.float32)})["x"].numpy()


def _write_records(directory, records):
    path = warmup.warmup_path(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return path


# -- the file ------------------------------------------------------------------
def test_written_requests_read_back_in_order_as_prediction_logs(tmp_path):
    session_run = prediction_log_pb2.PredictionLog(
        session_run_log=prediction_log_pb2.SessionRunLog())
    requests = [predict_request({"x": X}, "two_outputs", "numeric"),
                _classify(X), session_run, _regress(X[:1]),
                _multi_inference(X)]
    path = write_warmup_requests(tmp_path, requests)
    assert path == tmp_path / "assets.extra" / "tf_serving_warmup_requests"
    logs = read_warmup_requests(tmp_path)
    assert [log.WhichOneof("log_type") for log in logs] == [
        "predict_log", "classify_log", "session_run_log", "regress_log",
        "multi_inference_log"]
    assert logs[0].predict_log.request == requests[0]
    assert logs[1].classify_log.request == requests[1]
    assert logs[2] == session_run
    assert logs[4].multi_inference_log.request == requests[4]
    sent = tf.make_ndarray(logs[0].predict_log.request.inputs["x"])
    np.testing.assert_array_equal(sent, X)
    # Plain TFRecord: tf.data reads the same records.
    records = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
    assert records == [log.SerializeToString() for log in logs]


def test_no_file_or_an_empty_file_warms_up_nothing(spied):
    servable, calls = spied
    assert read_warmup_requests(servable.path) == []
    assert warm_up(servable) == 0
    _write_records(servable.path, [])
    assert warm_up(servable) == 0
    assert calls == []


def test_the_writer_refuses_what_is_not_a_request(tmp_path):
    with pytest.raises(ValueError, match="received: str"):
        write_warmup_requests(tmp_path, ["x"])
    too_many = [predict_request({"x": X})] * (warmup.MAX_RECORDS + 1)
    with pytest.raises(ValueError, match="at most 1000 requests, received: "
                                         "1001"):
        write_warmup_requests(tmp_path, too_many)
    with pytest.raises(ValueError, match="num_request_iterations"):
        warm_up(types.SimpleNamespace(path=tmp_path), num_request_iterations=0)


# -- the replay ----------------------------------------------------------------
def test_every_record_is_replayed_with_its_arrays(spied):
    servable, calls = spied
    empty = prediction_log_pb2.PredictionLog()  # no request: skipped
    mixed = {"count": np.array([3, -4], np.int64),
             "word": np.array([b"ab", b""], object),
             "flag": np.array([True, False])}
    write_warmup_requests(servable.path, [
        predict_request({"x": X}),  # "" is serving_default
        predict_request({"x": X[:1]}, "two_outputs"), empty,
        predict_request(mixed, "mixed"), _classify(X), _regress(X[1:]),
        _multi_inference(X)])
    assert warm_up(servable) == 6  # the multi-inference request is one
    assert [name for name, _ in calls] == [
        "serving_default", "two_outputs", "mixed", "classify", "regress",
        "classify", "regress"]
    np.testing.assert_array_equal(calls[0][1]["x"], X)
    np.testing.assert_array_equal(calls[1][1]["x"], X[:1])
    for key, value in mixed.items():
        np.testing.assert_array_equal(calls[2][1][key], value)
    for (_, inputs), rows in zip(calls[3:], (X, X[1:], X, X)):
        np.testing.assert_array_equal(_parsed_x(inputs["inputs"]), rows)


def test_each_record_runs_num_request_iterations_times(spied):
    servable, calls = spied
    write_warmup_requests(servable.path, [predict_request({"x": X}),
                                          _regress(X)])
    assert warm_up(servable, num_request_iterations=3) == 6
    assert [name for name, _ in calls] == ["serving_default"] * 3 + [
        "regress"] * 3


# -- TF Serving's errors -------------------------------------------------------
@pytest.mark.parametrize("field, number", [("session_run_log", 5),
                                           ("predict_streamed_log", 7)])
def test_session_run_and_streamed_logs_are_unimplemented(spied, field,
                                                         number):
    servable, calls = spied
    log = prediction_log_pb2.PredictionLog()
    getattr(log, field).SetInParent()
    path = write_warmup_requests(servable.path,
                                 [predict_request({"x": X}), log])
    with pytest.raises(tf.errors.UnimplementedError) as raised:
        warm_up(servable)
    assert raised.value.message == (
        f"Unsupported log_type for warmup: {number} (warm-up record 2 of "
        f"{path})")
    assert len(calls) == 1  # the first record ran, as in TF Serving


def test_a_record_that_is_not_a_prediction_log(spied):
    servable, calls = spied
    path = _write_records(servable.path, [b"malformed_record"])
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        warm_up(servable)
    assert raised.value.message == (
        f"Failed to parse warmup record: b'malformed_record' from {path} "
        "(record 1)")
    assert calls == []


def test_a_file_that_is_not_tfrecord_is_data_loss(spied):
    servable, _ = spied
    path = warmup.warmup_path(servable.path)
    path.parent.mkdir(parents=True)
    # Serialized logs one after the other, without TFRecord framing.
    path.write_bytes(prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(
            request=predict_request({"x": X}))).SerializeToString() * 3)
    with pytest.raises(tf.errors.DataLossError) as raised:
        warm_up(servable)
    assert raised.value.message == (
        "corrupted record at 0 (Is this even a TFRecord file?). Please "
        "verify your warmup data is in TFRecord format.")


def test_more_records_than_the_limit_run_none(spied):
    servable, calls = spied
    record = prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(
            request=predict_request({"x": X}))).SerializeToString()
    _write_records(servable.path, [record] * warmup.MAX_RECORDS)
    assert len(read_warmup_requests(servable.path)) == 1000
    path = _write_records(servable.path, [record] * 1001)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        warm_up(servable)
    assert raised.value.message == (
        f"Number of warmup records exceeds the maximum (1000) at {path}")
    assert calls == []


@pytest.mark.parametrize("request_, error, message", [
    (predict_request({"x": X}, "nope"), tf.errors.FailedPreconditionError,
     'Serving signature key "nope" not found.'),
    (_classify(X, "nope"), tf.errors.InvalidArgumentError,
     "No signature was found with the name: nope"),
    (_regress(X, "classify"), tf.errors.InvalidArgumentError,
     "Expected one output Tensor."),
    (predict_request({"x": X, "y": X}), tf.errors.InvalidArgumentError,
     "input size does not match signature: 2!=1 len({x,y}) != len({x}). "
     "Sent extra: {y}. Missing but required: {}."),
    (predict_request({"x": X.astype(np.float64)}),
     tf.errors.InvalidArgumentError,
     "Expects arg[0] to be float but double is provided"),
    (_bad_tensor(), tf.errors.InvalidArgumentError,
     "tensor parsing error: x"),
    (predict_request({"x": X[:, :2]}), tf.errors.InvalidArgumentError,
     None),  # the model's own error: (2, 2) @ (3, 2)
])
def test_a_failing_request_fails_the_warm_up_naming_its_record(
        spied, request_, error, message):
    servable, calls = spied
    path = write_warmup_requests(servable.path, [request_])
    with pytest.raises(error) as raised:
        warm_up(servable)
    assert raised.value.message.endswith(f" (warm-up record 1 of {path})")
    if message is not None:
        assert raised.value.message.startswith(message + " (")


def test_multi_inference_checks_its_tasks(spied):
    servable, calls = spied
    request = _multi_inference(X)
    request.tasks[1].model_spec.signature_name = "classify"
    write_warmup_requests(servable.path, [request])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Duplicate evaluation of signature: classify"):
        warm_up(servable)
    request.tasks[1].model_spec.signature_name = "regress"
    request.tasks[1].method_name = "tensorflow/serving/predict"
    write_warmup_requests(servable.path, [request])
    with pytest.raises(tf.errors.UnimplementedError,
                       match="Unsupported signature method_name: "
                             "tensorflow/serving/predict"):
        warm_up(servable)
    assert calls == []  # the tasks are checked before any runs


# -- the translator export -----------------------------------------------------
@pytest.fixture(scope="module")
def translator_module():
    """An untrained tiny Transformer translator: the warm-up needs only
    that its signatures accept the requests."""
    from keras_attention.export import TranslatorModule
    from keras_attention.models import TransformerTranslator
    from keras_attention.text import SubwordTokenizer
    from keras_attention.text.tokenizer import train_sentencepiece
    from keras_attention.translator import build

    words = "the a man woman dog sees reads book garden old runs".split()
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(words, 6)) + " ." for _ in range(200)]
    tokenizer = SubwordTokenizer(train_sentencepiece(sentences, 40))
    model = TransformerTranslator.from_preset(
        "tiny", tokenizer.vocabulary_size, tokenizer.vocabulary_size,
        share_embeddings=True, pad_id=tokenizer.pad_id)
    build(model)
    return TranslatorModule(model, tokenizer, tokenizer, max_output_length=8)


def test_the_translator_export_writes_requests_its_signatures_accept(
        translator_module, tmp_path):
    from keras_attention.export import export_translator
    from keras_attention.export.saved_model import WARMUP_BATCHES

    path = export_translator(translator_module, tmp_path, "translator")
    records = tf.data.TFRecordDataset(
        str(path / "assets.extra" / "tf_serving_warmup_requests"))
    logs = [prediction_log_pb2.PredictionLog.FromString(r.numpy())
            for r in records]
    expected = [(name, list(batch))
                for name in ("serving_default", "translate_with_attention")
                for batch in WARMUP_BATCHES]
    requests = [log.predict_log.request for log in logs]
    assert [(r.model_spec.signature_name,
             [t.decode() for t in tf.make_ndarray(r.inputs["text"])])
            for r in requests] == expected
    assert {r.model_spec.name for r in requests} == {"translator"}
    assert [len(batch) for batch in WARMUP_BATCHES] == [1, 3]
    servable = Servable(path, 1)
    assert warm_up(servable) == 4


def test_the_export_writes_no_warmup_file_when_told(translator_module,
                                                    tmp_path, monkeypatch):
    from keras_attention.export import export_translator

    def save(module, directory, signatures):  # the SavedModel is not the point
        tf.io.gfile.makedirs(directory)

    monkeypatch.setattr(tf.saved_model, "save", save)
    path = export_translator(translator_module, tmp_path, warmup=False)
    assert list(path.iterdir()) == []
    path = export_translator(translator_module, tmp_path)
    assert [p.name for p in path.iterdir()] == ["assets.extra"]
    with pytest.raises(ValueError, match="received: warmup='no'"):
        export_translator(translator_module, tmp_path, warmup="no")
