"""Model warm-up: the first request after a version becomes AVAILABLE,
against the steady state, with `--enable_model_warmup` on and off.

The server (`python -m keras_attention.serving`) serves an exported
translator, whose export writes TF Serving's warm-up file
(`assets.extra/tf_serving_warmup_requests`). For each setting and each of
`--rounds` fresh servers: the time from the process start to AVAILABLE,
the latency of the first predict request, then the p50 of `--requests`
more, one at a time. Target: with warm-up, first / p50 <= 2.

Run: `python benchmarks/serving_warmup.py [--rounds 3] [--requests 50]
[--model-dir RUN]`. Without `--model-dir` (a translator saved by `train`)
it exports an untrained tiny Transformer translator (decoding stops at
`--max-output-length` tokens). The server and this client share the
machine.

Prints a table and writes `benchmarks/results/serving_warmup.json`
(`--results-dir` and `--results-name` choose another file).
"""

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import harness  # noqa: E402
import numpy as np  # noqa: E402

from tests.serving.conftest import running_server  # noqa: E402

TEXT = "the young woman reads a red book in the garden ."


def untrained_translator(max_output_length):
    """A tiny Transformer translator with a SentencePiece model trained on
    a few generated sentences, weights untrained."""
    from keras_attention.export import TranslatorModule
    from keras_attention.models import TransformerTranslator
    from keras_attention.text import SubwordTokenizer
    from keras_attention.text.tokenizer import train_sentencepiece
    from keras_attention.translator import build

    words = ("the a young old man woman dog cat sees reads red book garden "
             "house runs to in").split()
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(words, 8)) + " ." for _ in range(500)]
    tokenizer = SubwordTokenizer(train_sentencepiece(sentences, 80))
    model = TransformerTranslator.from_preset(
        "tiny", tokenizer.vocabulary_size, tokenizer.vocabulary_size,
        share_embeddings=True, pad_id=tokenizer.pad_id)
    build(model)
    return TranslatorModule(model, tokenizer, tokenizer,
                            max_output_length=max_output_length)


def export(base, model_dir, max_output_length):
    """Write BASE/translator/1 (with its warm-up file); returns its path."""
    from keras_attention.export import export_translator

    if model_dir:
        from keras_attention.translator import Translator

        module = Translator.load(model_dir).module
    else:
        module = untrained_translator(max_output_length)
    return export_translator(module, base, "translator", 1)


def post(url, body):
    """Seconds for one predict request (the answer must be 200)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        f"{url}/v1/models/translator:predict", data=data,
        headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as reply:
        reply.read()
    return time.perf_counter() - started


def one_round(base, warmup, requests):
    """A fresh server: (seconds to AVAILABLE, first request s, steady s)."""
    started = time.perf_counter()
    flags = [f"--model_base_path={base / 'translator'}",
             "--model_name=translator",
             f"--enable_model_warmup={'true' if warmup else 'false'}"]
    with running_server(*flags, model="translator") as (url, _):
        ready = time.perf_counter() - started
        body = {"instances": [TEXT]}
        first = post(url, body)
        steady = [post(url, body) for _ in range(requests)]
    return ready, first, steady


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3,
                        help="fresh servers per setting (default: 3)")
    parser.add_argument("--requests", type=int, default=50,
                        help="steady-state requests per server (default: 50)")
    parser.add_argument("--model-dir", default=None,
                        help="a translator saved by `train` (default: an "
                             "untrained tiny one)")
    parser.add_argument("--max-output-length", type=int, default=32,
                        help="the untrained translator's output limit")
    harness.add_results_arguments(parser, "serving_warmup")
    args = parser.parse_args()
    for name in ("rounds", "requests", "max_output_length"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive "
                         f"int, received: {getattr(args, name)}")

    samples = {True: [], False: []}
    with tempfile.TemporaryDirectory() as base:
        base = pathlib.Path(base)
        path = export(base, args.model_dir, args.max_output_length)
        print(f"exported {path}", flush=True)
        for round_ in range(args.rounds):
            for warmup in (True, False):  # interleaved: drift hits both
                ready, first, steady = one_round(base, warmup, args.requests)
                p50 = statistics.median(steady)
                samples[warmup].append((ready, first, p50))
                print(f"round {round_ + 1} warm-up "
                      f"{'on ' if warmup else 'off'}: AVAILABLE after "
                      f"{ready:.2f} s, first {1000 * first:.1f} ms, p50 "
                      f"{1000 * p50:.2f} ms", flush=True)

    rows = []
    for warmup in (True, False):
        ready, first, p50 = (np.array(column) for column in
                             zip(*samples[warmup]))
        rows.append({
            "warmup": warmup, "rounds": args.rounds,
            "requests": args.requests,
            "ready_s": float(np.median(ready)),
            "first_ms": float(1000 * np.median(first)),
            "first_max_ms": float(1000 * first.max()),
            "p50_ms": float(1000 * np.median(p50)),
            "ratio": float(np.median(first / p50)),
        })
    print("\n| warm-up | AVAILABLE after s | first ms (max) | p50 ms | "
          "first / p50 |\n|---|---|---|---|---|")
    for row in rows:
        print(f"| {'on' if row['warmup'] else 'off'} | {row['ready_s']:.2f}"
              f" | {row['first_ms']:.1f} ({row['first_max_ms']:.1f}) | "
              f"{row['p50_ms']:.2f} | {row['ratio']:.2f} |")
    on = rows[0]
    print(f"\nwith warm-up the first request is {on['ratio']:.2f}x the p50 "
          f"(target <= 2x); without, {rows[1]['ratio']:.2f}x")
    harness.write_results(args.results_name or "serving_warmup", rows,
                          directory=args.results_dir, text=TEXT,
                          model_dir=args.model_dir,
                          max_output_length=args.max_output_length)


if __name__ == "__main__":
    main()
