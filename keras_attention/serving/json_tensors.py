"""JSON requests -> tensors, as TF Serving's REST API reads them
(`util/json_tensor.cc`): request parsing with its checks and messages,
the row ("instances") and columnar ("inputs") formats of `:predict`, and
the tf.Examples of `:classify`/`:regress`. Answers are written by
`json_writer`.
"""

import base64
import binascii
import json
import math

from keras_attention._extras import require

require(__name__, "serving", "tensorflow")

import numpy as np
import tensorflow as tf

from keras_attention.serving.errors import ServingError
from keras_attention.serving.errors import invalid

# TensorFlow's DataTypeString names, which TF Serving's messages use.
_TYPE_NAMES = {
    tf.float32: "float", tf.float64: "double", tf.int8: "int8",
    tf.int16: "int16", tf.int32: "int32", tf.int64: "int64",
    tf.uint8: "uint8", tf.uint16: "uint16", tf.uint32: "uint32",
    tf.uint64: "uint64", tf.bool: "bool", tf.string: "string",
    tf.float16: "half", tf.bfloat16: "bfloat16",
}
MAX_RANK = 32  # NumPy arrays hold at most 64 dimensions; no model needs 33
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_INT64 = np.iinfo(np.int64)
# The JSON integers each dtype takes, as rapidjson's IsInt/IsInt64/IsUint/
# IsUint64 test them; any other number is "not of expected type".
_JSON_INTEGERS = {
    tf.int8: (tf.int32.min, tf.int32.max),
    tf.int16: (tf.int32.min, tf.int32.max),
    tf.int32: (tf.int32.min, tf.int32.max),
    tf.uint8: (tf.int32.min, tf.int32.max),
    tf.int64: (tf.int64.min, tf.int64.max),
    tf.uint32: (0, tf.uint32.max),
    tf.uint64: (0, tf.uint64.max),
}


def type_name(dtype):
    return _TYPE_NAMES.get(dtype, dtype.name)


def parse_json(body):
    """The request document; parse errors are TF Serving's 400s."""
    if not body.strip():
        raise invalid("JSON Parse error: The document is empty")
    try:
        text = body.decode("utf-8")
        return json.loads(text)
    except UnicodeDecodeError as error:
        raise invalid(f"JSON Parse error: Invalid encoding in string. at "
                      f"offset: {error.start}") from None
    except json.JSONDecodeError as error:
        raise invalid(f"JSON Parse error: {error.msg} at offset: "
                      f"{error.pos}") from None
    except RecursionError:
        raise invalid("JSON Parse error: the document is nested too "
                      "deeply") from None


def _json_type(value):
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def _show(value):
    return json.dumps(value)[:200]


def _type_error(value, dtype):
    return invalid(f"JSON Value: {_show(value)} Type: {_json_type(value)} is "
                   f"not of expected type: {type_name(dtype)}")


def is_b64(value):
    """`{"b64": "<string>"}`: exactly one key, holding a string."""
    return (isinstance(value, dict) and len(value) == 1
            and isinstance(value.get("b64"), str))


def _decode_b64(value):
    data = value["b64"]
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise invalid(f"Unable to base64 decode: {data[:100]!r}") from None


def _scalar(value, dtype):
    """One JSON leaf as a Python value of `dtype`, strictly."""
    if dtype == tf.string:
        if isinstance(value, str):
            return value.encode("utf-8", "surrogateescape")
        if is_b64(value):
            return _decode_b64(value)
        if isinstance(value, dict):
            raise invalid(f"JSON Value: {_show(value)} not formatted "
                          "correctly for base64 data")
        raise _type_error(value, dtype)
    if dtype == tf.bool:
        if isinstance(value, bool):
            return value
        raise _type_error(value, dtype)
    if dtype.is_integer:
        if isinstance(value, int) and not isinstance(value, bool):
            low, high = _JSON_INTEGERS.get(dtype, (dtype.min, dtype.max))
            if not low <= value <= high:
                raise _type_error(value, dtype)
            if not dtype.min <= value <= dtype.max:
                # TF Serving casts (int8 300 -> 44); we refuse instead.
                raise invalid(f"JSON Value: {value} is out of range for "
                              f"type: {type_name(dtype)}")
            return value
        raise _type_error(value, dtype)
    if dtype in (tf.float32, tf.float64):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(value, dtype)
        # IsLosslessDecimal: a JSON integer must be below 2^digits (2^24
        # for float, even 16777216 is refused), a decimal within range.
        double = dtype == tf.float64
        if isinstance(value, int):
            lossy = abs(value) > (2**53 - 1 if double else 2**24 - 1)
        else:
            lossy = (not double and math.isfinite(value)
                     and abs(value) > _FLOAT32_MAX)
        if lossy:
            raise invalid(f"Cannot convert JSON value: {value} to "
                          f"{type_name(dtype)} without loss of precision.")
        return value
    raise ServingError("UNIMPLEMENTED", f"Conversion of JSON Value: "
                       f"{_show(value)} to type: {type_name(dtype)}")


def _dense_shape(value):
    """The shape TF Serving reads off a nested list: the length at each
    level, following the first element (`GetDenseTensorShape`)."""
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _shape_text(shape):
    return "[" + ",".join(str(size) for size in shape) + "]"


def to_array(value, dtype):
    """A nested JSON list as a NumPy array of `dtype`, rectangular."""
    shape = _dense_shape(value)
    rank = len(shape)
    if rank > MAX_RANK:
        raise invalid(f"JSON Value: a list nested {rank} deep; tensors of "
                      f"rank above {MAX_RANK} are not supported")
    leaves = []

    def walk(node, level):
        if not isinstance(node, list):
            if level != rank:
                raise invalid(f"JSON Value: {_show(node)} found at incorrect "
                              f"level: {level + 1} in the JSON DOM. Expected "
                              f"at level: {rank}")
            leaves.append(_scalar(node, dtype))
            return
        if level >= rank:
            raise invalid(f"Encountered list at unexpected level: {level} "
                          f"expected < {rank}")
        if len(node) != shape[level]:
            raise invalid(f"Encountered list at unexpected size: {len(node)}"
                          f" at level: {level} expected size: {shape[level]}")
        for child in node:
            walk(child, level + 1)

    walk(value, 0)
    if dtype == tf.string:
        array = np.empty(len(leaves), dtype=object)
        array[:] = leaves
        return array.reshape(shape)
    return np.array(leaves, dtype=dtype.as_numpy_dtype).reshape(shape)


def _add_item(columns, name, value, specs):
    """Append one instance's value of input `name`; it must have the size
    and shape of the first instance's (`AddInstanceItem`)."""
    if name not in specs:
        raise invalid(f"JSON object: does not have named input: {name}")
    array = to_array(value, specs[name].dtype)
    values = columns[name]
    if values and array.size != values[0].size:
        raise invalid(f"Expecting tensor size: {values[0].size} but got: "
                      f"{array.size}")
    if values and array.shape != values[0].shape:
        raise invalid(f"Expecting shape {_shape_text(values[0].shape)} but "
                      f"got: {_shape_text(array.shape)}")
    values.append(array)


def predict_inputs(document, specs):
    """The inputs of a predict request and its format ("row" or
    "columnar"). `specs` maps input names to `tf.TensorSpec`s."""
    if "instances" in document and "inputs" in document:
        raise invalid(f"JSON Value: {_show(document)} Not formatted "
                      "correctly expecting only one of 'inputs' or "
                      "'instances' keys to exist ")
    if not specs:
        raise invalid("Failed to get input map for signature")
    if "instances" in document:
        instances = document["instances"]
        if not isinstance(instances, list):
            raise invalid(f"JSON Value: {_show(document)} Excepting "
                          "'instances' to be an list/array")
        if not instances:
            raise invalid(f"JSON Value: {_show(document)} No values in "
                          "'instances' array")
        columns = _row_columns(instances, specs)
        return columns, "row"
    if "inputs" in document:
        inputs = document["inputs"]
        if isinstance(inputs, dict) and not is_b64(inputs):
            arrays = {}
            for name in sorted(specs):
                if name not in inputs:
                    raise invalid(f"Missing named input: {name} in 'inputs' "
                                  "object.")
                arrays[name] = to_array(inputs[name], specs[name].dtype)
            return arrays, "columnar"
        if len(specs) > 1:
            raise invalid("inputs is a plain value/list, but expecting an "
                          "object as multiple input tensors required as per "
                          "tensorinfo_map")
        (name, spec), = specs.items()
        return {name: to_array(inputs, spec.dtype)}, "columnar"
    raise invalid("Missing 'inputs' or 'instances' key")


def _is_named_object(value):
    return isinstance(value, dict) and not is_b64(value)


def _row_columns(instances, specs):
    """The instances as one array per input, checked element by element
    in TF Serving's order and words (`FillTensorMapFromInstancesList`)."""
    names = sorted(specs)
    if not isinstance(instances[0], dict) and len(names) > 1:
        raise invalid("instances is a plain list, but expecting list of "
                      "objects as multiple input tensors required as per "
                      "tensorinfo_map")
    objects = _is_named_object(instances[0])
    columns = {name: [] for name in names}
    for index, instance in enumerate(instances):
        if objects and not _is_named_object(instance):
            raise invalid(f"Expecting object but got list at item {index} of"
                          " input list")
        if not objects and _is_named_object(instance):
            raise invalid(f"Expecting value/list but got object at item "
                          f"{index} of input list")
        if not objects:
            try:
                _add_item(columns, names[0], instance, specs)
            except ServingError as error:
                raise invalid(f"Failed to process element: {index} of "
                              f"'instances' list. Error: {error.code}: "
                              f"{error.message}") from None
            continue
        for key, value in instance.items():
            try:
                _add_item(columns, key, value, specs)
            except ServingError as error:
                raise invalid(f"Failed to process element: {index} key: {key}"
                              f" of 'instances' list. Error: {error.code}: "
                              f"{error.message}") from None
        if set(instance) != set(names):
            raise invalid(f"Failed to process element: {index} of 'instances'"
                          f" list. JSON object: {_show(instance)} must only "
                          f"have keys: {','.join(names)}")
    return {name: np.stack(values) for name, values in columns.items()}


# -- classify / regress requests ----------------------------------------------

def _feature(name, value):
    """A JSON feature value (scalar or flat list) as a `tf.train.Feature`."""
    values = value if isinstance(value, list) else [value]
    kinds = []
    converted = []
    for element in values:
        if isinstance(element, str) or is_b64(element):
            kinds.append("bytes")
            converted.append(_scalar(element, tf.string))
        elif isinstance(element, bool):
            kinds.append("int64")
            converted.append(int(element))
        elif isinstance(element, int):
            if element > _INT64.max or element < _INT64.min:
                raise invalid(f"Feature: {name} has uint64 element. Only "
                              "int64 is supported.")
            kinds.append("int64")
            converted.append(element)
        elif isinstance(element, float):
            if math.isfinite(element) and abs(element) > np.finfo(
                    np.float32).max:
                raise invalid(f"Cannot convert JSON value: {element} to float"
                              " without loss of precision.")
            kinds.append("float")
            converted.append(element)
        else:
            kind = {type(None): "Null", list: "Array", dict: "Object"}.get(
                type(element), "Unknown")
            raise invalid(f"Feature: {name} has element with unexpected JSON "
                          f"type: {kind}")
        if kinds[-1] != kinds[0]:
            raise invalid(f"Unexpected element type in feature: {name} "
                          f"expecting type: {kinds[0]}")
    if not kinds:
        return tf.train.Feature()
    if kinds[0] == "bytes":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=converted))
    if kinds[0] == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=converted))
    return tf.train.Feature(float_list=tf.train.FloatList(value=converted))


def _example(value):
    if not isinstance(value, dict):
        raise invalid(f"Example must be JSON object but got JSON "
                      f"{_json_type(value)}")
    return tf.train.Example(features=tf.train.Features(feature={
        name: _feature(name, feature) for name, feature in value.items()
    }))


def serialized_examples(document):
    """The `examples` (with `context`) of a classify/regress request as
    serialized tf.Examples, each `context + example` as TF Serving builds
    them (an example's feature overrides a context feature)."""
    if "examples" not in document:
        raise invalid(f"JSON Value: {_show(document)} When method is "
                      "classify, key 'examples' is expected and was not found")
    examples = document["examples"]
    if not isinstance(examples, list):
        raise invalid(f"JSON Value: {_show(document)} Expecting 'examples' "
                      "value to be an list/array")
    if not examples:
        raise invalid(f"JSON Value: {_show(document)} 'examples' value is an "
                      "empty array")
    context = b""
    if "context" in document:
        context = _example(document["context"]).SerializeToString()
    serialized = np.empty(len(examples), dtype=object)
    serialized[:] = [context + _example(e).SerializeToString()
                     for e in examples]
    return serialized
