"""`TrainingConfig`: everything a sequence-to-sequence training run needs.

Each field carries its command-line help in `metadata` (and `choices`,
`type`, `nargs` where argparse needs them): the `keras-attention train`
options are generated from these fields. This module imports neither
TensorFlow nor Keras, so the command line answers `--help` at once.
"""

import dataclasses

from keras_attention import _validation
from keras_attention.training.precision import PRECISION_SETTINGS
from keras_attention.training.precision import PRECISIONS  # noqa: F401

# The Keras dtype policies a run may train under are PRECISIONS; "auto"
# picks mixed_bfloat16 where the hardware computes bfloat16 (CPUs with
# AVX512-BF16 or AMX; Ampere GPUs) and float32 elsewhere
# (`precision.choose_precision`).

JIT_COMPILE = ("auto", "on", "off")
MODELS = ("transformer", "rnn", "decoder_only")
CORPORA = ("synthetic", "multi30k", "files")
# Each model's presets (the model classes own their sizes; the names are
# repeated here so options are checked before TensorFlow loads, and a test
# keeps both lists equal).
PRESET_NAMES = {"transformer": ("tiny", "small", "base"),
                "rnn": ("tiny", "small", "base"),
                "decoder_only": ("tiny", "small", "base")}
RNN_CELLS = ("gru", "lstm")
# The RNN presets whose decoder is as wide as the annotations (2 x encoder
# units), as dot scores need (a test checks this against the presets).
RNN_DOT_PRESETS = ("tiny", "small")
RNN_ATTENTIONS = ("additive", "dot", "general", "scaled_dot", "none")
RNN_QUERIES = ("previous", "current")
# What a run uses for each option below that it leaves unset (None): the
# generic settings, and a corpus's own recipe over them. Multi30k's recipe
# is the one its benchmark measured best on `val` (README, "Multi30k
# benchmark"): the `small` model, a joint vocabulary of 8,000, batches of
# 4,096 tokens, 25 epochs (about an hour on 2 cores under mixed_bfloat16)
# and the average of the last 5 epoch checkpoints as the final weights.
GENERIC_RECIPE = dict(preset="tiny", vocabulary_size=1000, epochs=8,
                      batch_size=64, tokens_per_batch=None,
                      learning_rate_scale=1.0, average_last=1)
CORPUS_RECIPES = {
    "multi30k": dict(preset="small", vocabulary_size=8000, epochs=25,
                     tokens_per_batch=4096, learning_rate_scale=1.0,
                     average_last=5),
}


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
    ValueError: `model` must be one of ['decoder_only', 'rnn',
    'transformer'], received: model='lstm'
    """

    model: str = option(
        "transformer", "the translator: transformer (Vaswani et al., 2017), "
        "rnn (an RNN encoder-decoder with attention, Bahdanau et al., "
        "2015) or decoder_only (source, separator and target as one "
        "sequence, Liu et al., 2018)", choices=MODELS)
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
    preset: str | None = option(
        None, "model size: tiny (demo), small (Multi30k on CPU), base "
        "(the paper's) (default: small with --corpus multi30k, tiny "
        "otherwise)", choices=("tiny", "small", "base"))
    dropout: float | None = option(
        None, "the model's dropout rate (default: the preset's)",
        type=float)
    max_relative_position: int | None = option(
        None, "transformer: relative-position self-attention (Shaw et al., "
        "2018) over distances clipped to this, instead of sinusoids",
        type=int)
    relative_values: bool = option(
        False, "transformer, with --max-relative-position: also add "
        "relative embeddings to the values")
    rope_max_wavelength: float | None = option(
        None, "transformer: rotary position embeddings (RoPE) in the "
        "self-attention instead of sinusoids, with this base (10000 in the "
        "paper)", type=float)
    num_key_value_heads: int | None = option(
        None, "transformer: grouped-query self-attention with this many "
        "key/value heads (dividing the preset's heads)", type=int)
    cell: str | None = option(
        None, "rnn: the recurrent cell (default: gru)", choices=RNN_CELLS)
    attention: str | None = option(
        None, "rnn: the score function: additive (Bahdanau; the default), "
        "dot, general or scaled_dot (Luong; dot and scaled_dot need the "
        "decoder as wide as the annotations: presets tiny and small), or "
        "none (the encoder-decoder without attention, Cho et al. 2014: the "
        "decoder sees only the encoder's final states)",
        choices=RNN_ATTENTIONS)
    query: str | None = option(
        None, "rnn: the attention's query: previous (the state before the "
        "step, Bahdanau; the default) or current (the state the step "
        "computes, with Luong et al.'s attentional state and input "
        "feeding)", choices=RNN_QUERIES)
    vocabulary_size: int | None = option(
        None, "joint source/target SentencePiece vocabulary size (an upper "
        "bound; default: 8000 with --corpus multi30k, 1000 otherwise)",
        type=int)
    epochs: int | None = option(
        None, "passes over the training data (default: 25 with --corpus "
        "multi30k, 8 otherwise)", type=int)
    batch_size: int | None = option(
        None, "sentences per batch on each replica (default: 64, unless "
        "batching by --tokens-per-batch)", type=int)
    tokens_per_batch: int | None = option(
        None, "batch by token count per replica instead of --batch-size "
        "(default: 4096 with --corpus multi30k unless --batch-size is "
        "given)", type=int)
    max_length: int = option(
        64, "longest sequence in tokens; longer pairs are dropped or "
        "truncated (see --overlong) and counted")
    overlong: str = option(
        "drop", "what to do with over-long pairs", choices=("drop", "truncate"))
    warmup_steps: int = option(
        1000, "linear learning-rate warm-up steps of the inverse-square-root "
        "schedule")
    learning_rate_scale: float | None = option(
        None, "factor on the learning-rate schedule (default: 1.0)",
        type=float)
    label_smoothing: float = option(
        0.1, "label smoothing of the cross-entropy (0.1 in the paper)")
    clipnorm: float | None = option(
        1.0, "clip the gradient to this global norm (0 disables)", type=float)
    precision: str = option(
        "auto", "Keras dtype policy: auto (mixed_bfloat16 where the CPU has "
        "AVX512-BF16 or AMX or the GPU is an Ampere or newer, float32 "
        "elsewhere; the run prints its choice), float32, mixed_bfloat16 or "
        "mixed_float16 (older GPUs)", choices=PRECISION_SETTINGS)
    jit_compile: str = option(
        "auto", "XLA for the training step: auto (off on CPUs, where it "
        "measured slower; on with one GPU; off with several replicas), on "
        "or off", choices=JIT_COMPILE)
    average_last: int | None = option(
        None, "the final weights are the average of the last N epoch "
        "checkpoints (Vaswani et al. average 5; the last weights are kept "
        "in OUTPUT_DIR/last.weights.h5; default: 5 with --corpus multi30k, "
        "1 (no averaging) otherwise)", type=int)
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
        self._apply_recipe()
        _validation.choice("preset", self.preset, PRESET_NAMES[self.model])
        _validation.choice("precision", self.precision,
                           PRECISION_SETTINGS)
        _validation.choice("jit_compile", self.jit_compile, JIT_COMPILE)
        if self.cell is not None:
            _validation.choice("cell", self.cell, RNN_CELLS)
        if self.attention is not None:
            _validation.choice("attention", self.attention, RNN_ATTENTIONS)
        if self.query is not None:
            _validation.choice("query", self.query, RNN_QUERIES)
        if self.model != "rnn" and (self.cell or self.attention
                                    or self.query):
            raise ValueError(
                "`cell`, `attention` and `query` are rnn options, received: "
                f"model={self.model!r}, cell={self.cell!r}, "
                f"attention={self.attention!r}, query={self.query!r}"
            )
        if self.attention == "none" and self.query == "current":
            raise ValueError(
                "`query` chooses the attention's query, and there is no "
                "attention, received: attention='none', query='current'"
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
        for name in ("max_relative_position", "rope_max_wavelength",
                     "num_key_value_heads"):
            if self.model != "transformer" and getattr(self, name):
                raise ValueError(
                    f"`{name}` is a transformer option, received: "
                    f"model={self.model!r} and {name}={getattr(self, name)!r}"
                )
        if self.dropout is not None:
            self.dropout = _validation.rate("dropout", self.dropout)
        _validation.positive_int("epochs", self.epochs)
        _validation.positive_int("average_last", self.average_last)
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

    def _apply_recipe(self):
        """Fill the options left unset from the corpus's recipe, then the
        generic one. An explicit --batch-size keeps sentence batching."""
        recipe = {**GENERIC_RECIPE, **CORPUS_RECIPES.get(self.corpus, {})}
        if self.batch_size is not None and self.tokens_per_batch is None:
            recipe["tokens_per_batch"] = None
        self._from_recipe = set()
        for name, value in recipe.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
                self._from_recipe.add(name)

    def replace(self, **changes):
        """A copy with `changes`, where the options this config took from a
        recipe are taken again (from the new corpus's, if it changes).

        >>> from keras_attention.training.config import TrainingConfig
        >>> config = TrainingConfig().replace(corpus="multi30k")
        >>> config.preset, config.vocabulary_size
        ('small', 8000)
        """
        values = {field.name: getattr(self, field.name)
                  for field in dataclasses.fields(self) if field.init}
        values.update({name: None for name in self._from_recipe})
        values.update(changes)
        return TrainingConfig(**values)

    def model_options(self):
        """The arguments of this run's model beyond its preset."""
        dropout = {} if self.dropout is None else {"dropout": self.dropout}
        if self.model == "transformer":
            return {"max_relative_position": self.max_relative_position,
                    "relative_values": self.relative_values,
                    **{name: getattr(self, name) for name in (
                        "rope_max_wavelength", "num_key_value_heads")
                       if getattr(self, name) is not None},
                    **dropout}
        if self.model == "decoder_only":
            return dropout
        options = {"cell": self.cell, "attention": self.attention,
                   "query": self.query}
        options = {name: value for name, value in options.items()
                   if value is not None}
        if options.get("attention") == "none":
            options["attention"] = None
        return {**options, **dropout}
