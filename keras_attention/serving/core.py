"""The transport-neutral core of the model server: the served models and
their versions, signature lookup, batching, and model calls with a
deadline (the checks TF Serving makes on a request's values are in
`signatures.py`).

REST (`rest.py`) and gRPC (`grpc_api.py`) each own only their codec and
their routes: they turn a request into a model name, a version or label,
a signature name and NumPy arrays, call this core, and write its answer
or its `ServingError` in their own format.
"""

import asyncio
import concurrent.futures
import dataclasses
import os
import threading
import time
import weakref

from keras_attention.serving.batching import Batcher
from keras_attention.serving.errors import ServingError
from keras_attention.serving.metrics import Metrics
from keras_attention.serving.signatures import check_classify
from keras_attention.serving.signatures import check_regress
from keras_attention.serving.signatures import signature_key
from keras_attention.serving.versions import LOG
from keras_attention.serving.versions import ModelVersions


@dataclasses.dataclass
class ServerOptions:
    """What `tensorflow_model_server`'s flags say, plus the bind host and
    the request-size bound."""

    models: list  # of config.ModelSpec
    host: str = "127.0.0.1"
    rest_api_port: int = 8501
    port: int = 0  # gRPC; 0 = no gRPC server
    file_system_poll_wait_seconds: float = 1.0
    model_config_file: str = None
    model_config_file_poll_wait_seconds: float = 0.0
    batching: object = None  # config.BatchingParameters, None = off
    rest_api_timeout_in_ms: int = 30000
    rest_api_num_threads: int = max(4, 2 * (os.cpu_count() or 1))
    # gRPC requests worked on at once (TF Serving's default is 4 per CPU,
    # its gRPC threads; at least 32 here, so that with batching on a
    # batch of 32 can fill while its requests wait).
    grpc_max_threads: int = max(32, 4 * (os.cpu_count() or 1))
    grpc_channel_arguments: tuple = ()  # (key, value) pairs
    metrics_path: str = None
    max_request_bytes: int = 64 << 20
    shutdown_timeout_seconds: float = 30.0
    enable_model_warmup: bool = True


def _servable_loader(enable_model_warmup):
    """`load(path, version)`: a `Servable`, warmed up when asked (TF
    Serving replays the warm-up requests before a version is
    AVAILABLE; a failure there fails the load)."""
    from keras_attention.export.warmup_requests import warmup_path
    from keras_attention.serving.servable import Servable

    if not enable_model_warmup:
        return Servable

    def load(path, version):
        servable = Servable(path, version)
        if not warmup_path(servable.path).exists():
            return servable
        from keras_attention.serving.warmup import warm_up

        replayed = warm_up(servable)
        if replayed:
            LOG.info("version %d at %s: replayed %d warm-up requests",
                     version, path, replayed)
        return servable

    return load


class ModelServer:
    """The models, their versions, and model calls for any transport."""

    def __init__(self, options, load=None):
        if load is None:
            load = _servable_loader(options.enable_model_warmup)
        self.options = options
        self._load = load
        self._pool = concurrent.futures.ThreadPoolExecutor(
            options.rest_api_num_threads, thread_name_prefix="model")
        # id(servable) -> {signature name: Batcher}, for loaded servables
        # only; an unloaded one is "retired" (id -> servable, weakly).
        self._batchers = {}
        self._retired = weakref.WeakValueDictionary()
        self._batchers_lock = threading.Lock()
        self._config_lock = threading.Lock()
        self.models = {}
        # Models that left the config: their versions' END states stay
        # visible to status requests, as in TF Serving's state monitor.
        self._removed = {}
        self.metrics = Metrics()
        self._stop = threading.Event()
        self._poller = None
        self.configure(options.models)

    # -- models ----------------------------------------------------------------
    def configure(self, specs):
        """Serve exactly the models `specs` lists (a config reload).
        Requests in flight keep the servables they hold."""
        with self._config_lock:
            names = {spec.name for spec in specs}
            models = dict(self.models)
            for name in list(models):
                if name not in names:
                    LOG.info("model %s left the config; unloading it", name)
                    self._removed[name] = models.pop(name)
                    self._removed[name].unload_all()
            for spec in specs:
                self._removed.pop(spec.name, None)
                if spec.name in models:
                    models[spec.name].update(spec)
                else:
                    models[spec.name] = ModelVersions(
                        spec, self._load, on_unload=self._close_batchers)
            self.models = models  # one assignment: readers see old or new

    def reload(self, specs):
        """`HandleReloadConfigRequest`: apply `specs`, then load what they
        name, returning when the new versions are loaded (or failed), as
        TF Serving's `ServerCore::ReloadConfig` waits for new models."""
        self.configure(specs)
        self.poll()

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

    # -- requests --------------------------------------------------------------
    def model(self, name, on_status=False):
        model = self.models.get(name)
        if model is None:
            if on_status:
                raise ServingError("NOT_FOUND", f"Could not find any versions "
                                   f"of model {name}")
            raise ServingError("NOT_FOUND", f"Servable not found for request: "
                               f"Latest({name})")
        return model

    def status(self, name, version=None):
        """The version statuses of model `name` (dicts, newest first)."""
        removed = self._removed.get(name)
        if removed is not None and name not in self.models:
            return removed.status(version)
        return self.model(name, on_status=True).status(version)

    def servable(self, name, version=None, label=None):
        """The loaded version a request names (latest, number or label)."""
        return self.model(name).servable(version, label)

    @staticmethod
    def signature(servable, name):
        """The signature `name` names (empty = the default), or None."""
        return servable.signatures.get(signature_key(name))

    @staticmethod
    def check_method(signature, api):
        """The signature shape `:classify` or `:regress` needs."""
        (check_classify if api == "classify" else check_regress)(signature)

    async def run(self, servable, signature, inputs, timeout, flag):
        """The outputs of `signature` on `inputs` (NumPy arrays), through
        batching when it is on. Past `timeout` seconds (None: no limit)
        the answer is DEADLINE_EXCEEDED; `flag` names the setting that
        chose the limit, for the message."""
        future = self._submit(servable, signature, inputs)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future),
                                          timeout)
        except asyncio.TimeoutError:
            raise ServingError("DEADLINE_EXCEEDED", "Deadline exceeded: the "
                               f"request took longer than {timeout:g} s "
                               f"({flag})") from None
