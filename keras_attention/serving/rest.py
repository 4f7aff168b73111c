"""TF Serving's REST API on aiohttp: its routes and its JSON codec.

Routes, bodies, value conversions and errors follow TF Serving's REST
handler (`model_servers/http_rest_api_handler.cc`, see
`serving/README.md`); models, versions, signatures, batching and
deadlines are the core's (`core.py`). Bodies are bounded (413, also
after gzip inflation); a request still running after
`--rest_api_timeout_in_ms` answers 504.
"""

import json
import re
import time
import urllib.parse

from keras_attention._extras import require

require(__name__, "serving", "aiohttp")

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from keras_attention.serving.errors import ServingError
from keras_attention.serving.errors import invalid
from keras_attention.serving.json_tensors import _show
from keras_attention.serving.json_tensors import parse_json
from keras_attention.serving.json_tensors import predict_inputs
from keras_attention.serving.json_tensors import serialized_examples
from keras_attention.serving.json_writer import classify_response
from keras_attention.serving.json_writer import predict_response
from keras_attention.serving.json_writer import regress_response
from keras_attention.serving.signatures import signature_key
from keras_attention.serving.versions import LOG

_NAME = r"([^/:]+)"
_VERSION = r"(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?"
_POST = re.compile(rf"/v1/models/{_NAME}{_VERSION}:(classify|regress|predict)",
                   re.IGNORECASE)
_GET = re.compile(rf"/v1/models(?:/{_NAME})?{_VERSION}(?:/(metadata))?",
                  re.IGNORECASE)
_V1 = re.compile(r"/v1/.*", re.IGNORECASE)
_JSON = "application/json"


class RestApi:
    """The REST routes over a `core.ModelServer`."""

    def __init__(self, core):
        self.core = core
        self.options = core.options

    def application(self):
        app = web.Application(client_max_size=self.options.max_request_bytes)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    async def _dispatch(self, request):
        started = time.perf_counter()
        path = request.raw_path.split("?", 1)[0]
        if self.options.metrics_path and path == self.options.metrics_path:
            return web.Response(body=self.core.metrics.exposition(),
                                content_type="text/plain")
        if not _V1.fullmatch(path):
            return web.Response(status=404, text="404 Not Found\n",
                                content_type="text/plain")
        model_name, api, code = None, None, "OK"
        try:
            match = (_POST.fullmatch(path) if request.method == "POST"
                     else _GET.fullmatch(path) if request.method == "GET"
                     else None)
            if match is None or (request.method == "POST"
                                 and match.group(4) not in
                                 ("predict", "classify", "regress")):
                raise invalid(f"Malformed request: {request.method} {path}")
            name = urllib.parse.unquote(match.group(1) or "")
            version = int(match.group(2)) if match.group(2) else None
            if version is not None and version >= 1 << 63:
                raise invalid(f"Failed to convert version: {match.group(2)} "
                              "to numeric.")
            label = (urllib.parse.unquote(match.group(3))
                     if match.group(3) else None)
            model_name = name
            if request.method == "POST":
                api = match.group(4)
                body = await self._predict(request, name, version, label, api)
            else:
                if not name:
                    raise invalid("Missing model name in request.")
                api = "metadata" if match.group(4) == "metadata" else "status"
                body = (self._metadata(name, version, label)
                        if api == "metadata" else self._status(name, version))
            return web.Response(body=body, content_type=_JSON)
        except ServingError as error:
            code = error.code
            return _error_response(error)
        except Exception as error:  # still a JSON answer, as every /v1 one
            LOG.exception("%s %s failed", request.method, path)
            code = "INTERNAL"
            return _error_response(ServingError(
                code, f"{type(error).__name__}: {error}"))
        finally:
            self.core.metrics.record(model_name, api, code,
                                     time.perf_counter() - started, "REST")
            LOG.debug("%s %s -> %s in %.1f ms", request.method, path, code,
                      1000 * (time.perf_counter() - started))

    async def _body(self, request):
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise ServingError(
                "INVALID_ARGUMENT", "Request body is larger than the server's"
                f" limit of {self.options.max_request_bytes} bytes",
                http_status=413) from None
        except RequestPayloadError as error:  # e.g. a body that is not gzip
            reason = " ".join(str(error).split())
            raise invalid(f"Failed to read the request body: {reason}"
                          ) from None

    def _status(self, name, version):
        statuses = self.core.status(name, version)
        return json.dumps({"model_version_status": statuses}, indent=1)

    def _metadata(self, name, version, label):
        servable = self.core.servable(name, version, label)
        return json.dumps({
            "model_spec": {"name": name, "signature_name": "",
                           "version": str(servable.version)},
            "metadata": {"signature_def": servable.metadata()},
        }, indent=1)

    async def _run(self, servable, signature, inputs):
        return await self.core.run(
            servable, signature, inputs,
            self.options.rest_api_timeout_in_ms / 1000,
            "--rest_api_timeout_in_ms")

    async def _predict(self, request, name, version, label, api):
        document = parse_json(await self._body(request))
        if not isinstance(document, dict):
            raise invalid(f"JSON Value: {_show(document)} Is not object")
        signature_name = document.get("signature_name", "")
        if not isinstance(signature_name, str):
            raise invalid(f"JSON Value: {_show(document)} not formatted "
                          "correctly. 'signature_name' key must be a string "
                          "value.")
        if api != "predict":
            # TF Serving reads the examples before it looks for the model.
            examples = serialized_examples(document)
        servable = self.core.servable(name, version, label)
        signature = self.core.signature(servable, signature_name)
        if signature is None:
            if api == "predict":
                raise invalid('Serving signature name: '
                              f'"{signature_key(signature_name)}" not found '
                              "in signature def")
            raise invalid(f"No signature was found with the name: "
                          f"{signature_key(signature_name)}")
        if api == "predict":
            inputs, layout = predict_inputs(document, signature.inputs)
            outputs = await self._run(servable, signature, inputs)
            return predict_response(outputs, signature.outputs, layout)
        self.core.check_method(signature, api)
        outputs = await self._run(servable, signature, {"inputs": examples})
        if api == "classify":
            return classify_response(outputs, len(examples))
        return regress_response(outputs, len(examples))


def _error_response(error):
    return web.Response(status=error.http_status,
                        body=json.dumps({"error": error.message}).encode(),
                        content_type=_JSON)
