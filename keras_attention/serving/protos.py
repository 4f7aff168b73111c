"""The messages of `tensorflow-serving-api` <-> the core's values: the
gRPC API's codec, also used to replay warm-up requests.

- `TensorProto` -> NumPy with `tf.make_ndarray` (a proto TensorFlow
  cannot read is TF Serving's "tensor parsing error: <alias>"); NumPy ->
  `TensorProto` in the typed value fields (`float_val`, `string_val`,
  ...), as TF Serving writes outputs (`Tensor::AsProtoField`).
- `Input` -> serialized tf.Examples, each `context + example` as TF
  Serving concatenates them (`InputToSerializedExampleTensor`).
- Results, `ModelSpec`s and version statuses as TF Serving fills them.
"""

from keras_attention._extras import require

require(__name__, "serving", "tensorflow", "tensorflow_serving")

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2
from tensorflow.core.protobuf import error_codes_pb2
from tensorflow_serving.apis import get_model_status_pb2

from keras_attention.serving.errors import ServingError
from keras_attention.serving.errors import invalid
from keras_attention.serving.signatures import signature_key

# The TensorProto field TF Serving writes each dtype's values to.
_FIELDS = {
    tf.float32: "float_val", tf.float64: "double_val",
    tf.int32: "int_val", tf.int16: "int_val", tf.int8: "int_val",
    tf.uint8: "int_val", tf.uint16: "int_val", tf.int64: "int64_val",
    tf.uint32: "uint32_val", tf.uint64: "uint64_val", tf.bool: "bool_val",
    tf.string: "string_val", tf.float16: "half_val", tf.bfloat16: "half_val",
    tf.complex64: "scomplex_val", tf.complex128: "dcomplex_val",
}
_STATES = dict(get_model_status_pb2.ModelVersionStatus.State.items())


def to_array(proto, alias):
    """One request tensor as a NumPy array (strings: an object array of
    bytes)."""
    try:
        return tf.make_ndarray(proto)
    except Exception:  # any proto TensorFlow cannot read as a tensor
        raise invalid(f"tensor parsing error: {alias}") from None


def tensor_proto(array, dtype):
    """`array` (of `dtype`, a `tf.DType`) as a `TensorProto`."""
    array = np.asarray(array)
    proto = tensor_pb2.TensorProto(
        dtype=dtype.as_datatype_enum,
        tensor_shape=tf.TensorShape(array.shape).as_proto())
    field = _FIELDS.get(dtype)
    if field is None:
        raise ServingError("UNIMPLEMENTED", "Cannot write an output tensor of"
                           f" type {dtype.name}")
    flat = array.reshape(-1)
    if field == "half_val":
        flat = flat.view(np.uint16)
    elif field in ("scomplex_val", "dcomplex_val"):
        flat = np.stack([flat.real, flat.imag], axis=-1).reshape(-1)
    getattr(proto, field).extend(flat.tolist())
    return proto


def examples_from_input(input_proto):
    """The serialized tf.Examples of an `Input` (object array of bytes)."""
    kind = input_proto.WhichOneof("kind")
    if kind == "example_list":
        serialized = [example.SerializeToString()
                      for example in input_proto.example_list.examples]
    elif kind == "example_list_with_context":
        listed = input_proto.example_list_with_context
        context = listed.context.SerializeToString()
        serialized = [context + example.SerializeToString()
                      for example in listed.examples]
    else:
        serialized = []
    if not serialized:
        raise invalid("Input is empty.")
    array = np.empty(len(serialized), dtype=object)
    array[:] = serialized
    return array


def fill_model_spec(model_spec, name, signature_name, version):
    """TF Serving's `MakeModelSpec`: the name, the signature name (empty
    = the default's name; None = not set) and the version that answered."""
    model_spec.Clear()
    model_spec.name = name
    if signature_name is not None:
        model_spec.signature_name = signature_key(signature_name)
    if version is not None:
        model_spec.version.value = version


def version_and_label(model_spec):
    """(version or None, label or None) of a request's `ModelSpec`."""
    choice = model_spec.WhichOneof("version_choice")
    if choice == "version":
        return model_spec.version.value, None
    if choice == "version_label":
        return None, model_spec.version_label
    return None, None


def fill_classification(result, rows):
    """`rows`: per example, (label bytes, score) pairs."""
    for row in rows:
        classifications = result.classifications.add()
        for label, score in row:
            classifications.classes.add(
                label=label.decode("utf-8", "replace"), score=score)
    return result


def fill_regression(result, values):
    for value in values:
        result.regressions.add(value=value)
    return result


def version_status(status, proto):
    """One version's status dict (`versions.VersionState.status()`) into
    a `ModelVersionStatus`."""
    proto.version = int(status["version"])
    proto.state = _STATES[status["state"]]
    proto.status.error_code = error_codes_pb2.Code.Value(
        status["status"]["error_code"])
    proto.status.error_message = status["status"]["error_message"]
    return proto
