"""The configuration files `tensorflow_model_server` reads, parsed with
protobuf's text format so that the same files work for both servers.

- `--model_config_file`: `ModelServerConfig` from the tensorflow-serving-api
  package (`model_config_list { config { name base_path
  model_version_policy version_labels } }`).
- `--batching_parameters_file` and `--monitoring_config_file`: their
  messages (`BatchingParameters`, `MonitoringConfig`) are not in that
  package, so their descriptors are rebuilt here with the field names and
  types of TF Serving's `.proto` files; the text-format parser then rejects
  unknown fields and wrong types as TF Serving does.
"""

import dataclasses
import pathlib

from keras_attention._extras import require

require(__name__, "serving", "tensorflow_serving")

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory
from google.protobuf import text_format
from google.protobuf import wrappers_pb2
from tensorflow_serving.config import model_server_config_pb2

_INT64 = ".google.protobuf.Int64Value"
_STRING = ".google.protobuf.StringValue"
_BOOL = ".google.protobuf.BoolValue"
_LABEL = descriptor_pb2.FieldDescriptorProto

# (message, [(field, number, type or message type, repeated)])
_MESSAGES = {
    # tensorflow_serving/servables/tensorflow/session_bundle_config.proto
    "BatchingParameters": [
        ("max_batch_size", 1, _INT64, False),
        ("batch_timeout_micros", 2, _INT64, False),
        ("max_enqueued_batches", 3, _INT64, False),
        ("num_batch_threads", 4, _INT64, False),
        ("thread_pool_name", 5, _STRING, False),
        ("allowed_batch_sizes", 6, _LABEL.TYPE_INT64, True),
        ("pad_variable_length_inputs", 7, _LABEL.TYPE_BOOL, False),
        ("enable_large_batch_splitting", 8, _BOOL, False),
        ("max_execution_batch_size", 9, _INT64, False),
    ],
    # tensorflow_serving/config/monitoring_config.proto
    "PrometheusConfig": [
        ("enable", 1, _LABEL.TYPE_BOOL, False),
        ("path", 2, _LABEL.TYPE_STRING, False),
    ],
    "MonitoringConfig": [
        ("prometheus_config", 1, ".tensorflow.serving.PrometheusConfig", False),
    ],
}


def _message_classes():
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name="keras_attention/serving_config.proto",
        package="tensorflow.serving", syntax="proto3",
        dependency=["google/protobuf/wrappers.proto"],
    )
    for name, fields in _MESSAGES.items():
        message = file.message_type.add(name=name)
        for field, number, kind, repeated in fields:
            proto = message.field.add(name=field, number=number)
            proto.label = _LABEL.LABEL_REPEATED if repeated else (
                _LABEL.LABEL_OPTIONAL)
            if isinstance(kind, str):
                proto.type = _LABEL.TYPE_MESSAGE
                proto.type_name = kind
            else:
                proto.type = kind
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"tensorflow.serving.{name}"))
        for name in _MESSAGES
    }


_CLASSES = _message_classes()


def _parse(text, message, path):
    try:
        return text_format.Parse(text, message)
    except text_format.ParseError as error:
        raise ValueError(f"{path}: not a valid {type(message).__name__} in "
                         f"protobuf text format: {error}") from None


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One served model: name, base path, version policy and labels.

    `policy` is `("latest", n)`, `("all", None)` or `("specific",
    versions)`.
    """

    name: str
    base_path: str
    policy: tuple = ("latest", 1)
    labels: dict = dataclasses.field(default_factory=dict)


def model_specs_from_config(text, path="<model config>"):
    """The models a text-format `ModelServerConfig` lists."""
    config = _parse(text, model_server_config_pb2.ModelServerConfig(), path)
    return model_specs_from_proto(config, path)


def model_specs_from_proto(config, path="<model config>"):
    """The models a `ModelServerConfig` message lists (`path` names where
    it came from, in the messages)."""
    if config.WhichOneof("config") != "model_config_list":
        raise ValueError(f"{path}: expected a model_config_list, received: "
                         f"{config.WhichOneof('config')}")
    specs = []
    for model in config.model_config_list.config:
        if not model.name or not model.base_path:
            raise ValueError(f"{path}: every config needs a name and a "
                             f"base_path, received: {model}")
        if model.model_platform not in ("", "tensorflow"):
            raise ValueError(f"{path}: model_platform must be 'tensorflow', "
                             f"received: {model.model_platform!r}")
        policy = model.model_version_policy
        kind = policy.WhichOneof("policy_choice") or "latest"
        if kind == "latest":
            value = policy.latest.num_versions or 1
        elif kind == "specific":
            value = tuple(sorted(policy.specific.versions))
            if not value:
                raise ValueError(f"{path}: model {model.name!r}: a specific "
                                 "version policy needs at least one version")
        else:
            value = None
        specs.append(ModelSpec(model.name, model.base_path, (kind, value),
                               dict(model.version_labels)))
    names = [spec.name for spec in specs]
    for name in names:
        if names.count(name) > 1:  # TF Serving's message
            raise ValueError(f"{path}: Illegal to list model {name} "
                             "multiple times in config list")
    return specs


def read_model_config(path):
    return model_specs_from_config(pathlib.Path(path).read_text(), path)


@dataclasses.dataclass(frozen=True)
class BatchingParameters:
    """Server-side batching, as TF Serving's `BatchingParameters`.

    Defaults are TF Serving's for `--enable_batching` without a file.
    """

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = 2
    allowed_batch_sizes: tuple = ()
    pad_variable_length_inputs: bool = False

    def __post_init__(self):
        for name in ("max_batch_size", "max_enqueued_batches",
                     "num_batch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, received: "
                                 f"{name}={getattr(self, name)}")
        if self.batch_timeout_micros < 0:
            raise ValueError("batch_timeout_micros must be >= 0, received: "
                             f"batch_timeout_micros={self.batch_timeout_micros}")
        sizes = self.allowed_batch_sizes
        if sizes:
            if list(sizes) != sorted(set(sizes)) or sizes[0] < 1:
                raise ValueError("allowed_batch_sizes must increase strictly "
                                 f"and be positive, received: {list(sizes)}")
            if sizes[-1] != self.max_batch_size:  # TF Serving's message
                raise ValueError(
                    "Last entry in allowed_batch_sizes must match "
                    f"max_batch_size; last entry was {sizes[-1]}; expected "
                    f"{self.max_batch_size}")


def batching_parameters_from_text(text, path="<batching parameters>"):
    """`BatchingParameters` from text format. `thread_pool_name` only
    names TF's threads and is ignored, as is `max_execution_batch_size`
    without splitting; large-batch splitting itself is refused."""
    message = _parse(text, _CLASSES["BatchingParameters"](), path)
    if message.enable_large_batch_splitting.value:
        raise ValueError(f"{path}: enable_large_batch_splitting is not "
                         "supported by this server, received: "
                         "enable_large_batch_splitting { value: true }")
    values = {}
    for name in ("max_batch_size", "batch_timeout_micros",
                 "max_enqueued_batches", "num_batch_threads"):
        if message.HasField(name):
            values[name] = getattr(message, name).value
    try:
        return BatchingParameters(
            **values,
            allowed_batch_sizes=tuple(message.allowed_batch_sizes),
            pad_variable_length_inputs=message.pad_variable_length_inputs,
        )
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def read_batching_parameters(path):
    return batching_parameters_from_text(pathlib.Path(path).read_text(), path)


def prometheus_path_from_text(text, path="<monitoring config>"):
    """The metrics path if Prometheus is enabled, else None."""
    message = _parse(text, _CLASSES["MonitoringConfig"](), path)
    prometheus = message.prometheus_config
    if not prometheus.enable:
        return None
    metrics_path = prometheus.path or "/monitoring/prometheus/metrics"
    if not metrics_path.startswith("/"):
        raise ValueError(f"{path}: prometheus_config.path must start with "
                         f"'/', received: {metrics_path!r}")
    return metrics_path


def read_monitoring_config(path):
    return prometheus_path_from_text(pathlib.Path(path).read_text(), path)
