"""What each attention variant costs on TensorFlow: grouped-query and
multi-query attention, a sliding window, RoPE, ALiBi and a dense additive
bias against plain causal self-attention, and the decoding cache that
grouped heads shrink.

Part 1, training (B=1, 8 heads of 64, D=512, float32, causal, one
`tf.function` step: output, squared-sum loss, gradients of the weights):
`MultiHeadSelfAttention` as it comes (`attention_impl="auto"`, which is
the block-wise core at these lengths) with each option, and
`RelativeAttention` (Shaw et al.'s relative keys, as the Music
Transformer has them), interleaved in
one process per length; the ratio is the variant's median step over the
plain layer's (1.00 = free). A dense `attention_bias` is a `(1, 8, T, T)`
float32 tensor, 8 GiB at 16,384 positions, so it is timed at the shorter
length only.

Part 2, decoding: one cached step of the same layer (B=4, a cache of
`--cache-length` positions, half of it filled), with 8, 2 and 1
key/value heads, the dense and the block-wise core; the cache's bytes
(keys and values, float32) beside each.

Run: `python benchmarks/attention_variants.py` (about 10 minutes on 2
cores); `--quick` (T=256 and 512, cache 512) checks that it works.
"""

import argparse

import harness

BATCH, HEADS, HEAD_SIZE = 1, 8, 64
MODEL_DIM = HEADS * HEAD_SIZE
VARIANTS = {
    "plain": {},
    "gqa (2 kv heads)": {"num_key_value_heads": 2},
    "mqa (1 kv head)": {"num_key_value_heads": 1},
    "sliding window 1024": {"sliding_window": 1024},
    "rope": {"rope_max_wavelength": 10000.0},
    "alibi": {"alibi_bias_max": 8},
    "relative (δ=1024)": {"max_relative_position": 1024},
    "attention_bias": {},
}
# The longest length at which the dense (1, N, T, T) bias is timed.
DENSE_BIAS_MAX_LENGTH = 4096


def training_steps(length, names):
    """name -> a function running one compiled fwd+bwd step."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_attention.layers import MultiHeadSelfAttention
    from keras_attention.layers import RelativeAttention

    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(BATCH, length, MODEL_DIM)),
                    tf.float32)
    steps = {}
    for name in names:
        keras.utils.set_random_seed(0)
        options = VARIANTS[name]
        layer_class = (RelativeAttention if "max_relative_position" in options
                       else MultiHeadSelfAttention)
        layer = layer_class(HEADS, HEAD_SIZE, **options)
        layer(x[:, :8])  # build on 8 positions
        bias = None
        if name == "attention_bias":
            bias = tf.constant(rng.normal(size=(1, HEADS, length, length))
                               .astype("float32"))

        @tf.function(jit_compile=False)
        def step(layer=layer, bias=bias):
            with tf.GradientTape() as tape:
                out = layer(x, use_causal_mask=True, attention_bias=bias)
                loss = tf.reduce_sum(tf.square(out))
            return tape.gradient(loss, layer.trainable_variables)

        # (a gathered table's gradient is IndexedSlices)
        steps[name] = lambda step=step: [tf.convert_to_tensor(g).numpy()
                                         for g in step()]
    return steps


def decoding_steps(cache_length, batch):
    """name -> a compiled cached step, and name -> the cache's bytes."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_attention.layers import MultiHeadSelfAttention

    rng = np.random.default_rng(0)
    token = tf.constant(rng.normal(size=(batch, 1, MODEL_DIM)), tf.float32)
    index = tf.constant(cache_length // 2)  # half the cache filled
    steps, sizes = {}, {}
    for key_heads in (HEADS, 2, 1):
        for impl in ("dense", "blockwise"):
            keras.utils.set_random_seed(0)
            layer = MultiHeadSelfAttention(
                HEADS, HEAD_SIZE, num_key_value_heads=key_heads,
                attention_impl=impl)
            layer(token)
            cache = tuple(tf.constant(rng.normal(
                size=(batch, cache_length, key_heads, HEAD_SIZE)), tf.float32)
                for _ in range(2))

            @tf.function(jit_compile=False)
            def step(layer=layer, cache=cache):
                out, _ = layer(token, use_causal_mask=True, cache=cache,
                               cache_update_index=index)
                return out

            name = f"{key_heads} kv heads, {impl}"
            steps[name] = lambda step=step: step().numpy()
            sizes[name] = sum(int(np.prod(part.shape)) * 4 for part in cache)
    return steps, sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+",
                        default=[2048, 16384])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache-length", type=int, default=8192)
    parser.add_argument("--decode-batch", type=int, default=4)
    parser.add_argument("--decode-repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true",
                        help="T=256 and 512, cache 512, one timed run")
    harness.add_results_arguments(parser, "attention_variants")
    args = parser.parse_args()
    import tensorflow as tf

    # (one compiled step per variant is the point, not a retracing)
    tf.get_logger().setLevel("ERROR")
    if args.quick:
        args.lengths, args.repeats = [256, 512], 1
        args.cache_length, args.decode_repeats = 512, 2

    rows = []
    print(f"fwd+bwd of causal self-attention, B={BATCH}, {HEADS} heads of "
          f"{HEAD_SIZE}, D={MODEL_DIM}, float32, attention_impl='auto'; "
          f"interleaved, {args.repeats} runs each")
    print("| T | variant | step ms (median) | / plain |")
    print("|---|---|---|---|")
    for length in args.lengths:
        names = [name for name in VARIANTS if name != "attention_bias"
                 or length <= DENSE_BIAS_MAX_LENGTH]
        timing = harness.interleaved(training_steps(length, names),
                                     args.repeats, warmup=1)
        plain = timing["plain"]["median_ms"]
        for name in names:
            ratio = timing[name]["median_ms"] / plain
            rows.append({"part": "training", "length": length,
                         "variant": name, "vs_plain": ratio,
                         **timing[name]})
            print(f"| {length:,} | {name} | {timing[name]['median_ms']:,.0f}"
                  f" | {ratio:.2f}x |", flush=True)

    steps, sizes = decoding_steps(args.cache_length, args.decode_batch)
    timing = harness.interleaved(steps, args.decode_repeats, warmup=2)
    print(f"\none cached decoding step, B={args.decode_batch}, cache of "
          f"{args.cache_length:,} positions; interleaved, "
          f"{args.decode_repeats} runs each")
    print("| key/value heads, core | step ms (median) | cache MiB |")
    print("|---|---|---|")
    for name in steps:
        rows.append({"part": "decoding", "cache_length": args.cache_length,
                     "variant": name, "cache_bytes": sizes[name],
                     **timing[name]})
        print(f"| {name} | {timing[name]['median_ms']:.2f} | "
              f"{sizes[name] / 2**20:,.0f} |")
    harness.write_results(
        args.results_name or ("attention_variants_quick" if args.quick
                              else "attention_variants"),
        rows, directory=args.results_dir)


if __name__ == "__main__":
    main()
