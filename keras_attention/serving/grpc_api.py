"""TF Serving's gRPC API on grpcio's asyncio server:
`tensorflow.serving.PredictionService` (Predict, Classify, Regress,
MultiInference, GetModelMetadata) and `tensorflow.serving.ModelService`
(GetModelStatus, HandleReloadConfigRequest), with the message types of
`tensorflow-serving-api`.

The services own only their codec (`protos.py`) and their methods; the
models, versions, signatures, value checks and batching are the core's,
shared with REST. Errors carry TF Serving's status codes and messages
(its handlers in `model_servers/` and `servables/tensorflow/`), the
message cut at 1,024 characters as TF Serving's `ToGRPCStatus` does.

The server is grpcio's asyncio server, in the event loop REST uses; at
most `--grpc_max_threads` requests are worked on at once (TF Serving's
flag bounds its gRPC threads). grpcio's thread-pool server was measured
too and cost more CPU per request here with batching on (720-840 against
515 us on 2 cores), as requests reached the batcher more slowly.
"""

import asyncio
import time

from keras_attention._extras import require

require(__name__, "serving", "tensorflow", "tensorflow_serving", "grpc")

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import meta_graph_pb2
from tensorflow_serving.apis import classification_pb2
from tensorflow_serving.apis import get_model_metadata_pb2
from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.apis import inference_pb2
from tensorflow_serving.apis import model_management_pb2
from tensorflow_serving.apis import model_service_pb2_grpc
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_service_pb2_grpc
from tensorflow_serving.apis import regression_pb2

from keras_attention.serving import protos
from keras_attention.serving.errors import ServingError
from keras_attention.serving.errors import invalid
from keras_attention.serving.proto_requests import examples_call
from keras_attention.serving.proto_requests import multi_inference_calls
from keras_attention.serving.proto_requests import predict_call
from keras_attention.serving.servable import CLASSIFY
from keras_attention.serving.signatures import classification_rows
from keras_attention.serving.signatures import regression_values
from keras_attention.serving.versions import LOG

SIGNATURE_DEF = "signature_def"
_MESSAGE_LIMIT = 1024


class _Service:
    """What both services share: error answers, metrics, the thread
    bound and deadlines."""

    def __init__(self, core, slots):
        self.core = core
        self._slots = slots

    async def _answer(self, context, api, model_name, work):
        started = time.perf_counter()
        code = "OK"
        try:
            async with self._slots:
                return await work(_timeout(context))
        except ServingError as error:
            code = error.code
            message = error.message
        except Exception as error:  # an INTERNAL answer, never a crash
            LOG.exception("gRPC %s failed", api)
            code, message = "INTERNAL", f"{type(error).__name__}: {error}"
        finally:
            self.core.metrics.record(model_name, api, code,
                                     time.perf_counter() - started, "GRPC")
        if len(message) > _MESSAGE_LIMIT:
            message = message[:_MESSAGE_LIMIT] + "...TRUNCATED"
        await context.abort(getattr(grpc.StatusCode, code), message)

    def _servable(self, model_spec):
        version, label = protos.version_and_label(model_spec)
        return self.core.servable(model_spec.name, version, label)

    async def _run(self, servable, signature, inputs, timeout):
        return await self.core.run(servable, signature, inputs, timeout,
                                   "the request's deadline")


def _timeout(context):
    """Seconds left before the client's deadline (None: no deadline)."""
    remaining = context.time_remaining()
    return remaining if remaining is not None and remaining < 1e9 else None


class PredictionService(_Service,
                        prediction_service_pb2_grpc.PredictionServiceServicer):
    async def Predict(self, request, context):
        async def work(timeout):
            spec = request.model_spec
            servable = self._servable(spec)
            name, signature, inputs, names = predict_call(servable, request)
            outputs = await self._run(servable, signature, inputs, timeout)
            response = predict_pb2.PredictResponse()
            protos.fill_model_spec(response.model_spec, spec.name, name,
                                   servable.version)
            for alias in names:
                response.outputs[alias].CopyFrom(protos.tensor_proto(
                    outputs[alias], signature.outputs[alias]))
            return response

        return await self._answer(context, "predict",
                                  request.model_spec.name, work)

    async def _examples(self, request, context, api):
        """Classify and Regress."""
        async def work(timeout):
            spec = request.model_spec
            servable = self._servable(spec)
            signature, examples = examples_call(servable, request, api)
            outputs = await self._run(servable, signature,
                                      {"inputs": examples}, timeout)
            if api == "classify":
                response = classification_pb2.ClassificationResponse()
                protos.fill_classification(
                    response.result,
                    classification_rows(outputs, len(examples)))
            else:
                response = regression_pb2.RegressionResponse()
                protos.fill_regression(
                    response.result,
                    regression_values(outputs, len(examples)))
            protos.fill_model_spec(response.model_spec, spec.name,
                                   spec.signature_name, servable.version)
            return response

        return await self._answer(context, api, request.model_spec.name,
                                  work)

    async def Classify(self, request, context):
        return await self._examples(request, context, "classify")

    async def Regress(self, request, context):
        return await self._examples(request, context, "regress")

    async def MultiInference(self, request, context):
        tasks = request.tasks
        model_name = tasks[0].model_spec.name if tasks else ""

        async def work(timeout):
            # TF Serving finds the servable of the first task's ModelSpec.
            servable = self._servable(tasks[0].model_spec) if tasks else (
                self.core.servable(""))
            signatures, examples = multi_inference_calls(servable, request)
            runs = await asyncio.gather(*(
                self._run(servable, signature, {"inputs": examples}, timeout)
                for signature in signatures))
            response = inference_pb2.MultiInferenceResponse()
            for task, outputs in zip(tasks, runs):
                result = response.results.add()
                if task.method_name == CLASSIFY:
                    protos.fill_classification(
                        result.classification_result,
                        classification_rows(outputs, len(examples)))
                else:
                    protos.fill_regression(
                        result.regression_result,
                        regression_values(outputs, len(examples)))
                protos.fill_model_spec(result.model_spec, model_name,
                                       task.model_spec.signature_name,
                                       servable.version)
            return response

        return await self._answer(context, "multi_inference", model_name,
                                  work)

    async def GetModelMetadata(self, request, context):
        async def work(timeout):
            if not request.HasField("model_spec"):
                raise invalid("Missing ModelSpec")
            if not request.metadata_field:
                raise invalid("GetModelMetadataRequest must specify at least "
                              "one metadata_field")
            for field in request.metadata_field:
                if field != SIGNATURE_DEF:
                    raise invalid(f"Metadata field {field} is not supported")
            servable = self._servable(request.model_spec)
            response = get_model_metadata_pb2.GetModelMetadataResponse()
            protos.fill_model_spec(response.model_spec,
                                   request.model_spec.name, None,
                                   servable.version)
            packed = any_pb2.Any()
            packed.Pack(get_model_metadata_pb2.SignatureDefMap(
                signature_def=meta_graph_pb2.MetaGraphDef(
                    signature_def=servable.signature_defs).signature_def))
            response.metadata[SIGNATURE_DEF].CopyFrom(packed)
            return response

        return await self._answer(context, "metadata",
                                  request.model_spec.name, work)


class ModelService(_Service, model_service_pb2_grpc.ModelServiceServicer):
    async def GetModelStatus(self, request, context):
        async def work(timeout):
            if not request.HasField("model_spec"):
                raise invalid("Missing ModelSpec")
            spec = request.model_spec
            version = spec.version.value if spec.HasField("version") else None
            response = get_model_status_pb2.GetModelStatusResponse()
            for status in self.core.status(spec.name, version):
                protos.version_status(status,
                                      response.model_version_status.add())
            return response

        return await self._answer(context, "status",
                                  request.model_spec.name, work)

    async def HandleReloadConfigRequest(self, request, context):
        from keras_attention.serving.config import model_specs_from_proto

        async def work(timeout):
            config = request.config
            if config.WhichOneof("config") != "model_config_list":
                raise invalid("ServerModelConfig type not supported by "
                              "HandleReloadConfigRequest. Only "
                              "ModelConfigList is currently supported")
            try:
                specs = model_specs_from_proto(config, "ReloadConfigRequest")
            except ValueError as error:
                raise invalid(str(error)) from None
            # Loading new versions takes seconds: off the event loop, so
            # that requests to the models already served go on.
            await asyncio.to_thread(self.core.reload, specs)
            response = model_management_pb2.ReloadConfigResponse()
            response.status.error_code = 0
            return response

        return await self._answer(context, "reload_config", None, work)


PREDICTION_SERVICE = ("tensorflow.serving.PredictionService", {
    "Predict": predict_pb2.PredictRequest,
    "Classify": classification_pb2.ClassificationRequest,
    "Regress": regression_pb2.RegressionRequest,
    "MultiInference": inference_pb2.MultiInferenceRequest,
    "GetModelMetadata": get_model_metadata_pb2.GetModelMetadataRequest,
})
MODEL_SERVICE = ("tensorflow.serving.ModelService", {
    "GetModelStatus": get_model_status_pb2.GetModelStatusRequest,
    "HandleReloadConfigRequest": model_management_pb2.ReloadConfigRequest,
})


def _handlers(servicer, service):
    """The service's methods, each parsing its own request: a message
    that is not the request type answers INTERNAL, as a C++ gRPC server
    (TF Serving) answers it (grpcio's own parsing would say UNKNOWN)."""
    name, requests = service

    def method(handle, request_type):
        async def parse_and_handle(data, context):
            try:
                request = request_type.FromString(data)
            except DecodeError:
                await context.abort(
                    grpc.StatusCode.INTERNAL, "Failed to parse the request "
                    f"as {request_type.DESCRIPTOR.full_name}")
            return await handle(request, context)

        return grpc.unary_unary_rpc_method_handler(
            parse_and_handle,
            response_serializer=lambda message: message.SerializeToString())

    return grpc.method_handlers_generic_handler(name, {
        method_name: method(getattr(servicer, method_name), request_type)
        for method_name, request_type in requests.items()})


async def start_grpc_server(core):
    """Both services on `core.options.port`; returns the started
    `grpc.aio.Server`. Messages larger than `--max_request_bytes` are
    refused (RESOURCE_EXHAUSTED) unless `--grpc_channel_arguments` sets
    `grpc.max_receive_message_length`."""
    options = core.options
    arguments = dict([("grpc.max_receive_message_length",
                       options.max_request_bytes),
                      ("grpc.max_send_message_length", -1),
                      # A port in use is an error, not a second listener.
                      ("grpc.so_reuseport", 0),
                      *options.grpc_channel_arguments])
    slots = asyncio.Semaphore(options.grpc_max_threads)
    server = grpc.aio.server(options=list(arguments.items()), handlers=[
        _handlers(PredictionService(core, slots), PREDICTION_SERVICE),
        _handlers(ModelService(core, slots), MODEL_SERVICE)])
    address = f"{options.host}:{options.port}"
    if ":" in options.host:
        address = f"[{options.host}]:{options.port}"
    server.add_insecure_port(address)
    await server.start()
    LOG.info("gRPC API listening on %s", address)
    return server
