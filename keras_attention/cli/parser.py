"""The `keras-attention` argument parser, built without TensorFlow or Keras
so that `--help` answers at once.

The `train` options are generated from the fields of
`keras_attention.training.config.TrainingConfig` (`add_config_options`);
the other commands' options are written out here.
"""

import argparse
import dataclasses

from keras_attention import __version__
from keras_attention._length_buckets import DEFAULT_EDGES
from keras_attention._length_buckets import length_edges
from keras_attention.cli.errors import PROG
from keras_attention.text.corpora import ENVIRONMENT_VARIABLE as MULTI30K_VARIABLE
from keras_attention.text.corpora import MULTI30K_ALIASES
from keras_attention.text.corpora import MULTI30K_SPLITS

# The splits `evaluate --split` takes, from the corpus readers (which import
# no TensorFlow): Multi30k's files, with "test" for test_2016_flickr.
SPLITS = {
    "synthetic": ("train", "val", "test"),
    "multi30k": (*MULTI30K_SPLITS[:2], *MULTI30K_ALIASES, *MULTI30K_SPLITS[2:]),
}


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer, received: {text!r}")
    return value


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(
            f"must be a number >= 0, received: {text!r}")
    return value


def _length_edges(text):
    """`10,15,20,25` -> (10, 15, 20, 25), checked as `bleu_by_length`
    checks its edges."""
    try:
        return length_edges("edges", [int(part) for part in text.split(",")])
    except ValueError:
        raise argparse.ArgumentTypeError(
            "must be positive, strictly increasing word counts separated by "
            f"commas (e.g. {_shown_edges(DEFAULT_EDGES)}), received: "
            f"{text!r}") from None


def _shown_edges(edges):
    return ",".join(str(edge) for edge in edges)


# -- options from a config dataclass ------------------------------------------

def _default(field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def _shown(value):
    if isinstance(value, (list, tuple)):
        return " ".join(str(item) for item in value)
    return str(value)


def add_config_options(parser, config_class):
    """Add to `parser` one option per field of the dataclass `config_class`.

    Each field's `metadata` holds `help` (a str, required) and optionally
    `choices` (a tuple), `type` (the callable argparse applies to the text,
    e.g. `int`) and `nargs` (e.g. `"+"`). The flag is `--` and the field's
    name with `_` turned into `-`. A bool field is a switch (`store_true`;
    `--name/--no-name` when it defaults to True); otherwise an int or float
    default gives the `type` when the metadata has none, and a field
    without a default is a required option. `config_from_arguments` makes
    the config from the parsed options.

    Raises:
        ValueError: a field has no `metadata["help"]`.

    Example:

    >>> import argparse, dataclasses
    >>> @dataclasses.dataclass
    ... class Config:
    ...     epochs: int = dataclasses.field(
    ...         default=8, metadata={"help": "passes over the data"})
    ...     model: str = dataclasses.field(default="transformer", metadata={
    ...         "help": "the architecture", "choices": ("transformer", "rnn")})
    ...     train_files: list = dataclasses.field(default=None, metadata={
    ...         "help": "a TSV file, or a source and a target file",
    ...         "nargs": "+"})
    ...     shuffle: bool = dataclasses.field(
    ...         default=False, metadata={"help": "shuffle the pairs"})
    >>> parser = argparse.ArgumentParser(prog="train")
    >>> add_config_options(parser, Config)
    >>> args = parser.parse_args(["--epochs", "2", "--model", "rnn",
    ...                           "--train-files", "a.en", "a.de", "--shuffle"])
    >>> config_from_arguments(Config, args)
    Config(epochs=2, model='rnn', train_files=['a.en', 'a.de'], shuffle=True)
    """
    for field in dataclasses.fields(config_class):
        if not field.init:
            continue
        metadata = field.metadata
        if not isinstance(metadata.get("help"), str):
            raise ValueError(
                f"{config_class.__name__}.{field.name} needs metadata['help']"
                " (a str) to be a command-line option, received: "
                f"metadata={dict(metadata)!r}"
            )
        flag = "--" + field.name.replace("_", "-")
        text = metadata["help"].replace("%", "%%")  # argparse %-formats it
        default = _default(field)
        if isinstance(default, bool) or field.type in (bool, "bool"):
            action = (argparse.BooleanOptionalAction if default is True
                      else "store_true")
            parser.add_argument(flag, action=action, default=bool(default),
                                help=text)
            continue
        options = {key: metadata[key] for key in ("choices", "nargs")
                   if key in metadata}
        kind = metadata.get("type", {int: int, float: float}.get(type(default)))
        if kind is not None:
            options["type"] = kind
        if default is dataclasses.MISSING:
            options["required"] = True
        else:
            options["default"] = default
            if default is not None:
                text += f" (default: {_shown(default)})".replace("%", "%%")
        parser.add_argument(flag, help=text, **options)


def config_from_arguments(config_class, args):
    """`config_class(...)` from the options `add_config_options` added;
    the dataclass validates the values (ValueError names the field)."""
    return config_class(**{
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(config_class) if field.init
    })


# -- the parser ----------------------------------------------------------------

def _add_train(commands):
    # TF-free: importing it at parser-build time keeps --help fast.
    from keras_attention.training.config import TrainingConfig

    parser = commands.add_parser(
        "train", help="train a translator",
        description="Train a translator (a Transformer, or an RNN with "
                    "attention) on the embedded synthetic corpus, Multi30k "
                    "or your own files. The tf.distribute strategy comes "
                    "from the environment (TF_CONFIG, GPUs); without "
                    "TF_CONFIG, a pod of an Indexed Job that sets "
                    "KERAS_ATTENTION_WORKERS gets the TF_CONFIG that "
                    "`tf-config` prints. Running again with the same "
                    "--output-dir resumes a killed run.",
    )
    add_config_options(parser, TrainingConfig)


def _add_tf_config(commands):
    commands.add_parser(
        "tf-config", help="print the TF_CONFIG of a worker of an Indexed Job",
        description="Print, as one line of JSON, the TF_CONFIG of worker "
                    "$JOB_COMPLETION_INDEX of $KERAS_ATTENTION_WORKERS in "
                    "a Kubernetes Indexed Job whose pods "
                    "$KERAS_ATTENTION_JOB_NAME-<index> answer under the "
                    "headless Service $KERAS_ATTENTION_SERVICE, on port "
                    "$KERAS_ATTENTION_PORT (default 2222); see "
                    "deploy/training/. `train` sets the same TF_CONFIG "
                    "itself when TF_CONFIG is unset and "
                    "KERAS_ATTENTION_WORKERS is set.",
    )


def _add_model_dir(parser):
    parser.add_argument("--model-dir", default="runs/translator",
                        help="a trained translator's folder (the train "
                             "command's --output-dir; default: "
                             "runs/translator)")


def _add_decoding(parser):
    parser.add_argument("--beam-size", type=_positive_int, default=1,
                        help="1 decodes greedily; more uses beam search "
                             "(default: 1)")
    parser.add_argument("--alpha", type=_non_negative_float, default=0.6,
                        help="beam search length penalty exponent "
                             "(default: 0.6)")


def _add_batch_size(parser):
    parser.add_argument("--batch-size", type=_positive_int, default=64,
                        help="sentences translated together (default: 64)")


def _add_evaluate(commands):
    parser = commands.add_parser(
        "evaluate", help="sacreBLEU of a trained translator on a test set",
        description="Translate a test set, a corpus split (--corpus, "
                    "--split) or your own files (--files), and print "
                    "sacreBLEU with its signature; progress on stderr.",
    )
    _add_model_dir(parser)
    _add_decoding(parser)
    _add_batch_size(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--corpus", choices=tuple(SPLITS), default=None,
                        help="a named corpus (default: synthetic)")
    source.add_argument("--files", nargs="+", metavar="PATH",
                        help="your own test set: one tab-separated file "
                             "(source<TAB>target a line), or a source file "
                             "and a target file (a sentence a line); UTF-8, "
                             "plain or gzip")
    parser.add_argument("--split", default=None,
                        help="the corpus split: train, val or test for "
                             "synthetic; train, val, test (= "
                             "test_2016_flickr), test_2016_flickr, "
                             "test_2017_flickr, test_2017_mscoco or "
                             "test_2018_flickr for multi30k (default: test)")
    parser.add_argument("--data-dir", default=None,
                        help=f"the Multi30k folder (default: "
                             f"${MULTI30K_VARIABLE})")
    parser.add_argument("--source-language", default=None,
                        help="the source language of a corpus: en, de, fr "
                             "or cs for multi30k (default: en)")
    parser.add_argument("--target-language", default=None,
                        help="the target language of a corpus (default: de)")
    parser.add_argument("--limit", type=_positive_int, default=None,
                        help="evaluate on the first N pairs only")
    parser.add_argument("--output", metavar="FILE", default=None,
                        help="also write the translations to FILE, one a "
                             "line")
    parser.add_argument("--by-length", nargs="?", type=_length_edges,
                        const=DEFAULT_EDGES, default=None, metavar="EDGES",
                        help="also print sacreBLEU by source length (in "
                             "words), a row per bucket with its sentence "
                             "count; EDGES end the buckets (default: "
                             f"{_shown_edges(DEFAULT_EDGES)}, i.e. 1-10, "
                             "11-15, 16-20, 21-25 and 26+ words)")


def _add_remote(parser):
    """--url, --model-name, --timeout: a served translator instead of
    --model-dir."""
    parser.add_argument("--url", default=None,
                        help="ask a TF Serving server (ours or the real "
                             "one) at this URL, REST (http://localhost:8501)"
                             " or gRPC (grpc://localhost:8500), instead of "
                             "loading --model-dir")
    parser.add_argument("--model-name", default="translator",
                        help="the served model's name, with --url "
                             "(default: translator)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for the server, with --url "
                             "(default: 30)")


def _add_translate(commands):
    parser = commands.add_parser(
        "translate", help="translate text",
        description="Translate the sentences given as arguments, or those "
                    "of --input or stdin (a sentence a line), a batch at a "
                    "time: each batch's translations go to stdout as soon "
                    "as they are ready, in input order; progress goes to "
                    "stderr.",
    )
    _add_model_dir(parser)
    _add_decoding(parser)
    _add_batch_size(parser)
    parser.add_argument("--input", metavar="FILE", default=None,
                        help="read the sentences from FILE, one a line, "
                             "UTF-8 (default: stdin)")
    _add_remote(parser)
    parser.add_argument("text", nargs="*",
                        help="sentences to translate (default: --input or "
                             "stdin)")


# The file types `attention-map` writes, by suffix.
ATTENTION_MAP_SUFFIXES = (".png", ".svg", ".pdf", ".html")


def _add_attention_map(commands):
    parser = commands.add_parser(
        "attention-map", help="draw a translation's attention",
        description="Translate one sentence and draw where each output "
                    "piece looked in the source: a heatmap per head of a "
                    "decoder layer and their average (.png, .svg, .pdf), "
                    "or one self-contained interactive page with every "
                    "layer and head (.html). --kind encoder or decoder "
                    "draws a self-attention instead (source by source, or "
                    "target by target). With --url, the served "
                    "model's translate_with_attention signature gives the "
                    "last layer's cross-attention, heads averaged.",
    )
    _add_model_dir(parser)
    _add_decoding(parser)
    _add_remote(parser)
    parser.add_argument("--kind", choices=("cross", "encoder", "decoder"),
                        default="cross",
                        help="which attention: the decoder's over the "
                             "source (cross, the default), the encoder's "
                             "self-attention (encoder) or the decoder's "
                             "(decoder); the self-attentions need a "
                             "Transformer and a --model-dir")
    parser.add_argument("--layer", type=int, default=-1,
                        help="the layer a picture shows (of the decoder, "
                             "or of the encoder with --kind encoder), "
                             "counted from 0, negative from the end "
                             "(default: -1, the last)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="where to write: map.png, map.svg, map.pdf or "
                             "map.html")
    parser.add_argument("text", help="the sentence to translate")


def _add_export(commands):
    parser = commands.add_parser(
        "export", help="write a SavedModel for TensorFlow Serving",
        description="Write BASE/NAME/VERSION/ with the signatures "
                    "serving_default (text -> translation) and "
                    "translate_with_attention.",
    )
    _add_model_dir(parser)
    _add_decoding(parser)
    parser.add_argument("--base-path", default="models",
                        help="TF Serving's model base path parent "
                             "(default: models)")
    parser.add_argument("--name", default="translator",
                        help="the model name (default: translator)")
    parser.add_argument("--version", type=_positive_int, default=None,
                        help="version number (default: next free)")
    parser.add_argument("--dtype", choices=("float32", "mixed_bfloat16",
                                            "bfloat16"), default=None,
                        help="the Keras dtype policy to export in "
                             "(default: the one it was trained in)")
    parser.add_argument("--quantize", choices=("int8", "int4"),
                        default=None,
                        help="quantize the model with Keras's "
                             "Model.quantize before exporting, weight-only: "
                             "int8 (about a quarter of the float32 size) or "
                             "int4 (the embeddings int8) (default: no "
                             "quantization)")
    parser.add_argument("--quantize-activations", action="store_true",
                        help="with --quantize int8: quantize each "
                             "product's inputs too (int8 x int8 products; "
                             "the same size, slower on CPUs)")


def _add_serve(commands):
    from keras_attention.serving.main import add_arguments

    parser = commands.add_parser(
        "serve", help="serve SavedModels over TF Serving's REST and gRPC APIs",
        description="A TF Serving-compatible server (REST and gRPC); the "
                    "flags mirror "
                    "tensorflow_model_server's. Needs the serving extra: "
                    "pip install 'keras-attention[serving]'.",
    )
    add_arguments(parser)


def _add_score_chorales(commands):
    parser = commands.add_parser(
        "score-chorales", help="note-wise NLL of a chorale model on a split",
        description="Score a saved chorale language model (a .keras file "
                    "written by reproductions/systems/music_transformer_jsb.py, or "
                    "any TransformerLanguageModel over the chorale "
                    "vocabulary) on a chorale file in Coconet's JSON "
                    "layout: the mean negative log-likelihood in nats per "
                    "token, every token predicted from up to --window "
                    "tokens before it, the number the benchmark reports.",
    )
    parser.add_argument("model", help="the saved model (.keras)")
    parser.add_argument("data", help="a .json or .json.gz file: an object "
                                     "of splits (train, valid, test) or a "
                                     "list of chorales")
    parser.add_argument("--split", default=None,
                        help="the split to score (default: valid; give "
                             "none for a file holding a list)")
    parser.add_argument("--window", type=_positive_int, default=None,
                        help="tokens of context the model was trained on "
                             "(default: the `window` of the settings "
                             "file beside the model, MODEL minus .keras "
                             "plus .json)")
    parser.add_argument("--batch-size", type=_positive_int, default=32,
                        help="windows scored together (default: 32)")


def build_parser():
    """The `keras-attention` argument parser; imports no TensorFlow."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train, evaluate, use, export and serve translators "
                    "built from keras_attention layers.",
    )
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {__version__}")
    parser.add_argument("--verbose", dest="tensorflow_logs",
                        action="store_true",
                        help="show TensorFlow's own log lines, hidden by "
                             "default (give it before the command)")
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="COMMAND")
    for add in (_add_train, _add_evaluate, _add_translate,
                _add_attention_map, _add_export, _add_serve, _add_tf_config,
                _add_score_chorales):
        add(commands)
    return parser
