"""Corpus recipes: the options a run leaves unset come from its corpus's
recipe (Multi30k's is the benchmark's), and `average_last` makes the final
weights the mean of the last epoch checkpoints."""

import json

import numpy as np
import pytest

from keras_attention.cli.parser import build_parser
from keras_attention.cli.parser import config_from_arguments
from keras_attention.training import epoch_checkpoints
from keras_attention.training.config import CORPUS_RECIPES
from keras_attention.training.config import GENERIC_RECIPE
from keras_attention.training.config import TrainingConfig

MULTI30K = {"preset": "small", "vocabulary_size": 8000, "epochs": 25,
            "batch_size": 64, "tokens_per_batch": 4096,
            "learning_rate_scale": 1.0, "average_last": 5}


def settings(config):
    return {name: getattr(config, name) for name in GENERIC_RECIPE}


def test_multi30k_runs_get_the_benchmarks_recipe():
    assert {**GENERIC_RECIPE, **CORPUS_RECIPES["multi30k"]} == MULTI30K
    assert settings(TrainingConfig(corpus="multi30k")) == MULTI30K
    # The command line leaves the same options unset.
    args = build_parser().parse_args(["train", "--corpus", "multi30k"])
    assert settings(config_from_arguments(TrainingConfig, args)) == MULTI30K
    assert settings(TrainingConfig()) == {
        "preset": "tiny", "vocabulary_size": 1000, "epochs": 8,
        "batch_size": 64, "tokens_per_batch": None,
        "learning_rate_scale": 1.0, "average_last": 1}


def test_what_the_user_gives_wins_over_the_recipe():
    config = TrainingConfig(corpus="multi30k", preset="tiny", epochs=3,
                            vocabulary_size=500, average_last=1,
                            learning_rate_scale=2.0)
    assert settings(config) == {**MULTI30K, "preset": "tiny", "epochs": 3,
                                "vocabulary_size": 500, "average_last": 1,
                                "learning_rate_scale": 2.0}
    # An explicit sentence batch size turns the recipe's token batching off.
    config = TrainingConfig(corpus="multi30k", batch_size=32)
    assert (config.batch_size, config.tokens_per_batch) == (32, None)
    config = TrainingConfig(corpus="multi30k", tokens_per_batch=1000)
    assert (config.batch_size, config.tokens_per_batch) == (64, 1000)


def test_replace_takes_the_new_corpus_recipe_for_unset_options():
    config = TrainingConfig(epochs=3).replace(corpus="multi30k")
    assert settings(config) == {**MULTI30K, "epochs": 3}
    back = config.replace(corpus="synthetic")
    assert settings(back) == {**settings(TrainingConfig()), "epochs": 3}
    # What was set stays set.
    assert TrainingConfig(preset="base").replace(
        corpus="multi30k").preset == "base"


@pytest.mark.parametrize("changes, message", [
    (dict(average_last=0), r"average_last.*received: average_last=0"),
    (dict(dropout=1.0), r"dropout.*received: dropout=1.0"),
    (dict(dropout=-0.1), r"dropout.*received: dropout=-0.1"),
    (dict(epochs=0), r"epochs.*received: epochs=0"),
])
def test_bad_values_name_the_option(changes, message):
    with pytest.raises(ValueError, match=message):
        TrainingConfig(corpus="multi30k", **changes)


def test_dropout_overrides_the_presets_rate():
    from keras_attention.models import TransformerTranslator

    config = TrainingConfig(dropout=0.3)
    assert config.model_options()["dropout"] == 0.3
    assert "dropout" not in TrainingConfig().model_options()
    assert TrainingConfig(model="rnn", dropout=0.2).model_options() == {
        "dropout": 0.2}
    model = TransformerTranslator.from_preset("tiny", 50, 50,
                                              **config.model_options())
    assert model.get_config()["dropout"] == 0.3


def test_rope_and_grouped_heads_reach_the_model_and_are_transformer_only():
    from keras_attention.models import TransformerTranslator

    config = TrainingConfig(rope_max_wavelength=500.0, num_key_value_heads=2)
    options = config.model_options()
    assert (options["rope_max_wavelength"], options["num_key_value_heads"]) \
        == (500.0, 2)
    assert "rope_max_wavelength" not in TrainingConfig().model_options()
    model = TransformerTranslator.from_preset("tiny", 50, 50, **options)
    layer = model.encoder_blocks[0].self_attention
    assert (layer.rope_max_wavelength, layer.key_value_heads) == (500.0, 2)
    with pytest.raises(ValueError, match=r"`num_key_value_heads` is a "
                       r"transformer option, received: model='rnn' and "
                       r"num_key_value_heads=2"):
        TrainingConfig(model="rnn", num_key_value_heads=2)


def test_epoch_checkpoints_are_the_last_ones_of_the_run(tmp_path):
    for epoch in (1, 2, 3, 4, 10):
        (tmp_path / f"epoch-{epoch:03d}.weights.h5").touch()
    (tmp_path / "epoch-x.weights.h5").touch()  # not a checkpoint's name
    names = lambda paths: [path.name for path in paths]  # noqa: E731
    assert names(epoch_checkpoints(tmp_path, 3, last_epoch=4)) == [
        "epoch-002.weights.h5", "epoch-003.weights.h5",
        "epoch-004.weights.h5"]
    assert names(epoch_checkpoints(tmp_path, 3)) == ["epoch-010.weights.h5"]
    assert names(epoch_checkpoints(tmp_path, 9, last_epoch=2)) == [
        "epoch-001.weights.h5", "epoch-002.weights.h5"]
    with pytest.raises(ValueError, match="received: count=0"):
        epoch_checkpoints(tmp_path, 0)


def test_training_with_average_last_saves_the_mean_and_keeps_the_last(
        tmp_path):
    import keras

    from keras_attention.translator import Translator
    from keras_attention.translator import train

    translator = train(TrainingConfig(
        output_dir=str(tmp_path), train_size=300, epochs=3, average_last=2,
        vocabulary_size=200, max_length=32, bleu_sentences=0, verbose=0,
        warmup_steps=20,
    ))
    checkpoints = tmp_path / "checkpoints"
    assert [path.name for path in translator.averaged] == [
        "epoch-002.weights.h5", "epoch-003.weights.h5"]
    model = translator.model
    final = model.get_weights()

    def weights(path):
        model.load_weights(path)
        return model.get_weights()

    second = weights(checkpoints / "epoch-002.weights.h5")
    third = weights(checkpoints / "epoch-003.weights.h5")
    last = weights(tmp_path / "last.weights.h5")
    moved = 0
    for got, a, b, kept in zip(final, second, third, last):
        np.testing.assert_allclose(got, (a + b) / 2, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(kept, b)
        moved += not np.array_equal(a, b)
    assert moved > 0  # the two epochs' weights differ
    # The saved translator is the average.
    keras.utils.clear_session()
    loaded = Translator.load(tmp_path).model.get_weights()
    for got, want in zip(loaded, final):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    saved = json.loads((tmp_path / "training_config.json").read_text())
    assert saved["average_last"] == 2
