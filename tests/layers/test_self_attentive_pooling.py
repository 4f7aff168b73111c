"""`SelfAttentivePooling`: Lin et al. (2017), against a NumPy reference."""

import re

import keras
import numpy as np
import pytest

from keras_attention.layers import SelfAttentivePooling
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import gradient
from tests.harness import run_layer_test

RNG = np.random.default_rng(0)
BATCH, SEQ_LEN, DIM, UNITS, HOPS = 3, 5, 4, 6, 3
STATES = RNG.normal(size=(BATCH, SEQ_LEN, DIM)).astype("float32")
# A full row, a row with two real positions, a fully padded row.
PADDING = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], bool)


def numpy_reference(layer, states, padding):
    """A, M and the penalty (mean over rows with a real position)."""
    hidden = np.tanh(states @ as_numpy(layer.hidden_kernel))  # (B, S, U)
    scores = (hidden @ as_numpy(layer.hop_kernel)).transpose(0, 2, 1)
    mask = np.broadcast_to(padding[:, None, :], scores.shape)
    exp = np.where(mask, np.exp(scores - scores.max(-1, keepdims=True)), 0.0)
    total = exp.sum(-1, keepdims=True)
    weights = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    pooled = weights @ states  # (B, N, D)
    gram = weights @ weights.transpose(0, 2, 1)  # (B, N, N)
    per_row = ((gram - np.eye(weights.shape[1])) ** 2).sum((1, 2))
    real = padding.any(-1)
    return weights, pooled, per_row[real].mean()


@pytest.mark.parametrize("flatten, penalty, losses",
                         [(False, 0.5, 1), (True, 0.0, 0)])
def test_layer_harness(flatten, penalty, losses):
    shape = (BATCH, HOPS * DIM) if flatten else (BATCH, HOPS, DIM)
    run_layer_test(
        SelfAttentivePooling,
        {"units": UNITS, "num_hops": HOPS, "penalty": penalty,
         "flatten": flatten},
        {"inputs": STATES, "padding_mask": PADDING},
        # hidden_kernel (D, U), hop_kernel (U, N)
        expected_num_trainable_weights=2,
        expected_num_losses=losses,
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=shape,
        mask_argument="padding_mask",
        keeps_sequence_length=False,
    )


def test_equals_numpy_reference():
    layer = SelfAttentivePooling(UNITS, HOPS, penalty=2.0)
    pooled, weights = layer(STATES, padding_mask=PADDING,
                            return_attention_scores=True)
    want_weights, want_pooled, want_penalty = numpy_reference(
        layer, STATES, PADDING
    )
    assert_allclose(weights, want_weights, atol=1e-6)
    assert_allclose(pooled, want_pooled, atol=1e-6)
    assert len(layer.losses) == 1
    assert_allclose(layer.losses[0], 2.0 * want_penalty, rtol=1e-5)

    flat = SelfAttentivePooling(UNITS, HOPS, flatten=True)
    flat(STATES)
    flat.set_weights(layer.get_weights())
    assert_allclose(flat(STATES, padding_mask=PADDING),
                    want_pooled.reshape(BATCH, HOPS * DIM), atol=1e-6)
    assert flat.losses == []  # penalty 0: no loss


def test_masks_padding_and_the_fully_padded_row():
    layer = SelfAttentivePooling(UNITS, HOPS, penalty=1.0)
    pooled, weights = layer(STATES, padding_mask=PADDING,
                            return_attention_scores=True)
    weights, pooled = as_numpy(weights), as_numpy(pooled)
    real = np.broadcast_to(PADDING[:, None, :], weights.shape)
    assert_array_equal(weights[~real], 0.0)  # exactly zero
    assert_allclose(weights[:2].sum(-1), np.ones((2, HOPS)), atol=1e-6)
    assert_array_equal(weights[2], 0.0)
    assert_array_equal(pooled[2], 0.0)
    assert np.isfinite(as_numpy(layer.losses[0]))

    # Padded content changes nothing, the penalty included.
    noisy = np.where(PADDING[..., None], STATES,
                     RNG.normal(size=STATES.shape).astype("float32") * 50)
    again = layer(noisy, padding_mask=PADDING)
    assert_allclose(again, pooled, atol=1e-6)
    before = as_numpy(layer.losses[0])
    layer(noisy, padding_mask=PADDING)
    assert_allclose(layer.losses[0], before, rtol=1e-6)
    # ...whereas without the mask it does (the check above can fail).
    assert not np.allclose(as_numpy(layer(noisy)), as_numpy(layer(STATES)))


def test_implicit_mask_from_embedding_equals_padding_mask():
    tokens = np.array([[3, 5, 2, 7, 1], [4, 6, 0, 0, 0]], "int32")
    pooling = SelfAttentivePooling(UNITS, HOPS)

    implicit_input = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, DIM, mask_zero=True)
    implicit = keras.Model(implicit_input,
                           pooling(embedding(implicit_input)))

    token_input = keras.Input((None,), dtype="int32")
    mask_input = keras.Input((None,), dtype="bool")
    plain = keras.layers.Embedding(10, DIM)
    explicit = keras.Model(
        [token_input, mask_input],
        pooling(plain(token_input), padding_mask=mask_input),
    )
    plain.set_weights(embedding.get_weights())
    want = explicit([tokens, tokens != 0])
    assert_allclose(implicit(tokens), want, atol=1e-6)
    assert_allclose(implicit(tokens[1:, :2]), as_numpy(want)[1:], atol=1e-6)
    unmasked = pooling(plain(tokens))
    assert not np.allclose(as_numpy(unmasked)[1], as_numpy(want)[1])


def _layer_with_kernels(hidden_kernel, hop_kernel, penalty=1.0):
    layer = SelfAttentivePooling(hidden_kernel.shape[1], hop_kernel.shape[1],
                                 penalty=penalty)
    layer.build((None, None, hidden_kernel.shape[0]))
    layer.set_weights([hidden_kernel, hop_kernel])
    return layer


def test_penalty_by_hand():
    # Position t holds 10 e_t; W1 = I, W2 = 100 P: hop n scores 100 tanh(10)
    # at the position P sends it to, 0 elsewhere, so A is one-hot.
    states = np.eye(3, dtype="float32")[None] * 10.0  # (1, S=3, D=3)
    disjoint = _layer_with_kernels(np.eye(3, dtype="float32"),
                                   100.0 * np.eye(3, dtype="float32"))
    _, weights = disjoint(states, return_attention_scores=True)
    assert_allclose(weights[0], np.eye(3), atol=1e-6)
    assert_allclose(disjoint.losses[0], 0.0, atol=1e-6)  # A Aᵀ = I

    # Every hop at position 0: A Aᵀ = ones, ||J - I||² = N² - N = 6.
    same = np.zeros((3, 3), "float32")
    same[0] = 100.0
    alike = _layer_with_kernels(np.eye(3, dtype="float32"), same)
    alike(states)
    assert_allclose(alike.losses[0], 6.0, rtol=1e-5)

    # W2 = 0: uniform rows over the L real positions, A Aᵀ = J / L:
    # ||J/L - I||² = N (1 - 1/L)² + (N² - N) / L². N = 3: L = 5 gives
    # 1.92 + 0.24 = 2.16, L = 2 gives 0.75 + 1.5 = 2.25; the fully padded
    # row is left out of the mean; penalty = 2.
    uniform = _layer_with_kernels(RNG.normal(size=(DIM, UNITS)),
                                  np.zeros((UNITS, HOPS)), penalty=2.0)
    uniform(STATES, padding_mask=PADDING)
    assert_allclose(uniform.losses[0], 2.0 * (2.16 + 2.25) / 2, rtol=1e-5)
    uniform(STATES, padding_mask=np.zeros_like(PADDING))
    assert_allclose(uniform.losses[0], 0.0)  # nothing real: no penalty


def test_gradient_flows_and_skips_padded_positions():
    layer = SelfAttentivePooling(UNITS, HOPS, penalty=1.0)
    layer.build(STATES.shape)

    def objective(states):
        pooled = layer(states, padding_mask=PADDING)
        return keras.ops.sum(pooled**2) + layer.losses[0]

    (grads,) = gradient(objective, STATES)
    assert np.all(np.isfinite(grads))
    assert np.all(np.abs(grads[PADDING]).sum(-1) > 0)
    assert_array_equal(grads[~PADDING], 0.0)


def test_symbolic_shapes():
    states = keras.Input((None, DIM))
    pooled, weights = SelfAttentivePooling(UNITS, HOPS)(
        states, return_attention_scores=True
    )
    assert tuple(pooled.shape) == (None, HOPS, DIM)
    assert tuple(weights.shape) == (None, HOPS, None)
    flat = SelfAttentivePooling(UNITS, HOPS, flatten=True)
    assert flat.compute_output_shape((2, 7, DIM)) == (2, HOPS * DIM)
    assert tuple(flat(states).shape) == (None, HOPS * DIM)


@pytest.mark.parametrize("name, value", [
    ("units", 0), ("num_hops", -1), ("num_hops", 2.5), ("penalty", -1.0),
    ("flatten", "yes"),
])
def test_bad_arguments_are_named(name, value):
    kwargs = {"units": 4, "num_hops": 2, name: value}
    with pytest.raises(ValueError, match=re.escape(f"{name}={value!r}")):
        SelfAttentivePooling(**kwargs)


def test_bad_inputs_are_named():
    layer = SelfAttentivePooling(UNITS, HOPS)
    with pytest.raises(ValueError, match=r"inputs\.shape=\(3, 5\)"):
        layer(STATES[..., 0])
    with pytest.raises(ValueError, match=r"padding_mask\.shape=\(3, 4\)"):
        layer(STATES, padding_mask=PADDING[:, :4])
    with pytest.raises(ValueError, match=r"inputs\.shape=\(3, 5, 2\)"):
        layer(STATES[..., :2])  # built with dim 4
