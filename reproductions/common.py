"""What the reproductions' systems share about a run: their options
(the split, the backend, `--seeds` and `--variants`, the results file),
a run's checkpoint and resume over pieces (`--minutes`, `--resume`,
`--checkpoint-dir`: the package's loop, `keras_attention.training`,
saves and continues it), the papers' rows as data, the mean and
sample spread of a figure over seeds, and two verdicts between two
models' runs: `local_against_full` (ahead only beyond the larger
spread) and `block_verdict` (a one-sided Mann-Whitney U test).

The runs themselves, one after another or in processes pinned to cores,
are `reproductions.processes`; a results file is written by
`benchmarks/harness.py`'s `write_results`, as every benchmark's is.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time


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


def add_example_arguments(parser):
    """The options of a benchmark that runs an example over seeds:
    `--seeds` (default 0,1,2) and `--append` (the results file's are
    `harness.add_results_arguments`)."""
    parser.add_argument("--seeds", type=seed_list, default=[0, 1, 2])
    parser.add_argument("--append", action="store_true",
                        help="add this command's rows to the results file's")


def seed_list(text):
    """`--seeds`' type: comma-separated ints >= 0 (argparse's error names
    the value received)."""
    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(
            f"must be comma-separated ints >= 0, received: {text!r}")
    return seeds


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
            checkpoint = run_folder(args, variant, seed)
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


def run_folder(args, variant, seed):
    """A run's checkpoint folder under `--checkpoint-dir` (None without
    one): `CHECKPOINT_DIR/VARIANT_seedN`."""
    if args.checkpoint_dir is None:
        return None
    return pathlib.Path(args.checkpoint_dir) / f"{variant}_seed{seed}"


def checkpoint_for(args, variant, seed):
    """The run's checkpoint folder (its settings written into a new one;
    where the run is found, where it stands is printed), or None without
    --checkpoint-dir."""
    if args.checkpoint_dir is None:
        return None
    folder = run_folder(args, variant, seed)
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


def runs_in_progress(args, rows, jobs):
    """What a results file lists as `in_progress`: each `(variant, seed)`
    of `jobs` that `rows` do not hold finished, begun or not, with its own
    checkpoint folder (what `--resume` continues, and all of
    `benchmarks/checkpoints` that the repository keeps); none without
    `--checkpoint-dir`, which alone lets a run go on."""
    if args.checkpoint_dir is None:
        return []
    done = {(row["variant"], row["seed"]) for row in rows
            if row.get("finished", True)}
    return [{"variant": variant, "seed": seed,
             "checkpoint": str(run_folder(args, variant, seed))}
            for variant, seed in jobs if (variant, seed) not in done]


def finished_earlier(args, path):
    """With `--resume`, the finished rows of the results file `path` whose
    runs were saved with this command's run settings (the file's
    `run_settings`), as `{(variant, seed): row}` for the runs of
    `args.variant_list` x `args.seed_list`: given again as they are, not
    trained or read from a checkpoint, so a finished run's checkpoint
    may be removed once its row is written. `{}` without `--resume`,
    with `--append` (the file then holds other commands' rows too), or
    where the file is missing or was written with other settings. A run
    whose checkpoint says otherwise (not finished, or finished with
    other weights: a newer run than the file's) is left to it."""
    path = pathlib.Path(path)
    if not args.resume or getattr(args, "append", False) \
            or not path.is_file():
        return {}
    record = json.loads(path.read_text())
    if record.get("run_settings") != args.run_settings:
        return {}
    wanted = {(variant, seed) for variant in args.variant_list
              for seed in args.seed_list}
    found = {}
    for row in record.get("rows", []):
        key = (row.get("variant"), row.get("seed"))
        if not row.get("finished") or key not in wanted:
            continue
        folder = run_folder(args, *key)
        state = None if folder is None else folder / "state.json"
        if state is not None and state.is_file():
            saved = json.loads(state.read_text())
            if not saved["finished"] or saved.get(
                    "weights_sha256") != row.get("weights_sha256"):
                continue
        found[key] = row
    for variant, seed in found:
        print(f"{variant} seed {seed}: finished earlier (its row in "
              f"{path})", flush=True)
    return found


def in_job_order(jobs, given, trained):
    """The rows of `jobs` (`(variant, seed)`) in their order: each given
    again (`given`, from `finished_earlier`) or trained now (`trained`,
    rows); a job with neither (not begun) has none."""
    found = {(row["variant"], row["seed"]): row for row in trained}
    return [given.get(job) or found[job] for job in jobs
            if job in given or job in found]


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


def paper_rows(name, table):
    """The rows of `table` of the paper `reproductions/papers/NAME.json`
    (the papers' figures as data, `reproductions.scoreboard`)."""
    from reproductions import scoreboard

    return scoreboard.paper_figures(name)["tables"][table]["rows"]


def mean_and_spread(values):
    """(mean, sample standard deviation; 0 for one value) of `values`."""
    values = list(values)
    return (statistics.fmean(values),
            statistics.stdev(values) if len(values) > 1 else 0.0)


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


def local_against_full(found, metric="test_nll", digits=2):
    """Local against full attention from a summary's `found` (per
    variant, `METRIC_mean`, `METRIC_std` and `seeds`): the mean of full
    less local's (`difference`, > 0: local lower), the larger of the two
    spreads over seeds, and the outcome: "local lower" or "full lower"
    where the difference exceeds that spread, else "tie"; None without
    both variants on two seeds or more. Rounded to `digits` decimals."""
    if not {"local_2d", "full"} <= set(found) or min(
            found[v]["seeds"] for v in ("local_2d", "full")) < 2:
        return None
    local, full = found["local_2d"], found["full"]
    difference = full[f"{metric}_mean"] - local[f"{metric}_mean"]
    spread = max(local[f"{metric}_std"], full[f"{metric}_std"])
    outcome = ("tie" if abs(difference) <= spread else
               "local lower" if difference > 0 else "full lower")
    return {"difference": round(difference, digits),
            "spread": round(spread, digits), "outcome": outcome}


def block_verdict(plain, attention, level=0.1):
    """Whether a block helps: the runs with it (`attention`) rank below
    the runs without (`plain`) at one-sided p < `level` (Mann-Whitney U,
    exact for small samples) and their median is lower. `gain` is the
    drop in the mean, `spread` the larger sample standard deviation."""
    from reproductions import claims

    test = claims.mann_whitney(attention, plain)
    spread = max(claims.spread(values) for values in (plain, attention))
    return {
        "gain": statistics.fmean(plain) - statistics.fmean(attention),
        "spread": spread, "median_gain": test["median_gain"],
        "mann_whitney_u": test["u"], "p_value": test["p_value"],
        "level": level, "block_helps": bool(
            test["p_value"] < level and test["median_gain"] > 0),
    }
