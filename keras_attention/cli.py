"""The `keras-attention` command: train, evaluate, translate, export,
serve.

Each command is a thin wrapper over `keras_attention.translator` or
`keras_attention.serving`.
"""

import argparse
import dataclasses
import sys

TRAIN_HELP = {
    "corpus": "training corpus: 'synthetic' (embedded, no download) or "
              "'multi30k'",
    "data_dir": "folder with the Multi30k gzip files (default: "
                "$MULTI30K_DIR)",
    "output_dir": "where the run writes its tokenizer, backups, checkpoints, "
                  "TensorBoard logs and the final model; running again with "
                  "the same folder resumes a killed run",
    "preset": "model size: tiny (demo), small (Multi30k on CPU), base "
              "(the paper)",
    "max_relative_position": "use relative-position self-attention "
                             "(Shaw et al., 2018) over distances clipped to "
                             "this, instead of sinusoidal positions",
    "relative_values": "with --max-relative-position, also add relative "
                       "embeddings to the values",
    "vocabulary_size": "joint source/target SentencePiece vocabulary size "
                       "(an upper bound)",
    "epochs": "passes over the training data",
    "batch_size": "sentences per batch on each replica",
    "tokens_per_batch": "batch by token count per replica instead of "
                        "--batch-size",
    "max_length": "longest sequence in tokens; longer pairs are dropped or "
                  "truncated (see --overlong) and counted",
    "overlong": "what to do with over-long pairs: drop or truncate",
    "warmup_steps": "linear learning-rate warm-up steps of the paper's "
                    "schedule",
    "learning_rate_scale": "factor on the paper's learning-rate schedule",
    "label_smoothing": "label smoothing of the cross-entropy (0.1 in the "
                       "paper)",
    "clipnorm": "clip each gradient to this norm (0 disables)",
    "precision": "Keras dtype policy: float32, mixed_bfloat16 (for CPUs "
                 "with AVX512-BF16, where it is much faster, and TPUs) or "
                 "mixed_float16 (GPUs)",
    "checkpoint_every": "steps between backups (for resuming)",
    "bleu_sentences": "validation sentences translated for the BLEU printed "
                      "after each epoch (0 disables)",
    "train_size": "use only the first N training pairs",
    "seed": "random seed (shuffling, initialisation)",
    "verbose": "Keras progress output: auto, 0, 1 (bars) or 2 (a line per "
               "epoch)",
}


def _add_train(commands):
    from keras_attention.translator import TrainingConfig

    parser = commands.add_parser(
        "train", help="train a translator",
        description="Train a Transformer translator. The tf.distribute "
                    "strategy comes from the environment (TF_CONFIG, GPUs).",
    )
    for field in dataclasses.fields(TrainingConfig):
        flag = "--" + field.name.replace("_", "-")
        default = field.default
        if isinstance(default, bool):
            parser.add_argument(flag, action="store_true",
                                help=TRAIN_HELP[field.name])
            continue
        kind = {int: int, float: float}.get(type(default), str)
        if field.name in ("tokens_per_batch", "train_size",
                          "max_relative_position"):
            kind = int
        parser.add_argument(flag, type=kind, default=default,
                            help=f"{TRAIN_HELP[field.name]} "
                                 f"(default: {default})")


def _add_model_dir(parser):
    parser.add_argument("--model-dir", default="runs/translator",
                        help="a trained translator's folder (the train "
                             "command's --output-dir; default: "
                             "runs/translator)")


def _add_decoding(parser):
    parser.add_argument("--beam-size", type=int, default=1,
                        help="1 decodes greedily; more uses beam search "
                             "(default: 1)")
    parser.add_argument("--alpha", type=float, default=0.6,
                        help="beam search length penalty exponent "
                             "(default: 0.6)")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-attention",
        description="Train, evaluate, use and export a Transformer "
                    "translator built from keras_attention layers.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_train(commands)

    evaluate = commands.add_parser(
        "evaluate", help="sacreBLEU of a trained translator",
        description="Translate a corpus split and print sacreBLEU with its "
                    "signature.",
    )
    _add_model_dir(evaluate)
    _add_decoding(evaluate)
    evaluate.add_argument("--corpus", default="synthetic",
                          help="synthetic or multi30k (default: synthetic)")
    evaluate.add_argument("--data-dir", default=None,
                          help="Multi30k folder (default: $MULTI30K_DIR)")
    evaluate.add_argument("--split", default="test",
                          help="train, val or test (default: test)")
    evaluate.add_argument("--limit", type=int, default=None,
                          help="evaluate on the first N pairs only")

    translate = commands.add_parser(
        "translate", help="translate text",
        description="Translate the given sentences (or stdin, a sentence a "
                    "line).",
    )
    _add_model_dir(translate)
    _add_decoding(translate)
    translate.add_argument("--url", default=None,
                           help="ask a TF Serving REST server (ours or the "
                                "real one) at this URL, e.g. "
                                "http://localhost:8501, instead of loading "
                                "--model-dir")
    translate.add_argument("--model-name", default="translator",
                           help="the served model's name, with --url "
                                "(default: translator)")
    translate.add_argument("--timeout", type=float, default=30.0,
                           help="seconds to wait for the server, with --url "
                                "(default: 30)")
    translate.add_argument("text", nargs="*",
                           help="sentences to translate (default: stdin)")

    export = commands.add_parser(
        "export", help="write a SavedModel for TensorFlow Serving",
        description="Write BASE/NAME/VERSION/ with the signatures "
                    "serving_default (text -> translation) and "
                    "translate_with_attention.",
    )
    _add_model_dir(export)
    _add_decoding(export)
    export.add_argument("--base-path", default="models",
                        help="TF Serving's model base path parent "
                             "(default: models)")
    export.add_argument("--name", default="translator",
                        help="the model name (default: translator)")
    export.add_argument("--version", type=int, default=None,
                        help="version number (default: next free)")

    serve = commands.add_parser(
        "serve", help="serve SavedModels over TF Serving's REST API",
        description="A TF Serving-compatible REST server; the flags mirror "
                    "tensorflow_model_server's. Needs the serving extra: "
                    "pip install 'keras-attention[serving]'.",
    )
    from keras_attention.serving.main import add_arguments

    add_arguments(serve)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        from keras_attention.serving.main import serve

        return serve(args)
    if args.command == "translate" and args.url:
        return _translate_remote(args)
    from keras_attention import translator as api
    from keras_attention.text import load_corpus

    if args.command == "train":
        from keras_attention.translator import TrainingConfig

        names = {f.name for f in dataclasses.fields(TrainingConfig)}
        values = {k: v for k, v in vars(args).items() if k in names}
        if values["verbose"] not in ("auto",):
            values["verbose"] = int(values["verbose"])
        if values["clipnorm"] == 0:
            values["clipnorm"] = None
        api.train(TrainingConfig(**values))
        print(f"saved to {values['output_dir']}")
        return 0
    model = api.Translator.load(args.model_dir, beam_size=args.beam_size,
                                alpha=args.alpha)
    if args.command == "evaluate":
        pairs = load_corpus(args.corpus, args.data_dir)[args.split]
        pairs = pairs[: args.limit]
        result = model.evaluate(pairs)
        print(f"BLEU = {result['bleu']:.2f} on {result['sentences']} "
              f"sentences ({result['signature']}); "
              f"{result['sentences_per_second']:.1f} sentences/s")
    elif args.command == "translate":
        texts = args.text or [line.rstrip("\n") for line in sys.stdin]
        for translation in model.translate(texts):
            print(translation)
    elif args.command == "export":
        path = model.export(args.base_path, args.name, args.version)
        print(f"exported to {path}")
    return 0


def _translate_remote(args):
    from keras_attention.serving import Client
    from keras_attention.serving import ServingClientError

    texts = args.text or [line.rstrip("\n") for line in sys.stdin]
    try:
        client = Client(args.url, args.model_name, timeout=args.timeout)
        translations = client.translate(texts)
    except (ValueError, ServingClientError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for translation in translations:
        print(translation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
