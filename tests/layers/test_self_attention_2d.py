"""SelfAttention2D (SAGAN's block) against a NumPy reference; the
identity at γ = 0; spectral normalization; argument errors."""

import keras
import numpy as np
import pytest

from keras_attention.layers import SelfAttention2D
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.harness import run_layer_test

RNG = np.random.default_rng(2019)
BATCH, HEIGHT, WIDTH, CHANNELS = 2, 4, 6, 16


def _maps(height=HEIGHT, width=WIDTH, channels=CHANNELS):
    return RNG.normal(size=(BATCH, height, width, channels)).astype("float32")


def _kernel(layer):
    """The (C_in, C_out) kernel of a 1×1 convolution (wrapped or not)."""
    return as_numpy(getattr(layer, "layer", layer).kernel)


def max_pool(maps, size):
    """`(B, Y, X, C)` -> `(B, Y/p, X/p, C)`, max over p×p blocks."""
    batch, height, width, channels = maps.shape
    blocks = maps.reshape(batch, height // size, size, width // size, size,
                          channels)
    return blocks.max(axis=(2, 4))


def reference(layer, maps):
    """SAGAN's block in NumPy: f, g, h as 1×1 convolutions, g and h
    max-pooled, β = softmax(f gᵀ), o = v(β h), output x + γ o."""
    batch = maps.shape[0]
    query = maps @ _kernel(layer.query_conv)
    key = max_pool(maps @ _kernel(layer.key_conv), layer.pool_size)
    value = max_pool(maps @ _kernel(layer.value_conv), layer.pool_size)
    query = query.reshape(batch, -1, query.shape[-1])
    key = key.reshape(batch, -1, key.shape[-1])
    value = value.reshape(batch, -1, value.shape[-1])
    scores = query @ key.transpose(0, 2, 1)  # (B, Q, K)
    scores = scores - scores.max(-1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    context = (weights @ value).reshape(maps.shape[:3] + (-1,))
    attended = context @ _kernel(layer.output_conv)
    return maps + as_numpy(layer.gamma) * attended, weights


@pytest.mark.parametrize("pool_size", [1, 2])
@pytest.mark.parametrize("key_ratio, value_ratio", [(8, 2), (4, 1)])
def test_matches_numpy_reference(pool_size, key_ratio, value_ratio):
    layer = SelfAttention2D(key_ratio=key_ratio, value_ratio=value_ratio,
                            pool_size=pool_size, gamma_initializer="ones")
    maps = _maps()
    layer(maps)
    layer.gamma.assign(0.7)
    output, weights = layer(maps, return_attention_scores=True)
    want_output, want_weights = reference(layer, maps)
    keys = HEIGHT * WIDTH // pool_size ** 2
    assert tuple(weights.shape) == (BATCH, HEIGHT * WIDTH, keys)
    assert_allclose(weights, want_weights, atol=1e-5)
    assert_allclose(output, want_output, atol=1e-4)


def test_starts_as_the_identity_and_learns_gamma():
    layer = SelfAttention2D()
    maps = _maps()
    assert_allclose(layer(maps), maps, atol=0)
    assert float(as_numpy(layer.gamma)) == 0.0
    assert sorted(w.path.split("/", 1)[1]
                  for w in layer.trainable_weights) == [
        "attention_output/kernel", "gamma", "key/kernel", "query/kernel",
        "value/kernel"]


def test_spectral_normalization_bounds_each_convolution():
    """Training calls run the power iteration; after enough of them every
    1×1 kernel's largest singular value is 1, and the output is the
    reference computed from the normalized kernels."""
    layer = SelfAttention2D(spectral_normalization=True,
                            kernel_initializer="random_normal",
                            gamma_initializer="ones")
    maps = _maps()
    for _ in range(30):
        layer(maps, training=True)
    for conv in (layer.query_conv, layer.key_conv, layer.value_conv,
                 layer.output_conv):
        np.testing.assert_allclose(
            np.linalg.svd(_kernel(conv), compute_uv=False)[0], 1.0,
            rtol=1e-2)
    assert len(layer.non_trainable_weights) == 4  # the power iterations' u
    assert_allclose(layer(maps), reference(layer, maps)[0], atol=1e-4)


@pytest.mark.parametrize(
    "init_kwargs",
    [{"pool_size": 1, "key_ratio": 4,
      "gamma_initializer": keras.initializers.Constant(0.5)},
     {"spectral_normalization": True,
      "gamma_initializer": keras.initializers.Constant(0.5)}],
    ids=["no_pool", "spectral"])
def test_harness(init_kwargs):
    spectral = init_kwargs.get("spectral_normalization", False)
    run_layer_test(
        SelfAttention2D,
        init_kwargs,
        inputs={"inputs": _maps()},
        call_kwargs={"return_attention_scores": True},
        expected_num_trainable_weights=5,  # four 1×1 kernels and γ
        expected_num_non_trainable_weights=4 if spectral else 0,
        expected_output_shape=(BATCH, HEIGHT, WIDTH, CHANNELS),
        keeps_sequence_length=False,
        atol=1e-4,
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [({"key_ratio": 0}, "key_ratio=0"),
     ({"value_ratio": 1.5}, "value_ratio=1.5"),
     ({"pool_size": True}, "pool_size=True")])
def test_argument_errors_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SelfAttention2D(**kwargs)


def test_input_errors_name_the_argument():
    with pytest.raises(ValueError, match="inputs.shape"):
        SelfAttention2D()(np.zeros((2, 4, 16), "float32"))
    with pytest.raises(ValueError, match=r"multiple of pool_size=2.*\(2, 5, 6, 16\)"):
        SelfAttention2D()(np.zeros((2, 5, 6, 16), "float32"))
    with pytest.raises(ValueError, match="key_ratio=8"):
        SelfAttention2D()(np.zeros((2, 4, 4, 4), "float32"))
