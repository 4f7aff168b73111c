"""The translator's Python API: train, evaluate, translate, save, export.

    from keras_attention.translator import TrainingConfig, train
    translator = train(TrainingConfig(preset="tiny", epochs=8))
    translator.translate(["The man sees the dog."])
    translator.evaluate(pairs)          # sacreBLEU
    translator.export("models")         # models/translator/1/

The `keras-attention` command line is a thin layer over these functions.
"""

import dataclasses
import json
import pathlib
import time

import keras
import numpy as np
import tensorflow as tf

from keras_attention import _validation
from keras_attention.export import TranslatorModule
from keras_attention.export import export_translator
from keras_attention.models import TransformerTranslator
from keras_attention.text import SubwordTokenizer
from keras_attention.text import load_corpus
from keras_attention.text import make_dataset
from keras_attention.text import train_sentencepiece
from keras_attention.training import AllReduceClippingAdam
from keras_attention.training import BleuCallback
from keras_attention.training import MaskedAccuracy
from keras_attention.training import MaskedCrossentropy
from keras_attention.training import TransformerSchedule
from keras_attention.training import corpus_bleu
from keras_attention.training import describe
from keras_attention.training import strategy_from_environment

# Keras dtype policies a run may train under. mixed_bfloat16 is the fast one
# on CPUs with AVX512-BF16 (2.3x the float32 steps per second in a
# synthetic-batch test on this project's 2-core machine) and on TPUs;
# mixed_float16 on GPUs.
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


@dataclasses.dataclass
class TrainingConfig:
    """Everything a training run needs; the CLI's `train` options."""

    corpus: str = "synthetic"  # or "multi30k"
    data_dir: str | None = None  # Multi30k folder (else $MULTI30K_DIR)
    output_dir: str = "runs/translator"
    preset: str = "tiny"
    max_relative_position: int | None = None  # relative self-attention
    relative_values: bool = False
    vocabulary_size: int = 1000  # joint source/target SentencePiece
    epochs: int = 8
    batch_size: int = 64  # per replica
    tokens_per_batch: int | None = None  # per replica, instead of batch_size
    max_length: int = 64
    overlong: str = "drop"  # or "truncate"
    warmup_steps: int = 1000
    learning_rate_scale: float = 1.0
    label_smoothing: float = 0.1
    clipnorm: float | None = 1.0
    precision: str = "float32"  # or "mixed_bfloat16", "mixed_float16"
    checkpoint_every: int = 200  # steps between backups
    bleu_sentences: int = 200  # val sentences translated after each epoch
    train_size: int | None = None  # use only the first N training pairs
    seed: int = 0
    verbose: str | int = "auto"

    def __post_init__(self):
        _validation.choice("corpus", self.corpus, ("synthetic", "multi30k"))
        _validation.choice("precision", self.precision, PRECISIONS)
        _validation.optional_positive_int("max_relative_position",
                                          self.max_relative_position)
        if self.relative_values and self.max_relative_position is None:
            raise ValueError(
                "`relative_values=True` needs `max_relative_position`, "
                "received: max_relative_position=None"
            )
        _validation.positive_int("epochs", self.epochs)
        _validation.positive_int("batch_size", self.batch_size)
        _validation.positive_int("vocabulary_size", self.vocabulary_size)
        _validation.positive_int("checkpoint_every", self.checkpoint_every)


class Translator:
    """A trained model with its tokenizer and decoding settings.

    Args:
        model: a `TransformerTranslator`.
        tokenizer: the joint `SubwordTokenizer`.
        max_source_length: longer inputs are truncated.
        beam_size: 1 for greedy decoding, more for beam search.
        alpha: the beam search length penalty.
    """

    def __init__(self, model, tokenizer, max_source_length=128, beam_size=1,
                 alpha=0.6):
        self.model = model
        self.tokenizer = tokenizer
        self.max_source_length = max_source_length
        self.module = TranslatorModule(
            model, tokenizer, tokenizer, max_source_length=max_source_length,
            beam_size=beam_size, alpha=alpha,
        )

    def with_decoding(self, beam_size=1, alpha=0.6):
        """The same translator with other decoding settings."""
        return Translator(self.model, self.tokenizer, self.max_source_length,
                          beam_size, alpha)

    def translate(self, texts, batch_size=64):
        """Translate a list of strings (in the graph, as exported)."""
        outputs = []
        for start in range(0, len(texts), batch_size):
            batch = tf.constant(list(texts[start:start + batch_size]),
                                tf.string)
            result = self.module.translate(batch)["translation"].numpy()
            outputs.extend(t.decode("utf-8") for t in result)
        return outputs

    def evaluate(self, pairs, batch_size=64):
        """sacreBLEU of the translations of `pairs` against the references.

        Returns a dict: `bleu`, `signature`, `sentences`, and decoding
        `sentences_per_second`."""
        started = time.perf_counter()
        hypotheses = self.translate([p[0] for p in pairs], batch_size)
        seconds = time.perf_counter() - started
        bleu, signature = corpus_bleu(hypotheses, [p[1] for p in pairs])
        return {"bleu": bleu, "signature": signature, "sentences": len(pairs),
                "sentences_per_second": len(pairs) / seconds,
                "hypotheses": hypotheses}

    def export(self, base_path, name="translator", version=None):
        """Write `BASE/NAME/VERSION/` for TensorFlow Serving."""
        return export_translator(self.module, base_path, name, version)

    def save(self, directory):
        """Write `translator.json`, `model.weights.h5`, `tokenizer.model`."""
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {"model": self.model.get_config(),
                  "max_source_length": self.max_source_length}
        (directory / "translator.json").write_text(json.dumps(config, indent=2))
        self.model.save_weights(directory / "model.weights.h5")
        self.tokenizer.save(directory / "tokenizer.model")
        return directory

    @classmethod
    def load(cls, directory, beam_size=1, alpha=0.6):
        """Read a translator written by `save` (or by `train`)."""
        directory = pathlib.Path(directory)
        if not (directory / "translator.json").exists():
            raise FileNotFoundError(
                f"No translator in {directory}: translator.json is missing "
                "(train one with `keras-attention train`)"
            )
        config = json.loads((directory / "translator.json").read_text())
        model = TransformerTranslator.from_config(config["model"])
        build(model)
        model.load_weights(directory / "model.weights.h5")
        tokenizer = SubwordTokenizer.load(directory / "tokenizer.model")
        return cls(model, tokenizer, config["max_source_length"], beam_size,
                   alpha)


def build(model):
    """Create the model's weights with a one-token call."""
    ones = np.ones((1, 1), "int32")
    model({"encoder_tokens": ones, "decoder_tokens": ones})


def _tokenizer(config, train_pairs, output_dir):
    """Train the joint tokenizer, or reuse the one of a resumed run."""
    path = output_dir / "tokenizer.model"
    if path.exists():
        return SubwordTokenizer.load(path)
    sentences = [text for pair in train_pairs for text in pair]
    tokenizer = SubwordTokenizer(
        train_sentencepiece(sentences, config.vocabulary_size)
    )
    tokenizer.save(path)
    return tokenizer


def train(config=None, callbacks=(), **overrides):
    """Train a translator as `config` says; returns a `Translator`.

    The strategy comes from the environment (see
    `strategy_from_environment`). A run killed part-way resumes from its
    backup in `output_dir/backup` when started again with the same
    `output_dir` (weights, optimizer and epoch are restored). Extra Keras
    `callbacks` are added to the run's own.
    """
    config = dataclasses.replace(config or TrainingConfig(), **overrides)
    keras.utils.set_random_seed(config.seed)
    output_dir = pathlib.Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    strategy = strategy_from_environment()
    replicas = strategy.num_replicas_in_sync
    print(f"strategy: {describe(strategy)}")

    corpus = load_corpus(config.corpus, config.data_dir)
    train_pairs = corpus["train"][: config.train_size]
    tokenizer = _tokenizer(config, train_pairs, output_dir)
    print(f"corpus: {config.corpus}, {len(train_pairs)} training pairs; "
          f"joint SentencePiece vocabulary of {tokenizer.vocabulary_size}")
    batching = dict(
        batch_size=config.batch_size * replicas,
        tokens_per_batch=config.tokens_per_batch, replicas=replicas,
        max_length=config.max_length, overlong=config.overlong,
    )
    train_data, report = make_dataset(train_pairs, tokenizer, tokenizer,
                                      seed=config.seed, **batching)
    val_data, _ = make_dataset(corpus["val"], tokenizer, tokenizer,
                               shuffle=False, **batching)
    print(f"training data: {report}")

    with strategy.scope():
        model = TransformerTranslator.from_preset(
            config.preset, tokenizer.vocabulary_size,
            tokenizer.vocabulary_size, share_embeddings=True,
            max_relative_position=config.max_relative_position,
            relative_values=config.relative_values,
            # The model passes its policy to every sub-layer; the global
            # policy is left alone.
            dtype=config.precision,
        )
        build(model)
        schedule = TransformerSchedule(model.hidden_dim, config.warmup_steps,
                                       config.learning_rate_scale)
        model.compile(
            # Clips the global batch's gradient, as on one device.
            optimizer=AllReduceClippingAdam(
                schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9,
                clipnorm=config.clipnorm,
            ),
            loss=MaskedCrossentropy(config.label_smoothing),
            metrics=[MaskedAccuracy()],
        )
    translator = Translator(model, tokenizer, config.max_length)
    bleu_pairs = corpus["val"][: config.bleu_sentences]
    callbacks = [
        *callbacks,
        keras.callbacks.BackupAndRestore(
            str(output_dir / "backup"), save_freq=config.checkpoint_every,
            double_checkpoint=True,  # a kill mid-write keeps the previous one
        ),
        keras.callbacks.ModelCheckpoint(
            str(output_dir / "checkpoints" / "epoch-{epoch:03d}.weights.h5"),
            save_weights_only=True,
        ),
        keras.callbacks.TensorBoard(str(output_dir / "logs")),
    ]
    if bleu_pairs:
        callbacks.insert(0, BleuCallback(
            translator.translate, [p[0] for p in bleu_pairs],
            [p[1] for p in bleu_pairs],
        ))
    history = model.fit(train_data, validation_data=val_data,
                        epochs=config.epochs, callbacks=callbacks,
                        verbose=config.verbose)
    translator.history = history.history
    translator.report = report
    translator.save(output_dir)
    (output_dir / "training_config.json").write_text(
        json.dumps(dataclasses.asdict(config), indent=2)
    )
    return translator
