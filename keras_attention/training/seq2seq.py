"""The one training loop of every sequence-to-sequence model.

corpus -> joint SentencePiece tokenizer -> tf.data batches -> the model
named by `TrainingConfig.model` (`keras_attention.models.TRANSLATORS`),
built in the strategy's scope -> `fit` with backups (resume after a kill),
epoch checkpoints and TensorBoard logs -> with `average_last` > 1, the
average of the last epoch checkpoints. `keras_attention.translator.train`
wraps it with the translator's own callback (validation BLEU) and saves the
result.
"""

import dataclasses
import pathlib

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import keras
import numpy as np
import tensorflow as tf

from keras_attention.models import TRANSLATORS
from keras_attention.text import SubwordTokenizer
from keras_attention.text import load_corpus
from keras_attention.text import load_parallel
from keras_attention.text import make_dataset
from keras_attention.text import train_sentencepiece
from keras_attention.training.averaging import average_checkpoints
from keras_attention.training.averaging import epoch_checkpoints
from keras_attention.training.losses import MaskedAccuracy
from keras_attention.training.losses import MaskedCrossentropy
from keras_attention.training.optimizers import AllReduceClippingAdam
from keras_attention.training.precision import describe_precision
from keras_attention.training.schedule import TransformerSchedule
from keras_attention.training.strategy import describe
from keras_attention.training.strategy import jit_compile_for
from keras_attention.training.strategy import strategy_from_environment


@dataclasses.dataclass
class PreparedData:
    """A run's text and batches."""

    corpus: dict  # split -> list of (source, target) pairs
    tokenizer: SubwordTokenizer
    train_data: object  # tf.data.Dataset
    val_data: object  # tf.data.Dataset or None
    report: object  # PipelineReport of the training pairs


def load_pairs(config):
    """`{"train": pairs, "val": pairs, ...}` for the run's corpus: a named
    one, or the user's files (`corpus="files"`)."""
    if config.corpus == "files":
        corpus = {"train": load_parallel(config.train_files)}
        corpus["val"] = (load_parallel(config.val_files)
                         if config.val_files else [])
        return corpus
    return load_corpus(config.corpus, config.data_dir,
                       source_language=config.source_language,
                       target_language=config.target_language)


def joint_tokenizer(config, train_pairs, output_dir):
    """Train the joint tokenizer, or reuse the one of a resumed run."""
    path = pathlib.Path(output_dir) / "tokenizer.model"
    if path.exists():
        return SubwordTokenizer.load(path)
    sentences = [text for pair in train_pairs for text in pair]
    tokenizer = SubwordTokenizer(
        train_sentencepiece(sentences, config.vocabulary_size)
    )
    tokenizer.save(path)
    return tokenizer


def prepare_data(config, replicas=1):
    """Read the corpus, train (or reuse) the tokenizer, batch the pairs."""
    corpus = load_pairs(config)
    train_pairs = corpus["train"][: config.train_size]
    tokenizer = joint_tokenizer(config, train_pairs, config.output_dir)
    print(f"corpus: {config.corpus}, {len(train_pairs)} training pairs "
          f"({config.source_language}->{config.target_language}); joint "
          f"SentencePiece vocabulary of {tokenizer.vocabulary_size}")
    batching = dict(
        batch_size=config.batch_size * replicas,
        tokens_per_batch=config.tokens_per_batch, replicas=replicas,
        max_length=config.max_length, overlong=config.overlong,
    )
    train_data, report = make_dataset(train_pairs, tokenizer, tokenizer,
                                      seed=config.seed, **batching)
    val_data = None
    if corpus.get("val"):
        val_data, _ = make_dataset(corpus["val"], tokenizer, tokenizer,
                                   shuffle=False, **batching)
    print(f"training data: {report}")
    return PreparedData(corpus, tokenizer, train_data, val_data, report)


def build(model):
    """Create a translator's weights with a one-token call."""
    ones = np.ones((1, 1), "int32")
    model({"encoder_tokens": ones, "decoder_tokens": ones})
    return model


def compiled_model(config, tokenizer):
    """The run's model, built and compiled (call in the strategy's scope):
    Adam with the inverse-square-root schedule and warm-up, gradient
    clipping of the global batch, label-smoothed masked cross-entropy, XLA
    as `config.jit_compile` says for this device (`jit_compile_for`).
    Under `mixed_float16` Keras wraps the optimizer in a
    `LossScaleOptimizer` (the model carries the policy)."""
    model = TRANSLATORS[config.model].from_preset(
        config.preset, tokenizer.vocabulary_size, tokenizer.vocabulary_size,
        share_embeddings=True, pad_id=tokenizer.pad_id,
        # The model passes its policy to every sub-layer; the global policy
        # is left alone.
        dtype=config.precision, **config.model_options(),
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
        loss=MaskedCrossentropy(config.label_smoothing,
                                pad_id=tokenizer.pad_id),
        metrics=[MaskedAccuracy(pad_id=tokenizer.pad_id)],
        jit_compile=jit_compile_for(config.jit_compile,
                                    tf.distribute.get_strategy()),
    )
    return model


def run_callbacks(config):
    """Backups (resume after a kill), epoch checkpoints, TensorBoard."""
    output_dir = pathlib.Path(config.output_dir)
    return [
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


def setup(config):
    """Seed, strategy, data and the compiled model of a run.

    Returns `(strategy, PreparedData, model)`."""
    keras.utils.set_random_seed(config.seed)
    pathlib.Path(config.output_dir).mkdir(parents=True, exist_ok=True)
    strategy = strategy_from_environment()
    print(f"strategy: {describe(strategy)}")
    policy, line = describe_precision(config.precision)
    print(line)
    config = dataclasses.replace(config, precision=policy)
    data = prepare_data(config, strategy.num_replicas_in_sync)
    with strategy.scope():
        model = compiled_model(config, data.tokenizer)
    print(f"settings: preset={config.preset}, vocabulary_size="
          f"{config.vocabulary_size}, epochs={config.epochs}, "
          + (f"tokens_per_batch={config.tokens_per_batch}"
             if config.tokens_per_batch else f"batch_size={config.batch_size}")
          + f", learning_rate_scale={config.learning_rate_scale:g}, "
          f"average_last={config.average_last}")
    print(f"model: {config.model} ({config.preset}), "
          f"{model.count_params():,} parameters, jit_compile="
          f"{model.jit_compile}")
    return strategy, data, model


def fit(config, data, model, callbacks=()):
    """Train `model` on `data` for `config.epochs` with the run's
    callbacks after the given ones; returns the Keras history.

    `shuffle=False`: the `tf.data.Dataset` shuffles itself each epoch
    (`make_dataset`, seeded), and Keras ignores `fit`'s `shuffle` for a
    Dataset, warning when it is left at its default, True."""
    return model.fit(
        data.train_data, validation_data=data.val_data, epochs=config.epochs,
        callbacks=[*callbacks, *run_callbacks(config)],
        verbose=config.verbose, shuffle=False,
    )


def average_last_epochs(config, model, history):
    """With `config.average_last` > 1: keep the last weights in
    `OUTPUT_DIR/last.weights.h5` and give `model` the average of the run's
    last `average_last` epoch checkpoints (fewer if it ran fewer epochs).

    Returns the averaged checkpoint paths (empty when nothing was averaged).
    """
    if config.average_last < 2 or not history.epoch:
        return []
    output_dir = pathlib.Path(config.output_dir)
    # History counts epochs from 0, after any resumed ones; the files from 1.
    paths = epoch_checkpoints(output_dir / "checkpoints", config.average_last,
                              last_epoch=history.epoch[-1] + 1)
    if len(paths) < 2:
        return []
    model.save_weights(output_dir / "last.weights.h5")
    average_checkpoints(model, paths)
    print(f"final weights: the average of {len(paths)} epoch checkpoints "
          f"({paths[0].name} .. {paths[-1].name}); the last weights are in "
          f"{output_dir / 'last.weights.h5'}")
    return paths
