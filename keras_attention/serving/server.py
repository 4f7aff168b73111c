"""A TF Serving-compatible REST server for SavedModels, on aiohttp.

Routes, bodies, value conversions, errors and version handling follow TF
Serving's REST API (see `serving/README.md`); any SavedModel is served.
Model calls run on a thread pool (TensorFlow releases the GIL), optionally
through server-side batching; each request has a deadline (504), bodies
are bounded (413, also after gzip inflation), and SIGTERM stops accepting
new connections while requests already accepted finish.
"""

import asyncio
import concurrent.futures
import dataclasses
import json
import os
import re
import threading
import time
import urllib.parse
import weakref

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from keras_attention.serving.batching import Batcher
from keras_attention.serving.errors import ServingError
from keras_attention.serving.errors import invalid
from keras_attention.serving.json_tensors import _show
from keras_attention.serving.json_tensors import parse_json
from keras_attention.serving.json_tensors import predict_inputs
from keras_attention.serving.json_writer import classify_response
from keras_attention.serving.json_writer import predict_response
from keras_attention.serving.json_writer import regress_response
from keras_attention.serving.json_writer import serialized_examples
from keras_attention.serving.metrics import Metrics
from keras_attention.serving.signatures import check_classify
from keras_attention.serving.signatures import check_regress
from keras_attention.serving.versions import LOG
from keras_attention.serving.versions import ModelVersions

_NAME = r"([^/:]+)"
_VERSION = r"(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?"
_POST = re.compile(rf"/v1/models/{_NAME}{_VERSION}:(classify|regress|predict)",
                   re.IGNORECASE)
_GET = re.compile(rf"/v1/models(?:/{_NAME})?{_VERSION}(?:/(metadata))?",
                  re.IGNORECASE)
_V1 = re.compile(r"/v1/.*", re.IGNORECASE)
_JSON = "application/json"


@dataclasses.dataclass
class ServerOptions:
    """What `tensorflow_model_server`'s flags say, plus the bind host and
    the request-body bound."""

    models: list  # of config.ModelSpec
    host: str = "127.0.0.1"
    rest_api_port: int = 8501
    file_system_poll_wait_seconds: float = 1.0
    model_config_file: str = None
    model_config_file_poll_wait_seconds: float = 0.0
    batching: object = None  # config.BatchingParameters, None = off
    rest_api_timeout_in_ms: int = 30000
    rest_api_num_threads: int = max(4, 2 * (os.cpu_count() or 1))
    metrics_path: str = None
    max_request_bytes: int = 64 << 20
    shutdown_timeout_seconds: float = 30.0


class ModelServer:
    """The models, their versions and the REST application."""

    def __init__(self, options, load=None):
        if load is None:
            from keras_attention.serving.servable import Servable
            load = Servable
        self.options = options
        self._load = load
        self._pool = concurrent.futures.ThreadPoolExecutor(
            options.rest_api_num_threads, thread_name_prefix="model")
        # id(servable) -> {signature name: Batcher}, for loaded servables
        # only; an unloaded one is "retired" (id -> servable, weakly).
        self._batchers = {}
        self._retired = weakref.WeakValueDictionary()
        self._batchers_lock = threading.Lock()
        self.models = {}
        self.metrics = Metrics()
        self._stop = threading.Event()
        self._poller = None
        self.configure(options.models)

    # -- models ----------------------------------------------------------------
    def configure(self, specs):
        """Serve exactly the models `specs` lists (a config reload)."""
        names = {spec.name for spec in specs}
        for name in list(self.models):
            if name not in names:
                LOG.info("model %s left the config; unloading it", name)
                self.models.pop(name).unload_all()
        for spec in specs:
            if spec.name in self.models:
                self.models[spec.name].update(spec)
            else:
                self.models[spec.name] = ModelVersions(
                    spec, self._load, on_unload=self._close_batchers)

    def poll(self):
        for model in list(self.models.values()):
            model.poll()

    def _poll_waits(self):
        """Seconds between file-system polls and between config-file
        reads; 0 = never (the file system is then read at start and
        after a config change only)."""
        options = self.options
        config_wait = (options.model_config_file_poll_wait_seconds
                       if options.model_config_file else 0)
        return max(options.file_system_poll_wait_seconds, 0), config_wait

    def start_polling(self):
        """Poll the base paths (and the config file) in a thread."""
        if not any(wait > 0 for wait in self._poll_waits()):
            return
        self._poller = threading.Thread(target=self._poll_loop, daemon=True,
                                        name="version-poller")
        self._poller.start()

    def _poll_loop(self):
        files_wait, config_wait = self._poll_waits()
        now = time.monotonic()
        next_files, next_config = now + files_wait, now + config_wait
        tick = min(wait for wait in (files_wait, config_wait) if wait > 0)
        while not self._stop.wait(tick):
            now = time.monotonic()
            poll = files_wait > 0 and now >= next_files
            if config_wait > 0 and now >= next_config:
                next_config = now + config_wait
                poll = self._reload_config() or poll
            if not poll:
                continue
            next_files = now + files_wait
            try:
                self.poll()
            except Exception:  # the poller must survive a bad file system
                LOG.exception("polling the model base paths failed")

    def _reload_config(self):
        """Read the config file again; True if it changed and was applied."""
        from keras_attention.serving.config import read_model_config

        try:
            specs = read_model_config(self.options.model_config_file)
        except (OSError, ValueError) as error:
            LOG.error("Failed to read ModelServerConfig file: %s", error)
            return False
        if specs == [model.spec for model in self.models.values()]:
            return False
        self.configure(specs)
        return True

    def close(self):
        self._stop.set()
        if self._poller is not None:
            self._poller.join()
        with self._batchers_lock:
            entries, self._batchers = list(self._batchers.values()), {}
        for batchers in entries:
            for batcher in batchers.values():
                batcher.close()
        self._pool.shutdown(wait=True)

    def _close_batchers(self, servable):
        """At unload: queued batches finish; requests that still hold the
        servable run without batching (no batcher outlives its model)."""
        with self._batchers_lock:
            self._retired[id(servable)] = servable
            batchers = self._batchers.pop(id(servable), {})
        for batcher in batchers.values():
            batcher.close()

    def _submit(self, servable, signature, inputs):
        """Run `signature` on `inputs` through the servable's batcher, or
        on the thread pool when batching is off or the servable was
        unloaded; returns a `concurrent.futures.Future`."""
        if self.options.batching is None:
            return self._pool.submit(signature, inputs)
        with self._batchers_lock:  # so that no unload comes in between
            if self._retired.get(id(servable)) is servable:
                return self._pool.submit(signature, inputs)
            # A loaded servable is alive, so its id is not reused.
            batchers = self._batchers.setdefault(id(servable), {})
            batcher = batchers.get(signature.name)
            if batcher is None:
                batcher = batchers[signature.name] = Batcher(
                    signature, self.options.batching,
                    f"batch-{servable.version}-{signature.name}")
            return batcher.submit(inputs)

    def _model(self, name, on_status=False):
        model = self.models.get(name)
        if model is None:
            if on_status:
                raise ServingError("NOT_FOUND", f"Could not find any versions "
                                   f"of model {name}")
            raise ServingError("NOT_FOUND", f"Servable not found for request: "
                               f"Latest({name})")
        return model

    async def _call(self, servable, signature, inputs):
        future = self._submit(servable, signature, inputs)
        timeout = self.options.rest_api_timeout_in_ms / 1000
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future),
                                          timeout)
        except asyncio.TimeoutError:
            raise ServingError("DEADLINE_EXCEEDED", "Deadline exceeded: the "
                               f"request took longer than {timeout:g} s "
                               "(--rest_api_timeout_in_ms)") from None

    # -- HTTP ------------------------------------------------------------------
    def application(self):
        app = web.Application(client_max_size=self.options.max_request_bytes)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    async def _dispatch(self, request):
        started = time.perf_counter()
        path = request.raw_path.split("?", 1)[0]
        if self.options.metrics_path and path == self.options.metrics_path:
            return web.Response(body=self.metrics.exposition(),
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
            self.metrics.record(model_name, api, code,
                                time.perf_counter() - started)
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
        statuses = self._model(name, on_status=True).status(version)
        return json.dumps({"model_version_status": statuses}, indent=1)

    def _metadata(self, name, version, label):
        servable = self._model(name).servable(version, label)
        return json.dumps({
            "model_spec": {"name": name, "signature_name": "",
                           "version": str(servable.version)},
            "metadata": {"signature_def": servable.metadata()},
        }, indent=1)

    async def _predict(self, request, name, version, label, api):
        document = parse_json(await self._body(request))
        if not isinstance(document, dict):
            raise invalid(f"JSON Value: {_show(document)} Is not object")
        signature_name = document.get("signature_name", "")
        if not isinstance(signature_name, str):
            raise invalid(f"JSON Value: {_show(document)} not formatted "
                          "correctly. 'signature_name' key must be a string "
                          "value.")
        # TF Serving reads an empty name in the ModelSpec as the default
        # signature (predict_util.cc, classifier.cc, regressor.cc).
        signature_name = signature_name or "serving_default"
        if api != "predict":
            # TF Serving reads the examples before it looks for the model.
            examples = serialized_examples(document)
        servable = self._model(name).servable(version, label)
        signature = servable.signatures.get(signature_name)
        if signature is None:
            if api == "predict":
                raise invalid(f'Serving signature name: "{signature_name}" '
                              "not found in signature def")
            raise invalid(f"No signature was found with the name: "
                          f"{signature_name}")
        if api == "predict":
            inputs, layout = predict_inputs(document, signature.inputs)
            outputs = await self._call(servable, signature, inputs)
            return predict_response(outputs, signature.outputs, layout)
        (check_classify if api == "classify" else check_regress)(signature)
        outputs = await self._call(servable, signature, {"inputs": examples})
        if api == "classify":
            return classify_response(outputs, len(examples))
        return regress_response(outputs, len(examples))


def _error_response(error):
    return web.Response(status=error.http_status,
                        body=json.dumps({"error": error.message}).encode(),
                        content_type=_JSON)


async def run_server(server, ready=None):
    """Serve until SIGTERM/SIGINT, then finish accepted requests."""
    import signal

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runner = web.AppRunner(server.application(), access_log=None,
                           shutdown_timeout=server.options
                           .shutdown_timeout_seconds)
    await runner.setup()
    site = web.TCPSite(runner, server.options.host,
                       server.options.rest_api_port)
    await site.start()
    LOG.info("REST API listening on http://%s:%d", server.options.host,
             server.options.rest_api_port)
    if ready is not None:
        ready()
    await stop.wait()
    LOG.info("shutting down: finishing requests already accepted")
    await runner.cleanup()
    server.close()
    LOG.info("stopped")
