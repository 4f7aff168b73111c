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

Checkpoints and resume are the package's loop's
(`keras_attention.training.train_run`: babi.py,
image_transformer_mnist.py).

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


def add_run_options(p, logs):
    """The options the reproductions on the project's digits share: the
    split's validation and test sizes and seed; how many runs train at
    once (`variant_seed_runs`), with their logs' folder; `--append` (to
    the rows of `earlier_results`), `--verbose`, `--results-dir` and
    `--results-name`."""
    p.add_argument("--validation", type=int, default=1000,
                   help="validation images of the split")
    p.add_argument("--test", type=int, default=2000,
                   help="test images of the split")
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--parallel", type=int, default=1,
                   help="runs at once, each in its own process pinned to "
                        "a core")
    p.add_argument("--logs", default=logs,
                   help="folder of the parallel runs' logs")
    p.add_argument("--append", action="store_true",
                   help="add this command's rows to the results file's")
    p.add_argument("--verbose", type=int, default=1)
    p.add_argument("--results-dir", default=None)
    p.add_argument("--results-name", default=None)


def paper_rows(name, table):
    """The rows of `table` of the paper `reproductions/papers/NAME.json`
    (the papers' figures as data, `reproductions.scoreboard`)."""
    root = str(pathlib.Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from reproductions import scoreboard

    return scoreboard.paper_figures(name)["tables"][table]["rows"]


def add_backend_option(p, default, backends=("tensorflow", "jax")):
    """`--backend`: one of `backends`, else `$KERAS_BACKEND`, else
    `default` (set by `choose_backend`)."""
    p.add_argument("--backend", default=None, choices=backends,
                   help=f"the Keras backend (default: $KERAS_BACKEND, else "
                        f"{default}, the faster here)")
    p.set_defaults(default_backend=default)


def choose_backend(p, args):
    """`--backend`, else `$KERAS_BACKEND`, else the system's default; set
    before Keras is imported (a process that imported it already must
    agree)."""
    backend = args.backend or os.environ.get("KERAS_BACKEND") or (
        args.default_backend)
    if "keras" in sys.modules:
        import keras

        if keras.backend.backend() != backend:
            p.error(f"--backend {backend}: Keras is already imported with "
                    f"{keras.backend.backend()}")
    os.environ["KERAS_BACKEND"] = backend
    return backend


def add_resume_options(p, checkpoints):
    """The options of a system whose runs go on over several pieces
    (the package's loop): `--minutes` (this piece's, a shared deadline
    for every run of the command), `--checkpoint-dir` (default with
    `--minutes` or `--resume`: `checkpoints`) and `--resume`."""
    p.add_argument("--minutes", type=float, default=None,
                   help="stop every run by this many minutes from now, "
                        "at the end of the last epoch that fits, its "
                        "checkpoint saved (--resume continues it)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="save each run's checkpoint after every epoch to "
                        "CHECKPOINT_DIR/VARIANT_seedN (default with "
                        f"--minutes or --resume: {checkpoints})")
    p.add_argument("--resume", action="store_true",
                   help="continue each run from its checkpoint (a "
                        "finished one gives its row again)")
    p.add_argument("--deadline", type=float, default=None,
                   help=argparse.SUPPRESS)  # --minutes, as a time.time()
    p.set_defaults(default_checkpoints=checkpoints)


def finish_resume(p, args, settings):
    """Check the resume options after `variants_and_seeds`: a checkpoint
    is continued only with `--resume` and only with the `settings` it
    was saved with (`settings`, a dict, goes into each new checkpoint's
    `settings.json`); a mistake is one line through `p.error`."""
    if args.minutes is not None and args.minutes <= 0:
        p.error(f"--minutes must be positive, received: {args.minutes}")
    if args.deadline is None and args.minutes is not None:
        args.deadline = time.time() + 60 * args.minutes
    if args.checkpoint_dir is None and (args.deadline or args.resume):
        args.checkpoint_dir = args.default_checkpoints
    args.run_settings = settings
    for variant in args.variant_list:
        for seed in args.seed_list:
            if args.checkpoint_dir is None:
                continue
            checkpoint = (pathlib.Path(args.checkpoint_dir)
                          / f"{variant}_seed{seed}")
            state = checkpoint / "state.json"
            if state.is_file() and not args.resume:
                p.error(f"--checkpoint-dir: {checkpoint} holds a run "
                        "already: add --resume to continue it, or remove it")
            if args.resume and state.is_file():
                saved = json.loads((checkpoint / "settings.json").read_text())
                if saved != settings:
                    p.error(f"--resume: {checkpoint} was saved with other "
                            "settings (it continues a run only with its "
                            "own; see its settings.json)")
    return args


def checkpoint_for(args, variant, seed):
    """The run's checkpoint folder (its settings written into a new one;
    where the run is found, where it stands is printed), or None without
    --checkpoint-dir."""
    if args.checkpoint_dir is None:
        return None
    folder = pathlib.Path(args.checkpoint_dir) / f"{variant}_seed{seed}"
    if (folder / "state.json").is_file():
        saved = json.loads((folder / "state.json").read_text())
        print(f"{variant} seed {seed}: " + (
            "finished earlier" if saved["finished"] else
            f"resumed at epoch {saved['epoch']}") + f" ({folder})",
            flush=True)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "settings.json").write_text(
            json.dumps(args.run_settings, indent=1))
    return folder


def saved_counts(checkpoint):
    """The counts the loop has summed over a saved run's epochs (what a
    resumed system restores its own clock or schedule from), or {} for
    no checkpoint or a new run."""
    state = None if checkpoint is None else checkpoint / "state.json"
    if state is None or not state.is_file():
        return {}
    return json.loads(state.read_text())["counts"]


def piece_seconds(args):
    """The seconds left of this piece (`--minutes`' deadline), or None."""
    if args.deadline is None:
        return None
    return max(args.deadline - time.time(), 1e-9)


def with_deadline(given, args):
    """The command line `given` for parallel runs: `--minutes` replaced by
    the one deadline they share."""
    if args.deadline is None:
        return given
    return strip_options(given, {"--minutes", "--deadline"}) + [
        "--deadline", repr(args.deadline)]


def variant_seed_runs(script, given, args, flags, train, also_strip=()):
    """Every `(variant, seed)` of `args.variant_list` x `args.seed_list`,
    in that order: with `args.parallel` > 1 (and more than one run), each
    in its own process of `script` pinned to a core (`run_pinned`), given
    the command line `given` less its variants, seeds, results and
    `also_strip` options (`flags`: those without a value); else one after
    another, `train(variant, seed)`. Returns their rows. With a shared
    `args.deadline` (a `time.time()`), no run is begun after it."""
    jobs = [(variant, seed) for variant in args.variant_list
            for seed in args.seed_list]
    if args.parallel <= 1 or len(jobs) <= 1:
        return [train(variant, seed) for variant, seed in before_deadline(
            jobs, getattr(args, "deadline", None))]
    common = strip_options(
        given, {"--variants", "--seeds", "--parallel", "--results-dir",
                "--results-name", "--append", *also_strip}, flags)
    rows = []
    for found in run_pinned(
            pathlib.Path(script).resolve(),
            [(f"{variant}_seed{seed}",
              [*common, "--variants", variant, "--seeds", str(seed)])
             for variant, seed in jobs], args.parallel, args.logs,
            getattr(args, "deadline", None)):
        rows.extend(found)
    return rows


def before_deadline(jobs, deadline):
    """The `(variant, seed)` jobs, each as it is begun: the first always
    (a piece makes progress), no later one once `deadline` (a
    `time.time()`, or None) has passed; those are named (`--resume`
    begins them)."""
    for number, job in enumerate(jobs):
        if number and deadline is not None and time.time() >= deadline:
            print("not started (the deadline had passed; --resume starts "
                  "them): " + ", ".join(f"{variant}_seed{seed}"
                                        for variant, seed in jobs[number:]),
                  flush=True)
            return
        yield job


def run_pinned(script, jobs, parallel, logs, deadline=None, on_rows=None,
               on_progress=None):
    """Run `jobs` (`[(name, [arguments])]`) of `script` each in a process
    of its own, `parallel` at a time, process `i` pinned to core `i` (one
    run per core trains more per second on these CPUs than one run over
    all of them). Each job writes `FOLDER/NAME.json` by `--results-dir`
    and `--results-name`, added here; its output goes to `LOGS/NAME.log`
    (added to, piece after piece). Returns each job's rows, in the order
    of `jobs` (those not begun because `deadline`, a `time.time()`, had
    passed give none); a failed job stops the others and exits naming its
    log. `on_rows(rows)`, if given, is called with the rows of the jobs
    finished so far (in the order of `jobs`) as each finishes, e.g. to
    write a results file of the runs in progress; `on_progress(records)`
    with `{name: record}`, the results files the running jobs last wrote,
    whenever one of them writes it again (e.g. after every epoch).
    Stopped itself (an exception, Ctrl-C, or SIGTERM), it stops its jobs
    first: no job outlives it to write a checkpoint that a later
    `--resume` also writes."""
    import signal

    folder = pathlib.Path(tempfile.mkdtemp(prefix="pinned_runs_"))
    logs = pathlib.Path(logs)
    logs.mkdir(parents=True, exist_ok=True)
    waiting, running, rows = list(enumerate(jobs)), {}, {}
    written, partial = {}, {}  # a running job's file: its mtime, record
    cores = sorted(os.sched_getaffinity(0))[:max(1, parallel)]

    def stopped(number, frame):
        raise SystemExit(128 + number)

    unset = object()
    try:  # the main thread alone may set a handler
        before = signal.signal(signal.SIGTERM, stopped)
    except ValueError:
        before = unset
    try:
        while waiting or running:
            for core in [core for core in cores if core not in running]:
                if waiting and deadline is not None and \
                        time.time() >= deadline:
                    print("not started (the deadline had passed; --resume "
                          "starts them): " + ", ".join(
                              name for _, (name, _) in waiting), flush=True)
                    waiting = []
                if not waiting:
                    break
                number, (name, arguments) = waiting.pop(0)
                command = [sys.executable, str(script), *arguments,
                           "--results-dir", str(folder), "--results-name",
                           name]
                log = open(logs / f"{name}.log", "a")
                # No SIGTERM here between the start and the record of it
                # (the job itself takes it as ever).
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
                try:
                    process = subprocess.Popen(
                        command, stdout=log, stderr=subprocess.STDOUT,
                        preexec_fn=lambda core=core: _pinned_child(core))
                    running[core] = (process, number, name, log)
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK,
                                           {signal.SIGTERM})
                print(f"started {name} on core {core}", flush=True)
            time.sleep(2)
            for core, (process, number, name, log) in list(running.items()):
                if process.poll() is None:
                    continue
                log.close()
                del running[core]
                partial.pop(name, None)
                if process.returncode:
                    sys.exit(f"run {name} failed (exit "
                             f"{process.returncode}); see "
                             f"{logs / (name + '.log')}")
                rows[number] = json.loads(
                    (folder / f"{name}.json").read_text())["rows"]
                print(f"finished {name}", flush=True)
                if on_rows is not None:
                    on_rows([row for number in sorted(rows)
                             for row in rows[number]])
            if on_progress is not None and _read_progress(
                    folder, [name for _, _, name, _ in running.values()],
                    written, partial):
                on_progress(dict(partial))
    finally:
        if before is not unset:
            signal.signal(signal.SIGTERM, before)
        for process, _, name, log in running.values():
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
            print(f"stopped {name}", flush=True)
    return [rows[number] for number in sorted(rows)]


def _pinned_child(core):
    """In a job's process before it starts: pinned to `core`, SIGTERM
    unblocked (its parent blocks it while starting the job)."""
    import signal

    os.sched_setaffinity(0, {core})
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _read_progress(folder, names, written, partial):
    """Read again the results files of the jobs `names` in `folder` that
    changed since `written` (their mtimes) into `partial`; whether any
    did (a file caught while being written is read at the next call)."""
    changed = False
    for name in names:
        path = folder / f"{name}.json"
        try:
            mtime = path.stat().st_mtime_ns
            if written.get(name) == mtime:
                continue
            partial[name] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        written[name] = mtime
        changed = True
    return changed


def strip_options(argv, options, flags=()):
    """`argv` without `options` and their values (`--x v` or `--x=v`;
    the options in `flags` take no value): a parallel run's own command
    line for each of its jobs."""
    kept, index = [], 0
    while index < len(argv):
        option = argv[index].split("=", 1)[0]
        takes_value = option not in flags and "=" not in argv[index]
        if option in options:
            index += 2 if takes_value else 1
            continue
        kept.append(argv[index])
        index += 1
    return kept


def variants_and_seeds(p, args, known):
    """Check `--variants` (comma-separated names of `known`) and `--seeds`
    (comma-separated ints) and set `args.variant_list` and
    `args.seed_list`; a mistake is one line through `p.error`."""
    names = [name for name in args.variants.split(",") if name]
    if not names or any(name not in known for name in names):
        p.error(f"--variants must name some of {', '.join(known)}, "
                f"received: {args.variants!r}")
    args.variant_list = names
    try:
        args.seed_list = [int(seed) for seed in args.seeds.split(",") if seed]
    except ValueError:
        args.seed_list = []
    if not args.seed_list:
        p.error(f"--seeds must be comma-separated ints, received: "
                f"{args.seeds!r}")
    return args


EXAMPLES_DIR = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run_example(name, argv):
    """Run `examples/NAME.py` with `argv` as a user runs it (its output
    shown as it goes) and return the figures it writes with `--results`:
    what a benchmark that measures an example calls, so the example's
    model and training are not copied. A failed example is a one-line
    `SystemExit` (its own error is printed above it)."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "results.json"
        sys.stdout.flush()
        done = subprocess.run([sys.executable, str(EXAMPLES_DIR / f"{name}.py"),
                               *argv, "--results", str(path)])
        if done.returncode:
            raise SystemExit(f"examples/{name}.py {' '.join(argv)} failed "
                             f"(exit status {done.returncode}); its error "
                             "is above")
        if not path.is_file():
            raise SystemExit(f"examples/{name}.py wrote no --results file")
        return json.loads(path.read_text())


def seed_list(text):
    """`--seeds`' type: comma-separated ints >= 0 (argparse's error names
    the value received)."""
    import argparse

    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(
            f"must be comma-separated ints >= 0, received: {text!r}")
    return seeds


def add_example_arguments(parser, default_name):
    """The options of a benchmark that runs an example over seeds:
    `--seeds` (default 0,1,2), `--append` and the results file's."""
    parser.add_argument("--seeds", type=seed_list, default=[0, 1, 2])
    parser.add_argument("--append", action="store_true",
                        help="add this command's rows to the results file's")
    add_results_arguments(parser, default_name)


def mean_and_spread(values):
    """(mean, sample standard deviation; 0 for one value) of `values`."""
    values = list(values)
    return (statistics.fmean(values),
            statistics.stdev(values) if len(values) > 1 else 0.0)


def earlier_results(name, directory=None, append=False):
    """With `append`, the rows and commands already in
    `DIRECTORY/NAME.json` (none when it is missing); else none: what a
    script's `--append` adds its rows to."""
    path = pathlib.Path(directory or RESULTS_DIR) / f"{name}.json"
    if not append or not path.is_file():
        return [], []
    record = json.loads(path.read_text())
    return record["rows"], record.get("commands", [record["command"]])


def late_gain(curve, window, lower_is_better=False):
    """How much the last `window` epochs of validation `curve` improved
    on the best before them, rounded to 2 places (<= 0: it had stopped
    improving; with `lower_is_better`, as for a loss, a fall counts as
    the gain); None for a curve of `window` epochs or fewer."""
    if len(curve) <= window:
        return None
    if lower_is_better:
        return round(min(curve[:-window]) - min(curve[-window:]), 2)
    return round(max(curve[-window:]) - max(curve[:-window]), 2)
