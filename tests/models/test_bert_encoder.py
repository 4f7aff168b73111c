"""BertEncoder, with KerasHub's BertBackbone as the reference."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_attention.models.bert_encoder import BertEncoder
from tests.backend import as_numpy
from tests.backend import assert_allclose

CONFIG = dict(vocabulary_size=40, num_layers=2, num_heads=2, hidden_dim=8,
              intermediate_dim=16, max_sequence_length=12)
RNG = np.random.default_rng(7)
# [CLS] a a [SEP] b b [SEP] pad pad / [CLS] a [SEP] b [SEP] pad x4
INPUTS = {
    "token_ids": np.array([[2, 7, 9, 3, 11, 12, 3, 0, 0],
                           [2, 5, 3, 8, 3, 0, 0, 0, 0]], "int32"),
    "segment_ids": np.array([[0, 0, 0, 0, 1, 1, 1, 0, 0],
                             [0, 0, 0, 1, 1, 0, 0, 0, 0]], "int32"),
    "padding_mask": np.array([[1] * 7 + [0] * 2, [1] * 5 + [0] * 4], bool),
}


@pytest.fixture(scope="module")
def pair():
    """A KerasHub backbone with random (non-trivial) weights and our
    encoder made from it (`BertEncoder.from_keras_hub`)."""
    hub = keras_hub.models.BertBackbone(**CONFIG)
    for weight in hub.weights:
        weight.assign(RNG.normal(size=weight.shape).astype("float32") * 0.5)
    ours = BertEncoder.from_keras_hub(hub)
    assert ours.get_config()["max_sequence_length"] == 12
    return hub, ours


def test_equals_keras_hub_bert_backbone(pair):
    hub, ours = pair
    int_inputs = {key: value.astype("int32") for key, value in INPUTS.items()}
    want = hub(int_inputs)
    got = ours(int_inputs)  # KerasHub's int padding mask works too
    mask = INPUTS["padding_mask"]
    sequence_error = np.abs(as_numpy(got["sequence_output"])
                            - as_numpy(want["sequence_output"]))[mask].max()
    assert sequence_error < 1e-5, sequence_error
    assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
    # The pooled output is non-trivial (tanh not saturated everywhere).
    assert np.abs(as_numpy(got["pooled_output"])).min() < 0.99


def test_from_keras_hub_takes_the_blockwise_core_on_long_inputs():
    """At 1,030 tokens (the block-wise core from 1,024 on, on TensorFlow;
    the fused kernel on JAX and PyTorch) our encoder made from the
    backbone still computes what the backbone computes."""
    length = 1030
    hub = keras_hub.models.BertBackbone(**{**CONFIG,
                                           "max_sequence_length": length})
    rng = np.random.default_rng(3)
    for weight in hub.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32") * 0.5)
    ours = BertEncoder.from_keras_hub(hub, dropout=0.0)
    attention = ours.transformer_layers[0].self_attention
    assert attention._blockwise_core(False, False, np.zeros((1, length)),
                                     length)
    inputs = {"token_ids": rng.integers(4, 40, (1, length)).astype("int32"),
              "segment_ids": np.zeros((1, length), "int32"),
              "padding_mask": np.arange(length)[None] < 1000}
    want = as_numpy(hub(inputs)["sequence_output"])[0, :1000]
    got = as_numpy(ours(inputs)["sequence_output"])[0, :1000]
    assert np.abs(got - want).max() < 1e-4


def test_from_keras_hub_refuses_another_model():
    with pytest.raises(ValueError, match="`backbone` must be a keras_hub "
                                         "BertBackbone, received: a Dense"):
        BertEncoder.from_keras_hub(keras.layers.Dense(3))


def test_padding_does_not_change_the_tokens(pair):
    _, ours = pair
    short = {key: value[:1, :7] for key, value in INPUTS.items()}
    full = ours({key: value[:1] for key, value in INPUTS.items()})
    trimmed = ours(short)
    assert_allclose(as_numpy(full["sequence_output"])[:, :7],
                    trimmed["sequence_output"], atol=1e-5)
    assert_allclose(full["pooled_output"], trimmed["pooled_output"],
                    atol=1e-5)


def test_segments_and_positions_change_the_output(pair):
    _, ours = pair
    base = as_numpy(ours(INPUTS)["pooled_output"])
    swapped = dict(INPUTS, segment_ids=1 - INPUTS["segment_ids"])
    assert np.abs(as_numpy(ours(swapped)["pooled_output"]) - base).max() > 1e-3
    # Without segment ids, every token is in segment 0.
    default = {k: v for k, v in INPUTS.items() if k != "segment_ids"}
    zeros = dict(INPUTS, segment_ids=np.zeros_like(INPUTS["segment_ids"]))
    assert_allclose(ours(default)["pooled_output"],
                    ours(zeros)["pooled_output"], atol=1e-6)


def test_weights_and_initializers():
    encoder = BertEncoder(**CONFIG)
    encoder(INPUTS)
    # 3 tables, embedding norm 2, per block 16, pooled dense 2.
    assert len(encoder.trainable_weights) == 3 + 2 + 16 * 2 + 2
    table = as_numpy(encoder.token_embedding.embeddings)
    assert abs(table.std() - 0.02 * 0.88) < 0.004  # truncated at 2 sigma
    assert np.abs(table).max() <= 0.04 + 1e-6
    block = encoder.transformer_layers[0]
    assert block.layer_norm_epsilon == 1e-12
    x = np.linspace(-3, 3, 7).astype("float32")
    assert_allclose(block.activation(x),
                    keras.activations.gelu(x, approximate=True), atol=1e-7)


def test_dropout_only_in_training():
    encoder = BertEncoder(**dict(CONFIG, dropout=0.5))
    first = as_numpy(encoder(INPUTS)["pooled_output"])
    assert_allclose(encoder(INPUTS)["pooled_output"], first)
    trained = as_numpy(encoder(INPUTS, training=True)["pooled_output"])
    assert np.abs(trained - first).max() > 1e-3


def test_save_and_load(tmp_path, pair):
    _, ours = pair
    path = tmp_path / "bert.keras"
    ours.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertEncoder)
    assert loaded.get_config() == ours.get_config()
    for key in ("sequence_output", "pooled_output"):
        assert_allclose(loaded(INPUTS)[key], ours(INPUTS)[key], atol=1e-6)


def test_config_round_trip():
    encoder = BertEncoder(**dict(CONFIG, num_segments=3, dropout=0.2))
    clone = BertEncoder.from_config(encoder.get_config())
    assert clone.get_config() == encoder.get_config()
    assert clone.num_segments == 3 and clone.dropout == 0.2


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"vocabulary_size": 0}, "vocabulary_size=0"),
        ({"num_layers": -1}, "num_layers=-1"),
        ({"num_heads": 3}, "hidden_dim=8, num_heads=3"),
        ({"dropout": 1.0}, "dropout=1.0"),
        ({"max_sequence_length": 2.5}, "max_sequence_length=2.5"),
        ({"layer_norm_epsilon": 0.0}, "layer_norm_epsilon=0.0"),
    ],
)
def test_bad_arguments(changes, message):
    with pytest.raises(ValueError, match=message):
        BertEncoder(**dict(CONFIG, **changes))


def test_bad_inputs():
    encoder = BertEncoder(**CONFIG)
    with pytest.raises(ValueError, match="padding_mask"):
        encoder({"token_ids": INPUTS["token_ids"]})
    with pytest.raises(ValueError, match="max_sequence_length` = 12"):
        encoder({key: np.tile(value, (1, 2)) for key, value in INPUTS.items()})
