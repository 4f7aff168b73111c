"""A trained translator in float32, bfloat16 and quantized, side by side in
one run on one CPU: sacreBLEU greedy and with a beam, translation speed
(sentences/s), the exported SavedModel's weights on disk, and the served
model's latency (p50/p99), throughput and resident memory at each number
of concurrent REST clients.

Variants (`Translator.quantize`, as `keras-attention export --quantize`
does): `float32` (the run loaded in float32), `bfloat16` (in
mixed_bfloat16), `int8` (weight-only int8, loaded in float32), `int8_bf16`
(weight-only int8 loaded in mixed_bfloat16: the dequantized products in
bfloat16), `int4` (weight-only int4, the embeddings int8),
`int8_activations` (Keras's default int8: the inputs quantized too, int8
x int8 products). Targets: int8 within 0.5 BLEU of float32, its weights at
most 0.3x of float32's on disk (int4 0.2x), its greedy translation and
its served p50 at least as fast as float32's. The CPU's int8 instructions
(`avx512_vnni`, `amx_int8`) are in the results' `machine.cpu_flags`.

Run: `python benchmarks/quantization.py --model-dir runs/multi30k-transformer
--data-dir ../shared/data/multi30k` (Multi30k's `test_2016_flickr`);
`--corpus synthetic` scores the embedded synthetic corpus's test split
instead. Writes `benchmarks/results/quantization.json`.
"""

import argparse
import asyncio
import pathlib
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import harness  # noqa: E402

VARIANTS = {
    "float32": dict(dtype="float32", quantize=None),
    "bfloat16": dict(dtype="mixed_bfloat16", quantize=None),
    "int8": dict(dtype="float32", quantize="int8"),
    "int8_bf16": dict(dtype="mixed_bfloat16", quantize="int8"),
    "int4": dict(dtype="float32", quantize="int4"),
    "int8_activations": dict(dtype="float32", quantize="int8",
                             activations=True),
}
SIZE_TARGETS = {"int8": 0.3, "int8_bf16": 0.3, "int8_activations": 0.3,
                "int4": 0.2}
SENTENCE = "A young woman reads a red book in the park."


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", required=True,
                   help="a trained translator's folder")
    p.add_argument("--corpus", choices=("multi30k", "synthetic"),
                   default="multi30k")
    p.add_argument("--data-dir", default=None,
                   help="Multi30k's folder (default $MULTI30K_DIR)")
    p.add_argument("--limit", type=int, default=None,
                   help="score the first N test sentences (default: all)")
    p.add_argument("--variants", default="float32,bfloat16,int8",
                   help="some of " + ", ".join(VARIANTS))
    p.add_argument("--beam-size", type=int, default=4,
                   help="the beam of the second BLEU (1: greedy only)")
    p.add_argument("--clients", type=harness.positive_ints, default=[1, 32],
                   help="concurrent REST clients (default: 1,32)")
    p.add_argument("--seconds", type=float, default=10.0,
                   help="seconds of load per number of clients")
    harness.add_results_arguments(p, "quantization")
    args = p.parse_args(argv)
    args.variant_list = [v.strip() for v in args.variants.split(",")
                         if v.strip()]
    unknown = [v for v in args.variant_list if v not in VARIANTS]
    if unknown or "float32" not in args.variant_list:
        p.error("--variants must name float32 and some of "
                f"{', '.join(VARIANTS)}, received: {args.variants!r}")
    for name in ("limit", "beam_size"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive, "
                    f"received: {value}")
    if not args.seconds > 0:
        p.error(f"--seconds must be positive, received: {args.seconds}")
    if not (pathlib.Path(args.model_dir) / "translator.json").is_file():
        p.error(f"--model-dir holds no translator.json, received: "
                f"{args.model_dir!r}")
    return args


def test_pairs(args):
    from keras_attention.text import load_corpus

    corpus = load_corpus(args.corpus, args.data_dir)
    return corpus["test"][: args.limit]


def latency(url, name, clients, seconds):
    """Closed-loop REST load (benchmarks/serving_load.py's clients):
    requests/s, p50 and p99 in ms."""
    from serving_load import load

    body = {"instances": [SENTENCE]}
    latencies, errors = asyncio.run(load(url, name, body, clients, seconds))
    ms = sorted(1000 * value for value in latencies)
    return {"clients": clients, "requests_per_s": len(ms) / seconds,
            "p50_ms": statistics.median(ms),
            "p99_ms": ms[min(len(ms) - 1, int(0.99 * len(ms)))],
            "errors": errors}


def measure(args, variant, pairs, base):
    """One variant's row: BLEU and speed in memory, size on disk, latency
    served."""
    from keras_attention.translator import Translator
    from tests.serving.conftest import running_server

    settings = VARIANTS[variant]
    translator = Translator.load(args.model_dir, dtype=settings["dtype"])
    if settings["quantize"]:
        translator.quantize(settings["quantize"],
                            activations=settings.get("activations", False))
    decoders = [translator]
    if args.beam_size > 1:
        decoders.append(translator.with_decoding(beam_size=args.beam_size))
    for decoder in decoders:  # traced before the clock runs
        decoder.translate([source for source, _ in pairs[:8]])
    greedy = decoders[0].evaluate(pairs)
    beam = decoders[-1].evaluate(pairs) if len(decoders) > 1 else greedy
    path = translator.export(base, variant)
    weights = sum(f.stat().st_size for f in (path / "variables").iterdir())
    row = {"variant": variant, "cpu": harness.machine()["cpu"],
           "sentences": len(pairs), "bleu_greedy": greedy["bleu"],
           "bleu_beam": beam["bleu"], "beam_size": args.beam_size,
           "greedy_sentences_per_s": greedy["sentences_per_second"],
           "beam_sentences_per_s": beam["sentences_per_second"],
           "weights_bytes": weights, "served": []}
    with running_server(f"--model_name={variant}",
                        f"--model_base_path={base / variant}",
                        model=variant) as (url, process):
        for clients in args.clients:
            row["served"].append(latency(url, variant, clients,
                                         args.seconds))
            row["served"][-1]["server_rss_bytes"] = 1024 * harness.status_kib(
                "VmRSS", process.pid)
    served = ", ".join(f"{s['clients']} client(s) p50 {s['p50_ms']:.0f} ms"
                       for s in row["served"])
    print(f"{variant:9s} BLEU {greedy['bleu']:5.2f} greedy, "
          f"{beam['bleu']:5.2f} beam {args.beam_size}; "
          f"{greedy['sentences_per_second']:6.1f} sentences/s greedy; "
          f"weights {weights / 2**20:.2f} MiB; {served}", flush=True)
    return row


def summary(rows):
    """Each variant against float32, and the targets' verdicts."""
    base = next(row for row in rows if row["variant"] == "float32")
    out = {}
    for row in rows:
        out[row["variant"]] = {
            "bleu_minus_float32": row["bleu_greedy"] - base["bleu_greedy"],
            "beam_bleu_minus_float32": row["bleu_beam"] - base["bleu_beam"],
            "size_over_float32": row["weights_bytes"] / base["weights_bytes"],
            "speed_over_float32": (row["greedy_sentences_per_s"]
                                   / base["greedy_sentences_per_s"]),
        }
    served = {row["variant"]: {s["clients"]: s["p50_ms"]
                               for s in row["served"]} for row in rows}
    targets = {}
    for variant, limit in SIZE_TARGETS.items():
        if variant not in out:
            continue
        figures = out[variant]
        targets[variant] = {
            "bleu_within_0.5": abs(figures["bleu_minus_float32"]) <= 0.5,
            f"size_at_most_{limit}x": figures["size_over_float32"] <= limit,
            "not_slower": figures["speed_over_float32"] >= 1.0,
            "served_p50_not_slower": all(
                served[variant].get(clients, float("inf")) <= p50
                for clients, p50 in served["float32"].items()),
        }
    if targets:
        out["targets"] = targets
    return out


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        pairs = test_pairs(args)
    except (FileNotFoundError, ValueError) as error:
        sys.exit(f"quantization.py: error: {error}")
    print(f"machine: {harness.machine()}")
    print(f"{len(pairs)} {args.corpus} test sentences; variants "
          f"{args.variant_list}", flush=True)
    base = pathlib.Path(tempfile.mkdtemp(prefix="quantization-"))
    try:
        rows = [measure(args, variant, pairs, base)
                for variant in args.variant_list]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    found = summary(rows)
    for variant, figures in found.items():
        if variant != "targets":
            print(f"{variant:9s} BLEU {figures['bleu_minus_float32']:+.2f} "
                  f"against float32; size "
                  f"{figures['size_over_float32']:.2f}x; speed "
                  f"{figures['speed_over_float32']:.2f}x")
    for variant, verdicts in found.get("targets", {}).items():
        print(f"{variant} targets: {verdicts}")
    harness.write_results(args.results_name or "quantization", rows,
                          directory=args.results_dir, summary=found,
                          settings={k: v for k, v in vars(args).items()
                                    if k not in ("results_dir",
                                                 "results_name")})
    return rows


if __name__ == "__main__":
    main()
