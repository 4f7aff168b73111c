"""Long-range retrieval against length: answer accuracy, training memory
and step time of full causal attention (Liu et al.'s T-D), local attention
only, and T-DMCA, from 1k to 16k tokens (the comparison of Liu et al.
2018's Figure 3, on a task the package generates).

The task (`keras_attention.data.long_range`): a document of L tokens of
random filler with `--facts` facts (a key token, then its value token)
written in its first tenth, ending with `? key value`; the value is the
answer, and the model is trained with weight on it alone. Nothing else in
a document is predictable, so the answer needs attention back over about
0.9 L positions. Chance is 1 / 16 (the values); a model that knows which
values the document holds, but not which goes with the key, scores
1 / `--facts`.

Candidates, each a `TransformerLanguageModel` of 5 blocks (`--hidden`,
`--heads`, `--ff`; sinusoidal positions, no dropout):

- `full-dense`: causal self-attention over every earlier position (T-D),
  the core computed densely (`attention_impl="dense"`: the (B, N, L, L)
  weights of every block are kept for the backward pass);
- `full`: the same attention with the package's default core
  (`attention_impl="auto"`: on TensorFlow the exact block-wise core, in
  memory linear in L, from 1,024 keys; on JAX and PyTorch the backend's
  fused kernel);
- `local`: every block attends to the last `--window` positions only
  (`LocalSelfAttention`; five blocks reach back 5 x `--window`);
- `tdmca`: Liu et al.'s T-DMCA stack, local / memory-compressed / local /
  memory-compressed / local (`MemoryCompressedAttention`: keys and values
  compressed by a strided convolution of `--compression`).

Step time and memory (`--lengths`): each (candidate, length) runs in a
fresh process: one training step (Adam, a batch of `--batch` documents)
with its tracing, whose peak resident memory growth (VmHWM after minus
VmRSS before) is the memory figure, then `--repeats` timed steps (their
median). The parent kills a worker whose resident memory passes
`--memory-cap-gib` and reports "over the cap"; a candidate that failed is
not tried at longer lengths.

Accuracy (`--accuracy-lengths`): each (candidate, length) trains in a
fresh process for `--train-minutes` of wall clock on fresh documents
(batches of `--train-batch`, Adam with warm-up), then answers
`--eval-documents` held-out documents (another seed): the accuracy of the
argmax at the question's key.

`--plot PATH` draws accuracy, memory and step time against length;
`--merge FILE` adds the accuracy rows of an earlier run's results (for
example accuracies trained on a GPU, beside this machine's memory).

Run: `python benchmarks/long_range.py` (1k-16k for memory and time, 1k
and 2k for accuracy at 5 minutes each: about an hour on 2 CPU cores);
`--quick` (256 and 512 tokens, a few steps) checks that it works.
"""

import argparse
import gc
import json
import os
import sys
import time

import harness

CANDIDATES = ("full-dense", "full", "local", "tdmca")
NUM_LAYERS = 5
NUM_KEYS = NUM_VALUES = 16
NUM_FILLERS = 64
SETTINGS = {"layers": NUM_LAYERS, "values": NUM_VALUES}
"""The fixed settings a results file records beside the options."""
# Separate random streams (`numpy.random.default_rng([seed, stream,
# ...])`): training batches, held-out documents, the warm-up batch and the
# step sweep's batch never share documents.
TRAIN, EVAL, WARM, SWEEP = range(4)


def model_for(candidate, args):
    """The candidate's language model (see the module's text)."""
    import keras

    from keras_attention.data import long_range
    from keras_attention.models import TransformerLanguageModel

    attention = {
        "full-dense": "full", "full": "full", "local": "local",
        "tdmca": ["local", "compressed", "local", "compressed", "local"],
    }[candidate]
    keras.utils.set_random_seed(args.seed)
    model = TransformerLanguageModel(
        vocabulary_size=long_range.vocabulary(
            NUM_KEYS, NUM_VALUES, NUM_FILLERS)["size"],
        num_layers=NUM_LAYERS, num_heads=args.heads, hidden_dim=args.hidden,
        intermediate_dim=args.ff, dropout=0.0, attention=attention,
        window=args.window, compression=args.compression,
        padding_id=long_range.PAD_ID,
        attention_impl="dense" if candidate == "full-dense" else "auto")
    return model


def documents(count, length, args, seed):
    """`(inputs, targets, weights)`: the documents shifted for the model,
    weight on the answer only (scaled so that the mean over positions is
    the mean over answers): `targets[:, -1]` is the answer, predicted at
    the question's key, `inputs[:, -1]`. `seed`: anything
    `numpy.random.default_rng` takes."""
    import numpy as np

    from keras_attention.data import long_range

    tokens, _, _ = long_range.generate_documents(
        count, length, num_facts=args.facts, num_keys=NUM_KEYS,
        num_values=NUM_VALUES, num_fillers=NUM_FILLERS, seed=seed)
    weights = np.zeros((count, length - 1), "float32")
    weights[:, -1] = length - 1
    return tokens[:, :-1], tokens[:, 1:], weights


WARMUP_STEPS = 200


def compiled(candidate, args):
    import keras

    model = model_for(candidate, args)
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=10**9, alpha=1.0, warmup_target=args.learning_rate,
        warmup_steps=WARMUP_STEPS)
    model.compile(
        optimizer=keras.optimizers.Adam(schedule, global_clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def step_worker(candidate, length, args):
    """One fresh process: memory of the first training step (tracing
    included), then the median of `--repeats` more."""
    model = compiled(candidate, args)
    inputs, targets, weights = documents(args.batch, length, args,
                                         [args.seed, SWEEP])
    model(inputs[:, :8])  # weights built on 8 positions, not the length
    gc.collect()
    rss_before = harness.status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current RSS
    started = time.perf_counter()
    model.train_on_batch(inputs, targets, sample_weight=weights)
    first = time.perf_counter() - started
    rss = (harness.status_kib("VmHWM") - rss_before) * 1024
    seconds = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        model.train_on_batch(inputs, targets, sample_weight=weights)
        seconds.append(time.perf_counter() - started)
    return {"weights": model.count_params(), "rss_bytes": rss,
            "first_s": first,
            "step_s": harness.summarize(seconds or [first])["median_ms"]
            / 1e3}


def accuracy(model, inputs, answers, batch):
    """The share of documents whose argmax at the last input position
    (the question's key) is the answer."""
    import numpy as np

    right = 0
    for start in range(0, len(inputs), batch):
        logits = model.predict_on_batch(inputs[start:start + batch])[:, -1]
        right += int((np.argmax(logits, -1)
                      == answers[start:start + batch]).sum())
    return right / len(inputs)


def train_worker(candidate, length, args):
    """One fresh process: `--train-minutes` of training on fresh
    documents, then the held-out accuracy."""
    import numpy as np

    model = compiled(candidate, args)
    # The first step traces (and on JAX compiles): outside the budget.
    inputs, targets, weights = documents(args.train_batch, length, args,
                                         [args.seed, WARM])
    model.train_on_batch(inputs, targets, sample_weight=weights)
    started, steps, losses = time.perf_counter(), 0, []
    while time.perf_counter() - started < 60 * args.train_minutes:
        inputs, targets, weights = documents(args.train_batch, length, args,
                                             [args.seed, TRAIN, steps])
        losses.append(float(model.train_on_batch(inputs, targets,
                                                 sample_weight=weights)))
        steps += 1
    trained = time.perf_counter() - started
    inputs, targets, _ = documents(args.eval_documents, length, args,
                                   [args.seed, EVAL])
    score = accuracy(model, inputs, targets[:, -1], args.train_batch)
    tail = losses[-max(1, len(losses) // 10):]
    return {"weights": model.count_params(), "steps": steps,
            "train_minutes": trained / 60, "final_loss": float(np.mean(tail)),
            "accuracy": score}


def run_worker(kind, candidate, length, args, cap_bytes):
    """The worker's record, or `{"failed": why}`; killed above the cap."""
    return harness.run_capped(
        [sys.executable, os.path.abspath(__file__), "--worker",
         f"{kind}:{candidate}:{length}", *args.passed], cap_bytes)


def sweep(kind, lengths, args, cap):
    rows, failed = [], set()
    for length in lengths:
        for candidate in args.candidates:
            if candidate in failed:
                rows.append({"kind": kind, "candidate": candidate,
                             "length": length,
                             "failed": "failed at a shorter length"})
                print(json.dumps(rows[-1]), flush=True)
                continue
            record = run_worker(kind, candidate, length, args, cap)
            if "failed" in record:
                failed.add(candidate)
            rows.append({"kind": kind, "candidate": candidate,
                         "length": length, **record})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def tables(rows, settings):
    """The step table and the accuracy table, as Markdown lines, each
    only where there are rows: `reproductions/tables.json`'s spec, as
    `summary.py` renders a results file."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:  # the repository, for reproductions/
        sys.path.insert(0, root)
    from reproductions import render

    return render.render({"benchmark": "long_range", "rows": rows,
                          "settings": {**settings, **SETTINGS}})


COLOURS = {"full-dense": "C0", "full": "C1", "local": "C2", "tdmca": "C3"}


def plot(rows, path, settings):
    """Accuracy, memory and step time against length, a line per
    candidate; a cross where a run failed (over the memory cap, or out of
    the accelerator's memory)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(13, 3.9))
    panels = (("accuracy", "accuracy", "answer accuracy (held out)"),
              ("step", "rss_bytes", "training step's peak memory (GiB)"),
              ("step", "step_s", "training step (s)"))
    for axis, (kind, field, title) in zip(axes, panels):
        for candidate in CANDIDATES:
            mine = [row for row in rows if row["kind"] == kind
                    and row["candidate"] == candidate]
            points = sorted((row["length"], row[field]) for row in mine
                            if "failed" not in row)
            if field == "rss_bytes":
                points = [(x, y / 2**30) for x, y in points]
            if points:
                axis.plot(*zip(*points), marker="o", label=candidate,
                          color=COLOURS[candidate])
            dead = [row["length"] for row in mine
                    if str(row.get("failed", "")).startswith(("over",
                                                              "exit"))]
            if dead:
                failed = next(row for row in mine
                              if row["length"] == dead[0])
                where = [y for _, y in points[-1:]] or [axis.get_ylim()[0]]
                if field == "rss_bytes" and failed.get("rss_bytes"):
                    where = [failed["rss_bytes"] / 2**30]
                axis.plot([dead[0]], where, marker="x", ms=10, mew=2,
                          ls="none", color=COLOURS[candidate])
        axis.set_xscale("log", base=2)
        axis.set_xlabel("document length (tokens)")
        axis.set_title(title, fontsize=10)
        if field == "accuracy":
            axis.axhline(1 / NUM_VALUES, color="grey", ls="--", lw=0.8)
            axis.axhline(1 / settings["facts"], color="grey", ls=":",
                         lw=0.8)
            axis.set_ylim(0, 1.02)
        else:
            axis.set_yscale("log")
    axes[1].legend(fontsize=8)
    figure.suptitle(
        f"long-range retrieval: {NUM_LAYERS} blocks of {settings['hidden']},"
        f" window {settings['window']}, compression "
        f"{settings['compression']} (x: failed, out of memory; accuracy "
        "lines: chance, dashed, and knowing the values only, dotted)",
        fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


def load_results(path):
    """An earlier run's results file, checked for what `--replot` and
    `--merge` read."""
    with open(path) as file:
        record = json.load(file)
    needed = {"kind", "candidate", "length"}
    if not all(needed <= set(row) for row in record["rows"]):
        raise KeyError(f"a row without {sorted(needed)}")
    if "device" not in record["machine"] or not {
            "hidden", "heads", "batch", "facts", "window",
            "compression"} <= set(record["settings"]):
        raise KeyError("no machine's device, or settings")
    return record


def positive(name, parser, value):
    if value <= 0:
        parser.error(f"--{name} must be positive, received: {value!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="*",
                        default=[1024, 2048, 4096, 8192, 16384],
                        help="lengths of the step time and memory sweep")
    parser.add_argument("--accuracy-lengths", type=int, nargs="*",
                        default=[1024, 2048])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES),
                        choices=CANDIDATES)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ff", type=int, default=256)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--compression", type=int, default=3)
    parser.add_argument("--facts", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1,
                        help="documents per step in the time and memory "
                             "sweep")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--memory-cap-gib", type=float, default=20.0)
    parser.add_argument("--train-minutes", type=float, default=5.0)
    parser.add_argument("--train-batch", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--eval-documents", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default=None, help="a PNG path")
    parser.add_argument("--merge", default=None,
                        help="an earlier run's results JSON whose accuracy "
                             "rows join this run's")
    parser.add_argument("--replot", default=None, metavar="FILE",
                        help="print the tables of an earlier run's results "
                             "and draw its figure (with --plot); nothing "
                             "runs")
    parser.add_argument("--quick", action="store_true",
                        help="256 and 512 tokens, 0.1 minute of training")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    harness.add_results_arguments(parser, "long_range")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    for name in ("hidden", "heads", "ff", "window", "compression", "facts",
                 "batch", "memory_cap_gib", "train_minutes", "train_batch",
                 "learning_rate", "eval_documents"):
        positive(name.replace("_", "-"), parser, getattr(args, name))
    if args.hidden % args.heads:
        parser.error(f"--hidden must be divisible by --heads, received: "
                     f"--hidden {args.hidden} --heads {args.heads}")
    if args.facts > NUM_KEYS:
        parser.error(f"--facts must be at most {NUM_KEYS} (a key each), "
                     f"received: {args.facts}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, received: {args.seed}")
    if args.quick:
        args.lengths, args.accuracy_lengths = [256, 512], [256]
        args.repeats, args.train_minutes = 1, 0.1
        args.eval_documents = min(args.eval_documents, 32)
    # Ascending, so that a candidate that failed is not tried longer.
    args.lengths = sorted(set(args.lengths))
    args.accuracy_lengths = sorted(set(args.accuracy_lengths))
    # The facts (2 tokens each) lie in the first tenth of the L - 4 tokens
    # before `? key value`.
    shortest = 20 * args.facts + 8
    for length in args.lengths + args.accuracy_lengths:
        if length < shortest and not args.worker:
            parser.error(f"every length must be at least {shortest} for "
                         f"{args.facts} facts, received: {length}")
    # What the workers are told: everything but the sweeps themselves.
    args.passed = ["--hidden", str(args.hidden), "--heads", str(args.heads),
                   "--ff", str(args.ff), "--window", str(args.window),
                   "--compression", str(args.compression), "--facts",
                   str(args.facts), "--batch", str(args.batch), "--repeats",
                   str(args.repeats), "--train-minutes",
                   str(args.train_minutes), "--train-batch",
                   str(args.train_batch), "--learning-rate",
                   str(args.learning_rate), "--eval-documents",
                   str(args.eval_documents), "--seed", str(args.seed)]
    if args.worker:
        kind, candidate, length = args.worker.split(":")
        work = step_worker if kind == "step" else train_worker
        print(json.dumps(work(candidate, int(length), args)))
        return None

    earlier = {}
    for flag in ("replot", "merge"):
        path = getattr(args, flag)
        if path is None:
            continue
        try:
            earlier[flag] = load_results(path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            parser.error(f"--{flag} must be a results file of this script, "
                         f"received: {path!r} ({type(error).__name__}: "
                         f"{error})")
    if args.plot and not os.path.isdir(os.path.dirname(
            os.path.abspath(args.plot))):
        parser.error(f"--plot's folder does not exist, received: "
                     f"{args.plot!r}")
    if args.replot:
        record = earlier["replot"]
        print("\n".join(tables(record["rows"], record["settings"])))
        if args.plot:
            plot(record["rows"], args.plot, record["settings"])
        return record["rows"]

    print(f"machine: {json.dumps(harness.machine())}", flush=True)
    cap = args.memory_cap_gib * 2**30
    rows = sweep("step", args.lengths, args, cap)
    rows += sweep("accuracy", args.accuracy_lengths, args, cap)
    if args.merge:
        for row in earlier["merge"]["rows"]:
            if row["kind"] == "accuracy":
                rows.append({**row,
                             "from": earlier["merge"]["machine"]["device"]})
    print()
    print("\n".join(tables(rows, vars(args))))
    dense_failed = [row["length"] for row in rows if row["kind"] == "step"
                    and row["candidate"] == "full-dense"
                    and str(row.get("failed", "")).startswith(("over",
                                                               "exit"))]
    if dense_failed:
        print(f"- full-dense fails at L={dense_failed[0]:,}")
    harness.write_results(
        args.results_name or ("long_range_quick" if args.quick
                              else "long_range"),
        rows, directory=args.results_dir,
        settings={**{name: getattr(args, name) for name in (
            "hidden", "heads", "ff", "window", "compression", "facts",
            "batch", "train_minutes", "train_batch", "learning_rate",
            "eval_documents", "seed")}, **SETTINGS})
    if args.plot:  # after the results are safe
        plot(rows, args.plot, vars(args))
    return rows


if __name__ == "__main__":
    main()
