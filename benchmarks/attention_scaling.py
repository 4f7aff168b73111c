"""Relative and local attention against plain self-attention as T grows.

Memory and time of each, on the same shapes in one run.

Section "relative" (B=1, N=8 heads, D=512 so key_dim=64, causal
self-attention, max_relative_position δ = T-1 by default, i.e. the full
relative range as in Music Transformer; relative keys only, one table
shared by the heads): `RelativeAttention(relative_logits="skew")`,
`RelativeAttention(relative_logits="gather")` and a naive reference that
materialises the `(T, S, H)` embedding of every (query, key) pair and takes
`q · a` with an einsum over it, all three with the same weights (their
outputs are checked to agree before timing), against
`MultiHeadSelfAttention`, at T = 256, 1024, 2048.

Section "local" (B=1, N=8, D=512, not causal): `LocalSelfAttention(window=128)`
(blocks of 128, so 384 keys per query) against full `MultiHeadSelfAttention`
with the same weights, at n = 1024, 4096, 8192. A third row runs only the
four projections (query, key, value, output) that every variant shares: no
attention variant can be faster than that, so full / projections bounds the
full / local speed-up. `--local-block-sizes 64 32` adds rows of the local
layer with other block sizes (fewer keys per query, smaller products).

Time: forward+backward of a `tf.function` step (loss = sum of squared
outputs, gradients of every trainable weight made dense, jit_compile off),
median of `--repeats` runs after one warm-up. The layers of one shape are
timed round-robin in one process (`harness.interleaved`), so drift in the
machine's load affects them alike; "x ref" divides by
`MultiHeadSelfAttention` of the same shape.

Work: "GFLOP" counts the multiply-adds (x2) of every matrix product in
the traced fwd+bwd graph that its outputs need (the Einsum and MatMul ops,
from their static shapes; pruned gradients, such as the input's, are not
counted), and "GFLOP/s" divides it by the measured time. Full attention does
~8x the work of local attention at n=8192 with r=128 (blocks of 128, 384
keys per query), so a 10x speed-up needs the local layer to run its
products faster per FLOP than full attention runs its large ones: the last
lines print that rate next to the measured ones.

Peak memory: each (layer, shape) runs in fresh subprocesses (`--memory-runs`
of them; the table shows the median and, with several, the range). Each
builds the layer and traces the step, runs one warm-up step and one
measured step, and reports:
  - "tensor MiB": TensorFlow's CPU allocator statistics
    (`tf.config.experimental.get_memory_info("CPU:0")`): the peak bytes
    held by tensors during the measured step minus the bytes held just
    before it (weights, input), i.e. the step's working memory. The memory
    ratios use these medians. The peak depends on the order in which the
    executor runs independent ops, which differs from process to process
    (deterministic within one): hence several processes. The allocator
    keeps these statistics only when TensorFlow's oneDNN kernels are on,
    which TF 2.20 does by default only on CPUs with AVX512-VNNI, AVX512-BF16
    or AMX (not on AVX2-only CPUs; `TF_ENABLE_ONEDNN_OPTS=1` turns them on,
    `=0` off). Without them the cell says "no stats", and the memory ratios
    use the RSS growth below instead; the "memory from" column says which.
  - "RSS MiB": growth of the process's resident set (high-water mark
    VmHWM, reset by writing 5 to /proc/self/clear_refs, minus VmRSS) from
    just after tracing to the end of the two steps. It includes what TF's
    allocator does not count (pool slack, oneDNN scratch, the one-time graph
    optimisation), and it must start before the first step because the
    allocator keeps freed buffers pooled, not returned to the system.

Targets (issue 5): at T = 2048, relative (skew) / MHSA at most 1.3x in
memory and 1.5x in time; at n = 8192, full / local at least 10x in time.

Prints the table and the ratios against the targets, and writes
`benchmarks/results/attention_scaling.json` (`attention_scaling_quick.json`
with `--quick`; `--results-dir` and `--results-name` choose another file):
a row per layer and size with the time's median and quartiles, the ratios,
the work and the memory, and the targets with their verdicts.

Run: `python benchmarks/attention_scaling.py [--quick] [--repeats K]`
(about 9 minutes on 2 cores shared with other work, most of it the
memory subprocesses; `--quick` about a minute).
"""

import argparse
import concurrent.futures
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time

import harness  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import ops  # noqa: E402

from keras_attention import ops as attention_ops  # noqa: E402
from keras_attention.layers import LocalSelfAttention  # noqa: E402
from keras_attention.layers import MultiHeadSelfAttention  # noqa: E402
from keras_attention.layers import RelativeAttention  # noqa: E402

# Each step is its own tf.function: not a retracing problem, so no warning.
tf.get_logger().setLevel("ERROR")

BATCH, HEADS, DIM = 1, 8, 512
KEY_DIM = DIM // HEADS
WINDOW = 128
RELATIVE_LENGTHS, LOCAL_LENGTHS = (256, 1024, 2048), (1024, 4096, 8192)
QUICK_RELATIVE_LENGTHS, QUICK_LOCAL_LENGTHS = (64, 128), (256, 512)
RELATIVE_VARIANTS = ("mhsa", "skew", "gather", "naive")
LOCAL_VARIANTS = ("mhsa", "local", "projections")
QUADRATIC = ("mhsa", "skew", "gather", "naive")
LABELS = {
    "mhsa": "MultiHeadSelfAttention (ref)",
    "skew": "RelativeAttention skew",
    "gather": "RelativeAttention gather",
    "naive": "naive (T,S,H) einsum",
    "local": f"LocalSelfAttention r={WINDOW}",
    "projections": "projections only (floor)",
}
MIB = 2.0 ** 20
# Memory subprocesses whose (B, N, L, L) float32 logits exceed this run one
# at a time; smaller ones `--jobs` at a time.
EXCLUSIVE_LOGITS_BYTES = 512 * MIB
HEADER = ("| section | size | layer | fwd+bwd ms | x ref time | GFLOP "
          "| GFLOP/s | tensor MiB | x ref mem | RSS MiB | memory from |")
# The "memory from" column: which measurement the memory ratios divide.
SOURCES = {"tensor": "allocator", "rss": "RSS"}
PRODUCTS = ("Einsum", "MatMul", "BatchMatMul", "BatchMatMulV2",
            "BatchMatMulV3")


def local_block_size(variant):
    """The block size of a "local" (blocks of the window) or "local<b>"
    variant; None for the other variants."""
    if not variant.startswith("local"):
        return None
    return int(variant[len("local"):] or WINDOW)


def label(variant):
    """The variant's name in the table."""
    if variant in LABELS:
        return LABELS[variant]
    return f"{LABELS['local']} b={local_block_size(variant)}"


class NaiveRelativeAttention(RelativeAttention):
    """The reference the skew avoids: every pair's key embedding a_ij as a
    `(T, S, H)` tensor (one gather from the table), then
    `e_ij += q_i · a_ij` by an einsum over it. Relative keys only."""

    def _attention_scores(self, projected_query, projected_key,
                          query_offset=None, use_causal_mask=False):
        # The plain q·k logits of MultiHeadAttention, (B, N, T, S).
        scores = super(RelativeAttention, self)._attention_scores(
            projected_query, projected_key
        )
        query = ops.cast(projected_query, "float32") / math.sqrt(self.key_dim)
        index = attention_ops.relative_positions(
            ops.shape(projected_query)[1], ops.shape(projected_key)[1],
            self.max_relative_position,
            0 if query_offset is None else query_offset,
        )  # (T, S)
        table = ops.cast(self.key_relative_embeddings, "float32")
        pairs = ops.take(table, index, axis=0)  # (T, S, H)
        return scores + ops.einsum("btnh,tsh->bnts", query, pairs)


class ProjectionsOnly(MultiHeadSelfAttention):
    """The query, key, value and output projections of self-attention and
    no attention (q + k + v feeds the output projection): the part of the
    cost every variant shares."""

    def call(self, inputs, **kwargs):
        query = self.query_dense(inputs)  # (B, T, N, H)
        key, value = self.compute_key_value(inputs)  # (B, T, N, H|V)
        return self.output_dense(query + key + value)  # (B, T, D)


def build_layers(section, length, variants, max_relative_position):
    """`{variant: (layer, call kwargs)}` built on a `(B, length, D)` input,
    all with the same weights."""
    keras.utils.set_random_seed(0)
    x = tf.constant(np.random.default_rng(0).normal(
        size=(BATCH, length, DIM)).astype("float32"))
    delta = (length - 1 if max_relative_position is None
             else max_relative_position)
    layers = {}
    for variant in variants:
        if variant == "mhsa":
            layer = MultiHeadSelfAttention(HEADS, KEY_DIM)
        elif local_block_size(variant) is not None:
            layer = LocalSelfAttention(HEADS, KEY_DIM, window=WINDOW,
                                       block_size=local_block_size(variant))
        elif variant == "projections":
            layer = ProjectionsOnly(HEADS, KEY_DIM)
        elif variant == "naive":
            layer = NaiveRelativeAttention(HEADS, KEY_DIM, delta)
        else:
            layer = RelativeAttention(HEADS, KEY_DIM, delta,
                                      relative_logits=variant)
        layer.build(x.shape)
        layers[variant] = layer
    # Same weights everywhere, matched by their path inside the layer
    # (e.g. "query/kernel"; the relative layers also share the table).
    source = {}
    for layer in layers.values():
        for weight in layer.weights:
            name = weight.path.split("/", 1)[1]
            if name in source:
                weight.assign(source[name])
            else:
                source[name] = weight
    kwargs = {"use_causal_mask": section == "relative"}
    return x, {variant: (layer, kwargs) for variant, layer in layers.items()}


def fwd_bwd(layer, x, kwargs):
    """The compiled step and a callable running it to NumPy gradients."""
    variables = layer.trainable_variables

    @tf.function(jit_compile=False)
    def step():
        with tf.GradientTape() as tape:
            outputs = layer(x, **kwargs)
            loss = tf.reduce_sum(tf.square(outputs))
        # A gather's gradient is IndexedSlices; make every gradient dense,
        # as applying it to the table would.
        return [tf.convert_to_tensor(g)
                for g in tape.gradient(loss, variables)]

    return step, lambda: [g.numpy() for g in step()]


def _product_flops(op):
    """2 x the multiply-adds of one Einsum or (Batch)MatMul op, from the
    static shapes of its inputs and output."""
    shapes = [tensor.shape for tensor in list(op.inputs) + list(op.outputs)]
    if not all(shape.is_fully_defined() for shape in shapes):
        raise ValueError(f"cannot count the FLOPs of {op.type} op {op.name}: "
                         f"shapes {shapes} are not all static")
    if op.type == "Einsum":
        equation = op.get_attr("equation").decode()
        operands = equation.split("->")[0].split(",")
        sizes = {}
        for letters, tensor in zip(operands, op.inputs):
            if "." in letters:
                raise ValueError(f"cannot count an ellipsis einsum: {equation}")
            sizes.update(zip(letters, tensor.shape.as_list()))
        return 2 * math.prod(sizes.values())
    # (Batch)MatMul: output elements x the contracted size.
    adjoint = "transpose_a" if op.type == "MatMul" else "adj_x"
    left = op.inputs[0].shape.as_list()
    contracted = left[-2] if op.get_attr(adjoint) else left[-1]
    return 2 * math.prod(op.outputs[0].shape.as_list()) * contracted


def product_flops(step):
    """FLOPs of the matrix products one call of the `tf.function` `step`
    runs: the Einsum/MatMul ops its outputs depend on (the executor prunes
    the others, e.g. the gradient of the constant input)."""
    graph = step.get_concrete_function().graph
    needed, pending = set(), [tensor.op for tensor in graph.outputs]
    while pending:
        op = pending.pop()
        if op not in needed:
            needed.add(op)
            pending.extend(tensor.op for tensor in op.inputs)
            pending.extend(op.control_inputs)
    return sum(_product_flops(op) for op in needed if op.type in PRODUCTS)


def measure_memory(section, variant, length, max_relative_position):
    """In a fresh process: the step's peak tensor and RSS growth, bytes;
    `tensor` is None where TensorFlow's CPU allocator keeps no
    statistics (oneDNN off)."""
    x, layers = build_layers(section, length, (variant,),
                             max_relative_position)
    layer, kwargs = layers[variant]
    step, run = fwd_bwd(layer, x, kwargs)
    step.get_concrete_function()  # trace, but run nothing yet
    gc.collect()
    rss_before = harness.status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current RSS
    run()  # warm-up: optimise the graph, first run
    try:
        tf.config.experimental.reset_memory_stats("CPU:0")
    except ValueError:  # "Cannot reset memory stats": no allocator stats
        run()
        tensor = None
    else:
        before = tf.config.experimental.get_memory_info("CPU:0")["current"]
        run()
        tensor = tf.config.experimental.get_memory_info("CPU:0")["peak"] - (
            before)
    rss_peak = harness.status_kib("VmHWM")
    return {"tensor": tensor, "rss": (rss_peak - rss_before) * 1024}


def memory_in_subprocess(section, variant, length, max_relative_position):
    command = [sys.executable, os.path.abspath(__file__), "--memory-worker",
               f"{section}:{variant}:{length}"]
    if max_relative_position is not None:
        command += ["--max-relative-position", str(max_relative_position)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = result.stderr.strip().splitlines()[-1:] or ["(no stderr)"]
        print(f"memory of {section} {variant} {length} failed "
              f"(exit {result.returncode}): {tail[0]}", file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure_all_memory(configs, runs, jobs, max_relative_position):
    """`{(section, variant, length): [result, ...]}` over `runs` fresh
    processes each; the large ones one at a time so that they fit."""
    small, large = [], []
    for section, length, variants in configs:
        for variant in variants:
            logits = BATCH * HEADS * length * length * 4
            exclusive = variant in QUADRATIC and (
                logits > EXCLUSIVE_LOGITS_BYTES)
            (large if exclusive else small).extend(
                [(section, variant, length)] * runs)
    results = {}

    def record(task, result):
        results.setdefault(task, [])
        if result is not None:
            results[task].append(result)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [(task, pool.submit(memory_in_subprocess, *task,
                                      max_relative_position))
                   for task in small]
        for task, future in futures:
            record(task, future.result())
    for task in large:
        record(task, memory_in_subprocess(*task, max_relative_position))
    return results


def summary(results, key):
    """(median, min, max) of `key` over the runs, or None (no run, or a
    measurement that some run could not make)."""
    values = [result[key] for result in results]
    if not values or None in values:
        return None
    return statistics.median(values), min(values), max(values)


def check_relative_outputs(x, layers):
    """The three relative variants compute the same function."""
    reference = None
    for variant in ("skew", "gather", "naive"):
        if variant not in layers:
            continue
        layer, kwargs = layers[variant]
        output = ops.convert_to_numpy(layer(x, **kwargs))
        if reference is None:
            reference = output
        else:
            np.testing.assert_allclose(output, reference, rtol=1e-3,
                                       atol=1e-4, err_msg=variant)


def fmt(value, spec):
    return "n/a" if value is None else format(value, spec)


def mib_record(stats):
    """(median, min, max) bytes as a JSON record in MiB, or None."""
    if stats is None:
        return None
    median, low, high = (value / MIB for value in stats)
    return {"median_mib": median, "min_mib": low, "max_mib": high}


def mib_cell(stats, missing="n/a"):
    if stats is None:
        return missing
    median, low, high = (value / MIB for value in stats)
    if low == high:
        return f"{median:.0f}"
    return f"{median:.0f} ({low:.0f}..{high:.0f})"


def ratio_line(name, value, bound, at_most, note):
    """Print the ratio against its target; returns it as a JSON record."""
    if value is None:
        verdict = "not measured"
    else:
        met = value <= bound if at_most else value >= bound
        verdict = "met" if met else "NOT met"
    relation = "<=" if at_most else ">="
    print(f"ratio: {name} = {fmt(value, '.2f')}x (target {relation} "
          f"{bound}x{note}): {verdict}")
    return {"name": name, "value": value, "relation": relation,
            "bound": bound, "verdict": verdict, "note": note.lstrip("; ")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes for a smoke run: T in 64, 128 and "
                             "n in 256, 512")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per layer (default 5, quick 3)")
    parser.add_argument("--memory-runs", type=int, default=None,
                        help="fresh processes per memory measurement "
                             "(default 3, quick 1)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="memory subprocesses at once, except the "
                             "largest which run alone (default 2)")
    parser.add_argument("--relative-lengths", type=int, nargs="+",
                        help="override the T of the relative section")
    parser.add_argument("--local-lengths", type=int, nargs="+",
                        help="override the n of the local section")
    parser.add_argument("--local-block-sizes", type=int, nargs="+",
                        default=[], metavar="B",
                        help="also time LocalSelfAttention with these block "
                             "sizes (the default row uses blocks of the "
                             "window, 128)")
    parser.add_argument("--max-relative-position", type=int, default=None,
                        help="δ of the relative layers (default T-1)")
    harness.add_results_arguments(
        parser, "attention_scaling, quick: attention_scaling_quick")
    parser.add_argument("--memory-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.memory_worker:
        section, variant, length = args.memory_worker.split(":")
        print(json.dumps(measure_memory(section, variant, int(length),
                                        args.max_relative_position)))
        return

    started = time.perf_counter()
    repeats = args.repeats or (3 if args.quick else 5)
    memory_runs = args.memory_runs or (1 if args.quick else 3)
    relative_lengths = args.relative_lengths or (
        QUICK_RELATIVE_LENGTHS if args.quick else RELATIVE_LENGTHS)
    local_lengths = args.local_lengths or (
        QUICK_LOCAL_LENGTHS if args.quick else LOCAL_LENGTHS)
    configs = [("relative", length, RELATIVE_VARIANTS)
               for length in relative_lengths]
    for block in args.local_block_sizes:
        if block < 1:
            parser.error(f"--local-block-sizes: each must be >= 1, "
                         f"got {block}")
    local_variants = LOCAL_VARIANTS + tuple(
        f"local{block}" for block in args.local_block_sizes)
    configs += [("local", length, local_variants)
                for length in local_lengths]
    delta_text = ("T-1" if args.max_relative_position is None
                  else str(args.max_relative_position))
    threads = tf.config.threading.get_intra_op_parallelism_threads() or "all"
    print(f"B={BATCH} N={HEADS} D={DIM} key_dim={KEY_DIM}; relative: "
          f"causal, δ={delta_text}, relative keys, shared table; local: "
          f"window {WINDOW}, blocks of {WINDOW}, not causal; "
          f"{os.cpu_count()} CPUs, {threads} intra-op threads, load "
          f"average {os.getloadavg()[0]:.1f}")
    print(f"time: median of {repeats} fwd+bwd runs (tf.function, no XLA), "
          f"round-robin per shape; memory: median (min..max) of "
          f"{memory_runs} fresh process(es), peak above the level before "
          f"the step (tensor = TF CPU allocator, RSS = resident set)",
          flush=True)

    # Memory first, while this process holds nothing large.
    memory = measure_all_memory(configs, memory_runs, args.jobs,
                                args.max_relative_position)
    print(f"memory measured at {time.perf_counter() - started:.0f} s",
          file=sys.stderr, flush=True)

    timings, seconds, flops = {}, {}, {}
    for section, length, variants in configs:
        x, layers = build_layers(section, length, variants,
                                 args.max_relative_position)
        if section == "relative":
            check_relative_outputs(x, layers)
        steps = [fwd_bwd(layer, x, kwargs) for layer, kwargs in
                 layers.values()]
        for variant, (step, _) in zip(variants, steps):
            flops[section, variant, length] = product_flops(step)
        timing = harness.interleaved(
            {variant: run for variant, (_, run) in zip(variants, steps)},
            repeats, warmup=1)
        for variant in variants:
            timings[section, variant, length] = timing[variant]
            seconds[section, variant, length] = (
                timing[variant]["median_ms"] / 1e3)
        del x, layers, steps, timing
        gc.collect()
        print(f"timed {section} {length} at "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr,
              flush=True)

    def source(section, variant, length, reference="mhsa"):
        """What the memory ratio of a row divides: the allocator's peak
        where both rows have it, else the RSS growth."""
        both = (memory[section, variant, length]
                + memory[section, reference, length])
        return "tensor" if both and all(
            result["tensor"] is not None for result in both) else "rss"

    def tensor(section, variant, length, key=None):
        """(median, min, max) bytes of the row's memory measurement."""
        return summary(memory[section, variant, length],
                       key or source(section, variant, length))

    def ratio(kind, section, variant, length, reference="mhsa"):
        if kind == "time":
            return (seconds[section, variant, length]
                    / seconds[section, reference, length])
        key = source(section, variant, length, reference)
        ours = tensor(section, variant, length, key)
        theirs = tensor(section, reference, length, key)
        if ours is None or theirs is None:
            return None
        return ours[0] / theirs[0]

    by_rss = sorted({f"{section} {length}" for section, length, variants
                     in configs for variant in variants
                     if source(section, variant, length) == "rss"})
    if by_rss:
        onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset")
        print(f"memory: TensorFlow's CPU allocator kept no statistics for "
              f"{', '.join(by_rss)} (its oneDNN kernels are off: "
              f"TF_ENABLE_ONEDNN_OPTS={onednn}, and TF 2.20 leaves them off "
              f"on CPUs without AVX512-VNNI/BF16 or AMX); their memory "
              f"ratios divide the RSS growth")

    print()
    print(HEADER)
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    rows = []
    for section, length, variants in configs:
        size = f"{'T' if section == 'relative' else 'n'}={length}"
        for variant in variants:
            results = memory[section, variant, length]
            work = flops[section, variant, length]
            row = {
                "section": section, "size": size, "length": length,
                "variant": variant, "layer": label(variant),
                "time": timings[section, variant, length],
                "time_ratio": ratio("time", section, variant, length),
                "gflop": work / 1e9,
                "gflop_per_s": work / seconds[section, variant, length] / 1e9,
                "tensor": mib_record(summary(results, "tensor")),
                "memory_ratio": ratio("memory", section, variant, length),
                "rss": mib_record(summary(results, "rss")),
                "memory_source": SOURCES[source(section, variant, length)],
                "memory_runs": len(results),
            }
            rows.append(row)
            print(f"| {section} | {size} | {row['layer']} | "
                  f"{row['time']['median_ms']:.1f} | "
                  f"{row['time_ratio']:.2f} | {row['gflop']:.2f} | "
                  f"{row['gflop_per_s']:.0f} | "
                  f"{mib_cell(summary(results, 'tensor'), 'no stats')} | "
                  f"{fmt(row['memory_ratio'], '.2f')} "
                  f"| {mib_cell(summary(results, 'rss'))} "
                  f"| {row['memory_source']} |")
    print()

    longest, widest = max(relative_lengths), max(local_lengths)
    relative_note = "" if longest == 2048 else "; the target is for T=2048"
    local_note = "" if widest == 8192 else "; the target is for n=8192"
    if source("relative", "skew", longest) == "rss":
        relative_memory_note = (relative_note + "; RSS growth, the "
                                "allocator keeps no statistics here")
    else:
        relative_memory_note = relative_note
    targets = [
        ratio_line(f"relative(skew)/MHSA memory at T={longest}",
                   ratio("memory", "relative", "skew", longest), 1.3, True,
                   relative_memory_note),
        ratio_line(f"relative(skew)/MHSA time at T={longest}",
                   ratio("time", "relative", "skew", longest), 1.5, True,
                   relative_note),
        ratio_line(f"full/local time at n={widest}",
                   1.0 / ratio("time", "local", "local", widest), 10, False,
                   local_note),
    ]
    notes = []

    def note(line):  # printed, and kept for the JSON file
        print(line)
        notes.append(line)

    skew, mhsa = (tensor("relative", variant, longest)
                  for variant in ("skew", "mhsa"))
    if skew and mhsa:
        note(f"also at T={longest}: skew/MHSA memory over the process "
             f"ranges {skew[1] / mhsa[2]:.2f}x..{skew[2] / mhsa[1]:.2f}x")
    note(f"also at T={longest}: naive/skew time "
          f"{ratio('time', 'relative', 'naive', longest, 'skew'):.2f}x, "
          f"memory "
          f"{fmt(ratio('memory', 'relative', 'naive', longest, 'skew'), '.2f')}"
          f"x; gather/skew time "
          f"{ratio('time', 'relative', 'gather', longest, 'skew'):.2f}x")
    note(f"also at n={widest}: full/projections-only time "
          f"{1.0 / ratio('time', 'local', 'projections', widest):.2f}x "
          f"(the most any local attention could gain at D={DIM})")

    def rate(variant):  # GFLOP/s of a local-section row at n=widest
        key = ("local", variant, widest)
        return flops[key] / seconds[key] / 1e9

    work_ratio = flops["local", "mhsa", widest] / flops["local", "local",
                                                        widest]
    needed = 10.0 * flops["local", "local", widest] / (
        seconds["local", "mhsa", widest] * 1e9)
    note(f"also at n={widest}: full/local product work {work_ratio:.2f}x "
          f"({flops['local', 'mhsa', widest] / 1e9:.1f} vs "
          f"{flops['local', 'local', widest] / 1e9:.1f} GFLOP); measured "
          f"GFLOP/s: full {rate('mhsa'):.0f}, local {rate('local'):.0f}, "
          f"projections {rate('projections'):.0f}; 10x needs local at "
          f"{needed:.0f} GFLOP/s ({needed / rate('mhsa'):.2f}x full "
          f"attention's rate)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}; total "
          f"{time.perf_counter() - started:.0f} s")
    name = args.results_name or ("attention_scaling_quick" if args.quick
                                 else "attention_scaling")
    harness.write_results(name, rows, directory=args.results_dir,
                          targets=targets, notes=notes,
                          parameters={
                              "batch": BATCH, "heads": HEADS, "dim": DIM,
                              "window": WINDOW, "max_relative_position":
                              args.max_relative_position, "repeats": repeats,
                              "memory_runs": memory_runs,
                          })


if __name__ == "__main__":
    main()
