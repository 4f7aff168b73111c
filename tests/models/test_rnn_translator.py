"""RNNTranslator: cached steps == teacher forcing, padding invariance,
causality, configuration round trips, presets and argument errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.layers import GeneralAttention
from keras_attention.models import TRANSLATORS
from keras_attention.models import RNNTranslator
from keras_attention.models.rnn_translator import PRESETS
from keras_attention.training.config import PRESET_NAMES

RNG = np.random.default_rng(0)
SOURCE = np.array([[5, 6, 7, 8, 9], [4, 9, 3, 0, 0]], "int32")
TARGET = np.array([[2, 11, 12, 13], [2, 14, 15, 0]], "int32")


def small(**options):
    options = {"embedding_dim": 8, "encoder_units": 6, "decoder_units": 12,
               "attention_units": 5, "dropout": 0.0, **options}
    model = RNNTranslator(20, 20, **options)
    model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    return model


@pytest.mark.parametrize(
    "options",
    [{}, {"cell": "lstm"}, {"attention": "dot"}, {"attention": "general"},
     {"attention": "scaled_dot", "num_layers": 2},
     {"tie_embeddings": False, "share_embeddings": True},
     {"attention": "general", "query": "current"},
     {"cell": "lstm", "query": "current", "input_feeding": False}],
    ids=["gru-additive", "lstm", "dot", "general", "scaled-dot-2-layers",
         "untied-shared", "luong", "luong-lstm-additive-no-feeding"],
)
def test_cached_steps_equal_the_teacher_forced_pass(options):
    model = small(**options)
    memory, source_mask = model.encode(SOURCE)
    full, weights = model.decode(TARGET, memory, source_mask,
                                 return_attention_scores=True)
    cache = model.initial_cache(memory, source_mask, TARGET.shape[1])
    for index in range(TARGET.shape[1]):
        logits, cache, step_weights = model.decode_step(
            TARGET[:, index:index + 1], index, cache, source_mask
        )
        np.testing.assert_allclose(logits, full[:, index], atol=1e-5)
        np.testing.assert_allclose(step_weights, weights[:, index], atol=1e-6)
    weights = np.array(weights)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert np.abs(weights[1, :, 3:]).max() == 0.0  # padding never attended


@pytest.mark.parametrize(
    "options", [{}, {"cell": "lstm"}, {"num_layers": 2}],
    ids=["gru", "lstm", "two-layers"],
)
def test_padding_does_not_change_a_sentence(options):
    """The masked bidirectional encoder (its backward pass starts at the
    last real token) and the masked mean give a padded sentence the
    numbers it has alone."""
    model = small(**options)
    padded = model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    alone = model({"encoder_tokens": SOURCE[1:, :3],
                   "decoder_tokens": TARGET[1:, :3]})
    np.testing.assert_allclose(alone[0], padded[1, :3], atol=1e-5)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_without_attention_the_decoder_sees_only_the_final_states(cell):
    """Cho et al.'s encoder-decoder: c = [h→ at the last real token;
    h← at the first], the only view of the source; cached == teacher
    forced; padding changes nothing; no attention to show."""
    model = small(cell=cell, attention=None, num_layers=2)
    memory, source_mask = model.encode(SOURCE)
    c = np.array(model.final_states(memory, source_mask))
    annotations = np.array(memory)
    np.testing.assert_allclose(c[0, :6], annotations[0, 4, :6])
    np.testing.assert_allclose(c[1, :6], annotations[1, 2, :6])  # 3 real
    np.testing.assert_allclose(c[:, 6:], annotations[:, 0, 6:])
    full = model.decode(TARGET, memory, source_mask)
    cache = model.initial_cache(memory, source_mask)
    np.testing.assert_allclose(cache["memory"], c, atol=1e-6)
    for index in range(TARGET.shape[1]):
        logits, cache, weights = model.decode_step(
            TARGET[:, index:index + 1], index, cache, source_mask)
        np.testing.assert_allclose(logits, full[:, index], atol=1e-5)
        assert np.array(weights).shape == SOURCE.shape
        assert np.abs(np.array(weights)).max() == 0.0
    # The source reaches the logits only through c: annotations that
    # differ except at the two read positions give the same logits.
    changed = annotations.copy()
    changed[0, 1:4] += 5.0
    np.testing.assert_allclose(
        model.decode(TARGET, changed, source_mask)[0], full[0], atol=1e-6)
    padded = model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    alone = model({"encoder_tokens": SOURCE[1:, :3],
                   "decoder_tokens": TARGET[1:, :3]})
    np.testing.assert_allclose(alone[0], padded[1, :3], atol=1e-5)
    with pytest.raises(ValueError, match="attention=None"):
        model.cross_attention(SOURCE, TARGET)
    with pytest.raises(ValueError, match="attention=None"):
        model.decode(TARGET, memory, source_mask,
                     return_attention_scores=True)
    assert not any("attention" in w.path for w in model.weights)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_final_states_are_the_bidirectional_encoders(cell):
    """c read from the annotations == the final states Keras's
    Bidirectional RNN returns (`return_state=True`) with the same
    weights, on a padded batch."""
    model = small(cell=cell, attention=None)
    memory, source_mask = model.encode(SOURCE)
    rnn = {"gru": keras.layers.GRU, "lstm": keras.layers.LSTM}[cell]
    reference = keras.layers.Bidirectional(
        rnn(6, return_sequences=True, return_state=True))
    embedded = model.source_embedding(SOURCE)
    reference(embedded, mask=source_mask)
    reference.set_weights(model.encoder_layers[0].get_weights())
    outputs = reference(embedded, mask=source_mask)
    # [sequence, forward h (, c), backward h (, c)]
    forward, backward = outputs[1], outputs[2 if cell == "gru" else 3]
    np.testing.assert_allclose(
        model.final_states(memory, source_mask),
        np.concatenate([forward, backward], -1), atol=1e-6)


def test_a_config_saved_before_query_and_input_feeding_loads():
    model = small(attention="general")
    config = keras.saving.serialize_keras_object(model)
    for key in ("query", "input_feeding"):
        del config["config"][key]
    old = keras.saving.deserialize_keras_object(config)
    inputs = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    old(inputs)
    old.set_weights(model.get_weights())
    np.testing.assert_allclose(old(inputs), model(inputs), atol=1e-6)
    assert (old.query, old.input_feeding) == ("previous", False)


def test_logits_depend_only_on_earlier_target_tokens():
    model = small()
    embedded = model.target_embedding(TARGET)
    memory, source_mask = model.encode(SOURCE)
    cache = model.initial_cache(memory, source_mask)
    with tf.GradientTape() as tape:
        tape.watch(embedded)
        states, contexts = model.decoder(embedded, memory, cache["states"],
                                         memory_mask=source_mask)
        logits = model._logits(embedded, states, contexts)
        chosen = tf.reduce_sum(logits[0, 1])  # position 1
    gradient = np.abs(np.array(tape.gradient(chosen, embedded)))[0].sum(-1)
    assert gradient[0] > 0 and gradient[1] > 0
    assert gradient[2] == 0 and gradient[3] == 0


def test_tied_and_shared_embeddings():
    tied = small(share_embeddings=True)
    names = [w.path for w in tied.weights]
    assert sum("embedding" in n for n in names) == 1, names
    assert not any("output_projection" in n for n in names)
    assert tied.source_embedding is tied.target_embedding
    untied = small(tie_embeddings=False)
    assert any("output_projection" in w.path for w in untied.weights)


@pytest.mark.parametrize(
    "options", [{"attention": "general"},
                {"attention": GeneralAttention(name="bilinear")},
                {"attention": "general", "query": "current"},
                {"attention": None}],
    ids=["by-name", "a-layer", "luong", "no-attention"])
def test_config_and_keras_serialization_round_trip(options):
    model = small(cell="lstm", **options)
    inputs = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    config = keras.saving.serialize_keras_object(model)
    clone = keras.saving.deserialize_keras_object(config)
    assert isinstance(clone, RNNTranslator)
    clone(inputs)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(inputs), model(inputs), atol=1e-6)
    assert clone.get_config() == model.get_config()


def test_mixed_precision_gives_float32_logits_and_attention():
    model = small(dtype="mixed_bfloat16")
    logits = model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    assert logits.dtype == "float32"
    memory, source_mask = model.encode(SOURCE)
    cache = model.initial_cache(memory, source_mask)
    _, _, weights = model.decode_step(TARGET[:, :1], 0, cache, source_mask)
    assert weights.dtype == "float32"
    assert model.decoder.cell.compute_dtype == "bfloat16"


def test_presets_and_the_registry():
    assert TRANSLATORS["rnn"] is RNNTranslator
    for name, model_class in TRANSLATORS.items():
        module = __import__(model_class.__module__, fromlist=["PRESETS"])
        assert tuple(module.PRESETS) == PRESET_NAMES[name]
    model = RNNTranslator.from_preset("tiny", 30, 30)
    assert model.decoder_units == PRESETS["tiny"]["decoder_units"]
    assert model.hidden_dim == model.decoder_units
    with pytest.raises(ValueError, match="preset='huge'"):
        RNNTranslator.from_preset("huge", 30, 30)


def test_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match="decoder_units=10, encoder_units=6"):
        RNNTranslator(20, 20, encoder_units=6, decoder_units=10,
                      attention="dot")
    with pytest.raises(ValueError, match="source_vocabulary_size=20"):
        RNNTranslator(20, 30, share_embeddings=True)
    with pytest.raises(ValueError, match="cell='rnn'"):
        RNNTranslator(20, 20, cell="rnn")
    with pytest.raises(ValueError, match="dropout=1.5"):
        RNNTranslator(20, 20, dropout=1.5)


def test_the_config_knows_which_presets_take_dot_scores():
    from keras_attention.training.config import RNN_DOT_PRESETS
    from keras_attention.training.config import TrainingConfig

    for name, sizes in PRESETS.items():
        wide = sizes["decoder_units"] == 2 * sizes["encoder_units"]
        assert (name in RNN_DOT_PRESETS) == wide, name
    TrainingConfig(model="rnn", preset="small", attention="dot")
    with pytest.raises(ValueError, match="preset='base'"):
        TrainingConfig(model="rnn", preset="base", attention="scaled_dot")
    with pytest.raises(ValueError, match="model='transformer', cell='lstm'"):
        TrainingConfig(cell="lstm")
    assert TrainingConfig(model="rnn").model_options() == {}
    assert TrainingConfig(model="rnn", cell="lstm").model_options() == {
        "cell": "lstm"}
    assert TrainingConfig(model="rnn", attention="none").model_options() == {
        "attention": None}
    assert TrainingConfig(model="rnn", attention="general",
                          query="current").model_options() == {
        "attention": "general", "query": "current"}
    with pytest.raises(ValueError, match="query='next'"):
        TrainingConfig(model="rnn", query="next")
    with pytest.raises(ValueError, match="model='transformer'.*query='current'"):
        TrainingConfig(query="current")
    with pytest.raises(ValueError, match="attention='none', query='current'"):
        TrainingConfig(model="rnn", attention="none", query="current")
