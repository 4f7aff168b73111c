"""Keras's int8 quantization on every public layer: `model.quantize("int8")`
warns about none of our layers, leaves no dense kernel in float, keeps the
output near the float one, and the quantized model saves and loads (`.keras`)
with the same outputs and its quantized policies in the config.

Keras quantizes the leaf layers that own kernels (`Dense`, `EinsumDense`,
our `FlatEinsumDense`); the layers here hold those and record them in their
config (`keras_attention/layers/quantization.py`). What stays float is
listed in `FLOAT_WEIGHTS`, each with its reason.
"""

import os
import re
import tempfile
import warnings

import keras
import numpy as np
import pytest
from keras import tree

from keras_attention import layers
from keras_attention.layers._flat_einsum_dense import FlatEinsumDense
from tests.backend import as_numpy

RNG = np.random.default_rng(51)
BATCH, LENGTH, DIM = 2, 5, 8


def _normal(*shape):
    return RNG.normal(size=shape).astype("float32")


SEQUENCE = _normal(BATCH, LENGTH, DIM)
PADDING = np.array([[1] * LENGTH, [1] * (LENGTH - 2) + [0] * 2], bool)

# Public layer -> (a factory, the call's tensors, the call's flags).
CASES = {
    "AdditiveAttention": (
        lambda: layers.AdditiveAttention(units=8),
        {"query": _normal(BATCH, 3, 6), "value": _normal(BATCH, LENGTH, 4)},
        {}),
    "AttentionRNNDecoder": (
        lambda: layers.AttentionRNNDecoder(units=8, attention="additive",
                                           query="current"),
        {"inputs": _normal(BATCH, 4, 3), "memory": _normal(BATCH, LENGTH, 6),
         "initial_state": _normal(BATCH, 8)},
        {}),
    "DotAttention": (
        lambda: layers.DotAttention(),
        {"query": _normal(BATCH, 3, 4), "value": _normal(BATCH, LENGTH, 4)},
        {}),
    "GeneralAttention": (
        lambda: layers.GeneralAttention(),
        {"query": _normal(BATCH, 3, 6), "value": _normal(BATCH, LENGTH, 4)},
        {}),
    "GlimpseSensor": (
        lambda: layers.GlimpseSensor(glimpse_size=3, num_scales=2),
        {"images": _normal(BATCH, 12, 10, 2),
         "locations": np.zeros((BATCH, 2), "float32")},
        {}),
    "LocalAttention2D": (
        lambda: layers.LocalAttention2D(num_heads=2, key_dim=4,
                                        query_block=(2, 2),
                                        memory_flange=(1, 1)),
        {"inputs": _normal(BATCH, 4, 4, 5)},
        {}),
    "LocalSelfAttention": (
        lambda: layers.LocalSelfAttention(num_heads=2, key_dim=4, window=2),
        {"inputs": SEQUENCE, "padding_mask": PADDING},
        {"use_causal_mask": True}),
    "MemoryCompressedAttention": (
        lambda: layers.MemoryCompressedAttention(num_heads=2, key_dim=4,
                                                 compression=2),
        {"inputs": _normal(BATCH, 6, DIM)},
        {}),
    "MultiHeadAttention": (
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=4),
        {"query": SEQUENCE, "value": _normal(BATCH, 6, DIM),
         "padding_mask": PADDING},
        {}),
    "MultiHeadSelfAttention": (
        lambda: layers.MultiHeadSelfAttention(num_heads=2, key_dim=4),
        {"inputs": SEQUENCE, "padding_mask": PADDING},
        {"use_causal_mask": True}),
    "RelativeAttention": (
        lambda: layers.RelativeAttention(num_heads=2, key_dim=4,
                                         max_relative_position=3,
                                         relative_values=True),
        {"inputs": SEQUENCE},
        {}),
    "ScaledDotAttention": (
        lambda: layers.ScaledDotAttention(),
        {"query": _normal(BATCH, 3, 4), "value": _normal(BATCH, LENGTH, 4)},
        {}),
    "ScoreAttention": None,  # abstract: its variants are above
    "SelfAttention2D": (
        lambda: layers.SelfAttention2D(gamma_initializer="ones"),
        {"inputs": _normal(BATCH, 4, 6, 16)},
        {}),
    "SelfAttentivePooling": (
        lambda: layers.SelfAttentivePooling(units=6, num_hops=2),
        {"inputs": SEQUENCE},
        {}),
    "SequentialLocalAttention2D": (
        lambda: layers.SequentialLocalAttention2D(
            num_heads=2, key_dim=4, image_shape=(4, 4), query_block=(2, 2),
            memory_flange=(1, 1)),
        {"inputs": _normal(BATCH, 16, 5)},
        {}),
    "SinusoidalPositionEmbedding": (
        lambda: layers.SinusoidalPositionEmbedding(),
        {"inputs": SEQUENCE},
        {}),
    "TransformerDecoder": (
        lambda: layers.TransformerDecoder(intermediate_dim=16, num_heads=2),
        {"decoder_sequence": SEQUENCE,
         "encoder_sequence": _normal(BATCH, 6, DIM),
         "decoder_padding_mask": PADDING},
        {}),
    "TransformerEncoder": (
        lambda: layers.TransformerEncoder(intermediate_dim=16, num_heads=2),
        {"inputs": SEQUENCE, "padding_mask": PADDING},
        {}),
    "UniversalTransformerEncoder": (
        lambda: layers.UniversalTransformerEncoder(
            intermediate_dim=16, num_heads=2, act=True),
        {"inputs": SEQUENCE, "padding_mask": PADDING},
        {}),
}
# A plugged self-attention (its config nested in the block's).
CASES["TransformerEncoder-relative"] = (
    lambda: layers.TransformerEncoder(
        intermediate_dim=16, num_heads=2,
        self_attention=layers.RelativeAttention(
            num_heads=2, key_dim=4, max_relative_position=3,
            output_dim=DIM)),
    {"inputs": SEQUENCE, "padding_mask": PADDING},
    {})

# Weights that stay float, by design: the score networks of the
# single-head and pooling layers run in float32 (as the softmax does) and
# are small beside the projections; the relative-position tables are
# gathered, not multiplied; SAGAN's γ is a scalar. Keras keeps
# `LayerNormalization` and the RNN cells (it has no quantized `GRUCell` or
# `LSTMCell`) in float too.
FLOAT_WEIGHTS = {
    "AdditiveAttention": {"query_kernel", "key_kernel", "bias",
                          "score_kernel"},
    "GeneralAttention": {"kernel"},
    "SelfAttentivePooling": {"hidden_kernel", "hop_kernel"},
    "RelativeAttention": {"key_relative_embeddings",
                          "value_relative_embeddings"},
    "TransformerEncoder-relative": {"key_relative_embeddings",
                                    "value_relative_embeddings"},
    "SelfAttention2D": {"gamma"},
    "AttentionRNNDecoder": {"query_kernel", "key_kernel", "bias",
                            "score_kernel", "kernel", "recurrent_kernel"},
}
# Our layers that warn on `quantize`, with the warning they give.
EXPECTED_WARNINGS = {
    "SelfAttentivePooling": "keeps its score network in float32",
}
# Quantized output against float, relative to the float output's largest
# magnitude (int8 weights per output channel, int8 inputs per row).
TOLERANCE = 0.05
OUR_CLASSES = set(layers.__all__) | {"FlatEinsumDense"}


def test_every_public_layer_is_covered():
    assert set(layers.__all__) <= {name.split("-")[0] for name in CASES}


def _model(case):
    make, inputs, flags = CASES[case]
    symbolic = {name: keras.Input(shape=value.shape[1:],
                                  dtype=str(value.dtype), name=name)
                for name, value in inputs.items()}
    return keras.Model(symbolic, make()(**symbolic, **flags)), inputs


def _outputs(model, inputs):
    return [as_numpy(x) for x in tree.flatten(model(inputs))]


def _quantize(model):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.quantize("int8")
    return [str(warning.message) for warning in caught]


def _dense_layers(model):
    return [layer for layer in model._flatten_layers()
            if isinstance(layer, (keras.layers.Dense,
                                  keras.layers.EinsumDense))]


def _policy_maps(config):
    """`[{path pattern: quantization mode}]`, one per `DTypePolicyMap` in a
    serialized config, at any depth (a plugged layer's config nests its
    own)."""
    found = []
    if isinstance(config, dict):
        if config.get("class_name") == "DTypePolicyMap":
            found.append({key: policy["config"]["mode"] for key, policy
                          in config["config"]["policy_map"].items()})
        for value in config.values():
            found += _policy_maps(value)
    elif isinstance(config, (list, tuple)):
        for value in config:
            found += _policy_maps(value)
    return found


def _check_policy_maps(model, dense):
    """Each map names every path at most once; the quantized layers, and
    only they, are named (by one map or more); all in int8."""
    maps = _policy_maps(model.get_config())
    for layer in model._flatten_layers():
        if not layer.path:
            continue
        counts = [len([key for key in policies
                       if re.fullmatch(key, layer.path)])
                  for policies in maps]
        assert max(counts, default=0) <= 1, (layer.path, maps)
        assert (sum(counts) > 0) == (layer in dense), (layer.path, maps)
    assert {mode for policies in maps for mode in policies.values()} <= {
        "int8"}
    return maps


@pytest.mark.parametrize("case", [
    name for name in sorted(CASES) if CASES[name] is not None
])
def test_int8_quantization(case):
    model, inputs = _model(case)
    name = case.split("-")[0]
    before = _outputs(model, inputs)
    messages = _quantize(model)

    ours = [message for message in messages
            if any(f"Layer {cls} " in message for cls in OUR_CLASSES)]
    expected = EXPECTED_WARNINGS.get(name)
    assert all(expected and expected in message for message in ours), ours

    dense = _dense_layers(model)
    for layer in dense:
        assert layer.quantization_mode == "int8", layer.path
        assert str(layer.kernel.dtype) == "int8", layer.path
    if dense:
        assert any(isinstance(layer, FlatEinsumDense) for layer in dense) or (
            name in {"SelfAttention2D", "AttentionRNNDecoder"})
    dense_weights = {id(weight) for layer in dense for weight in layer.weights}
    float_left = {weight.name for weight in model.weights
                  if id(weight) not in dense_weights}
    assert float_left <= FLOAT_WEIGHTS.get(case, set()) | {"gamma", "beta"}

    after = _outputs(model, inputs)
    for got, want in zip(after, before):
        scale = np.abs(want).max()
        error = np.abs(got - want).max() / scale
        assert error <= TOLERANCE, (case, error)

    maps = _check_policy_maps(model, dense)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "quantized.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    for got, want in zip(_outputs(restored, inputs), after):
        np.testing.assert_array_equal(got, want)
    assert [layer.quantization_mode for layer in _dense_layers(restored)] == [
        layer.quantization_mode for layer in dense]
    assert _check_policy_maps(restored, _dense_layers(restored)) == maps
