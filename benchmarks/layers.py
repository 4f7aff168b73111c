"""Our layers against the references, measured side by side in one run.

For each pair, with the same shapes (and copied weights where the layouts
match): forward+backward time of a compiled training-like step (gradients
of a sum of squares with respect to the weights), ours and the reference
interleaved after warm-up. Pairs:

- `MultiHeadSelfAttention` against `keras.layers.MultiHeadAttention`
  (causal, padded keys);
- `TransformerEncoder` against `keras_hub.layers.TransformerEncoder`
  (padded);
- `TransformerDecoder` against `keras_hub.layers.TransformerDecoder`
  (causal, padded, cross-attention to a source of the same length);

at (B, T, D, N) = (32, 128, 256, 8) and (8, 512, 512, 8), in `float32`
and `mixed_bfloat16`. The script also measures the machine's matrix
multiply rate (GFLOP/s, float32 and bfloat16) and reports each layer's
efficiency: the FLOPs of its products (forward and backward, 3x the
forward's) per second, divided by that rate.

Prints a table, the speed-ups (reference time / ours), and writes
`benchmarks/results/layers.json`.

Run: `python benchmarks/layers.py [--quick]` (TensorFlow; `make bench`),
or under JAX with `KERAS_BACKEND=jax python benchmarks/layers.py --device
gpu` (KerasHub rows are skipped where keras_hub is not installed).
"""

import argparse

import harness  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.layers import MultiHeadSelfAttention  # noqa: E402
from keras_attention.layers import TransformerDecoder  # noqa: E402
from keras_attention.layers import TransformerEncoder  # noqa: E402

try:
    import keras_hub
except ImportError:  # e.g. a GPU machine without it
    keras_hub = None

BACKEND = keras.backend.backend()
SHAPES = [(32, 128, 256, 8), (8, 512, 512, 8)]
QUICK_SHAPES = [(4, 64, 128, 4)]


def attention_flops(batch, length, dim, source=None):
    """Forward FLOPs of one multi-head attention's products: the four
    projections and the two attention products (every key scored, as
    both implementations compute them)."""
    source = length if source is None else source
    projections = 2 * batch * dim * dim * (2 * length + 2 * source)
    attention = 2 * 2 * batch * length * source * dim
    return projections + attention


def ffn_flops(batch, length, dim, intermediate):
    return 2 * 2 * batch * length * dim * intermediate


def train_step(layer, inputs, kwargs):
    """A compiled function: gradients of `sum(layer(*inputs)^2)` with
    respect to the layer's weights; returns when they are computed."""
    variables = layer.trainable_variables
    if BACKEND == "tensorflow":
        import tensorflow as tf

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                outputs = layer(*inputs, **kwargs)
                loss = tf.reduce_sum(tf.square(tf.cast(outputs, "float32")))
            return tape.gradient(loss, variables)

        return lambda: [g.numpy() for g in step()]
    if BACKEND == "jax":
        import jax
        import jax.numpy as jnp

        def loss(values, arrays):
            outputs, _ = layer.stateless_call(values, [], *arrays, **kwargs)
            return jnp.sum(jnp.square(outputs.astype("float32")))

        grad = jax.jit(jax.grad(loss))
        values = [v.value for v in variables]
        arrays = [jnp.asarray(a) for a in inputs]
        return lambda: jax.block_until_ready(grad(values, arrays))
    raise SystemExit(f"the {BACKEND} backend is not benchmarked")


def cases(batch, length, dim, heads, rng):
    """(name, make_ours, make_reference, FLOPs forward) for one shape; the
    makers return (layer, inputs, kwargs) built in the current policy."""
    x = rng.normal(size=(batch, length, dim)).astype("float32")
    source = rng.normal(size=(batch, length, dim)).astype("float32")
    padding = np.arange(length)[None] < rng.integers(
        length // 2, length + 1, size=(batch, 1))
    key_mask = padding[:, None, :] & np.ones((1, length, 1), bool)
    intermediate = 4 * dim

    def mhsa():
        layer = MultiHeadSelfAttention(heads, dim // heads)
        layer(x[:1])
        return layer, (x,), dict(padding_mask=padding, use_causal_mask=True)

    def keras_mha(ours):
        layer = keras.layers.MultiHeadAttention(heads, dim // heads)
        layer(x[:1], x[:1])
        layer.set_weights(ours.get_weights())
        return layer, (x, x), dict(attention_mask=key_mask,
                                   use_causal_mask=True)

    yield ("MultiHeadSelfAttention vs keras MultiHeadAttention", mhsa,
           keras_mha, attention_flops(batch, length, dim))

    def encoder():
        layer = TransformerEncoder(intermediate, heads)
        layer(x[:1])
        return layer, (x,), dict(padding_mask=padding)

    def hub_encoder(ours):
        layer = keras_hub.layers.TransformerEncoder(intermediate, heads)
        layer(x[:1])
        return layer, (x,), dict(padding_mask=padding)

    def decoder():
        layer = TransformerDecoder(intermediate, heads)
        layer(x[:1], source[:1])
        return layer, (x, source), dict(decoder_padding_mask=padding,
                                        encoder_padding_mask=padding)

    def hub_decoder(ours):
        layer = keras_hub.layers.TransformerDecoder(intermediate, heads)
        layer(x[:1], source[:1])
        return layer, (x, source), dict(decoder_padding_mask=padding,
                                        encoder_padding_mask=padding)

    if keras_hub is not None:
        yield ("TransformerEncoder vs keras_hub TransformerEncoder", encoder,
               hub_encoder, attention_flops(batch, length, dim)
               + ffn_flops(batch, length, dim, intermediate))
        yield ("TransformerDecoder vs keras_hub TransformerDecoder", decoder,
               hub_decoder, 2 * attention_flops(batch, length, dim)
               + ffn_flops(batch, length, dim, intermediate))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_results_arguments(
        parser, "layers, or layers_BACKEND_DEVICE off TensorFlow on CPU; "
        "quick: + _quick")
    parser.add_argument("--quick", action="store_true",
                        help="one small shape and few repeats (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs of each (default: 20; 3 quick)")
    parser.add_argument("--shapes", nargs="+", default=None,
                        metavar="B,T,D,N",
                        help="shapes to measure (default: the two of the "
                             "docs' tables)")
    parser.add_argument("--precisions", nargs="+",
                        default=["float32", "mixed_bfloat16"])
    parser.add_argument("--device", choices=["cpu", "gpu"], default=None,
                        help="require this device (default: whatever the "
                             "backend uses)")
    args = parser.parse_args()
    device = harness.device_name()
    if args.device == "gpu" and device == "cpu":
        raise SystemExit("--device gpu: the backend sees no GPU")
    repeats = args.repeats or (3 if args.quick else 20)
    shapes = QUICK_SHAPES if args.quick else SHAPES
    if args.shapes:
        shapes = [tuple(int(n) for n in shape.split(",")) for shape in args.shapes]
    rates = {dtype: harness.matmul_rate(dtype, size=512 if args.quick
                                        else 8192 if device != "cpu"
                                        else 2048)
             for dtype in ("float32", "bfloat16")}
    print(f"{BACKEND} on {device}; matmul rate float32 "
          f"{rates['float32']:.0f} GFLOP/s, bfloat16 "
          f"{rates['bfloat16']:.0f} GFLOP/s; median of {repeats} "
          "interleaved runs, fwd+bwd")
    print(f"{'':<52} {'B,T,D,N':<16} {'policy':<15} {'ours ms':>8} "
          f"{'ref ms':>8} {'speedup':>8} {'eff':>6}")
    rows = []
    rng = np.random.default_rng(0)
    for precision in args.precisions:
        keras.config.set_dtype_policy(precision)
        rate = rates["bfloat16" if "bfloat16" in precision else "float32"]
        for shape in shapes:
            for name, make_ours, make_reference, flops in cases(*shape, rng):
                ours, *ours_call = make_ours()
                reference, *reference_call = make_reference(ours)
                timing = harness.interleaved(
                    {"ours": train_step(ours, *ours_call),
                     "reference": train_step(reference, *reference_call)},
                    repeats,
                )
                ours_ms = timing["ours"]["median_ms"]
                reference_ms = timing["reference"]["median_ms"]
                efficiency = 3 * flops / (ours_ms * 1e-3) / 1e9 / rate
                rows.append({
                    "name": name, "shape": "B,T,D,N=" + ",".join(map(str, shape)),
                    "policy": precision, "ours": timing["ours"],
                    "reference": timing["reference"],
                    "speedup": reference_ms / ours_ms,
                    "gflop": 3 * flops / 1e9, "efficiency": efficiency,
                    "tokens_per_s": shape[0] * shape[1] / (ours_ms * 1e-3),
                })
                print(f"{name:<52} {','.join(map(str, shape)):<16} "
                      f"{precision:<15} {ours_ms:8.2f} {reference_ms:8.2f} "
                      f"{reference_ms / ours_ms:7.2f}x {efficiency:6.1%}")
    keras.config.set_dtype_policy("float32")
    name = "layers"
    if BACKEND != "tensorflow" or device != "cpu":
        name += f"_{BACKEND}_{'cpu' if device == 'cpu' else 'gpu'}"
    if args.quick:
        name += "_quick"
    harness.write_results(args.results_name or name, rows,
                          directory=args.results_dir, matmul_gflops=rates)


if __name__ == "__main__":
    main()
