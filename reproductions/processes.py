"""Runs in processes of their own: the `(variant, seed)` runs of a
command one after another or each pinned to a core (`variant_seed_runs`,
`run_pinned`), and an example run as a user runs it, its figures read
from the file it writes (`run_example`).
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from reproductions.common import strip_options

EXAMPLES_DIR = pathlib.Path(__file__).resolve().parents[1] / "examples"


def variant_seed_runs(script, given, args, flags, train, also_strip=(),
                      skip=(), on_rows=None):
    """Every `(variant, seed)` of `args.variant_list` x `args.seed_list`
    but those in `skip` (e.g. runs whose rows a results file holds
    finished), in that order: with `args.parallel` > 1 (and more than
    one run), each in its own process of `script` pinned to a core
    (`run_pinned`), given the command line `given` less its variants,
    seeds, results and `also_strip` options (`flags`: those without a
    value); else one after another, `train(variant, seed)`. Returns their
    rows. With a shared `args.deadline` (a `time.time()`), no run is
    begun after it.
    `on_rows(rows)`, if given, gets the rows of the runs finished so far,
    in that order, as each finishes (e.g. to write the results file)."""
    jobs = [(variant, seed) for variant in args.variant_list
            for seed in args.seed_list if (variant, seed) not in skip]
    if args.parallel <= 1 or len(jobs) <= 1:
        rows = []
        for variant, seed in before_deadline(
                jobs, getattr(args, "deadline", None)):
            rows.append(train(variant, seed))
            if on_rows is not None:
                on_rows(list(rows))
        return rows
    common = strip_options(
        given, {"--variants", "--seeds", "--parallel", "--results-dir",
                "--results-name", "--append", *also_strip}, flags)
    rows = []
    for found in run_pinned(
            pathlib.Path(script).resolve(),
            [(f"{variant}_seed{seed}",
              [*common, "--variants", variant, "--seeds", str(seed)])
             for variant, seed in jobs], args.parallel, args.logs,
            getattr(args, "deadline", None), on_rows=on_rows):
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
    `--resume` also writes; then, where a stopped job's last file holds
    rows (its runs in progress), `on_rows` gets them too, as a job ended
    by its own `--minutes` gives them (a job that keeps its run in
    progress elsewhere in its file, as `babi.py`'s `in_progress`, leaves
    the last `on_progress` as it was)."""
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
        kept = False  # a stopped job's rows, as it last wrote them
        for process, number, name, log in running.values():
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
            print(f"stopped {name}", flush=True)
            try:
                found = json.loads(
                    (folder / f"{name}.json").read_text())["rows"]
            except (OSError, ValueError, KeyError):
                continue  # stopped before it wrote a whole file
            if found:  # a job that lists its runs in progress as rows
                rows[number], kept = found, True
        if kept and on_rows is not None:
            on_rows([row for number in sorted(rows) for row in rows[number]])
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
