"""One loaded SavedModel version: its signatures, ready to run.

Any SavedModel is served, not only the translator: tensorflow-text is
imported first so that its ops are registered, as they are in stock TF
Serving."""

import dataclasses
import pathlib
import re

from keras_attention._extras import require

require(__name__, "serving", "tensorflow", "tensorflow_text")

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
from google.protobuf import json_format
from tensorflow.core.protobuf import meta_graph_pb2
from tensorflow.core.protobuf import saved_model_pb2

from keras_attention.serving.errors import invalid

PREDICT = "tensorflow/serving/predict"
CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"


@dataclasses.dataclass
class Signature:
    """A callable signature: input specs, output dtypes, method name."""

    name: str
    method_name: str
    inputs: dict  # name -> tf.TensorSpec
    outputs: dict  # name -> tf.DType
    function: object

    feed_names: dict = dataclasses.field(default_factory=dict)

    def __call__(self, arrays):
        """Run on NumPy inputs; returns NumPy outputs.

        The arrays' shapes are not compared with the shapes the signature
        declares: as TF Serving, the model decides what it accepts (a TF1
        SavedModel may declare [-1, 3] for a placeholder of any shape)."""
        tensors = {name: tf.constant(arrays[name], spec.dtype)
                   for name, spec in self.inputs.items()}
        try:
            outputs = self.function(**tensors)
        except tf.errors.InvalidArgumentError as error:
            raise invalid(op_message(error.message)) from None
        return {name: tensor.numpy() for name, tensor in outputs.items()}


_EAGER_PREFIX = re.compile(
    r"Graph execution error:\s*Detected at node .*? defined at \(most recent "
    r"call last\):\n(?:<stack traces unavailable>\n|(?:[ \t].*\n)*)")
_EAGER_SUFFIX = re.compile(r" \[Op:[^\]]*\]$")


def op_message(message):
    """An op's error as a TF Serving session reports it: without the
    eager runtime's "Graph execution error" preamble (which names the
    server's own frames) and its `[Op:__inference_...]` tag.

    >>> op_message("Graph execution error:\\n\\nDetected at node M defined "
    ...            "at (most recent call last):\\n<stack traces unavailable>"
    ...            "\\nMatrix size-incompatible [Op:__inference_f_9]")
    'Matrix size-incompatible'
    """
    return _EAGER_SUFFIX.sub("", _EAGER_PREFIX.sub("", message, count=1))


def _meta_graph(path):
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((path / "saved_model.pb").read_bytes())
    for meta_graph in proto.meta_graphs:
        if "serve" in meta_graph.meta_info_def.tags:
            return meta_graph
    raise ValueError(f"Could not find meta graph def matching supplied tags:"
                     f" {{ serve }}. in {path}")


class Servable:
    """A SavedModel version loaded for serving."""

    def __init__(self, path, version):
        self.path = pathlib.Path(path)
        self.version = version
        meta_graph = _meta_graph(self.path)
        self.signature_defs = meta_graph_pb2.MetaGraphDef(
            signature_def=meta_graph.signature_def).signature_def
        self.model = tf.saved_model.load(str(self.path), tags=["serve"])
        self.signatures = {}
        for name, signature_def in self.signature_defs.items():
            if name not in self.model.signatures:
                continue  # e.g. TF1 "__saved_model_init_op"
            inputs = {
                key: tf.TensorSpec(tf.TensorShape(info.tensor_shape),
                                   tf.as_dtype(info.dtype), key)
                for key, info in signature_def.inputs.items()
            }
            outputs = {key: tf.as_dtype(info.dtype)
                       for key, info in signature_def.outputs.items()}
            self.signatures[name] = Signature(
                name, signature_def.method_name, inputs, outputs,
                self.model.signatures[name],
                {key: info.name for key, info in signature_def.inputs.items()})

    def metadata(self):
        """The `signature_def` map as TF Serving prints it (snake_case,
        defaults printed, int64 as strings): every signature of the meta
        graph, including ones that cannot be called, such as TF2's
        `__saved_model_init_op`."""
        holder = meta_graph_pb2.MetaGraphDef(
            signature_def=self.signature_defs)
        as_dict = json_format.MessageToDict(
            holder, preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True)
        return {"signature_def": as_dict.get("signature_def", {})}
