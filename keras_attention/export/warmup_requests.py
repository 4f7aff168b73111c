"""TF Serving's warm-up requests in a SavedModel:
`assets.extra/tf_serving_warmup_requests`, a TFRecord file of
`PredictionLog`s that TF Serving (and `keras_attention.serving`, see its
`warmup` module) replays before a version serves. The export writes it;
the export knows nothing of our server, only of the file's format.
"""

import pathlib

from keras_attention._extras import require

require(__name__, "translate", "tensorflow", "tensorflow_serving")

import tensorflow as tf
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_log_pb2

ASSETS_EXTRA = "assets.extra"
FILE_NAME = "tf_serving_warmup_requests"
MAX_RECORDS = 1000  # TF Serving's kMaxNumRecords


def warmup_path(saved_model_dir):
    """`SAVED_MODEL_DIR/assets.extra/tf_serving_warmup_requests`."""
    return pathlib.Path(saved_model_dir) / ASSETS_EXTRA / FILE_NAME


def write_warmup_requests(saved_model_dir, requests):
    """Write `requests` as the SavedModel's warm-up file.

    Args:
        saved_model_dir: a SavedModel folder (the file goes to its
            `assets.extra/`, which is created).
        requests: `PredictionLog`s, or `PredictRequest`,
            `ClassificationRequest`, `RegressionRequest` or
            `MultiInferenceRequest` protos (each wrapped in its log), at
            most `MAX_RECORDS`.

    Returns:
        The path of the file written.
    """
    wrappers = {
        "PredictRequest": ("predict_log", prediction_log_pb2.PredictLog),
        "ClassificationRequest": ("classify_log",
                                  prediction_log_pb2.ClassifyLog),
        "RegressionRequest": ("regress_log", prediction_log_pb2.RegressLog),
        "MultiInferenceRequest": ("multi_inference_log",
                                  prediction_log_pb2.MultiInferenceLog),
    }
    logs = []
    for request in requests:
        kind = getattr(getattr(request, "DESCRIPTOR", None), "name", None)
        if kind == "PredictionLog":
            logs.append(request)
        elif kind in wrappers:
            field, log_type = wrappers[kind]
            logs.append(prediction_log_pb2.PredictionLog(
                **{field: log_type(request=request)}))
        else:
            raise ValueError(
                "`requests` must hold PredictionLog or request protos, "
                f"received: {type(request).__name__}")
    if len(logs) > MAX_RECORDS:
        raise ValueError(f"`requests` may hold at most {MAX_RECORDS} "
                         f"requests, received: {len(logs)}")
    path = warmup_path(saved_model_dir)
    tf.io.gfile.makedirs(str(path.parent))
    with tf.io.TFRecordWriter(str(path)) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    return path


def predict_request(inputs, signature_name="", model_name=""):
    """A `PredictRequest` for `inputs` (name -> array-like)."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    return request
