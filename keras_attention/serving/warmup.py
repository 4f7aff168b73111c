"""Model warm-up as TF Serving does it (`--enable_model_warmup`).

A SavedModel may carry `assets.extra/tf_serving_warmup_requests`, a
TFRecord file of `PredictionLog`s. Before a version becomes AVAILABLE the
server replays them, so that the first real request does not pay for the
first call of each signature (graph optimization, kernel creation, lookup
tables read). This module reads and replays that file, following
TF Serving's `saved_model_warmup.cc` and `saved_model_warmup_util.cc`
(the file is written by `keras_attention.export.warmup_requests`):

- no file: nothing to do (0 requests); an empty file: the same;
- at most `MAX_RECORDS` (1000) records, else INVALID_ARGUMENT
  "Number of warmup records exceeds the maximum (1000) at PATH";
- a record that is not a `PredictionLog`: INVALID_ARGUMENT
  "Failed to parse warmup record: ... from PATH";
- a file that is not TFRecord: DATA_LOSS "... Please verify your warmup
  data is in TFRecord format.";
- predict, classify, regress and multi_inference logs are replayed, each
  `num_request_iterations` times (default 1); session_run and
  predict_streamed logs fail with UNIMPLEMENTED "Unsupported log_type for
  warmup: N" (N the oneof field number, as TF Serving prints it); a log
  with no request type is skipped;
- the first request that fails fails the warm-up, and with it the
  version (the loader reports it in state END with this error).

Errors are `tf.errors.OpError`s with TF Serving's code, so a loader maps
them to the status TF Serving would show. Where we differ: the whole file
is read (and the record limit checked) before anything is replayed, so a
file over the limit runs no request rather than 1001; the messages of a
failed request end with which record it was ("(warm-up record 3 of
PATH)"); the unparsable record is shown as at most 64 bytes' repr, not raw;
one thread replays (TF Serving's `num_model_warmup_threads` is not offered).
"""

import logging
import re
import time

from keras_attention._extras import require

require(__name__, "serving", "tensorflow", "tensorflow_serving")

import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_attention.export.warmup_requests import MAX_RECORDS
from keras_attention.export.warmup_requests import warmup_path
from keras_attention.serving.errors import ServingError
from keras_attention.serving.proto_requests import examples_call
from keras_attention.serving.proto_requests import multi_inference_calls
from keras_attention.serving.proto_requests import predict_call

LOG = logging.getLogger("keras_attention.serving")


# gRPC code name -> the TensorFlow exception that carries it.
_ERRORS = {
    "INVALID_ARGUMENT": tf.errors.InvalidArgumentError,
    "FAILED_PRECONDITION": tf.errors.FailedPreconditionError,
    "UNIMPLEMENTED": tf.errors.UnimplementedError,
    "DATA_LOSS": tf.errors.DataLossError,
    "NOT_FOUND": tf.errors.NotFoundError,
    "OUT_OF_RANGE": tf.errors.OutOfRangeError,
    "DEADLINE_EXCEEDED": tf.errors.DeadlineExceededError,
    "RESOURCE_EXHAUSTED": tf.errors.ResourceExhaustedError,
    "UNAVAILABLE": tf.errors.UnavailableError,
    "INTERNAL": tf.errors.InternalError,
    "UNKNOWN": tf.errors.UnknownError,
}


def _error(code, message):
    return _ERRORS.get(code, tf.errors.UnknownError)(None, None, message)


def _op_message(error):
    """An eager op error's message without the function and op names
    that tf.data adds around it."""
    message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", error.message)
    return re.sub(r"\s*\[Op:\w+\].*$", "", message, flags=re.DOTALL)


def read_warmup_requests(saved_model_dir):
    """The warm-up `PredictionLog`s of a SavedModel, in file order; `[]`
    when it has no warm-up file. Raises as TF Serving fails the version
    (see the module docstring)."""
    path = warmup_path(saved_model_dir)
    if not tf.io.gfile.exists(str(path)):
        LOG.info("No warmup data file found at %s", path)
        return []
    logs = []
    try:
        for record in tf.data.TFRecordDataset(str(path)):
            if len(logs) == MAX_RECORDS:
                raise _error("INVALID_ARGUMENT", "Number of warmup records "
                             f"exceeds the maximum ({MAX_RECORDS}) at {path}")
            record = record.numpy()
            log = prediction_log_pb2.PredictionLog()
            try:
                log.ParseFromString(record)
            except Exception:  # protobuf's DecodeError, by implementation
                raise _error(
                    "INVALID_ARGUMENT",
                    f"Failed to parse warmup record: {record[:64]!r} from "
                    f"{path} (record {len(logs) + 1})") from None
            logs.append(log)
    except tf.errors.DataLossError as error:
        raise _error("DATA_LOSS", f"{_op_message(error)}. Please verify your "
                     "warmup data is in TFRecord format.") from None
    return logs


# -- replay --------------------------------------------------------------------
def run_warmup_request(servable, log):
    """Replay one `PredictionLog` on `servable`; False when the log holds
    no request (nothing ran)."""
    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        _, signature, inputs, _ = predict_call(servable,
                                               log.predict_log.request)
        signature(inputs)
    elif kind in ("classify_log", "regress_log"):
        signature, examples = examples_call(
            servable, getattr(log, kind).request, kind[:-len("_log")])
        signature({"inputs": examples})
    elif kind == "multi_inference_log":
        signatures, examples = multi_inference_calls(
            servable, log.multi_inference_log.request)
        for signature in signatures:
            signature({"inputs": examples})
    elif kind is not None:  # session_run_log, predict_streamed_log
        number = log.DESCRIPTOR.fields_by_name[kind].number
        raise _error("UNIMPLEMENTED",
                     f"Unsupported log_type for warmup: {number}")
    return kind is not None


def warm_up(servable, num_request_iterations=1):
    """Replay the warm-up requests of `servable`'s SavedModel.

    Args:
        servable: a loaded version (`Servable`): its `path` holds the
            SavedModel, its `signatures[name](arrays)` runs a signature.
        num_request_iterations: how many times each record is replayed
            (TF Serving's `ModelWarmupOptions.num_request_iterations`).

    Returns:
        The number of requests run (records times iterations; a log with
        no request counts none).

    Raises:
        tf.errors.OpError: the file is bad or a request failed; the
            message says which record and why.
    """
    if (isinstance(num_request_iterations, bool)
            or not isinstance(num_request_iterations, int)
            or num_request_iterations < 1):
        raise ValueError("`num_request_iterations` must be a positive int, "
                         f"received: {num_request_iterations!r}")
    started = time.perf_counter()
    path = warmup_path(servable.path)
    logs = read_warmup_requests(servable.path)
    count = 0
    for number, log in enumerate(logs, start=1):
        where = f"(warm-up record {number} of {path})"
        for _ in range(num_request_iterations):
            try:
                ran = run_warmup_request(servable, log)
            except ServingError as error:
                raise _error(error.code, f"{error.message} {where}") from None
            except tf.errors.OpError as error:
                raise type(error)(None, None,
                                  f"{_op_message(error)} {where}") from None
            except Exception as error:  # e.g. a signature's own bug
                raise _error("UNKNOWN", f"{type(error).__name__}: {error} "
                             f"{where}") from error
            count += ran
    if logs:
        LOG.info("Finished reading warmup data for model at %s. Number of "
                 "warmup records read: %d. Elapsed time (microseconds): %d.",
                 path, len(logs), 1e6 * (time.perf_counter() - started))
    return count
