"""The REST server under load: requests per second and p50/p99 latency at
concurrency 1, 8 and 32, batching off and on, for the numeric test model
and the translator; and the server's overhead (p50 at concurrency 1
minus the p50 of the same signature called in this process).

Run: `python benchmarks/serving_load.py [--seconds 5] [--repository DIR]
[--models numeric]`. Without --repository it writes the test repository
(numeric model, tiny briefly trained translators) to a temporary folder
first (~1 min; with `--models numeric`, the numeric model alone, seconds).
Targets: batching gives >= 3x the throughput at concurrency 32; server
overhead < 5 ms at p50. The server and this client share the machine.

Prints a table and writes `benchmarks/results/serving_load.json` (with
`--models numeric`, `serving_load_numeric.json`; `--results-dir` and
`--results-name` choose another file): a row per model, batching and
concurrency, and per model the batching throughput ratio at concurrency 32
and the server's overhead.
"""

import argparse
import asyncio
import json
import math
import os
import pathlib
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
import harness  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401

from tests.serving import model_repository  # noqa: E402
from tests.serving.conftest import running_server  # noqa: E402
from tests.serving.numeric_model import export_numeric_model  # noqa: E402

CONCURRENCY = (1, 8, 32)
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
# The version a request without one reaches (the latest), per model.
SERVED_VERSION = {"numeric": "2", "translator": "1"}


async def load(url, model, body, concurrency, seconds):
    """Closed-loop load: `concurrency` clients, each sending the next
    request when the last answered, for `seconds`. Returns latencies."""
    latencies = []
    errors = 0
    data = json.dumps(body).encode()
    endpoint = f"{url}/v1/models/{model}:predict"
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        deadline = time.perf_counter() + seconds

        async def client():
            nonlocal errors
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                async with session.post(endpoint, data=data) as reply:
                    await reply.read()
                    if reply.status != 200:
                        errors += 1
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(client() for _ in range(concurrency)))
    return latencies, errors


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
    """The batching ratio at concurrency 32 and the server's overhead."""
    cell = {(r["batching"], r["concurrency"]): r for r in rows
            if r["model"] == model}
    return {
        "model": model,
        "batching_ratio_c32": (cell[(True, 32)]["requests_per_s"]
                               / cell[(False, 32)]["requests_per_s"]),
        "in_process_p50_ms": direct_p50_ms,
        "server_p50_ms": cell[(False, 1)]["p50_ms"],
        "overhead_p50_ms": cell[(False, 1)]["p50_ms"] - direct_p50_ms,
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
        with running_server(*flags) as (url, _):
            for model in models:
                body = REQUESTS[model]
                asyncio.run(load(url, model, body, 4, 1.0))  # warm up
                for concurrency in CONCURRENCY:
                    latencies, errors = asyncio.run(
                        load(url, model, body, concurrency, args.seconds))
                    rows.append({
                        "model": model, "batching": batching,
                        "concurrency": concurrency,
                        "requests": len(latencies),
                        "requests_per_s": len(latencies) / args.seconds,
                        "p50_ms": float(1000 * np.percentile(latencies, 50)),
                        "p99_ms": float(1000 * np.percentile(latencies, 99)),
                        "errors": errors,
                    })
                    print(f"{model:<10} batching={'on ' if batching else 'off'}"
                          f" c={concurrency:<2} "
                          f"{rows[-1]['requests_per_s']:7.1f} req/s "
                          f"p50 {rows[-1]['p50_ms']:7.2f} ms p99 "
                          f"{rows[-1]['p99_ms']:7.2f} ms errors {errors}",
                          flush=True)

    print("\n| model | batching | concurrency | req/s | p50 ms | p99 ms |"
          " errors |\n|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['model']} | {'on' if row['batching'] else 'off'} | "
              f"{row['concurrency']} | {row['requests_per_s']:.1f} | "
              f"{row['p50_ms']:.2f} | {row['p99_ms']:.2f} | "
              f"{row['errors']} |")
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
    name = args.results_name or ("serving_load" if len(models) == len(
        REQUESTS) else f"serving_load_{models[0]}")
    harness.write_results(name, rows, directory=args.results_dir,
                          models=summaries,
                          seconds_per_cell=args.seconds,
                          batching_parameters=BATCHING)


if __name__ == "__main__":
    main()
