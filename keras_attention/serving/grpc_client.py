"""`Client` over TF Serving's gRPC API (`grpc://host:port`): the same
methods and the same answers as over REST, so that a caller switches
APIs by changing the URL.

The request values are read as the REST API reads JSON (`json_tensors`,
against the signature's dtypes from `GetModelMetadata`) and the answers
written as it writes them (`json_writer`, lossless for float32), so a
gRPC answer is the REST answer to the same request.
"""

import json

from keras_attention._extras import require

require(__name__, "serving", "tensorflow", "tensorflow_serving", "grpc")

import grpc
import tensorflow as tf
from google.protobuf import json_format
from tensorflow_serving.apis import classification_pb2
from tensorflow_serving.apis import get_model_metadata_pb2
from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.apis import input_pb2
from tensorflow_serving.apis import model_service_pb2_grpc
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_service_pb2_grpc
from tensorflow_serving.apis import regression_pb2

from keras_attention.serving import json_tensors
from keras_attention.serving import json_writer
from keras_attention.serving import protos
from keras_attention.serving.errors import ServingError
from keras_attention.serving.rest_client import RestClient
from keras_attention.serving.rest_client import ServingClientError
from keras_attention.serving.signatures import signature_key


class GrpcClient(RestClient):
    """`Client("grpc://host:port", model)`: TF Serving's gRPC API. The
    REST client's argument checks and `translate`, its transport replaced.

    Example:

    >>> client = GrpcClient("grpc://localhost:8500", "translator")
    >>> client.target
    'localhost:8500'
    """

    def __init__(self, url, model, timeout=30.0):
        super().__init__(url, model, timeout)
        target = self.url[len("grpc://"):]
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"a grpc:// url must name host:port, received: "
                             f"url={url!r}")
        self.target = target
        self._channel = None
        self._signatures = {}  # (version, label, name) -> input TensorSpecs

    def _stubs(self):
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.target, options=[
                ("grpc.max_receive_message_length", -1),
                ("grpc.max_send_message_length", -1)])
        return (prediction_service_pb2_grpc.PredictionServiceStub(
                    self._channel),
                model_service_pb2_grpc.ModelServiceStub(self._channel))

    def close(self):
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _call(self, method, request):
        """One RPC; errors as `ServingClientError` with the status code."""
        prediction, models = self._stubs()
        stub = models if method == "GetModelStatus" else prediction
        try:
            return getattr(stub, method)(request, timeout=self.timeout)
        except grpc.RpcError as error:
            code = error.code()
            where = f"grpc://{self.target} {method}"
            if (code == grpc.StatusCode.UNAVAILABLE
                    and "failed to connect" in (error.details() or "")):
                message = f"{where}: no answer: {error.details()}"
            else:
                message = f"{where}: {code.name}: {error.details()}"
            raise ServingClientError(message, code=code.name) from None

    def _spec(self, request, version, label, signature_name=None):
        spec = request.model_spec
        spec.name = self.model
        if version is not None and label is not None:
            raise ValueError(f"give version or label, not both, received: "
                             f"version={version}, label={label!r}")
        if version is not None:
            spec.version.value = int(version)
        elif label is not None:
            spec.version_label = label
        if signature_name:
            spec.signature_name = signature_name
        return request

    def status(self, version=None, label=None):
        request = self._spec(get_model_status_pb2.GetModelStatusRequest(),
                             version, None)
        answer = self._call("GetModelStatus", request)
        return json_format.MessageToDict(
            answer, preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True)

    def _signature_defs(self, version, label):
        """(GetModelMetadataResponse, its SignatureDefMap)."""
        request = self._spec(
            get_model_metadata_pb2.GetModelMetadataRequest(
                metadata_field=["signature_def"]), version, label)
        answer = self._call("GetModelMetadata", request)
        signatures = get_model_metadata_pb2.SignatureDefMap()
        answer.metadata["signature_def"].Unpack(signatures)
        return answer, signatures

    def metadata(self, version=None, label=None):
        answer, signatures = self._signature_defs(version, label)
        as_dict = json_format.MessageToDict(
            signatures, preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True)
        return {"model_spec": {"name": answer.model_spec.name,
                               "signature_name": "",
                               "version": str(answer.model_spec.version
                                              .value)},
                "metadata": {"signature_def": {
                    "signature_def": as_dict.get("signature_def", {})}}}

    def _input_specs(self, signature_name, version, label):
        """The signature's inputs as `tf.TensorSpec`s, from the metadata
        (asked once per version, label and signature)."""
        key = (version, label, signature_key(signature_name))
        if key not in self._signatures:
            _, signatures = self._signature_defs(version, label)
            signature = signatures.signature_def.get(key[2])
            if signature is None:
                raise ServingClientError(
                    f"grpc://{self.target}: model {self.model} has no "
                    f"signature {key[2]!r}", code="INVALID_ARGUMENT")
            self._signatures[key] = {
                name: tf.TensorSpec(None, tf.as_dtype(info.dtype), name)
                for name, info in signature.inputs.items()}
        return self._signatures[key]

    def predict(self, instances=None, inputs=None, signature_name=None,
                version=None, label=None, output_filter=()):
        """As `Client.predict`; `output_filter` names the outputs to
        return (default: all)."""
        if (instances is None) == (inputs is None):
            raise ValueError("give exactly one of instances and inputs")
        document = ({"instances": instances} if instances is not None
                    else {"inputs": inputs})
        specs = self._input_specs(signature_name, version, label)
        try:
            arrays, layout = json_tensors.predict_inputs(document, specs)
        except ServingError as error:
            raise ServingClientError(f"{error.code}: {error.message}",
                                     code=error.code) from None
        request = self._spec(predict_pb2.PredictRequest(), version, label,
                             signature_name)
        for name, array in arrays.items():
            request.inputs[name].CopyFrom(
                protos.tensor_proto(array, specs[name].dtype))
        request.output_filter.extend(output_filter)
        answer = self._call("Predict", request)
        outputs = {name: tf.make_ndarray(proto)
                   for name, proto in answer.outputs.items()}
        dtypes = {name: tf.as_dtype(proto.dtype)
                  for name, proto in answer.outputs.items()}
        written = json_writer.predict_response(outputs, dtypes, layout)
        return json.loads(written)["predictions" if layout == "row"
                                   else "outputs"]

    def _examples(self, method, examples, context, signature_name, version,
                  label):
        document = {"examples": examples}
        if context is not None:
            document["context"] = context
        try:
            serialized = json_tensors.serialized_examples(document)
        except ServingError as error:
            raise ServingClientError(f"{error.code}: {error.message}",
                                     code=error.code) from None
        # `context + example` bytes parse as the merged tf.Example, as
        # TF Serving builds the examples of an example_list_with_context.
        request_type = (classification_pb2.ClassificationRequest
                        if method == "classify"
                        else regression_pb2.RegressionRequest)
        request = self._spec(request_type(), version, label, signature_name)
        request.input.CopyFrom(input_pb2.Input(
            example_list=input_pb2.ExampleList(examples=[
                tf.train.Example.FromString(data) for data in serialized])))
        answer = self._call(method.capitalize(), request)
        if method == "classify":
            rows = [[(c.label.encode(), c.score) for c in row.classes]
                    for row in answer.result.classifications]
            written = json_writer.classify_response(
                {"classes": [[label for label, _ in row] for row in rows],
                 "scores": [[score for _, score in row] for row in rows]},
                len(rows))
        else:
            values = [r.value for r in answer.result.regressions]
            written = json_writer.regress_response({"outputs": values},
                                                   len(values))
        return json.loads(written)["results"]
