"""`make demo`: train, evaluate and export an English->German translator.

1. Train the `tiny` Transformer on the embedded synthetic corpus (no
   download; a few minutes on 2 CPU cores), with progress bars and the
   validation BLEU after each epoch.
2. Report sacreBLEU on the held-out test split, greedy and beam 4.
3. Translate three sentences of the test split, each shown beside its
   reference (what the BLEU compares them with), and draw one
   cross-attention map: as text, as `attention.png` (the last decoder
   layer's heads and their average) and as `attention.html` (every layer
   and head, interactive), both in the run's folder.
4. Export the SavedModel to `BASE/translator/VERSION/` and check, in a
   fresh Python process that imports only `tensorflow` and
   `tensorflow_text`, that it returns the same translations.
5. Serve it with the TF Serving-compatible REST server
   (`keras-attention serve`), ask it for a translation over REST, and
   stop the server.

Run: `python -m keras_attention.demo [--epochs N] [--output-dir D]
[--export-dir B] [--port P | --no-serve]`.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: the first screen is the demo's

from keras_attention.text import load_corpus
from keras_attention.translator import TrainingConfig
from keras_attention.translator import train


def pick_examples(pairs, count=3):
    """`count` (source, reference) pairs of a split, of different lengths:
    with the pairs ordered by the source's length in words (ties in split
    order), the ones at the middles of `count` equal parts, so short,
    middling and long. Deterministic: the same split gives the same pairs.

    >>> pairs = [("a b c", "1"), ("a", "2"), ("a b", "3"), ("a b c d", "4"),
    ...          ("a b c d e", "5"), ("a b c d e f", "6")]
    >>> pick_examples(pairs)
    [('a b', '3'), ('a b c d', '4'), ('a b c d e f', '6')]
    """
    if count < 1 or count > len(pairs):
        raise ValueError(f"count must be in [1, {len(pairs)}], received: "
                         f"count={count}")
    by_length = sorted(range(len(pairs)),
                       key=lambda index: (len(pairs[index][0].split()), index))
    return [pairs[by_length[(2 * part + 1) * len(pairs) // (2 * count)]]
            for part in range(count)]


def show_examples(translate, pairs):
    """Print three pairs of a test split (`pick_examples`): the source,
    its reference and `translate`'s output for it. Returns the sources
    and their translations."""
    examples = pick_examples(pairs)
    sources = [source for source, _ in examples]
    translations = translate(sources)
    print("\nThree sentences of the test split (source, reference, ours):")
    for (source, reference), target in zip(examples, translations):
        print(f"  {source}\n    reference: {reference}\n    ours:      "
              f"{target}")
    return sources, translations

RELOAD = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
model = tf.saved_model.load(sys.argv[1])
texts = json.loads(sys.argv[2])
out = model.signatures["serving_default"](text=tf.constant(texts))
print(json.dumps([t.decode("utf-8") for t in out["translation"].numpy()]))
"""


def attention_map(module, text):
    """An ASCII picture of one sentence's cross-attention."""
    result = module.translate_with_attention([text])
    source = [p.decode() for p in result["source_pieces"].numpy()[0]
              if p.decode() not in ("<pad>",)]
    target = []
    for piece in (p.decode() for p in result["pieces"].numpy()[0]):
        if piece in ("</s>", "<pad>"):
            break
        target.append(piece)
    weights = result["attention"].numpy()[0]
    shades = " .:-=+*#%@"  # darker = more weight, relative to the row's peak
    width = max([len(p) for p in target + source] + [1])
    lines = ["source pieces: " + " ".join(source), ""]
    columns = " ".join(f"{i % 10}" for i in range(len(source)))
    lines.append(" " * (width + 1) + columns)
    for row, piece in enumerate(target):
        row_weights = weights[row][: len(source)]
        peak = max(row_weights.max(), 1e-9)
        cells = [shades[int(round(w / peak * 9))] for w in row_weights]
        lines.append(piece.rjust(width) + " " + " ".join(cells))
    return "\n".join(lines)


def _port(preferred):
    """`preferred` if it is free on loopback, else any free port."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
        except OSError:
            sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_and_ask(base_path, texts, port):
    """Start `keras-attention serve` on `base_path`, translate `texts`
    over REST, stop the server; returns the translations."""
    from keras_attention.serving import Client
    from keras_attention.serving import ServingClientError

    port = _port(port)
    command = [sys.executable, "-m", "keras_attention.serving",
               "--model_name=translator", f"--model_base_path={base_path}",
               f"--rest_api_port={port}", "--port=0"]
    print("\n$ keras-attention serve " + " ".join(command[3:]))
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    url = f"http://127.0.0.1:{port}"
    client = Client(url, "translator", timeout=60)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                states = [v["state"] for v in
                          client.status()["model_version_status"]]
                if "AVAILABLE" in states:
                    break
            except ServingClientError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start: "
                                   + server.stderr.read()[-2000:])
            time.sleep(0.3)
        body = json.dumps({"instances": texts[:1]})
        print(f"$ curl -d '{body}' {url}/v1/models/translator:predict")
        translations = client.translate(texts)
        print(json.dumps({"predictions": translations[:1]},
                         ensure_ascii=False))
        return translations
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
        server.stderr.close()
        print("(server stopped)")


def draw_attention(translator, text, directory):
    """`attention.png` and `attention.html` of `text` in `directory`."""
    from keras_attention import visualize

    found = translator.attention(text)
    picture = os.path.join(directory, "attention.png")
    visualize.plot_translation(found, path=picture)
    page = visualize.translation_viewer(found).save(
        os.path.join(directory, "attention.html"))
    return [picture, str(page)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6,
                        help="training epochs (default: 6)")
    parser.add_argument("--output-dir", default="runs/demo",
                        help="the training run's folder (default: runs/demo)")
    parser.add_argument("--export-dir", default="models",
                        help="SavedModel base path (default: models)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="use only N training pairs (for a quick look)")
    parser.add_argument("--port", type=int, default=8501,
                        help="REST port of the served model (default: 8501, "
                             "or a free one if taken)")
    parser.add_argument("--no-serve", action="store_true",
                        help="skip serving the model over REST")
    args = parser.parse_args(argv)

    translator = train(TrainingConfig(
        output_dir=args.output_dir, epochs=args.epochs,
        train_size=args.train_size, warmup_steps=600,
        learning_rate_scale=2.0,
    ))
    test = load_corpus("synthetic")["test"]
    print("\nsacreBLEU on the synthetic test split "
          f"({len(test)} sentences):")
    for beam in (1, 4):
        decoder = translator.with_decoding(beam_size=beam)
        result = decoder.evaluate(test)
        name = "greedy" if beam == 1 else f"beam {beam}"
        print(f"  {name:<7} BLEU {result['bleu']:5.2f}  "
              f"({result['sentences_per_second']:.0f} sentences/s; "
              f"{result['signature']})")

    sources, translations = show_examples(translator.translate, test)
    print("\nCross-attention (last decoder block, heads averaged):")
    print(attention_map(translator.module, sources[1]))
    for path in draw_attention(translator, sources[1], args.output_dir):
        print(f"  drawn: {os.path.abspath(path)}")

    path = translator.export(args.export_dir)
    print(f"\nExported the SavedModel to {path}")
    reloaded = subprocess.run(
        [sys.executable, "-c", RELOAD, str(path), json.dumps(sources)],
        capture_output=True, text=True, check=True,
    )
    served = json.loads(reloaded.stdout.strip().splitlines()[-1])
    same = served == translations
    print("A fresh process with only tensorflow + tensorflow_text loaded it "
          f"and gave {'the same' if same else 'DIFFERENT'} translations.")
    if not args.no_serve:
        over_rest = serve_and_ask(path.parent.resolve(), sources, args.port)
        rest_same = over_rest == translations
        print("The REST answers are "
              f"{'the same' if rest_same else 'DIFFERENT'} as in memory.")
        same = same and rest_same
    print("Serve it with TF Serving: --model_name=translator "
          f"--model_base_path={path.parent.resolve()} (see serving/README.md)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
