"""LocalSelfAttention against MultiHeadSelfAttention with a band mask."""

import numpy as np
import pytest
from keras import ops

from keras_attention.layers import LocalSelfAttention
from keras_attention.layers import MultiHeadSelfAttention
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import gradient
from tests.backend import tensorflow_only
from tests.harness import run_layer_test

RNG = np.random.default_rng(11)
BATCH, DIM = 2, 8


def _inputs(length):
    return RNG.normal(size=(BATCH, length, DIM)).astype("float32")


def _padding(length):
    padding = np.ones((BATCH, length), bool)
    padding[1, max(1, length - 3):] = False
    return padding


def band_mask(length, window, causal):
    """`(T, T)`: |i - j| <= window, and j <= i when causal."""
    distance = np.arange(length)[:, None] - np.arange(length)[None, :]
    allowed = np.abs(distance) <= window
    return allowed & (distance >= 0) if causal else allowed


def dense_weights(blocked, block, before):
    """`(B, N, T, K)` blocked weights -> `(B, N, T, T)`."""
    length, keys = blocked.shape[2], blocked.shape[3]
    dense = np.zeros(blocked.shape[:2] + (length, length), blocked.dtype)
    for i in range(length):
        for k in range(keys):
            j = (i // block - before) * block + k
            if 0 <= j < length:
                dense[:, :, i, j] = blocked[:, :, i, k]
            else:
                assert np.all(blocked[:, :, i, k] == 0.0)
    return dense


def _pair(window, causal, block_size=None, **kwargs):
    local = LocalSelfAttention(num_heads=2, key_dim=4, window=window,
                               causal=causal, block_size=block_size,
                               **kwargs)
    full = MultiHeadSelfAttention(num_heads=2, key_dim=4, **kwargs)
    sample = _inputs(3)
    local(sample)
    full(sample)
    for target, source in zip(full.weights, local.weights):
        assert target.path.split("/", 1)[1] == source.path.split("/", 1)[1]
        target.assign(source)
    return local, full


CASES = [
    # (length, window, block_size)
    (1, 2, None), (2, 3, None), (5, 2, None), (6, 2, None), (7, 3, None),
    (11, 2, None), (9, 3, 2), (10, 2, 5), (8, 1, None), (13, 4, 3),
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("length, window, block_size", CASES)
def test_equals_full_attention_with_band_mask(length, window, block_size,
                                               causal):
    local, full = _pair(window, causal, block_size)
    inputs, padding = _inputs(length), _padding(length)
    output, weights = local(inputs, padding_mask=padding,
                            return_attention_scores=True)
    band = np.broadcast_to(band_mask(length, window, causal),
                           (BATCH, length, length))
    want_output, want_weights = full(inputs, padding_mask=padding,
                                     attention_mask=band,
                                     return_attention_scores=True)
    block = block_size or window
    before = -(-window // block)
    assert_allclose(
        dense_weights(as_numpy(weights), block, before), want_weights,
        atol=1e-6)
    assert_allclose(output, want_output, atol=1e-5)


def test_use_causal_mask_and_mean_merge():
    local, full = _pair(2, False, head_merge="mean", value_dim=3)
    inputs = _inputs(7)
    band = np.broadcast_to(band_mask(7, 2, True), (BATCH, 7, 7))
    assert_allclose(
        local(inputs, use_causal_mask=True),
        full(inputs, attention_mask=band), atol=1e-5)


def test_fully_padded_rows_are_zero_weights():
    local, _ = _pair(2, True)
    padding = np.zeros((BATCH, 5), bool)
    padding[0, :2] = True
    output, weights = local(_inputs(5), padding_mask=padding,
                            return_attention_scores=True)
    weights = as_numpy(weights)
    assert np.all(np.isfinite(as_numpy(output)))
    assert np.all(weights[1] == 0.0) and np.all(weights[0, :, 2:] == 0.0)
    assert_allclose(weights[0, :, :2].sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_gradient_receptive_field(causal):
    local, _ = _pair(2, causal, block_size=3)
    inputs = _inputs(9)[:1]
    direction = RNG.normal(size=(DIM,)).astype("float32")
    field = []
    for position in range(9):
        (inputs_gradient,) = gradient(  # (1, T, D)
            lambda x, t=position: ops.sum(ops.multiply(local(x)[0, t], direction)),
            inputs)
        field.append(np.abs(inputs_gradient[0]).sum(-1))
    field = np.stack(field)  # (T outputs, T inputs)
    band = band_mask(9, 2, causal)
    assert np.all(field[~band] == 0.0)
    assert np.all(field[band] > 0.0)


@tensorflow_only("tf.TensorSpec: unknown sequence length")
@pytest.mark.parametrize("causal", [False, True])
def test_unknown_length_in_tf_function(causal):
    import tensorflow as tf

    local, full = _pair(3, causal, block_size=2)

    @tf.function(input_signature=[
        tf.TensorSpec((None, None, DIM)), tf.TensorSpec((None, None), "bool")])
    def run(inputs, padding):
        return local(inputs, padding_mask=padding)

    for length in (1, 4, 7):
        inputs, padding = _inputs(length), _padding(length)
        band = np.broadcast_to(band_mask(length, 3, causal),
                               (BATCH, length, length))
        assert_allclose(
            run(inputs, padding),
            full(inputs, padding_mask=padding, attention_mask=band),
            atol=1e-5)


@pytest.mark.parametrize(
    "init_kwargs, length, causal",
    [
        ({"window": 2, "dropout": 0.1}, 7, False),
        ({"window": 3, "block_size": 2, "causal": True, "value_dim": 3,
          "output_dim": 6, "diversity_penalty": 0.1}, 5, False),
        ({"window": 1, "head_merge": "mean"}, 6, True),
    ],
    ids=["dropout", "causal_blocks", "call_causal_mean"],
)
def test_harness(init_kwargs, length, causal):
    padding = _padding(length)
    run_layer_test(
        LocalSelfAttention,
        {"num_heads": 2, "key_dim": 4, **init_kwargs},
        expected_num_trainable_weights=8,  # MultiHeadSelfAttention's
        expected_num_losses=int("diversity_penalty" in init_kwargs),
        inputs={"inputs": _inputs(length), "padding_mask": padding},
        call_kwargs={"use_causal_mask": causal,
                     "return_attention_scores": True},
        expected_output_shape=(BATCH, length,
                               init_kwargs.get("output_dim", DIM)),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"window": 0}, "window=0"),
        ({"window": 2.5}, "window=2.5"),
        ({"window": True}, "window=True"),
        ({"window": 2, "block_size": 0}, "block_size=0"),
        ({"window": 2, "num_heads": -1}, "num_heads=-1"),
    ],
)
def test_argument_errors_name_the_argument(kwargs, message):
    kwargs = {"num_heads": 2, "key_dim": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        LocalSelfAttention(**kwargs)


def test_input_errors_name_the_argument():
    layer = LocalSelfAttention(num_heads=2, key_dim=4, window=2)
    with pytest.raises(ValueError, match="inputs.shape"):
        layer(np.zeros((2, 8), "float32"))
    with pytest.raises(ValueError, match="padding_mask.shape"):
        layer(_inputs(5), padding_mask=np.ones((BATCH, 4), bool))
