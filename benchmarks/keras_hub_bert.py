"""A KerasHub BERT backbone against the same network with our attention,
on long inputs: `keras_hub.models.BertBackbone` unchanged, and
`BertEncoder.from_keras_hub(backbone)` (its configuration and weights, our
`TransformerEncoder` blocks: from 1,024 tokens on TensorFlow the block-wise
exact core, `ops.blockwise_attention`).

Both at each length: the forward pass (inference) and a training step (the
gradients of a sum of squares of the sequence output with respect to the
weights), B=1, every token real, float32, random weights (the backbone's
own initializers, `max_sequence_length` the longest length). Memory: each
(model, length) in a fresh process, the growth of its peak resident memory
over its first forward pass and, separately, its first training step.
Time: the two models interleaved in one fresh process per length, medians
after a warm-up; the outputs compared there too (largest difference).

Run: `python benchmarks/keras_hub_bert.py` (4,096 and 8,192 tokens, a
2-layer, 512-wide, 8-head backbone; about 10 minutes on 2 cores).
Writes `benchmarks/results/keras_hub_bert.json`.
"""

import argparse
import gc
import json
import os
import sys
import time

import harness

MODELS = ("keras_hub", "ours")


def build(name, length, args):
    """(forward, training step), each a function running one step."""
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from keras_attention.models.bert_encoder import BertEncoder

    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=1000, num_layers=args.layers, num_heads=args.heads,
        hidden_dim=args.hidden, intermediate_dim=4 * args.hidden,
        dropout=0.0, max_sequence_length=max(args.lengths))
    model = (backbone if name == "keras_hub"
             else BertEncoder.from_keras_hub(backbone))
    rng = np.random.default_rng(0)
    inputs = {"token_ids": tf.constant(rng.integers(1, 1000, (1, length)),
                                       tf.int32),
              "segment_ids": tf.zeros((1, length), tf.int32),
              "padding_mask": tf.ones((1, length), tf.int32)}
    variables = model.trainable_variables

    @tf.function(jit_compile=False)
    def forward():
        return model(inputs)["sequence_output"]

    @tf.function(jit_compile=False)
    def train():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(inputs)["sequence_output"]))
        return tape.gradient(loss, variables)

    return ((lambda: forward().numpy()),
            (lambda: [tf.convert_to_tensor(g).numpy() for g in train()
                      if g is not None]),
            forward, train)


def peak_growth(run, trace):
    """Bytes the process's peak resident memory grows over one `run`,
    after `trace` has traced it."""
    trace()
    gc.collect()
    before = harness.status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current RSS
    run()
    return (harness.status_kib("VmHWM") - before) * 1024


def memory_worker(name, length, args):
    forward, train, forward_fn, train_fn = build(name, length, args)
    return {"forward_rss_bytes": peak_growth(
                forward, forward_fn.get_concrete_function),
            "train_rss_bytes": peak_growth(
                train, train_fn.get_concrete_function)}


def timing_worker(length, args):
    built = {name: build(name, length, args) for name in MODELS}
    outputs = {name: built[name][0]() for name in MODELS}
    difference = float(abs(outputs["ours"] - outputs["keras_hub"]).max())
    forward = harness.interleaved(
        {name: built[name][0] for name in MODELS}, args.repeats, warmup=1)
    train = harness.interleaved(
        {name: built[name][1] for name in MODELS}, args.repeats, warmup=1)
    return {"max_abs_difference": difference, "forward": forward,
            "train": train}


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=harness.positive_ints, default=[4096, 8192],
                   help="tokens (default: 4096,8192)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--memory-cap-gib", type=float, default=20.0)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    harness.add_results_arguments(p, "keras_hub_bert")
    args = p.parse_args(argv)
    for name in ("layers", "hidden", "heads", "repeats"):
        if getattr(args, name) <= 0:
            p.error(f"--{name} must be positive, received: "
                    f"{getattr(args, name)}")
    if args.hidden % args.heads:
        p.error(f"--hidden must be divisible by --heads, received: "
                f"--hidden {args.hidden} --heads {args.heads}")
    return args


def run(args, task, length, argv):
    """A fresh process doing `task` (`timing`, or a model's memory)."""
    return harness.run_capped(
        [sys.executable, os.path.abspath(__file__), *argv, "--worker",
         f"{task}:{length}"], args.memory_cap_gib * 2**30)


def summary(rows):
    """Per length with both models timed: KerasHub's time over ours
    (forward, training step), our training memory over KerasHub's and
    the largest difference of the outputs."""
    out = []
    for length in dict.fromkeys(row["length"] for row in rows):
        models = {row["model"]: row for row in rows if row["length"] == length}
        hub, ours = models.get("keras_hub", {}), models.get("ours", {})
        if "forward_ms" not in hub or "forward_ms" not in ours:
            continue
        entry = {"length": length,
                 "forward": hub["forward_ms"] / ours["forward_ms"],
                 "train": hub["train_ms"] / ours["train_ms"],
                 "difference": ours["max_abs_difference"]}
        if hub.get("train_rss_bytes") and "train_rss_bytes" in ours:
            entry["memory"] = ours["train_rss_bytes"] / hub["train_rss_bytes"]
        out.append(entry)
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if args.worker:
        task, length = args.worker.rsplit(":", 1)
        record = (timing_worker(int(length), args) if task == "timing"
                  else memory_worker(task, int(length), args))
        print(json.dumps(record))
        return
    print(f"machine: {harness.machine()}")
    rows = []
    for length in args.lengths:
        started = time.perf_counter()
        timing = run(args, "timing", length, argv)
        memory = {name: run(args, name, length, argv) for name in MODELS}
        for name in MODELS:
            row = {"model": name, "length": length, **memory[name]}
            if "failed" not in timing:
                row.update({
                    "forward_ms": timing["forward"][name]["median_ms"],
                    "train_ms": timing["train"][name]["median_ms"],
                    "max_abs_difference": timing["max_abs_difference"]})
            else:
                row["timing_failed"] = timing["failed"]
            rows.append(row)
        ours, hub = rows[-1], rows[-2]
        line = f"T={length:,}"
        if "forward_ms" in ours:
            line += (f": forward {hub['forward_ms']:,.0f} ms (KerasHub) "
                     f"against {ours['forward_ms']:,.0f} ms (ours), "
                     f"{hub['forward_ms'] / ours['forward_ms']:.2f}x; "
                     f"training step {hub['train_ms']:,.0f} against "
                     f"{ours['train_ms']:,.0f} ms, "
                     f"{hub['train_ms'] / ours['train_ms']:.2f}x; largest "
                     f"output difference {ours['max_abs_difference']:.1e}")
        if "train_rss_bytes" in ours and "train_rss_bytes" in hub:
            line += (f"; peak memory growth, forward "
                     f"{hub['forward_rss_bytes'] / 2**30:.2f} against "
                     f"{ours['forward_rss_bytes'] / 2**30:.2f} GiB, "
                     f"training {hub['train_rss_bytes'] / 2**30:.2f} "
                     f"against {ours['train_rss_bytes'] / 2**30:.2f} GiB")
        print(line + f" ({time.perf_counter() - started:.0f} s)", flush=True)
    harness.write_results(
        args.results_name or "keras_hub_bert", rows,
        directory=args.results_dir, summary=summary(rows),
        settings={"layers": args.layers, "hidden": args.hidden,
                  "heads": args.heads, "intermediate": 4 * args.hidden,
                  "batch": 1, "repeats": args.repeats})


if __name__ == "__main__":
    main()
