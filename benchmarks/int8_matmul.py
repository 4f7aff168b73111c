"""What this CPU's int8 instructions give a matrix product, in TensorFlow
and in JAX: int8 × int8 into int32 (the product Keras's int8 `Dense` and
`EinsumDense` compute) against float32 at the same shapes, timed
interleaved in one process, and the int8 result checked exact.

Why: `benchmarks/quantization.py` measures the int8 translator at 0.34×
float32's speed on a Xeon with VNNI and AMX; this shows where that comes
from (TensorFlow's int8 `MatMul` kernel) and what another backend's
compiler does with the same instructions.

Run: `python benchmarks/int8_matmul.py` (both backends; `--backends
tensorflow` for one). Writes `benchmarks/results/int8_matmul.json`.
"""

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import harness  # noqa: E402

# (rows, inner, columns): a decoding step's batch and a training batch
# through a Transformer's 512 -> 2048 feed-forward.
SHAPES = [(16, 512, 2048), (256, 512, 2048), (1024, 512, 2048)]
# "tensorflow-xla": the same TensorFlow functions with jit_compile=True
BACKENDS = ("tensorflow", "tensorflow-xla", "jax")


def shapes(text):
    try:
        found = [tuple(int(n) for n in part.split("x"))
                 for part in text.split(",") if part.strip()]
    except ValueError:
        found = []
    if not found or any(len(s) != 3 or min(s) <= 0 for s in found):
        raise argparse.ArgumentTypeError(
            f"must be MxKxN products separated by commas, received: "
            f"{text!r}")
    return found


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default=",".join(BACKENDS),
                   help="some of " + ", ".join(BACKENDS))
    p.add_argument("--shapes", type=shapes, default=SHAPES,
                   help="MxKxN,... (default: "
                   + ",".join("x".join(map(str, s)) for s in SHAPES) + ")")
    p.add_argument("--repeats", type=int, default=30)
    harness.add_results_arguments(p, "int8_matmul")
    args = p.parse_args(argv)
    args.backend_list = [b.strip() for b in args.backends.split(",")
                         if b.strip()]
    if not args.backend_list or set(args.backend_list) - set(BACKENDS):
        p.error(f"--backends must be some of {', '.join(BACKENDS)}, "
                f"received: {args.backends!r}")
    if args.repeats <= 0:
        p.error(f"--repeats must be positive, received: {args.repeats}")
    return args


def products(backend):
    """(float32 product, int8 -> int32 product, weight-only product: the
    float32 rows times the int8 matrix cast to float32, as Keras's
    weight-only int8 layers compute), each compiled, taking two arrays
    and returning a NumPy array."""
    if backend.startswith("tensorflow"):
        import tensorflow as tf

        def compiled(function):
            return tf.function(function,
                               jit_compile=backend == "tensorflow-xla")

        f32 = compiled(lambda a, b: tf.linalg.matmul(a, b))
        i8 = compiled(lambda a, b: tf.linalg.matmul(
            a, b, output_type=tf.int32))
        wo = compiled(lambda a, b: tf.linalg.matmul(a, tf.cast(b,
                                                               tf.float32)))
        return ((lambda a, b: f32(a, b).numpy()),
                (lambda a, b: i8(a, b).numpy()),
                (lambda a, b: wo(a, b).numpy()), tf.constant)
    import jax
    import jax.numpy as jnp

    f32 = jax.jit(lambda a, b: a @ b)
    i8 = jax.jit(lambda a, b: jax.lax.dot(
        a, b, preferred_element_type=jnp.int32))
    wo = jax.jit(lambda a, b: a @ b.astype(jnp.float32))
    return ((lambda a, b: np.asarray(f32(a, b))),
            (lambda a, b: np.asarray(i8(a, b))),
            (lambda a, b: np.asarray(wo(a, b))), jnp.asarray)


def measure(backend, shape, repeats):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    a8 = np.clip(np.round(a * 40), -127, 127).astype(np.int8)
    b8 = np.clip(np.round(b * 40), -127, 127).astype(np.int8)
    f32, i8, wo, put = products(backend)
    fa, fb, ia, ib = put(a), put(b), put(a8), put(b8)
    exact = a8.astype(np.int64) @ b8.astype(np.int64)
    if not np.array_equal(i8(ia, ib), exact):
        raise AssertionError(f"{backend}'s int8 product is not exact")
    times = harness.interleaved({"float32": lambda: f32(fa, fb),
                                 "int8": lambda: i8(ia, ib),
                                 "weight_only": lambda: wo(fa, ib)},
                                repeats)
    row = {"backend": backend, "m": m, "k": k, "n": n,
           "float32_ms": times["float32"]["median_ms"],
           "int8_ms": times["int8"]["median_ms"], "int8_exact": True,
           "weight_only_ms": times["weight_only"]["median_ms"],
           "cpu": harness.machine()["cpu"]}
    row["int8_over_float32_time"] = row["int8_ms"] / row["float32_ms"]
    row["weight_only_over_float32_time"] = (row["weight_only_ms"]
                                            / row["float32_ms"])
    return row


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    print(f"machine: {harness.machine()}")
    rows = []
    for backend in args.backend_list:
        for shape in args.shapes:
            row = measure(backend, shape, args.repeats)
            rows.append(row)
            print(f"{backend:10s} {'x'.join(map(str, shape)):>15s}: "
                  f"float32 {row['float32_ms']:.3f} ms, int8 "
                  f"{row['int8_ms']:.3f} ms ({row['int8_over_float32_time']:.2f}"
                  f"x float32's time), weight-only "
                  f"{row['weight_only_ms']:.3f} ms "
                  f"({row['weight_only_over_float32_time']:.2f}x)",
                  flush=True)
    harness.write_results(args.results_name or "int8_matmul", rows,
                          directory=args.results_dir)
    return rows


if __name__ == "__main__":
    main()
