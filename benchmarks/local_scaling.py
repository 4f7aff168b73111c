"""`LocalSelfAttention` at lengths full attention cannot reach.

Forward+backward of `LocalSelfAttention` (B=1, D=512, 8 heads, window
128, not causal, blocks of 128) at n = 8,192 and n = 65,536, in one
process, interleaved after
warm-up, and the time ratio against the ratio of lengths (8.0 for
linear scaling). Full attention's score matrix alone at n = 65,536 would
take 8 heads x 65,536^2 x 4 bytes = 137 GB, beyond this 24 GiB machine;
the local layer's is 8 x 65,536 x 384 x 4 bytes = 0.8 GB.

Writes `benchmarks/results/local_scaling.json`.

Run: `python benchmarks/local_scaling.py [--lengths 8192 65536]`.
"""

import argparse

import harness  # noqa: E402
import numpy as np  # noqa: E402
from layers import train_step  # noqa: E402

from keras_attention.layers import LocalSelfAttention  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs=2, default=[8192, 65536])
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    harness.add_results_arguments(parser, "local_scaling")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    steps = {}
    for length in args.lengths:
        layer = LocalSelfAttention(args.heads, args.dim // args.heads,
                                   window=args.window)
        x = rng.normal(size=(1, length, args.dim)).astype("float32")
        layer(x[:, :args.window])
        steps[f"n={length}"] = train_step(layer, (x,), {})  # not causal
    timing = harness.interleaved(steps, args.repeats, warmup=1)
    short, long = (timing[f"n={n}"]["median_ms"] for n in args.lengths)
    ratio = long / short
    for name, t in timing.items():
        print(f"  LocalSelfAttention {name}: {t['median_ms']:.0f} ms "
              f"(IQR {t['q1_ms']:.0f}-{t['q3_ms']:.0f})")
    print(f"  time ratio {ratio:.2f} for a length ratio of "
          f"{args.lengths[1] / args.lengths[0]:.1f}")
    harness.write_results(args.results_name or "local_scaling", [
        {"name": f"LocalSelfAttention, D={args.dim}, window {args.window}",
         "short": args.lengths[0], "long": args.lengths[1],
         "short_ms": short, "long_ms": long, "time_ratio": ratio,
         "length_ratio": args.lengths[1] / args.lengths[0]}],
        directory=args.results_dir)


if __name__ == "__main__":
    main()
