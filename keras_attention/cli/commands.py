"""What each `keras-attention` command does once its options are parsed:
thin wrappers over `keras_attention.translator` and
`keras_attention.serving`, imported when the command runs.

What can be checked before TensorFlow loads (folders, files, option
combinations) is checked first, so that a mistake is reported in
seconds; see `keras_attention.cli.errors` for which exceptions are the
user's mistakes.
"""

import contextlib
import json
import os
import sys

from keras_attention._batches import batches
from keras_attention.cli.errors import PATH_ERRORS
from keras_attention.cli.errors import PROG
from keras_attention.cli.errors import UserError
from keras_attention.cli.errors import errors_about
from keras_attention.cli.errors import user_errors
from keras_attention.cli.parser import ATTENTION_MAP_SUFFIXES
from keras_attention.cli.parser import MULTI30K_VARIABLE
from keras_attention.cli.parser import SPLITS
from keras_attention.cli.parser import config_from_arguments
from keras_attention.cli.progress import Progress

# `train` options naming files or folders to read.
TRAINING_INPUTS = ("data_dir", "train_files", "val_files")


def _check_model_dir(path):
    """A missing folder is reported before TensorFlow loads (seconds)."""
    if not os.path.isdir(path):
        state = "is not a folder" if os.path.exists(path) else "does not exist"
        raise UserError(f"--model-dir {path} {state} (train a translator "
                        f"with `{PROG} train --output-dir {path}`)")


def _load_translator(args):
    from keras_attention.translator import Translator

    with user_errors():
        # --dtype: export's alone.
        policy = ({"dtype": args.dtype} if getattr(args, "dtype", None)
                  else {})
        return Translator.load(args.model_dir, beam_size=args.beam_size,
                               alpha=args.alpha, **policy)


def _multi30k_directory(data_dir):
    """--data-dir, else $MULTI30K_DIR, checked before TensorFlow loads."""
    directory = data_dir or os.environ.get(MULTI30K_VARIABLE)
    if not directory:
        raise UserError(f"--corpus multi30k needs --data-dir or "
                        f"${MULTI30K_VARIABLE}, received neither")
    if not os.path.isdir(directory):
        where = "--data-dir" if data_dir else f"${MULTI30K_VARIABLE}"
        raise UserError(f"{where} {directory} is not a folder")
    return directory


def _training_inputs(config):
    """The files and folders the config reads, each checked to exist."""
    paths = []
    for name in TRAINING_INPUTS:
        value = getattr(config, name, None)
        if value is None:
            continue
        for path in ([value] if isinstance(value, (str, os.PathLike))
                     else value):
            if not os.path.exists(path):
                flag = "--" + name.replace("_", "-")
                raise UserError(f"{flag}: {os.fsdecode(path)} does not exist")
            paths.append(path)
    if getattr(config, "corpus", None) == "multi30k":
        paths.append(_multi30k_directory(getattr(config, "data_dir", None)))
    return paths


def _set_indexed_job_tf_config():
    """In a pod of deploy/training/indexed-job.yaml (TF_CONFIG unset,
    KERAS_ATTENTION_WORKERS set): set TF_CONFIG from the Job's variables,
    before TensorFlow loads."""
    from keras_attention.training.cluster import indexed_job_tf_config

    with user_errors(ValueError):
        raw = indexed_job_tf_config()
    if raw is not None:
        os.environ["TF_CONFIG"] = raw
        print(f"TF_CONFIG from the Indexed Job's environment: {raw}")


def _train(args):
    from keras_attention.training.config import TrainingConfig

    with user_errors(ValueError, *PATH_ERRORS):
        config = config_from_arguments(TrainingConfig, args)
    inputs = _training_inputs(config)
    _set_indexed_job_tf_config()
    from keras_attention import translator
    from keras_attention.text import CorpusError

    with errors_about([*inputs, config.output_dir], also=(CorpusError,)):
        translator.train(config)
    print(f"saved to {config.output_dir}")
    return 0


def _check_evaluation_options(args):
    """What can be checked before anything loads."""
    if args.output and not os.path.isdir(os.path.dirname(args.output) or "."):
        raise UserError(f"--output {args.output}: its folder does not exist")
    if args.files:
        extra = [flag for flag, value in (
            ("--split", args.split), ("--data-dir", args.data_dir),
            ("--source-language", args.source_language),
            ("--target-language", args.target_language)) if value is not None]
        if extra:
            raise UserError(f"{', '.join(extra)}: only with --corpus, not with "
                            "--files")
        if len(args.files) > 2:
            raise UserError(
                "--files takes one tab-separated file, or a source file and "
                f"a target file, received {len(args.files)} paths: "
                f"{' '.join(args.files)}")
        return
    corpus, split = args.corpus or "synthetic", args.split or "test"
    if split not in SPLITS[corpus]:
        raise UserError(f"--split must be one of {', '.join(SPLITS[corpus])} "
                        f"for --corpus {corpus}, received: --split={split}")
    if corpus == "multi30k":
        _multi30k_directory(args.data_dir)


def _evaluation_pairs(args):
    """The (source, reference) pairs the options name."""
    from keras_attention.text import load_corpus
    from keras_attention.text import load_multi30k
    from keras_attention.text import load_parallel

    with user_errors(ValueError, *PATH_ERRORS):
        if args.files:
            return load_parallel(args.files)
        corpus, split = args.corpus or "synthetic", args.split or "test"
        languages = {"source_language": args.source_language or "en",
                     "target_language": args.target_language or "de"}
        if corpus == "multi30k":
            return load_multi30k(split, args.data_dir, **languages)
        return load_corpus(corpus, args.data_dir, **languages)[split]


def _length_table(rows):
    """The rows of `bleu_by_length` as aligned lines: source words (left),
    sentences and BLEU (right; `-` for an empty bucket).

    >>> for line in _length_table([
    ...         {"words": "1-10", "sentences": 12, "bleu": 31.416},
    ...         {"words": "26+", "sentences": 0, "bleu": None}]):
    ...     print(line)
    source words  sentences   BLEU
    1-10                 12  31.42
    26+                   0      -
    """
    header = ("source words", "sentences", "BLEU")
    cells = [(row["words"], str(row["sentences"]),
              "-" if row["bleu"] is None else f"{row['bleu']:.2f}")
             for row in rows]
    widths = [max(len(line[column]) for line in (header, *cells))
              for column in range(len(header))]
    return [f"{words:<{widths[0]}}  {sentences:>{widths[1]}}  "
            f"{bleu:>{widths[2]}}"
            for words, sentences, bleu in (header, *cells)]


def _evaluate(args):
    _check_evaluation_options(args)
    _check_model_dir(args.model_dir)
    pairs = _evaluation_pairs(args)[: args.limit]
    translator = _load_translator(args)
    progress = Progress("evaluate", total=len(pairs))
    result = translator.evaluate(pairs, batch_size=args.batch_size,
                                 on_batch=progress.update,
                                 by_length=args.by_length)
    progress.close()
    print(f"BLEU = {result['bleu']:.2f} on {result['sentences']} "
          f"sentences ({result['signature']}); "
          f"{result['sentences_per_second']:.1f} sentences/s")
    if args.by_length is not None:
        print("\n".join(_length_table(result["by_length"])))
    if args.output:
        with user_errors(), open(args.output, "w", encoding="utf-8") as file:
            file.writelines(line + "\n" for line in result["hypotheses"])
    return 0


def _read_sentences(file, name):
    """The lines of `file` without their line endings, read as they come
    (a long pipe streams); bytes are decoded line by line, so that a line
    that is not UTF-8 is reported by its number."""
    for number, line in enumerate(file, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise UserError(
                    f"{name}: line {number} is not valid UTF-8 (byte "
                    f"{error.start + 1} of the line); save it as UTF-8"
                ) from None
        yield line.rstrip("\r\n")


def _remote_translator(args):
    """texts -> lists of translations, a batch at a time, from --url."""
    from keras_attention.serving import Client
    from keras_attention.serving import ServingClientError

    with user_errors(ValueError):
        client = Client(args.url, args.model_name, timeout=args.timeout)

    def translate(texts):
        for batch in batches(texts, args.batch_size):
            with user_errors(ServingClientError):
                translations = client.translate(batch)
            yield translations

    return translate


def _translate(args):
    if args.text and args.input is not None:
        raise UserError("give the sentences as arguments or --input FILE, "
                        "not both")
    with contextlib.ExitStack() as stack:
        progress = None
        texts = args.text
        if not texts:
            if args.input is None:
                file, name = getattr(sys.stdin, "buffer", sys.stdin), "stdin"
            else:
                with user_errors():
                    file = stack.enter_context(open(args.input, "rb"))
                name = args.input
            texts = _read_sentences(file, name)
            progress = Progress("translate")
        if args.url:
            translate = _remote_translator(args)
        else:
            _check_model_dir(args.model_dir)
            translator = _load_translator(args)

            def translate(texts):
                return translator.translate_iter(texts,
                                                 batch_size=args.batch_size)
        done = 0
        for translations in translate(texts):
            if progress is not None:
                progress.clear()
            sys.stdout.write("".join(text + "\n" for text in translations))
            sys.stdout.flush()
            done += len(translations)
            if progress is not None:
                progress.update(done)
        if progress is not None:
            progress.close()
    return 0


def _served_attention(args):
    """`translate_with_attention` of one sentence from --url, as the batch
    dict `keras_attention.visualize` draws."""
    from keras_attention.serving import Client
    from keras_attention.serving import ServingClientError

    with user_errors(ValueError):
        client = Client(args.url, args.model_name, timeout=args.timeout)
    with user_errors(ServingClientError):
        (row,) = client.predict(instances=[args.text],
                                signature_name="translate_with_attention")
    return {key: [row[key]] for key in
            ("translation", "pieces", "source_pieces", "attention")}


def _attention_map(args):
    suffix = os.path.splitext(args.output)[1].lower()
    if suffix not in ATTENTION_MAP_SUFFIXES:
        raise UserError(f"--output {args.output} must end with one of "
                        f"{', '.join(ATTENTION_MAP_SUFFIXES)}")
    directory = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(directory):
        raise UserError(f"--output {args.output}: the folder {directory} "
                        "does not exist")
    if args.url:
        if args.kind != "cross":
            raise UserError(f"--kind {args.kind} needs --model-dir: a served "
                            "model gives only the cross-attention")
        result = _served_attention(args)
    else:
        _check_model_dir(args.model_dir)
        translator = _load_translator(args)
        with user_errors(ValueError):  # e.g. a model without attention
            result = translator.attention(args.text, kind=args.kind)
    from keras_attention import visualize

    with user_errors(ValueError):
        if suffix == ".html":
            visualize.translation_viewer(result).save(args.output)
        else:
            visualize.plot_translation(result, layer=args.layer,
                                       path=args.output)
    translation = result["translation"]
    print(translation if isinstance(translation, str) else translation[0])
    print(f"attention map written to {args.output}", file=sys.stderr)
    return 0


def _export(args):
    if args.quantize_activations and args.quantize != "int8":
        raise UserError("--quantize-activations needs --quantize int8, "
                        f"received: --quantize {args.quantize}")
    _check_model_dir(args.model_dir)
    translator = _load_translator(args)
    if args.quantize:
        translator.quantize(args.quantize,
                            activations=args.quantize_activations)
    with errors_about([args.base_path], also=(FileExistsError,)):
        path = translator.export(args.base_path, args.name, args.version)
    print(f"exported to {path}")
    return 0


def _serve(args):
    from keras_attention.serving.main import serve

    return serve(args)


def _tf_config(args):
    from keras_attention.training.cluster import tf_config_from_environment

    with user_errors(ValueError):
        config = tf_config_from_environment()
    print(json.dumps(config))
    return 0


def _chorale_window(args):
    """--window, else the `window` of the settings beside the model."""
    if args.window is not None:
        return args.window
    settings = os.path.splitext(args.model)[0] + ".json"
    if not os.path.isfile(settings):
        raise UserError(f"no --window given and no settings file {settings} "
                        "beside the model: give --window (the tokens of "
                        "context the model was trained on)")
    with errors_about([settings], also=(ValueError,)):
        with open(settings, encoding="utf-8") as handle:
            try:
                found = json.load(handle)
            except ValueError as error:
                raise ValueError(f"{settings} is not JSON: {error}") from None
        window = found.get("window") if isinstance(found, dict) else None
        if isinstance(window, bool) or not isinstance(window, int) or (
                window < 8 or window % 8):
            raise ValueError(f"{settings}: `window` must be a positive "
                             f"multiple of 8, received: {window!r}")
    return window


def _score_chorales(args):
    from keras_attention.data import chorales

    for name, path in (("model", args.model), ("data", args.data)):
        if not os.path.isfile(path):
            raise UserError(f"{name} {path} is not a file")
    window = _chorale_window(args)
    with user_errors(ValueError, FileNotFoundError):
        split = chorales.load_split(args.data, args.split)
        if window % 8:
            raise ValueError(f"--window must be a multiple of 8, received: "
                             f"{window}")
    import keras

    import keras_attention.models  # noqa: F401  (registers the classes)

    with user_errors(ValueError, OSError):
        model = keras.saving.load_model(args.model)
    with user_errors(ValueError):
        if getattr(model, "vocabulary_size", None) != (
                chorales.VOCABULARY_SIZE):
            raise ValueError(
                f"model {args.model} must be a language model over the "
                f"chorale vocabulary of {chorales.VOCABULARY_SIZE} tokens, "
                "received one of "
                f"{getattr(model, 'vocabulary_size', None)!r}")
    nll = chorales.negative_log_likelihood(model, split, window,
                                           args.batch_size)
    tokens = sum(4 * len(chorale) for chorale in split)
    print(f"{nll:.4f} nats per token over {tokens} tokens of {len(split)} "
          f"chorales (window {window})")
    return 0


COMMANDS = {"train": _train, "evaluate": _evaluate, "translate": _translate,
            "attention-map": _attention_map, "export": _export,
            "serve": _serve, "tf-config": _tf_config,
            "score-chorales": _score_chorales}
