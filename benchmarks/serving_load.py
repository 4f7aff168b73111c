"""The server under load over REST and gRPC: requests per second and
p50/p99 latency at concurrency 1, 8 and 32, batching off and on, for the
numeric test model and the translator; the server's overhead per API
(p50 at concurrency 1 minus the p50 of the same signature called in this
process); and gRPC's throughput over REST's at concurrency 32.

Run: `python benchmarks/serving_load.py [--seconds 5] [--repository DIR]
[--models numeric]`. Without --repository it writes the test repository
(numeric model, tiny briefly trained translators) to a temporary folder
first (~1 min; with `--models numeric`, the numeric model alone, seconds).
Targets: batching gives >= 3x the throughput at concurrency 32; REST
server overhead < 5 ms at p50; for the numeric model at concurrency 32,
gRPC >= 2x the REST throughput, and gRPC overhead < 1 ms at p50. The
server and these clients (asyncio, one process) share the machine.

Prints a table and writes `benchmarks/results/serving_load.json` (with
`--models numeric`, `serving_load_numeric.json`; `--results-dir` and
`--results-name` choose another file): a row per model, API, batching and
concurrency, and per model the batching throughput ratio at concurrency
32, the server's overhead per API and the gRPC/REST throughput ratio.
"""

import argparse
import asyncio
import json
import math
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
import grpc  # noqa: E402
import harness  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401
from tensorflow_serving.apis import predict_pb2  # noqa: E402
from tensorflow_serving.apis import prediction_service_pb2_grpc  # noqa: E402

from tests.serving import model_repository  # noqa: E402
from tests.serving.conftest import running_server  # noqa: E402
from tests.serving.numeric_model import export_numeric_model  # noqa: E402

CONCURRENCY = (1, 8, 32)
APIS = ("rest", "grpc")
REQUESTS = {
    "numeric": {"instances": [[0.5, -1.0, 2.0]]},
    "translator": {"instances": ["the young woman reads a red book ."]},
}
BATCHING = """max_batch_size { value: 32 }
batch_timeout_micros { value: 2000 }
max_enqueued_batches { value: 1000 }
num_batch_threads { value: 2 }
"""
# The numeric model alone, as the test repository serves it.
NUMERIC_CONFIG = """model_config_list {{
  config {{
    name: "numeric"
    base_path: "{base}/numeric"
    model_platform: "tensorflow"
    model_version_policy {{ all {{}} }}
  }}
}}
"""
# The served signature's input, per model.
INPUT_NAMES = {"numeric": "x", "translator": "text"}
# The version a request without one reaches (the latest), per model.
SERVED_VERSION = {"numeric": "2", "translator": "1"}


async def closed_loop(ask, concurrency, seconds):
    """`concurrency` clients, each sending the next request when the last
    answered, for `seconds`. Returns (latencies, errors)."""
    latencies = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def client():
        nonlocal errors
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            if not await ask():
                errors += 1
            latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return latencies, errors


async def load(url, model, body, concurrency, seconds):
    """Closed-loop REST load (keep-alive connections, one per client)."""
    data = json.dumps(body).encode()
    endpoint = f"{url}/v1/models/{model}:predict"
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def ask():
            async with session.post(endpoint, data=data) as reply:
                await reply.read()
                return reply.status == 200

        return await closed_loop(ask, concurrency, seconds)


def grpc_request(model, body, dtype):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.inputs[INPUT_NAMES[model]].CopyFrom(tf.make_tensor_proto(
        np.array(body["instances"], dtype=dtype)))
    return request


async def load_grpc(target, model, body, concurrency, seconds):
    """Closed-loop gRPC load (one channel, as a gRPC client shares one;
    requests multiplexed over HTTP/2)."""
    dtype = object if model == "translator" else np.float32
    request = grpc_request(model, body, dtype)
    async with grpc.aio.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        async def ask():
            try:
                await stub.Predict(request, timeout=60)
            except grpc.RpcError:
                return False
            return True

        return await closed_loop(ask, concurrency, seconds)


def in_process_p50(path, body, calls=200):
    """p50 of calling the served signature directly (no HTTP)."""
    model = tf.saved_model.load(str(path))
    signature = model.signatures["serving_default"]
    (name, spec), = signature.structured_input_signature[1].items()
    value = tf.constant(body["instances"], spec.dtype)
    signature(**{name: value})  # warm up
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        signature(**{name: value})
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def write_repository(root, models):
    """The test repository under `root`; the numeric model alone when it
    is the only model measured."""
    print(f"writing the model repository to {root} ...", flush=True)
    if "translator" in models:
        model_repository.build(root, translator_work_dir=root.parent / "run")
        return
    for version in (1, 2):
        export_numeric_model(root / "numeric", version)
    (root / "models.config").write_text(
        NUMERIC_CONFIG.format(base=root.resolve()))


def model_summary(rows, model, direct_p50_ms):
    """The batching ratio at concurrency 32, the server's overhead per
    API, and gRPC's throughput over REST's at concurrency 32."""
    cell = {(r["api"], r["batching"], r["concurrency"]): r for r in rows
            if r["model"] == model}
    summary = {
        "model": model,
        "batching_ratio_c32": (cell[("rest", True, 32)]["requests_per_s"]
                               / cell[("rest", False, 32)]["requests_per_s"]),
        "in_process_p50_ms": direct_p50_ms,
        "server_p50_ms": cell[("rest", False, 1)]["p50_ms"],
        "overhead_p50_ms": cell[("rest", False, 1)]["p50_ms"] - direct_p50_ms,
        "grpc_p50_ms": cell[("grpc", False, 1)]["p50_ms"],
        "grpc_overhead_p50_ms": (cell[("grpc", False, 1)]["p50_ms"]
                                 - direct_p50_ms),
    }
    for batching in (False, True):
        summary[f"grpc_over_rest_c32_batching_{'on' if batching else 'off'}"
                ] = (cell[("grpc", batching, 32)]["requests_per_s"]
                     / cell[("rest", batching, 32)]["requests_per_s"])
    return summary


def row(model, api, batching, concurrency, latencies, errors, seconds):
    return {
        "model": model, "api": api, "batching": batching,
        "concurrency": concurrency, "requests": len(latencies),
        "requests_per_s": len(latencies) / seconds,
        "p50_ms": float(1000 * np.percentile(latencies, 50)),
        "p99_ms": float(1000 * np.percentile(latencies, 99)),
        "errors": errors,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="load duration of each cell (default: 5)")
    parser.add_argument("--repository", default=None,
                        help="a folder written by tests.serving."
                             "model_repository (default: write one)")
    parser.add_argument("--models", nargs="+", choices=list(REQUESTS),
                        default=list(REQUESTS),
                        help="the models to load (default: both)")
    harness.add_results_arguments(
        parser, "serving_load, one model: serving_load_MODEL")
    args = parser.parse_args()
    if not (math.isfinite(args.seconds) and args.seconds > 0):
        parser.error(f"--seconds must be a positive number, received: "
                     f"{args.seconds}")
    models = [model for model in REQUESTS if model in args.models]
    root = pathlib.Path(args.repository or tempfile.mkdtemp()) / "models"
    if not (root / "models.config").exists():
        write_repository(root, models)
    for model in models:
        if not (root / model / SERVED_VERSION[model]).is_dir():
            parser.error(f"--repository {args.repository} has no {model} "
                         f"version {SERVED_VERSION[model]} under {root}")
    batching_file = root.parent / "batching_parameters.txt"
    batching_file.write_text(BATCHING)

    rows = []
    for batching in (False, True):
        flags = [f"--model_config_file={root / 'models.config'}"]
        if batching:
            flags += ["--enable_batching",
                      f"--batching_parameters_file={batching_file}"]
        with running_server(*flags) as (url, process):
            target = process.grpc_target
            for model in models:
                body = REQUESTS[model]
                for api in APIS:
                    where = url if api == "rest" else target
                    loader = load if api == "rest" else load_grpc
                    asyncio.run(loader(where, model, body, 4, 1.0))  # warm up
                    for concurrency in CONCURRENCY:
                        latencies, errors = asyncio.run(loader(
                            where, model, body, concurrency, args.seconds))
                        rows.append(row(model, api, batching, concurrency,
                                        latencies, errors, args.seconds))
                        print(f"{model:<10} {api:<4} batching="
                              f"{'on ' if batching else 'off'} "
                              f"c={concurrency:<2} "
                              f"{rows[-1]['requests_per_s']:7.1f} req/s "
                              f"p50 {rows[-1]['p50_ms']:7.2f} ms p99 "
                              f"{rows[-1]['p99_ms']:7.2f} ms errors {errors}",
                              flush=True)

    print("\n| model | API | batching | concurrency | req/s | p50 ms | p99 ms"
          " | errors |\n|---|---|---|---|---|---|---|---|")
    for cell in rows:
        print(f"| {cell['model']} | {cell['api']} | "
              f"{'on' if cell['batching'] else 'off'} | "
              f"{cell['concurrency']} | {cell['requests_per_s']:.1f} | "
              f"{cell['p50_ms']:.2f} | {cell['p99_ms']:.2f} | "
              f"{cell['errors']} |")
    print()
    summaries = []
    for model in models:
        path = root / model / SERVED_VERSION[model]
        direct = 1000 * in_process_p50(path, REQUESTS[model])
        summaries.append(model_summary(rows, model, direct))
        print(f"{model}: batching throughput ratio at c=32: "
              f"{summaries[-1]['batching_ratio_c32']:.2f}x (target >= 3x); "
              f"in-process p50 {direct:.2f} ms, server overhead at p50 "
              f"{summaries[-1]['overhead_p50_ms']:.2f} ms (target < 5 ms)")
        print(f"{model}: gRPC / REST throughput at c=32: "
              f"{summaries[-1]['grpc_over_rest_c32_batching_off']:.2f}x "
              "batching off, "
              f"{summaries[-1]['grpc_over_rest_c32_batching_on']:.2f}x on "
              "(target >= 2x for numeric); gRPC overhead at p50 "
              f"{summaries[-1]['grpc_overhead_p50_ms']:.2f} ms (target < 1 "
              "ms for numeric)")
    name = args.results_name or ("serving_load" if len(models) == len(
        REQUESTS) else f"serving_load_{models[0]}")
    harness.write_results(name, rows, directory=args.results_dir,
                          models=summaries,
                          seconds_per_cell=args.seconds,
                          batching_parameters=BATCHING)


if __name__ == "__main__":
    main()
