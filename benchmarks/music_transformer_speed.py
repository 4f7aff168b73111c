"""Training tokens/s of the JSB Music Transformer (the CPU preset of
`music_transformer_jsb.py`) on each Keras backend and precision, each in
its own process, interleaved: which backend and dtype policy the
benchmark should default to on this machine, and what one core with one
thread trains (the unit of `music_transformer_jsb.py --parallel`).

One training step is a batch of `--batch` windows of `--window` tokens
(random tokens: the speed does not depend on them); after two warm-up
steps (the compilation), the median of `--repeats` timings of
`--steps` steps.

Run: `python benchmarks/music_transformer_speed.py` (about 3 minutes on 2
cores).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(2, str(pathlib.Path(__file__).resolve().parents[1]
                       / "reproductions" / "systems"))  # the system

# (backend, dtype policy, threads: 0 for all the cores, 1 for one core
# with one thread, as `music_transformer_jsb.py --parallel` runs each).
CANDIDATES = (("tensorflow", "float32", 0), ("jax", "float32", 0),
              ("tensorflow", "mixed_bfloat16", 0),
              ("jax", "mixed_bfloat16", 0), ("tensorflow", "float32", 1))


def worker(backend, policy, args):
    """In a fresh process: tokens/s of `--steps` training steps."""
    os.environ["KERAS_BACKEND"] = backend
    import harness  # noqa: F401  (quiets TensorFlow's start-up logs)
    import keras
    import music_transformer_jsb as jsb
    import numpy as np

    keras.config.set_dtype_policy(policy)
    settings = jsb.finish_arguments(
        jsb.parser(), jsb.parser().parse_args(
            ["--variants", args.variant, "--window", str(args.window),
             "--start-every", "8", "--batch", str(args.batch)]))
    keras.utils.set_random_seed(0)
    model = jsb.build_model(args.variant, settings)
    rows = np.random.default_rng(0).integers(
        3, 49, (args.batch, args.window + 1)).astype("int32")
    weights = np.ones((args.batch, args.window), "float32")
    for _ in range(2):
        model.train_on_batch(rows[:, :-1], rows[:, 1:], sample_weight=weights)
    began = time.perf_counter()
    for _ in range(args.steps):
        model.train_on_batch(rows[:, :-1], rows[:, 1:], sample_weight=weights)
    seconds = time.perf_counter() - began
    print(json.dumps({"tokens_per_second":
                      args.steps * args.batch * args.window / seconds}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", default="relative_sinusoid_voices")
    p.add_argument("--window", type=int, default=256)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--candidates", default=None,
                   help="comma-separated BACKEND:POLICY:THREADS (THREADS 0 "
                        "for all the cores) to time, tensorflow:float32:0 "
                        "among them (the ratios' reference); default: "
                        + ",".join(":".join(map(str, c)) for c in CANDIDATES))
    p.add_argument("--worker", nargs=3, metavar=("BACKEND", "POLICY",
                                                  "THREADS"),
                   help=argparse.SUPPRESS)
    import harness

    harness.add_results_arguments(p, "music_transformer_speed")
    args = p.parse_args(argv)
    for flag in ("window", "batch", "steps", "repeats"):
        if getattr(args, flag) <= 0:
            p.error(f"--{flag} must be positive, received: "
                    f"{getattr(args, flag)!r}")
    if args.worker:
        return worker(*args.worker[:2], args)
    candidates = CANDIDATES
    if args.candidates is not None:
        candidates = []
        for text in args.candidates.split(","):
            parts = text.split(":")
            if (len(parts) != 3 or parts[0] not in ("tensorflow", "jax")
                    or not parts[2].isdigit()):
                p.error("--candidates must be BACKEND:POLICY:THREADS with "
                        "BACKEND tensorflow or jax and THREADS an int >= 0, "
                        f"received: {text!r}")
            candidates.append((parts[0], parts[1], int(parts[2])))
        if ("tensorflow", "float32", 0) not in candidates:
            p.error("--candidates must include tensorflow:float32:0 (the "
                    f"ratios' reference), received: {args.candidates!r}")
    timings = {candidate: [] for candidate in candidates}
    for _ in range(args.repeats):
        for backend, policy, threads in candidates:
            environment = dict(os.environ)
            pin = None
            if threads:
                environment.update(TF_NUM_INTRAOP_THREADS=str(threads),
                                   TF_NUM_INTEROP_THREADS="1")
                core = sorted(os.sched_getaffinity(0))[0]
                pin = lambda core=core: os.sched_setaffinity(0, {core})  # noqa: E731
            result = subprocess.run(
                [sys.executable, __file__, "--worker", backend, policy,
                 str(threads), "--variant", args.variant, "--window",
                 str(args.window), "--batch", str(args.batch), "--steps",
                 str(args.steps)],
                capture_output=True, text=True, env=environment,
                preexec_fn=pin)
            if result.returncode:
                sys.exit(f"{backend} {policy} failed: "
                         f"{result.stderr[-2000:]}")
            rate = json.loads(result.stdout.strip().splitlines()[-1])
            timings[(backend, policy, threads)].append(
                rate["tokens_per_second"])
            print(f"{backend:<11} {policy:<15} {threads or 'all':>7} "
                  f"{rate['tokens_per_second']:8.0f} tokens/s", flush=True)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    reference = statistics.median(timings[("tensorflow", "float32", 0)])
    rows = []
    for (backend, policy, threads), rates in timings.items():
        median = statistics.median(rates)
        rows.append({"backend": backend, "precision": policy,
                     "threads": threads or os.cpu_count(),
                     "variant": args.variant, "window": args.window,
                     "batch": args.batch,
                     "tokens_per_second": round(median, 1),
                     "runs": [round(rate, 1) for rate in rates],
                     "ratio_to_tensorflow_float32": round(
                         median / reference, 3)})
    print(f"\n{'backend':<11} {'precision':<15} {'threads':>7} "
          f"{'tokens/s':>9} {'vs TF float32':>13}")
    for row in rows:
        print(f"{row['backend']:<11} {row['precision']:<15} "
              f"{row['threads']:>7} "
              f"{row['tokens_per_second']:9.0f} "
              f"{row['ratio_to_tensorflow_float32']:13.3f}")
    harness.write_results(args.results_name or "music_transformer_speed",
                          rows, directory=args.results_dir)
    return rows


if __name__ == "__main__":
    main()
