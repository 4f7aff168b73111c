"""Answers as JSON text, as TF Serving's REST API writes them
(`util/json_tensor.cc`): predict outputs in the row or columnar format,
classify and regress results."""

import base64
import json
import math

from keras_attention._extras import require

require(__name__, "serving", "tensorflow")

import numpy as np
import tensorflow as tf

from keras_attention.serving.errors import invalid
from keras_attention.serving.json_tensors import type_name
from keras_attention.serving.signatures import classification_rows
from keras_attention.serving.signatures import regression_values


def format_float(value, double=False):
    """TF Serving's `WriteDecimal`: 6 significant digits, more (9 for
    float, 17 for double) only when needed to read back the same value;
    `.0` on numbers without a point or exponent; bare NaN/Infinity."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = f"{value:.6g}"
    exact = float(text) == value if double else np.float32(text) == value
    if not exact:
        text = f"{value:.17g}" if double else f"{value:.9g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _string(data):
    return json.dumps(data.decode("utf-8", "surrogateescape"),
                      ensure_ascii=False)


def _leaf_writer(dtype, name):
    if dtype == tf.string:
        if name.endswith("_bytes"):
            return lambda v: ('{"b64": "' + base64.b64encode(v).decode()
                              + '"}')
        return _string
    if dtype == tf.bool:
        return lambda v: "true" if v else "false"
    if dtype in (tf.float32, tf.float64):
        double = dtype == tf.float64
        return lambda v: format_float(float(v), double)
    if dtype.is_integer:
        return lambda v: str(int(v))
    raise invalid(f"Failed to write JSON value for tensor type: "
                  f"{type_name(dtype)}")


def _write(array, leaf):
    if array.ndim == 0:
        return leaf(array.item() if array.dtype != object else array[()])
    if array.ndim == 1:
        values = array.tolist()
        return "[" + ", ".join(leaf(v) for v in values) + "]"
    return "[" + ", ".join(_write(row, leaf) for row in array) + "]"


def write_tensor(array, dtype, name):
    """One output tensor as JSON text."""
    return _write(np.asarray(array), _leaf_writer(dtype, name))


def _encode(text):
    return text.encode("utf-8", "surrogateescape")


def predict_response(outputs, dtypes, layout):
    """`{"predictions": ...}` (row) or `{"outputs": ...}` (columnar)."""
    if not outputs:
        raise invalid("Cannot convert empty tensor map to JSON")
    names = sorted(outputs)
    if layout == "columnar":
        if len(names) == 1:
            body = write_tensor(outputs[names[0]], dtypes[names[0]], names[0])
        else:
            body = "{" + ", ".join(
                f"{json.dumps(name)}: "
                f"{write_tensor(outputs[name], dtypes[name], name)}"
                for name in names) + "}"
        return _encode('{"outputs": ' + body + "}")
    batch = None
    for name in names:
        shape = np.shape(outputs[name])
        if not shape:
            raise invalid(f"Tensor name: {name} has no shape information ")
        if shape[0] < 1:
            raise invalid(f"Tensor name: {name} has invalid batch size: "
                          f"{shape[0]}")
        if batch is None:
            batch = shape[0]
        elif shape[0] != batch:
            raise invalid(f"Tensor name: {name} has inconsistent batch size: "
                          f"{shape[0]} expecting: {batch}")
    writers = {name: _leaf_writer(dtypes[name], name) for name in names}
    rows = []
    for index in range(batch):
        if len(names) == 1:
            rows.append(_write(np.asarray(outputs[names[0]][index]),
                               writers[names[0]]))
        else:
            rows.append("{" + ", ".join(
                f"{json.dumps(name)}: "
                f"{_write(np.asarray(outputs[name][index]), writers[name])}"
                for name in names) + "}")
    return _encode('{"predictions": [' + ", ".join(rows) + "]}")


def classify_response(outputs, batch):
    """`{"results": [[[label, score], ...], ...]}`."""
    rows = ["[" + ", ".join(f"[{_string(label)}, {format_float(score)}]"
                            for label, score in row) + "]"
            for row in classification_rows(outputs, batch)]
    return _encode('{"results": [' + ", ".join(rows) + "]}")


def regress_response(outputs, batch):
    """`{"results": [value, ...]}`."""
    return _encode('{"results": [' + ", ".join(
        format_float(v) for v in regression_values(outputs, batch)) + "]}")
