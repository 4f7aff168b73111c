"""Long causal self-attention on TensorFlow: time and memory of one
forward+backward step, ours against Keras, from 1k to 64k positions.

Candidates (B=1, 8 heads of 64, D=512, float32, causal, one `tf.function`
step: the layer's output, a squared-sum loss, the gradients of the
layer's weights):

- `ours`: `MultiHeadSelfAttention` as it comes (`attention_impl="auto"`:
  the block-wise exact core from 1,024 keys on, `ops.blockwise_attention`);
- `ours dense`: the same layer with `attention_impl="dense"` (the whole
  `(B, N, T, T)` weights, as before);
- `keras`: `keras.layers.MultiHeadAttention(use_causal_mask=True)`;
- `relative`, `relative dense` (with `--candidates`): `RelativeAttention`
  with relative keys up to 1,024 positions apart (the Music
  Transformer's terms), `attention_impl="auto"` and `"dense"`;
- `compressed`, `compressed dense` (with `--candidates`):
  `MemoryCompressedAttention` (Liu et al.'s memory-compressed attention,
  keys and values compressed by 3, causal over the slots),
  `attention_impl="auto"` (the block-wise core over the slots,
  `ops.blockwise_attention(key_stride=3)`, from 1,024 positions) and
  `"dense"` (the `(B, N, T, T/3)` weights).

Memory: each (candidate, length) runs in a fresh process; its figure is
the growth of the process's peak resident memory over the step (VmHWM
after minus VmRSS before, tracing done first), and TensorFlow's allocator
peak where it keeps statistics. The parent polls the worker's resident
memory and kills it above `--memory-cap-gib` (default 20 of this
machine's 24), which the table reports as "over the cap"; a candidate
that failed is not tried at longer lengths. Time: the worker's median
step after one warm-up step; at `--compare-length` (8,192) the three run
interleaved (A B C A B C ...) in one process for the ratios.

Run: `python benchmarks/long_attention.py` (about 30 minutes on 2 cores;
64k positions take minutes a step); `--quick` (1k and 2k, one timed run)
checks that it works.
"""

import argparse
import gc
import json
import os
import sys
import time

import harness

BATCH, HEADS, HEAD_SIZE = 1, 8, 64
MODEL_DIM = HEADS * HEAD_SIZE
CANDIDATES = ("ours", "ours dense", "keras")
RELATIVE_CANDIDATES = ("relative", "relative dense")
COMPRESSED_CANDIDATES = ("compressed", "compressed dense")
# the same layers under Keras's mixed_bfloat16 policy (bfloat16 products,
# float32 weights), for CPUs with AVX512-BF16 or AMX
BFLOAT16_CANDIDATES = ("ours bfloat16", "keras bfloat16")
MAX_RELATIVE_POSITION = 1024
COMPRESSION = 3


def build(candidate, length):
    """The layer, its input and a compiled fwd+bwd step."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_attention.layers import MemoryCompressedAttention
    from keras_attention.layers import MultiHeadSelfAttention
    from keras_attention.layers import RelativeAttention

    keras.utils.set_random_seed(0)
    dtype = None
    if candidate.endswith(" bfloat16"):
        candidate = candidate.removesuffix(" bfloat16")
        dtype = keras.DTypePolicy("mixed_bfloat16")
    x = tf.constant(np.random.default_rng(0).normal(
        size=(BATCH, length, MODEL_DIM)).astype("float32"))
    if candidate == "keras":
        layer = keras.layers.MultiHeadAttention(HEADS, HEAD_SIZE,
                                                dtype=dtype)

        def call(x=x):
            return layer(x, x, use_causal_mask=True)
    else:
        impl = "dense" if candidate.endswith(" dense") else "auto"
        if candidate.startswith("relative"):
            layer = RelativeAttention(
                HEADS, HEAD_SIZE, max_relative_position=MAX_RELATIVE_POSITION,
                attention_impl=impl)
        elif candidate.startswith("compressed"):
            layer = MemoryCompressedAttention(
                HEADS, HEAD_SIZE, compression=COMPRESSION,
                attention_impl=impl)
        else:
            layer = MultiHeadSelfAttention(HEADS, HEAD_SIZE,
                                           attention_impl=impl, dtype=dtype)

        def call(x=x):
            return layer(x, use_causal_mask=True)
    # Build the weights on 8 positions: a full-length eager call would
    # leave its memory resident before the step is measured.
    call(x[:, :8])

    @tf.function(jit_compile=False)
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(call()))
        return tape.gradient(loss, layer.trainable_variables)

    return step, lambda: [tf.convert_to_tensor(g).numpy() for g in step()]


def worker(candidate, length, repeats):
    """One fresh process: memory of the first step, then timed steps."""
    import tensorflow as tf

    step, run = build(candidate, length)
    step.get_concrete_function()  # trace, but run nothing yet
    gc.collect()
    rss_before = harness.status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current RSS
    try:
        tf.config.experimental.reset_memory_stats("CPU:0")
        stats = True
    except ValueError:  # no allocator statistics (oneDNN off)
        stats = False
    started = time.perf_counter()
    run()
    first = time.perf_counter() - started
    tensor = (tf.config.experimental.get_memory_info("CPU:0")["peak"]
              if stats else None)
    rss = (harness.status_kib("VmHWM") - rss_before) * 1024
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
    return {"rss_bytes": rss, "tensor_bytes": tensor,
            "first_ms": first * 1e3,
            **harness.summarize(seconds or [first])}


def run_worker(candidate, length, repeats, cap_bytes):
    """The worker's record, or `{"failed": why}`; killed above the cap."""
    return harness.run_capped(
        [sys.executable, os.path.abspath(__file__), "--worker",
         f"{candidate}:{length}", "--repeats", str(repeats)], cap_bytes)


def compare(candidates, length, repeats):
    """The candidates interleaved in one process at `length`."""
    runs = {candidate: build(candidate, length)[1]
            for candidate in candidates}
    return harness.interleaved(runs, repeats, warmup=1)


def causal_block_pairs(length):
    """(query, key) pairs the block-wise core scores in causal attention
    over `length` positions: each block of queries against the keys up
    to its own last one, whole blocks."""
    from keras_attention.ops.blockwise import default_block_size

    block = default_block_size(BATCH, HEADS, length, length)
    blocks = -(-length // block)
    return BATCH * HEADS * block**2 * blocks * (blocks + 1) // 2


def product_flops(candidate, length):
    """Matrix-product FLOPs of one step of `candidate` (`ours`, `ours
    dense` or `keras`), or None: the four D x D projections (forward, and
    the input's and the kernel's gradients), and the attention products,
    2 H FLOPs a (query, key) pair each. The dense cores make 6 over all
    T^2 pairs (forward 2, gradient 4); the block-wise core (ours from
    1,024 positions) makes 7 over the pairs of the causal blocks it meets
    (forward 2, gradient 5: it recomputes the scores)."""
    from keras_attention.layers.multi_head_attention import BLOCKWISE_MIN_LENGTH

    projections = 4 * 3 * 2 * BATCH * length * MODEL_DIM**2
    if candidate == "ours" and length >= BLOCKWISE_MIN_LENGTH:
        pairs, products = causal_block_pairs(length), 7
    elif candidate in ("ours", "ours dense", "keras"):
        pairs, products = BATCH * HEADS * length**2, 6
    else:
        return None
    return projections + products * 2 * HEAD_SIZE * pairs


# Full passes over a block's (B, N, b, k) float32 scores that the
# block-wise core makes (ops/_blockwise_tf.py): forward, the scores'
# product written, the fused softmax read and written, the weights read
# by the value product (4); gradient, the scores again (1 + 2), dP - D
# written (1), dS = P (dP - D) (3), and dS or P read by the three
# products (3).
CORE_PASSES = 4 + 10


def roofline(timing, length, rate):
    """Per candidate: FLOPs, the time at the machine's measured matmul
    `rate` (GFLOP/s), the achieved rate and its share of `rate`; and the
    block-wise core's score traffic in bytes."""

    out = {"matmul_gflops": rate}
    for candidate, value in timing.items():
        flops = product_flops(candidate, length)
        if flops is None:
            continue
        seconds = value["median_ms"] / 1e3
        out[candidate] = {"flops": flops,
                          "bound_ms": flops / (rate * 1e9) * 1e3,
                          "achieved_gflops": flops / seconds / 1e9,
                          "of_matmul_rate": flops / seconds / 1e9 / rate}
    if "ours" in out:
        out["ours"]["score_bytes"] = CORE_PASSES * 4 * causal_block_pairs(
            length)
    return out


def profile(candidate, length):
    """Per-op-type milliseconds of one warm step (TensorFlow's profiler,
    op time summed over its threads), the largest first."""
    import collections
    import glob
    import tempfile

    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    _, run = build(candidate, length)
    run()
    run()
    with tempfile.TemporaryDirectory() as directory:
        tf.profiler.experimental.start(directory)
        started = time.perf_counter()
        run()
        wall = time.perf_counter() - started
        tf.profiler.experimental.stop()
        path = glob.glob(f"{directory}/**/*.xplane.pb", recursive=True)[0]
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
    total = collections.Counter()
    for plane in space.planes:
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                op = names.get(event.metadata_id, "?").split(":")[-1]
                if op != "Process":
                    total[op] += event.duration_ps / 1e9
    return profile_summary({
        "wall_ms": wall * 1e3,
        "op_ms": dict(sorted(total.items(), key=lambda kv: -kv[1]))})


RATIOS = {"ours_vs_dense": ("ours", "ours dense", 2),
          "ours_vs_keras": ("ours", "keras", 2.5),
          "bfloat16_ours_vs_keras": ("ours bfloat16", "keras bfloat16", 2.5),
          "relative_vs_dense": ("relative", "relative dense", 2),
          "compressed_vs_dense": ("compressed", "compressed dense", 1)}
"""Each speed-up the comparison reports: (layer, its reference, the
target of the reference's time over the layer's)."""


def comparison_ratios(timing):
    """The speed-ups of `timing` (`{layer: {"median_ms"}}`) that `RATIOS`
    names, each by its key and in `ratios` with its layers and target;
    and the precision (every layer in bfloat16, or float32)."""
    out, listed = {}, []
    for name, (ours, reference, target) in RATIOS.items():
        if ours in timing and reference in timing:
            out[name] = (timing[reference]["median_ms"]
                         / timing[ours]["median_ms"])
            listed.append({"ours": ours, "reference": reference,
                           "value": out[name], "target": target})
    precision = ("mixed_bfloat16" if timing and all(
        name.endswith(" bfloat16") for name in timing) else "float32")
    return {**out, "ratios": listed, "precision": precision}


def profile_summary(found, top=8):
    """A profile (`wall_ms`, `op_ms` largest first) with its op time in
    all (`total_ms`), the matrix products' (`products_ms`, and their
    `products_share`) and its `top` ops (`top_ms`)."""
    ops = found.get("op_ms", {})
    total = sum(ops.values())
    products = sum(ms for op, ms in ops.items()
                   if "MatMul" in op or "Einsum" in op)
    return {**found, "total_ms": total, "products_ms": products,
            "products_share": products / total if total else 0.0,
            "top_ms": dict(list(ops.items())[:top])}


def fmt_gib(value):
    return "–" if value is None else f"{value / 2**30:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+",
                        default=[1024, 4096, 8192, 16384, 65536])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--compare-length", type=int, default=8192)
    parser.add_argument("--compare-repeats", type=int, default=3)
    parser.add_argument("--memory-cap-gib", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true",
                        help="1k and 2k, one timed run, compared at 1k")
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES),
                        choices=CANDIDATES + RELATIVE_CANDIDATES
                        + COMPRESSED_CANDIDATES + BFLOAT16_CANDIDATES)
    parser.add_argument("--profile", action="store_true",
                        help="also profile one step of each candidate at "
                        "the compare length (per-op time)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--profile-worker", help=argparse.SUPPRESS)
    harness.add_results_arguments(parser, "long_attention")
    args = parser.parse_args()
    if args.profile_worker:
        candidate, length = args.profile_worker.rsplit(":", 1)
        print(json.dumps(profile(candidate, int(length))))
        return
    if args.worker:
        candidate, length = args.worker.rsplit(":", 1)
        print(json.dumps(worker(candidate, int(length), args.repeats)))
        return
    if args.quick:
        args.lengths, args.repeats = [1024, 2048], 1
        args.compare_length, args.compare_repeats = 1024, 1
    cap = args.memory_cap_gib * 2**30

    rows, failed = [], set()
    for length in args.lengths:
        for candidate in args.candidates:
            if candidate in failed:
                rows.append({"candidate": candidate, "length": length,
                             "failed": "failed at a shorter length"})
                continue
            record = run_worker(candidate, length, args.repeats, cap)
            if "failed" in record:
                failed.add(candidate)
            rows.append({"candidate": candidate, "length": length, **record})
            print(json.dumps(rows[-1]), flush=True)

    print(f"\nfwd+bwd of causal self-attention, B={BATCH}, {HEADS} heads of "
          f"{HEAD_SIZE}, D={MODEL_DIM}, float32; a fresh process each")
    print("| T | layer | step ms (median) | first step ms | peak RSS growth "
          "GiB | allocator peak GiB |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        if "failed" in row:
            print(f"| {row['length']:,} | {row['candidate']} | "
                  f"{row['failed']} | | {fmt_gib(row.get('rss_bytes'))} | |")
        else:
            print(f"| {row['length']:,} | {row['candidate']} | "
                  f"{row['median_ms']:,.0f} | {row['first_ms']:,.0f} | "
                  f"{fmt_gib(row['rss_bytes'])} | "
                  f"{fmt_gib(row['tensor_bytes'])} |")

    timing = compare(args.candidates, args.compare_length,
                     args.compare_repeats)
    print(f"\ninterleaved at T={args.compare_length:,} "
          f"({args.compare_repeats} runs each): "
          + ", ".join(f"{name} {value['median_ms']:,.0f} ms"
                      for name, value in timing.items()))
    ratios = comparison_ratios(timing)
    for ratio in ratios["ratios"]:
        print(f"- {ratio['ours']} / {ratio['reference']}: "
              f"{ratio['value']:.2f}x (target >= {ratio['target']}x)")
    first = args.candidates[0]
    done = [row for row in rows if row["candidate"] == first
            and "failed" not in row]
    if len(done) >= 2:
        a, b = done[-2], done[-1]
        print(f"- {first}'s memory from T={a['length']:,} to "
              f"{b['length']:,} "
              f"({b['length'] / a['length']:.0f}x the length): "
              f"{b['rss_bytes'] / max(a['rss_bytes'], 1):.1f}x the peak RSS "
              "growth (linear: the same factor)")
    for length in args.lengths:
        done = {row["candidate"]: row for row in rows
                if row["length"] == length and "failed" not in row}
        if "compressed" in done and "ours" in done:
            print(f"- T={length:,}: compressed "
                  f"{fmt_gib(done['compressed']['rss_bytes'])} GiB, ours "
                  f"(exact) {fmt_gib(done['ours']['rss_bytes'])} GiB of "
                  "peak RSS growth")
    keras_failed = [row["length"] for row in rows if row["candidate"] ==
                    "keras" and row.get("failed", "").startswith(("over",
                                                                  "exit"))]
    if keras_failed:
        print(f"- keras fails at T={keras_failed[0]:,}")
    rate = harness.matmul_rate("float32", size=2048)
    bounds = roofline(timing, args.compare_length, rate)
    print(f"\nmachine: {rate:.0f} GFLOP/s float32 (2,048-square matmul, "
          "this run)")
    for candidate in args.candidates:
        if candidate in bounds:
            b = bounds[candidate]
            print(f"- {candidate}: {b['flops'] / 1e9:,.0f} GFLOP of "
                  f"products, {b['bound_ms']:,.0f} ms at that rate; "
                  f"achieved {b['achieved_gflops']:.0f} GFLOP/s "
                  f"({b['of_matmul_rate']:.0%})"
                  + (f"; score traffic {b['score_bytes'] / 1e9:.1f} GB"
                     if "score_bytes" in b else ""))
    profiles = {}
    if args.profile:
        for candidate in args.candidates:
            profiles[candidate] = harness.run_capped(
                [sys.executable, os.path.abspath(__file__),
                 "--profile-worker", f"{candidate}:{args.compare_length}"],
                cap)
            ops = list(profiles[candidate].get("op_ms", {}).items())[:6]
            print(f"- profile of {candidate}: " + ", ".join(
                f"{op} {ms:,.0f} ms" for op, ms in ops))
    harness.write_results(
        args.results_name or ("long_attention_quick" if args.quick
                              else "long_attention"),
        rows, directory=args.results_dir,
        comparison={"length": args.compare_length, "timing": timing,
                    **ratios},
        roofline=bounds, **({"profile": profiles} if profiles else {}))


if __name__ == "__main__":
    main()
