"""The reproductions 2 CPU cores cannot reach, in one run on one GPU with JAX.

It needs a machine with one GPU (an H100 or H200 here) and JAX; neither
TensorFlow nor a network is needed. This driver spends at most
`--minutes` of wall time (default 7, so that the whole run, the machine's
start included, fits in about 15 minutes; at most 9 still does) on three
reproductions, one after another, each in its own process on
the JAX backend and through `without_tensorflow.py`, so a path that would
import TensorFlow fails here on the CPU smoke run first:

1. `babi`: the Universal Transformer on bAbI 10k task 2
   (`reproductions/systems/babi.py`, the settings of the CPU seeds: at most 700
   epochs, about the authors' 100,000 steps of 64 stories), as far as its
   share of the minutes goes, then the other `--babi-tasks` if time is
   left;
2. `music`: the Music Transformer at the paper's size on JSB
   (`reproductions/systems/music_transformer_jsb.py --preset paper`: 5 layers, 512
   hidden, relative attention, voice labels), scored on `valid`; its model
   is saved without optimizer state and cut into pieces under 16 MiB
   (`MODEL.keras.part-N`, so that a transfer with a per-file size limit
   carries it; `cat` them back, in order) so `keras-attention
   score-chorales` can score any split later;
3. `ram`: the recurrent attention model, 6 glimpses, on 60x60 cluttered
   MNIST (`reproductions/systems/ram_cluttered_mnist.py`), as many epochs as its share
   allows.

Shares: each run gets the minutes left times its weight over the weights
of the runs left (babi 0.3, music 0.45, ram 0.25), less its start-up
(import, compilation and final scoring), so time a run does not use passes
to the next, and a run that fails early leaves its minutes to the others.
Each run stops itself at its share (`--budget-minutes` of each benchmark,
the time budget of its stopping rule) and is killed 60 s after it, so a
partial result still lands (the bAbI file is rewritten every epoch); a
run left less than 30 s is skipped. Every results file
is written to `--out` and gains a `gpu_run` record: the share, the wall
seconds, the return code, and the TensorFlow modules loaded (none).

    python benchmarks/gpu/run.py --out DIR                # on the GPU
    python benchmarks/gpu/run.py --out DIR --smoke        # CPU, tiny sizes

`benchmarks/gpu/run.sh` prepares the wheels and data on a machine with a
network and runs this on the GPU machine (`make bench-gpu` prints the
command).
"""

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
ROOT = BENCHMARKS.parent
RUNNER = HERE / "without_tensorflow.py"
PIECE_BYTES = 15 * 2 ** 20  # results are written in pieces of at most this
NAMES = ("babi", "music", "ram")
WEIGHTS = {"babi": 0.3, "music": 0.45, "ram": 0.25}
# Seconds of each run spent outside its training clock on an H100/H200:
# JAX start, data, XLA compilation, the final scoring and saving.
STARTUP = {"babi": 60.0, "music": 90.0, "ram": 50.0}
MIN_SHARE = 30.0  # seconds; a run given less is skipped
MUSIC_VARIANT = "relative_sinusoid_voices"


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True,
                   help="the folder the results files and the log go to")
    p.add_argument("--minutes", type=float, default=7.0,
                   help="wall minutes for all runs together (default 7)")
    p.add_argument("--data", default=None,
                   help="a folder holding babi/ (en-10k/), jsb_chorales/ "
                        "and mnist10k/ (default: .gpudata/ if prepared, "
                        "else ../shared/data)")
    p.add_argument("--runs", default=",".join(NAMES),
                   help=f"comma-separated, of {', '.join(NAMES)}")
    p.add_argument("--babi-tasks", default="2",
                   help="the bAbI 10k tasks, in order (default: 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true",
                   help="tiny sizes and a few steps each, on any device "
                        "(the test in make test)")
    return p


def finish_arguments(p, args):
    """Check every value; a mistake is one line through `p.error`."""
    if not 0 < args.minutes <= 30:
        p.error(f"--minutes must be in (0, 30], received: {args.minutes}")
    runs = [name.strip() for name in args.runs.split(",") if name.strip()]
    unknown = [name for name in runs if name not in NAMES]
    if unknown or not runs:
        p.error(f"--runs must name some of {', '.join(NAMES)}, received: "
                f"{args.runs!r}")
    args.run_list = runs
    try:
        tasks = [int(task) for task in args.babi_tasks.split(",")]
    except ValueError:
        tasks = []
    if not tasks or any(not 1 <= task <= 20 for task in tasks):
        p.error(f"--babi-tasks must be tasks 1-20, comma-separated, "
                f"received: {args.babi_tasks!r}")
    args.task_list = tasks
    if args.data is None:
        prepared = ROOT / ".gpudata"
        args.data = str(prepared if prepared.is_dir()
                        else ROOT.parent / "shared" / "data")
    data = pathlib.Path(args.data)
    needed = {"babi": data / "babi" / "en-10k",
              "music": data / "jsb_chorales", "ram": data / "mnist10k"}
    for name in runs:
        if not needed[name].is_dir():
            p.error(f"--data: {name} needs the folder {needed[name]}, "
                    "which does not exist")
    return args


def arguments(name, args, minutes, out):
    """The command line of run `name` (its script first)."""
    data = pathlib.Path(args.data)
    scratch = args.scratch
    seed = str(args.seed)
    if name == "babi":
        common = ["reproductions/systems/babi.py", "--size", "10k", "--backend", "jax",
                  "--data", str(data / "babi"), "--seed", seed,
                  "--results-dir", str(out),
                  "--results-name", "babi_universal_transformer_10k_gpu",
                  "--checkpoint-dir", str(scratch / "babi"), "--verbose"]
        if args.smoke:
            return common + ["--tasks", "2", "--epochs", "1", "--hidden",
                             "16", "--ff", "32", "--heads", "2", "--steps",
                             "2", "--minutes", "1"]
        return common + ["--tasks", ",".join(map(str, args.task_list)),
                         "--epochs", "700",
                         "--budget-minutes", f"{minutes:.3f}"]
    if name == "music":
        common = ["reproductions/systems/music_transformer_jsb.py", "--backend", "jax",
                  "--data", str(data / "jsb_chorales"), "--seeds", seed,
                  "--variants", MUSIC_VARIANT, "--no-samples",
                  "--save-dir", str(out),
                  "--results-dir", str(out),
                  "--results-name", "music_transformer_jsb_gpu"]
        if args.smoke:
            return common + ["--layers", "1", "--hidden", "16", "--heads",
                             "2", "--ff", "32", "--window", "32",
                             "--start-every", "16", "--batch", "4",
                             "--max-relative", "8", "--steps", "4",
                             "--eval-every", "4"]
        return common + ["--preset", "paper", "--precision", "auto",
                         "--eval-every", "1000",
                         "--budget-minutes", f"{minutes:.3f}"]
    common = ["reproductions/systems/ram_cluttered_mnist.py", "--variants", "ram6",
              "--seeds", seed, "--data", str(data / "mnist10k"),
              "--save-dir", str(scratch / "ram"),
              "--results-dir", str(out),
              "--results-name", "ram_cluttered_mnist_gpu"]
    if args.smoke:
        return common + ["--epochs", "1", "--batch-size", "16",
                         "--validation", "20", "--test", "30",
                         "--sampled-paths", "2", "--canvas-size", "40"]
    return common + ["--epochs", "1000", "--budget-minutes", f"{minutes:.3f}"]


RESULTS = {"babi": "babi_universal_transformer_10k_gpu.json",
           "music": "music_transformer_jsb_gpu.json",
           "ram": "ram_cluttered_mnist_gpu.json"}


def run(name, command, seconds, out, scratch, log):
    """Run one benchmark through the runner; returns its `gpu_run`
    record (also added to its results file when it wrote one)."""
    report = pathlib.Path(scratch) / f"{name}_imports.json"
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONUNBUFFERED": "1",
           "WITHOUT_TENSORFLOW_REPORT": str(report),
           "PYTHONPATH": os.pathsep.join(
               [str(ROOT)] + [path for path in os.environ.get(
                   "PYTHONPATH", "").split(os.pathsep) if path])}
    started = time.perf_counter()
    with subprocess.Popen([sys.executable, str(RUNNER), *command], cwd=ROOT,
                          env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as process:
        killed = []

        def kill():
            killed.append(True)
            process.kill()

        watchdog = threading.Timer(seconds, kill)
        watchdog.start()
        try:
            for line in process.stdout:
                log.write(line)
                log.flush()
                print(f"[{name}] {line}", end="", flush=True)
            returncode = process.wait()
        finally:
            watchdog.cancel()
    if killed:
        print(f"[{name}] killed at its limit, {seconds:.0f} s", flush=True)
    record = {"wall_seconds": round(time.perf_counter() - started, 1),
              "limit_seconds": round(seconds, 1), "returncode": returncode,
              "killed": bool(killed),
              "command": " ".join(command)}
    if report.is_file():
        record.update(json.loads(report.read_text()))
    results = pathlib.Path(out) / RESULTS[name]
    record["results"] = results.name if results.is_file() else None
    if results.is_file():
        content = json.loads(results.read_text())
        content["gpu_run"] = record
        results.write_text(json.dumps(content, indent=2) + "\n")
    return record


def cut_model(out):
    """The music model, `VARIANT_seedN.keras`, cut into pieces of at most
    `PIECE_BYTES` (`.part-1`, `.part-2`, ...); returns their names."""
    pieces = []
    for model in sorted(pathlib.Path(out).glob("*.keras")):
        data = model.read_bytes()
        count = max(1, math.ceil(len(data) / PIECE_BYTES))
        size = math.ceil(len(data) / count)
        for index in range(count):
            piece = model.with_name(f"{model.name}.part-{index + 1}")
            piece.write_bytes(data[index * size:(index + 1) * size])
            pieces.append(piece.name)
        model.unlink()
    return pieces


def main(argv=None):
    p = parser()
    args = finish_arguments(p, p.parse_args(argv))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # Checkpoints and the RAM's model stay outside --out, which holds only
    # the results to copy back.
    args.scratch = pathlib.Path(tempfile.mkdtemp(prefix="gpu_run_"))
    budget = 60.0 * args.minutes
    started = time.perf_counter()
    records = {}
    with open(out / "gpu_run.log", "a") as log:
        for index, name in enumerate(args.run_list):
            left = budget - (time.perf_counter() - started)
            weights = sum(WEIGHTS[n] for n in args.run_list[index:])
            share = max(left, 0.0) * WEIGHTS[name] / weights
            if share < MIN_SHARE and not args.smoke:
                print(f"run {name}: skipped, {share:.0f} s left for it",
                      flush=True)
                records[name] = {"returncode": None, "results": None,
                                 "skipped": True}
                continue
            minutes = max(share - STARTUP[name], 15.0) / 60.0
            command = arguments(name, args, minutes, out)
            limit = (share + 60.0) if not args.smoke else 600.0
            print(f"run {name}: share {share:.0f} s ({minutes:.2f} min of "
                  f"training), {' '.join(command)}", flush=True)
            records[name] = run(name, command, limit, out, args.scratch, log)
            print(f"run {name}: return code {records[name]['returncode']}, "
                  f"{records[name]['wall_seconds']:.0f} s, results "
                  f"{records[name]['results']}, TensorFlow modules loaded "
                  f"{records[name].get('tensorflow_modules')}", flush=True)
    pieces = cut_model(out)
    if pieces:
        print(f"music model in {len(pieces)} piece(s): {', '.join(pieces)} "
              "(cat them, in order, into one .keras)", flush=True)
        music = out / RESULTS["music"]
        if music.is_file():  # where the model went, for score-chorales
            content = json.loads(music.read_text())
            content["gpu_run"]["model_parts"] = pieces
            music.write_text(json.dumps(content, indent=2) + "\n")
    print(f"all runs: {time.perf_counter() - started:.0f} s", flush=True)
    failed = [name for name, record in records.items()
              if record["returncode"] != 0 or not record["results"]]
    if failed:
        print(f"no results file, or an error: {', '.join(failed)}",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
