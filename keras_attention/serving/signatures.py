"""What a request needs of a signature, checked as TF Serving checks it,
for both transports and the warm-up replay:

- the signature a name picks (empty: `serving_default`), a predict
  request's inputs, their dtypes and its output filter (`predict_util.cc`);
- what `:classify` and `:regress` need of a signature and of its outputs,
  checked as TF Serving does when its method-name check is off (the
  default): one string input named `inputs`; `classes` and/or `scores`
  outputs for classify, one `outputs` output for regress; then the
  outputs' shapes (`classifier.cc`, `regressor.cc`). Both transports
  write what these functions return.
"""

from keras_attention._extras import require

require(__name__, "serving", "tensorflow")

import numpy as np
import tensorflow as tf

from keras_attention.serving.errors import invalid
from keras_attention.serving.json_tensors import type_name

DEFAULT_SIGNATURE = "serving_default"


def signature_key(name):
    """TF Serving reads an empty signature name as the default signature
    (predict_util.cc, classifier.cc, regressor.cc, multi_inference.cc)."""
    return name or DEFAULT_SIGNATURE


def read_inputs(signature, tensors, decode):
    """The NumPy inputs of a request whose named tensors are `tensors`,
    checked as TF Serving checks them (`VerifyRequestInputsSize`,
    `saved_model::GetInputValues`), with its messages.
    `decode(tensor, alias)` turns one into an array or raises a
    `ServingError`.

    Shapes are the model's business: a signature may declare a tighter
    shape than its graph accepts (TF1 SavedModels often do), and TF
    Serving hands the tensors to the model without comparing them.
    """
    expected = signature.inputs
    if len(tensors) != len(expected):
        sent, wanted = set(tensors), set(expected)
        raise invalid(
            f"input size does not match signature: {len(tensors)}!="
            f"{len(expected)} len({{{_join(sent)}}}) != "
            f"len({{{_join(wanted)}}}). Sent extra: {{{_join(sent - wanted)}}}."
            f" Missing but required: {{{_join(wanted - sent)}}}.")
    arrays = {}
    for alias in sorted(expected):
        if alias not in tensors:
            feed = signature.feed_names.get(alias, alias)
            raise invalid(f"Signature input alias: {alias}(feed name: {feed})"
                          " not found in request and no default value "
                          "provided. Inputs expected to be in the request "
                          f"{{{_join(tensors)}}}, or default input alias "
                          "set: ")
        arrays[alias] = decode(tensors[alias], alias)
    return arrays


def check_dtypes(signature, arrays):
    """Each input's dtype is the signature's, as the session checks it
    when the model runs (after the output filter is read)."""
    for index, alias in enumerate(sorted(arrays)):
        got, wanted = _dtype(arrays[alias]), signature.inputs[alias].dtype
        if got != wanted:
            raise invalid(f"Expects arg[{index}] to be {type_name(wanted)} "
                          f"but {type_name(got)} is provided")


def _join(names):
    return ",".join(sorted(names))


def _dtype(array):
    return tf.string if array.dtype == object else tf.as_dtype(array.dtype)


def output_names(signature, output_filter):
    """The outputs a predict request asks for: `output_filter`'s aliases
    (each once, each in the signature), or all of them."""
    seen = []
    for alias in output_filter:
        if alias not in signature.outputs:
            raise invalid(f"output tensor alias not found in signature: "
                          f"{alias} Outputs expected to be in the set "
                          f"{{{_join(signature.outputs)}}}.")
        if alias in seen:
            raise invalid(f"duplicate output tensor alias: {alias}")
        seen.append(alias)
    return seen or sorted(signature.outputs)


def _check_input(signature, kind):
    if len(signature.inputs) != 1:
        raise invalid("Expected one input Tensor.")
    if "inputs" not in signature.inputs:
        raise invalid(f"No {kind} inputs found in SignatureDef: "
                      f"{signature.name}")


def check_classify(signature):
    _check_input(signature, "classification")
    outputs = signature.outputs
    if not 1 <= len(outputs) <= 2:
        raise invalid(f"Expected one or two output Tensors, found "
                      f"{len(outputs)}")
    if "classes" not in outputs and "scores" not in outputs:
        raise invalid('Expected classification signature outputs to contain '
                      'at least one of "classes" or "scores". Signature was: '
                      f"{signature.name}")
    if "classes" in outputs and outputs["classes"] != tf.string:
        raise invalid(f"Expected classes Tensor of DT_STRING. Got: "
                      f"DT_{outputs['classes'].name.upper()}")
    if "scores" in outputs and outputs["scores"] != tf.float32:
        raise invalid(f"Expected scores Tensor of DT_FLOAT. Got: "
                      f"DT_{outputs['scores'].name.upper()}")


def check_regress(signature):
    _check_input(signature, "regression")
    if len(signature.outputs) != 1:
        raise invalid("Expected one output Tensor.")
    if "outputs" not in signature.outputs:
        raise invalid(f"No regression outputs found in SignatureDef: "
                      f"{signature.name}")
    if signature.outputs["outputs"] != tf.float32:
        raise invalid("Expected output Tensor of DT_FLOAT.  Got: "
                      f"DT_{signature.outputs['outputs'].name.upper()}")


def classification_rows(outputs, batch):
    """Per example, its `(label bytes, score float)` pairs (b"" without a
    `classes` output, 0.0 without `scores`)."""
    classes = outputs.get("classes")
    scores = outputs.get("scores")
    reference = classes if classes is not None else scores
    if np.ndim(reference) != 2:
        raise invalid(f"Expected Tensor shape: [batch_size num_classes] but "
                      f"got {list(np.shape(reference))}")
    if np.shape(reference)[0] != batch:
        raise invalid(f"Expected classes output batch size of {batch}. Got: "
                      f"{np.shape(reference)[0]}")
    if classes is not None and scores is not None and (
            np.shape(classes)[1] != np.shape(scores)[1]):
        raise invalid(f"Tensors class and score should match in dim_size(1)."
                      f" Got {np.shape(classes)[1]} vs. {np.shape(scores)[1]}")
    width = np.shape(reference)[1]
    return [[(classes[index][k] if classes is not None else b"",
              float(scores[index][k]) if scores is not None else 0.0)
             for k in range(width)] for index in range(batch)]


def regression_values(outputs, batch):
    """Per example, its regression value (a float)."""
    values = np.asarray(outputs["outputs"])
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise invalid("Expected output Tensor shape to be either [batch_size]"
                      f" or [batch_size, 1] but got {list(values.shape)}")
    if values.shape[0] != batch:
        raise invalid("Input batch size did not match output batch size: "
                      f"{batch} vs. {values.shape[0]}")
    return [float(v) for v in values.tolist()]
