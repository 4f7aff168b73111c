"""Hard attention's pure functions: drawing a location by the inverse CDF,
the weights a hard step reads with, the log-probability and entropy terms,
and the REINFORCE estimator pinned to its definition (a hand-computed
gradient, and unbiasedness with or without a baseline)."""

import numpy as np
import pytest
from keras import ops

from keras_attention.ops.stochastic import attention_entropy
from keras_attention.ops.stochastic import hard_weights
from keras_attention.ops.stochastic import location_log_prob
from keras_attention.ops.stochastic import reinforce_surrogate
from keras_attention.ops.stochastic import sample_locations
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import compiled
from tests.backend import gradient

RNG = np.random.default_rng(0)


def softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def test_sample_locations_inverts_the_cumulative_sum():
    weights = softmax(RNG.normal(size=(64, 7))).astype("float32")
    noise = RNG.random(64).astype("float32")
    # NumPy: the first i with u < Σ_{j<=i} α_j.
    want = np.array([np.argmax(u < np.cumsum(row))
                     for row, u in zip(weights, noise)])
    assert_array_equal(sample_locations(weights, noise), want)
    assert_array_equal(compiled(sample_locations)(weights, noise), want)


def test_sample_locations_follows_the_distribution_and_skips_zeros():
    alpha = np.array([0.1, 0.0, 0.6, 0.3, 0.0], "float32")
    draws = 1000
    noise = (np.arange(draws, dtype="float32") + 0.5) / draws  # a fine grid
    chosen = as_numpy(sample_locations(np.tile(alpha, (draws, 1)), noise))
    np.testing.assert_array_equal(np.bincount(chosen, minlength=5),
                                  [100, 0, 600, 300, 0])
    # Weights that round to a sum below the draw: the clip keeps it on
    # the last location with weight, never a trailing zero-weight one.
    short = np.array([[0.5, 0.49999, 0.0, 0.0]], "float32")
    assert np.cumsum(short)[-1] < np.float32(0.99999994)
    top = as_numpy(sample_locations(short, np.array([0.99999994])))
    assert top[0] == 1


def test_hard_weights_one_hot_argmax_and_expectation_rows():
    alpha = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]], "float32")
    noise = np.array([0.1, 0.95], "float32")
    assert_allclose(hard_weights(alpha, noise), [[1, 0, 0], [0, 0, 1]])
    assert_allclose(hard_weights(alpha, argmax=True), [[0, 1, 0], [1, 0, 0]])
    mixed = hard_weights(alpha, noise, expectation=np.array([False, True]))
    assert_allclose(mixed, [[1, 0, 0], alpha[1]])
    assert_allclose(hard_weights(alpha), alpha)  # no draw: soft
    with pytest.raises(ValueError, match="argmax=True"):
        hard_weights(alpha, noise, argmax=True)


def test_log_prob_and_entropy_against_numpy():
    weights = softmax(RNG.normal(size=(2, 4, 5))).astype("float32")
    locations = RNG.integers(0, 5, (2, 4))
    step_mask = np.array([[True, True, True, False], [True] * 4])
    picked = np.take_along_axis(weights, locations[..., None], -1)[..., 0]
    assert_allclose(location_log_prob(weights, locations, step_mask),
                    (np.log(picked) * step_mask).sum(-1), rtol=1e-5)
    entropy = -(weights * np.log(weights)).sum(-1)
    assert_allclose(attention_entropy(weights, step_mask),
                    (entropy * step_mask).sum(-1), rtol=1e-5)


def test_reinforce_gradient_of_a_tiny_case_by_hand():
    # α = softmax(z), one sampled location s = 2, advantage A = 1.5:
    # ∂(−A log α_s)/∂z = −A (e_s − α).
    logits = np.array([0.3, -1.0, 0.7], "float32")
    alpha = softmax(logits)

    def surrogate(z):
        weights = ops.softmax(z)[None, None]  # (1, 1, 3)
        log_prob = location_log_prob(weights, np.array([[2]]))
        return reinforce_surrogate(log_prob, np.array([1.5], "float32"))

    (got,) = gradient(surrogate, logits)
    np.testing.assert_allclose(got, -1.5 * (np.eye(3)[2] - alpha), rtol=1e-5)

    # The advantage is a constant of the estimator: an advantage worth 1.5
    # whose gradient w.r.t. z is 1 (were it not stopped, the result would
    # gain −log α_s per logit) gives the same gradient.
    def from_z(z):
        weights = ops.softmax(z)[None, None]
        log_prob = location_log_prob(weights, np.array([[2]]))
        total = ops.sum(z)
        advantage = 1.5 + total - ops.stop_gradient(total)
        return reinforce_surrogate(log_prob, advantage[None])

    (same,) = gradient(from_z, logits)
    np.testing.assert_allclose(same, got, rtol=1e-6)


@pytest.mark.parametrize("baseline", [0.0, 1.7])
def test_reinforce_is_unbiased_with_any_baseline(baseline):
    # E_s[r_s]'s exact gradient w.r.t. z is α ⊙ (r − E[r]); the mean of
    # −∇ surrogate over draws on a fine grid of u recovers it.
    logits = np.array([0.2, -0.5, 1.0, 0.1], "float32")
    reward = np.array([1.0, 3.0, -2.0, 0.5], "float32")
    alpha = softmax(logits)
    exact = alpha * (reward - alpha @ reward)
    draws = 2000
    noise = ((np.arange(draws) + 0.5) / draws).astype("float32")
    chosen = as_numpy(sample_locations(np.tile(alpha, (draws, 1)), noise))
    advantage = (reward[chosen] - baseline).astype("float32")

    def surrogate(z):
        weights = ops.broadcast_to(ops.softmax(z), (draws, 1, 4))
        log_prob = location_log_prob(weights, chosen[:, None])
        return reinforce_surrogate(log_prob, advantage) / draws

    (estimate,) = gradient(surrogate, logits)
    np.testing.assert_allclose(-estimate, exact, atol=2e-3)
