"""Which Keras backend trains the bAbI readers faster on this machine:
the training examples per second of `UniversalTransformerReader` and
`MemoryNetwork` (reproductions/systems/babi.py's sizes) under JAX and TensorFlow,
each in its own process, the processes interleaved, the ratio printed.

Each process builds the model on the real bAbI task 2 (1k) questions,
fits one epoch to compile, then times `--epochs` more epochs of the same
`--examples` questions (batches of 64 for the reader, 32 for the memory
network, as babi.py). Writes `benchmarks/results/babi_backends.json`.

Run: `python benchmarks/babi_backends.py [--repeats 3]`.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(2, str(pathlib.Path(__file__).resolve().parents[1]
                       / "reproductions" / "systems"))  # the systems

import harness  # noqa: E402

BACKENDS = ("jax", "tensorflow")
MODELS = ("universal_transformer", "memory_network")


def measure(model_name, data, examples, epochs):
    """Examples/s of `epochs` timed epochs, in this process's backend."""
    import babi as bench
    import keras

    from keras_attention.data import babi

    task = babi.load_task(data, 2, "1k")
    vocabulary = babi.BabiVocabulary.from_samples(task.train, task.valid,
                                                  task.test)
    inputs, answers = babi.vectorize_babi(task.train, vocabulary, 50)
    inputs = {key: value[:examples] for key, value in inputs.items()}
    answers = answers[:examples]
    args = bench.finish_arguments(
        bench.parser(), bench.parser().parse_args(
            ["--model", model_name, "--data", str(data)]))
    model = bench.build_model(args, len(vocabulary),
                              inputs["story"].shape[-1], seed=0)
    fit = dict(batch_size=args.batch_size, verbose=0)
    model.fit(inputs, answers, epochs=1, **fit)  # compiles
    started = time.perf_counter()
    model.fit(inputs, answers, epochs=epochs, **fit)
    seconds = time.perf_counter() - started
    return {"backend": keras.backend.backend(),
            "examples_per_s": epochs * len(answers) / seconds}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None,
                        help="the bAbI release root (default as babi.py)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=3,
                        help="processes per backend and model, interleaved")
    parser.add_argument("--examples", type=int, default=896)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "BACKEND"),
                        help=argparse.SUPPRESS)
    harness.add_results_arguments(parser, "babi_backends")
    args = parser.parse_args(argv)
    models = [name for name in args.models.split(",") if name]
    if not models or any(name not in MODELS for name in models):
        parser.error(f"--models must name some of {list(MODELS)}, "
                     f"received: {args.models!r}")
    for name in ("repeats", "examples", "epochs"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, received: "
                         f"{getattr(args, name)!r}")
    import babi as bench

    data = args.data or os.environ.get("KERAS_ATTENTION_BABI_DIR") or str(
        bench.PROJECT_DATA)
    if args.child:
        print(json.dumps(measure(args.child[0], data, args.examples,
                                 args.epochs)))
        return None
    rows = []
    for model_name in models:
        rates = {backend: [] for backend in BACKENDS}
        for _ in range(args.repeats):
            for backend in BACKENDS:
                result = subprocess.run(
                    [sys.executable, __file__, "--child", model_name,
                     backend, "--data", data, "--examples",
                     str(args.examples), "--epochs", str(args.epochs)],
                    capture_output=True, text=True,
                    env={**os.environ, "KERAS_BACKEND": backend,
                         "TF_CPP_MIN_LOG_LEVEL": "3"})
                if result.returncode:
                    sys.exit(f"{model_name} on {backend} failed: "
                             f"{result.stderr.strip().splitlines()[-1]}")
                rates[backend].append(json.loads(
                    result.stdout.strip().splitlines()[-1])["examples_per_s"])
        medians = {backend: sorted(values)[len(values) // 2]
                   for backend, values in rates.items()}
        row = {"model": model_name, **{f"{backend}_examples_per_s": medians[
            backend] for backend in BACKENDS},
            "runs": rates,
            "tensorflow_over_jax": medians["tensorflow"] / medians["jax"]}
        rows.append(row)
        print(f"{model_name}: JAX {medians['jax']:.0f} examples/s, "
              f"TensorFlow {medians['tensorflow']:.0f} examples/s "
              f"(TensorFlow / JAX {row['tensorflow_over_jax']:.2f}; medians "
              f"of {args.repeats} processes each)", flush=True)
    harness.write_results(args.results_name or "babi_backends", rows,
                          directory=args.results_dir)
    return rows


if __name__ == "__main__":
    main()
