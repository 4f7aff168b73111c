"""`TrainingConfig`: everything a sequence-to-sequence training run needs.

Each field carries its command-line help in `metadata` (and `choices`,
`type`, `nargs` where argparse needs them): the `keras-attention train`
options are generated from these fields. This module imports neither
TensorFlow nor Keras, so the command line answers `--help` at once.
"""

import dataclasses

from keras_attention import _validation

# Keras dtype policies a run may train under. mixed_bfloat16 is the fast one
# on CPUs with AVX512-BF16 (2.3x the float32 steps per second in a
# synthetic-batch test on this project's 2-core machine) and on TPUs;
# mixed_float16 on GPUs.
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
JIT_COMPILE = ("auto", "on", "off")
MODELS = ("transformer", "rnn")
CORPORA = ("synthetic", "multi30k", "files")
# Each model's presets (the model classes own their sizes; the names are
# repeated here so options are checked before TensorFlow loads, and a test
# keeps both lists equal).
PRESET_NAMES = {"transformer": ("tiny", "small", "base"),
                "rnn": ("tiny", "small", "base")}
RNN_CELLS = ("gru", "lstm")
# The RNN presets whose decoder is as wide as the annotations (2 x encoder
# units), as dot scores need (a test checks this against the presets).
RNN_DOT_PRESETS = ("tiny", "small")
RNN_ATTENTIONS = ("additive", "dot", "general", "scaled_dot")


def option(default, help, **metadata):
    """A dataclass field with its command-line help."""
    return dataclasses.field(default=default,
                             metadata={"help": help, **metadata})


def _verbose(text):
    """Keras `fit` verbosity from the command line: "auto" or 0, 1, 2."""
    return text if text == "auto" else int(text)


@dataclasses.dataclass
class TrainingConfig:
    """Everything a training run needs; the CLI's `train` options.

    Example:

    >>> from keras_attention.training.config import TrainingConfig
    >>> TrainingConfig(model="rnn", preset="tiny").model
    'rnn'
    >>> TrainingConfig(model="lstm")
    Traceback (most recent call last):
    ...
    ValueError: `model` must be one of ['rnn', 'transformer'], received: model='lstm'
    """

    model: str = option(
        "transformer", "the translator: transformer (Vaswani et al., 2017) "
        "or rnn (an RNN encoder-decoder with attention, Bahdanau et al., "
        "2015)", choices=MODELS)
    corpus: str = option(
        "synthetic", "training corpus: synthetic (embedded, no download), "
        "multi30k (--data-dir) or files (your own: --train-files)",
        choices=CORPORA)
    train_files: tuple | None = option(
        None, "with --corpus files: one tab-separated file (source TAB "
        "target a line) or a source and a target file (a sentence a line); "
        "plain or gzipped", nargs="+")
    val_files: tuple | None = option(
        None, "with --corpus files: validation pairs in the same form "
        "(optional; without them no validation loss or BLEU is reported)",
        nargs="+")
    source_language: str = option(
        "en", "source language code (Multi30k: en, de, fr, cs)")
    target_language: str = option(
        "de", "target language code (Multi30k: en, de, fr, cs)")
    data_dir: str | None = option(
        None, "folder with the Multi30k gzip files (default: $MULTI30K_DIR)")
    output_dir: str = option(
        "runs/translator", "where the run writes its tokenizer, backups, "
        "checkpoints, TensorBoard logs and the final model; running again "
        "with the same folder resumes a killed run")
    preset: str = option(
        "tiny", "model size: tiny (demo), small (Multi30k on CPU), base "
        "(the paper's)", choices=("tiny", "small", "base"))
    max_relative_position: int | None = option(
        None, "transformer: relative-position self-attention (Shaw et al., "
        "2018) over distances clipped to this, instead of sinusoids",
        type=int)
    relative_values: bool = option(
        False, "transformer, with --max-relative-position: also add "
        "relative embeddings to the values")
    cell: str | None = option(
        None, "rnn: the recurrent cell (default: gru)", choices=RNN_CELLS)
    attention: str | None = option(
        None, "rnn: the score function: additive (Bahdanau; the default), "
        "dot, general or scaled_dot (Luong; dot and scaled_dot need the "
        "decoder as wide as the annotations: presets tiny and small)",
        choices=RNN_ATTENTIONS)
    vocabulary_size: int = option(
        1000, "joint source/target SentencePiece vocabulary size (an upper "
        "bound)")
    epochs: int = option(8, "passes over the training data")
    batch_size: int = option(64, "sentences per batch on each replica")
    tokens_per_batch: int | None = option(
        None, "batch by token count per replica instead of --batch-size",
        type=int)
    max_length: int = option(
        64, "longest sequence in tokens; longer pairs are dropped or "
        "truncated (see --overlong) and counted")
    overlong: str = option(
        "drop", "what to do with over-long pairs", choices=("drop", "truncate"))
    warmup_steps: int = option(
        1000, "linear learning-rate warm-up steps of the inverse-square-root "
        "schedule")
    learning_rate_scale: float = option(
        1.0, "factor on the learning-rate schedule")
    label_smoothing: float = option(
        0.1, "label smoothing of the cross-entropy (0.1 in the paper)")
    clipnorm: float | None = option(
        1.0, "clip the gradient to this global norm (0 disables)", type=float)
    precision: str = option(
        "float32", "Keras dtype policy: float32, mixed_bfloat16 (for CPUs "
        "with AVX512-BF16, where it is much faster, and TPUs) or "
        "mixed_float16 (GPUs)", choices=PRECISIONS)
    jit_compile: str = option(
        "auto", "XLA for the training step: auto (off on CPUs, where it "
        "measured slower; on with one GPU; off with several replicas), on "
        "or off", choices=JIT_COMPILE)
    checkpoint_every: int = option(
        200, "steps between backups (for resuming)")
    bleu_sentences: int = option(
        200, "validation sentences translated for the BLEU printed after "
        "each epoch (0 disables)")
    train_size: int | None = option(
        None, "use only the first N training pairs", type=int)
    seed: int = option(0, "random seed (shuffling, initialisation)")
    verbose: str | int = option(
        "auto", "Keras progress output: auto, 0, 1 (bars) or 2 (a line per "
        "epoch)", choices=("auto", 0, 1, 2), type=_verbose)

    def __post_init__(self):
        _validation.choice("model", self.model, MODELS)
        _validation.choice("corpus", self.corpus, CORPORA)
        _validation.choice("preset", self.preset, PRESET_NAMES[self.model])
        _validation.choice("precision", self.precision, PRECISIONS)
        _validation.choice("jit_compile", self.jit_compile, JIT_COMPILE)
        if self.cell is not None:
            _validation.choice("cell", self.cell, RNN_CELLS)
        if self.attention is not None:
            _validation.choice("attention", self.attention, RNN_ATTENTIONS)
        if self.model != "rnn" and (self.cell or self.attention):
            raise ValueError(
                "`cell` and `attention` are rnn options, received: "
                f"model={self.model!r}, cell={self.cell!r}, "
                f"attention={self.attention!r}"
            )
        if (self.attention in ("dot", "scaled_dot")
                and self.preset not in RNN_DOT_PRESETS):
            raise ValueError(
                f"The {self.attention!r} score needs the decoder as wide as "
                f"the annotations, which presets {list(RNN_DOT_PRESETS)} "
                f"have, received: preset={self.preset!r}"
            )
        _validation.choice("overlong", self.overlong, ("drop", "truncate"))
        for name in ("train_files", "val_files"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, str) or len(value) not in (1, 2):
                    raise ValueError(
                        f"`{name}` takes one tab-separated file or a source "
                        f"and a target file, received: {name}={value!r}"
                    )
                setattr(self, name, tuple(str(path) for path in value))
        if self.corpus == "files" and not self.train_files:
            raise ValueError(
                "`corpus='files'` needs `train_files` (the CLI's "
                "--train-files), received: train_files=None"
            )
        if self.corpus != "files" and (self.train_files or self.val_files):
            raise ValueError(
                "`train_files`/`val_files` are read with corpus='files', "
                f"received: corpus={self.corpus!r}"
            )
        if self.source_language == self.target_language:
            raise ValueError(
                "The source and target languages must differ, received: "
                f"source_language={self.source_language!r}, "
                f"target_language={self.target_language!r}"
            )
        _validation.optional_positive_int("max_relative_position",
                                          self.max_relative_position)
        if self.relative_values and self.max_relative_position is None:
            raise ValueError(
                "`relative_values=True` needs `max_relative_position`, "
                "received: max_relative_position=None"
            )
        if self.model != "transformer" and self.max_relative_position:
            raise ValueError(
                "`max_relative_position` is a transformer option, received: "
                f"model={self.model!r}"
            )
        _validation.positive_int("epochs", self.epochs)
        _validation.positive_int("batch_size", self.batch_size)
        _validation.optional_positive_int("tokens_per_batch",
                                          self.tokens_per_batch)
        _validation.positive_int("max_length", self.max_length)
        _validation.positive_int("vocabulary_size", self.vocabulary_size)
        _validation.positive_int("warmup_steps", self.warmup_steps)
        _validation.positive_float("learning_rate_scale",
                                   self.learning_rate_scale)
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(
                "`label_smoothing` must be in [0, 1), received: "
                f"label_smoothing={self.label_smoothing!r}"
            )
        if self.clipnorm == 0:  # the CLI's "0 disables"
            self.clipnorm = None
        if self.clipnorm is not None:
            _validation.positive_float("clipnorm", self.clipnorm)
        _validation.positive_int("checkpoint_every", self.checkpoint_every)
        _validation.non_negative_int("bleu_sentences", self.bleu_sentences)
        _validation.optional_positive_int("train_size", self.train_size)
        if self.verbose in ("0", "1", "2"):
            self.verbose = int(self.verbose)
        _validation.choice("verbose", self.verbose, ("auto", 0, 1, 2))

    def model_options(self):
        """The arguments of this run's model beyond its preset."""
        if self.model == "transformer":
            return {"max_relative_position": self.max_relative_position,
                    "relative_values": self.relative_values}
        options = {"cell": self.cell, "attention": self.attention}
        return {name: value for name, value in options.items()
                if value is not None}
