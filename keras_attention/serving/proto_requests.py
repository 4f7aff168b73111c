"""What a `tensorflow-serving-api` request asks of a servable, checked as
TF Serving checks it: the signature, the input arrays and the outputs of
a `PredictRequest`, `ClassificationRequest`, `RegressionRequest` or
`MultiInferenceRequest`. The gRPC API (`grpc_api.py`) answers them; the
warm-up (`warmup.py`) replays them from a SavedModel's `PredictionLog`s.
"""

from keras_attention.serving import protos
from keras_attention.serving.errors import ServingError
from keras_attention.serving.errors import invalid
from keras_attention.serving.servable import CLASSIFY
from keras_attention.serving.servable import REGRESS
from keras_attention.serving.signatures import check_classify
from keras_attention.serving.signatures import check_dtypes
from keras_attention.serving.signatures import check_regress
from keras_attention.serving.signatures import output_names
from keras_attention.serving.signatures import read_inputs
from keras_attention.serving.signatures import signature_key


def predict_call(servable, request):
    """(signature name, signature, input arrays, output names) of a
    `PredictRequest` to `servable`, checked as TF Serving's `RunPredict`
    checks it."""
    name = signature_key(request.model_spec.signature_name)
    signature = servable.signatures.get(name)
    if signature is None:
        raise ServingError("FAILED_PRECONDITION",
                           f'Serving signature key "{name}" not found.')
    inputs = read_inputs(signature, request.inputs, protos.to_array)
    names = output_names(signature, request.output_filter)
    check_dtypes(signature, inputs)
    return name, signature, inputs, names


def examples_call(servable, request, api):
    """(signature, serialized examples) of a Classification- or
    RegressionRequest (`api` "classify" or "regress")."""
    name = signature_key(request.model_spec.signature_name)
    signature = servable.signatures.get(name)
    if signature is None:
        raise invalid(f"No signature was found with the name: {name}")
    (check_classify if api == "classify" else check_regress)(signature)
    return signature, protos.examples_from_input(request.input)


def multi_inference_calls(servable, request):
    """(signatures, serialized examples) of a `MultiInferenceRequest`,
    its tasks checked as `TensorFlowMultiInferenceRunner::Infer` does."""
    tasks = request.tasks
    model_name = tasks[0].model_spec.name if tasks else ""
    signatures = []
    for task in tasks:
        if not task.model_spec.name:
            raise invalid("Found ModelSpec with an empty model name.")
        if task.model_spec.name != model_name:
            raise invalid("All ModelSpecs in a MultiInferenceRequest must "
                          "access the same model name.")
        name = signature_key(task.model_spec.signature_name)
        if name in [s.name for s in signatures]:
            raise invalid(f"Duplicate evaluation of signature: {name}")
        signature = servable.signatures.get(name)
        if signature is None:
            raise invalid(f"Requested signature not found in model graph: "
                          f"{name}")
        if task.method_name == CLASSIFY:
            check_classify(signature)
        elif task.method_name == REGRESS:
            check_regress(signature)
        else:
            raise ServingError("UNIMPLEMENTED", "Unsupported signature "
                               f"method_name: {task.method_name}")
        signatures.append(signature)
    return signatures, protos.examples_from_input(request.input)
