"""What every benchmark shares: interleaved timing, the machine's record,
its matrix-multiply rate, and one JSON file of results per script.

Timing: each comparison runs its candidates round-robin (A B A B ...) after
warm-up, in one process, so drift in the machine's load affects them alike;
it reports the median, the quartiles and the ratio of medians.

Memory: `run_capped(command, cap_bytes)` runs one measurement in a fresh
process and kills it above a resident-memory cap.

Results: `write_results(name, rows)` writes `benchmarks/results/NAME.json`
(the machine record, the command line and the rows), strict JSON: a
non-finite number is written null (`dumps`);
`python benchmarks/summary.py` turns every such file into
`benchmarks/RESULTS.md`.

Works under any Keras backend: it imports TensorFlow or JAX only when that
is the backend in use.

The reproductions' own machinery (their options, checkpoints and
resume, runs in processes pinned to cores) is `reproductions.common` and
`reproductions.processes`; their loop is the package's
(`keras_attention.training.train_run`).

Start-up logs: importing this module calls
`keras_attention.logs.quiet_tensorflow()`, so a benchmark that imports it
before Keras or TensorFlow starts without TensorFlow's log lines (set
TF_CPP_MIN_LOG_LEVEL to see them).
"""

import argparse
import datetime
import json
import math
import numbers
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before any benchmark loads TensorFlow

RESULTS_DIR = pathlib.Path(__file__).parent / "results"
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni",
             "amx_bf16", "amx_tile")


def _cpu():
    model, flags = platform.processor() or "unknown", set()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model in ("unknown", ""):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return model, [flag for flag in CPU_FLAGS if flag in flags]


def device_name():
    """`cpu`, or the accelerator the backend computes on."""
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return "cpu" if device.platform == "cpu" else device.device_kind
    if backend == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_logical_devices("GPU")
        return gpus[0].name if gpus else "cpu"
    if backend == "torch":
        import torch

        return (torch.cuda.get_device_name(0) if torch.cuda.is_available()
                else "cpu")
    return "unknown"


def machine():
    """The record of where the figures come from."""
    import keras

    model, flags = _cpu()
    record = {
        "cpu": model,
        "cpu_flags": flags,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "keras": keras.__version__,
        "backend": keras.backend.backend(),
        "device": device_name(),
    }
    for module in ("tensorflow", "jax", "keras_hub"):
        if module in sys.modules:
            record[module] = getattr(sys.modules[module], "__version__", "?")
    return record


def interleaved(candidates, repeats, warmup=2):
    """Time `candidates` (name -> function taking no argument, returning
    when its work is done) round-robin.

    Returns:
        name -> dict of `median_ms`, `q1_ms`, `q3_ms`, `runs`.
    """
    for _ in range(warmup):
        for function in candidates.values():
            function()
    times = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, function in candidates.items():
            started = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - started)
    return {name: summarize(seconds) for name, seconds in times.items()}


def summarize(seconds):
    """Median and quartiles, in milliseconds, of a list of seconds."""
    milliseconds = sorted(1e3 * s for s in seconds)
    if len(milliseconds) >= 2:
        q1, _, q3 = statistics.quantiles(milliseconds, n=4)
    else:
        q1 = q3 = milliseconds[0]
    return {"median_ms": statistics.median(milliseconds), "q1_ms": q1,
            "q3_ms": q3, "runs": len(milliseconds)}


def matmul_rate(dtype="float32", size=1024, repeats=20):
    """The backend's dense matrix-multiply rate in GFLOP/s, `size`-square
    `dtype` matrices: the ceiling the layers' efficiency is measured
    against (median of `repeats` products after warm-up)."""
    import keras
    import numpy as np

    backend = keras.backend.backend()
    rng = np.random.default_rng(0)
    a = rng.normal(size=(size, size)).astype("float32")
    b = rng.normal(size=(size, size)).astype("float32")
    if backend == "tensorflow":
        import tensorflow as tf

        a, b = tf.cast(a, dtype), tf.cast(b, dtype)
        product = tf.function(lambda: tf.matmul(a, b))

        def run():
            product().numpy()
    elif backend == "jax":
        import jax
        import jax.numpy as jnp

        a, b = jnp.asarray(a, dtype), jnp.asarray(b, dtype)
        product = jax.jit(lambda x, y: x @ y)

        def run():
            product(a, b).block_until_ready()
    else:
        from keras import ops

        a, b = ops.cast(a, dtype), ops.cast(b, dtype)

        def run():
            ops.convert_to_numpy(ops.matmul(a, b))
    timing = interleaved({"matmul": run}, repeats)["matmul"]
    return 2 * size**3 / (timing["median_ms"] * 1e-3) / 1e9


def status_kib(field, pid="self"):
    """A `/proc/PID/status` field in KiB (`VmRSS`, `VmHWM`): Linux only."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def run_capped(command, cap_bytes, poll_seconds=0.2):
    """Run `command` (a list) in a fresh process whose last line of
    standard output is a JSON record; return that record, or
    `{"failed": why, "rss_bytes": peak}` where the process went over
    `cap_bytes` of resident memory (killed), exited non-zero or printed
    nothing. Its output goes to files, so a process that writes a lot
    never blocks on a full pipe."""
    with tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err,
                                   text=True)
        peak = 0
        while process.poll() is None:
            try:
                rss = status_kib("VmRSS", process.pid) * 1024
            except (FileNotFoundError, ProcessLookupError, RuntimeError):
                rss = 0  # exiting
            peak = max(peak, rss)
            if rss > cap_bytes:
                process.kill()
                process.wait()
                return {"failed": f"over the {cap_bytes / 2**30:g} GiB cap",
                        "rss_bytes": peak}
            time.sleep(poll_seconds)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    lines = stdout.strip().splitlines()
    if process.returncode != 0 or not lines:
        last = (stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return {"failed": f"exit {process.returncode}: {last[:200]}",
                "rss_bytes": peak}
    return json.loads(lines[-1])


def positive_ints(text):
    """An argparse type: positive integers separated by commas."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(
            f"must be positive integers separated by commas, received: "
            f"{text!r}")
    return values


def add_results_arguments(parser, default_name):
    """`--results-dir` and `--results-name` on a script's parser, for
    `write_results(args.results_name, ..., directory=args.results_dir)`."""
    parser.add_argument("--results-dir", default=None,
                        help="folder of the JSON file (default: "
                             "benchmarks/results)")
    parser.add_argument("--results-name", default=None,
                        help=f"its name without .json (default: "
                             f"{default_name})")


def command_line():
    """This process's command line as results files record it: the
    script's name (`python -m reproductions` for the runner), then its
    arguments."""
    script = pathlib.Path(sys.argv[0])
    name = ("python -m reproductions"
            if script.name == "__main__.py" and script.parent.name
            == "reproductions" else script.name)
    return " ".join([name] + sys.argv[1:])


# The setting (`reproductions/settings/NAME.json`, as a dict with its
# `name`) of the run in progress, set by `python -m reproductions`: every
# results file written while it is set records it, so that the runner
# resumes and merges only runs of one setting.
SETTING = None


def write_results(name, rows, directory=None, **extra):
    """Write `DIRECTORY/NAME.json` (default `benchmarks/results/`): the
    machine, the command line, the setting run (`SETTING`, where the
    runner set one), `rows` (a list of dicts) and any `extra` fields;
    returns its path. Quick runs end their name in `_quick`, which
    `summary.py` leaves out of RESULTS.md."""
    directory = pathlib.Path(directory) if directory else RESULTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    record = {
        "benchmark": name,
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "command": command_line(),
        "machine": machine(),
        **({"setting": SETTING} if SETTING else {}),
        "rows": rows,
        **extra,
    }
    path.write_text(dumps(record))
    print(f"wrote {path}")
    return path


def strict(value):
    """`value` with every non-finite float (NaN, ±inf), at any depth of its
    dicts, lists and tuples, turned into None, and NumPy scalars into
    Python numbers: what strict JSON can hold."""
    if isinstance(value, dict):
        return {key: strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def dumps(record):
    """`record` as the text of a results file: strict JSON (no NaN or
    Infinity, which `json.dumps` writes and strict parsers reject: they
    become null), one top-level key a line, a dict's keys (the summary,
    the settings) a line each below it, and a list of records (the rows,
    the claims) one record a line, curves and all; ending in a newline."""

    def text(value):
        return json.dumps(value, allow_nan=False, ensure_ascii=False)

    def block(value, indent):
        pad = " " * indent
        if isinstance(value, list) and value and all(
                isinstance(item, dict) for item in value):
            items = [pad + "  " + text(item) for item in value]
            return "[\n" + ",\n".join(items) + "\n" + pad + "]"
        if isinstance(value, dict) and value and indent == 2:
            items = [f"{pad}  {text(key)}: {text(item)}"
                     for key, item in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        return text(value)

    record = strict(record)
    items = [f"  {text(key)}: {block(value, 2)}"
             for key, value in record.items()]
    return "{\n" + ",\n".join(items) + "\n}\n"


def earlier_results(name, directory=None, append=False):
    """With `append`, the rows and commands already in
    `DIRECTORY/NAME.json` (none when it is missing); else none: what a
    script's `--append` adds its rows to."""
    path = pathlib.Path(directory or RESULTS_DIR) / f"{name}.json"
    if not append or not path.is_file():
        return [], []
    record = json.loads(path.read_text())
    return record["rows"], record.get("commands", [record["command"]])
