"""Stochastic ("hard") attention and the REINFORCE estimator, as pure
functions on tensors (no weights, no random state: the caller draws the
noise, so a test can fix it).

Letters: B batch, S locations (keys), T steps.
"""

from keras import ops


def sample_locations(weights, noise):
    """One location per row, drawn from the categorical distribution
    `weights` by inverting its cumulative sum at the uniform `noise`:
    the first `i` with `u < Σ_{j<=i} α_j`.

    With `noise ~ U[0, 1)` this is a sample of `Multinoulli(α)`; locations
    with zero weight (masked ones) are never chosen.

    Args:
        weights: `(B, S)` non-negative, summing to 1 over S.
        noise: `(B,)` uniforms in `[0, 1)`.

    Returns:
        `(B,)` int32 location indices.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops.stochastic import sample_locations
    >>> alpha = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]], "float32")
    >>> ops.convert_to_numpy(sample_locations(alpha, np.array([0.69, 0.1])))
    array([1, 2], dtype=int32)
    """
    weights = ops.cast(weights, "float32")
    noise = ops.cast(noise, "float32")
    cumulative = ops.cumsum(weights, axis=-1)  # (B, S)
    # Locations whose cumulative weight is still <= u lie before the draw.
    before = ops.sum(ops.cast(cumulative <= noise[:, None], "int32"), axis=-1)
    # Rounding can leave the last cumulative sum a hair under u: clip, and
    # walk back over trailing zero-weight (masked) locations.
    last_positive = ops.shape(weights)[-1] - 1 - ops.argmax(
        ops.flip(ops.cast(weights > 0, "int32"), axis=-1), axis=-1)
    return ops.cast(ops.minimum(before, ops.cast(last_positive, "int32")),
                    "int32")  # (B,)


def hard_weights(weights, noise=None, argmax=False, expectation=None):
    """The weights a hard-attention step reads the memory with.

    Args:
        weights: `(B, S)` the attention distribution `α`.
        noise: `(B,)` uniforms: sample a location (`sample_locations`).
        argmax: take the most likely location instead (decoding).
        expectation: optional `(B,)` boolean: rows that use `α` itself
            (the expected context, Xu et al.'s "with probability 0.5");
            the others use the one-hot location.

    Returns:
        `(B, S)` float32: one-hot rows (or `α` where `expectation`), or
        `α` unchanged when neither `noise` nor `argmax` is given.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops.stochastic import hard_weights
    >>> alpha = np.array([[0.2, 0.5, 0.3]], "float32")
    >>> ops.convert_to_numpy(hard_weights(alpha, argmax=True))
    array([[0., 1., 0.]], dtype=float32)
    """
    weights = ops.cast(weights, "float32")
    if noise is not None and argmax:
        raise ValueError("Give `noise` (sample a location) or `argmax` (the "
                         "most likely one), not both, received: noise and "
                         "argmax=True")
    if noise is None and not argmax:
        return weights
    if argmax:
        index = ops.argmax(weights, axis=-1)
    else:
        index = sample_locations(weights, noise)
    chosen = ops.one_hot(index, ops.shape(weights)[-1], dtype="float32")
    if expectation is None:
        return chosen  # (B, S)
    return ops.where(ops.cast(expectation, "bool")[:, None], weights, chosen)


def location_log_prob(weights, locations, step_mask=None):
    """`Σ_t log α_t[s_t]` per sequence: the log-probability of the sampled
    locations, the score function REINFORCE multiplies by the advantage.

    Args:
        weights: `(B, T, S)` the attention distributions.
        locations: `(B, T)` int sampled indices.
        step_mask: `(B, T)` boolean, True at real steps (None: all).

    Returns:
        `(B,)` float32.

    Example:

    >>> import numpy as np
    >>> from keras_attention.ops.stochastic import location_log_prob
    >>> alpha = np.array([[[0.5, 0.5], [0.25, 0.75]]], "float32")
    >>> round(float(location_log_prob(alpha, np.array([[0, 1]]))[0]), 4)
    -0.9808
    """
    weights = ops.cast(weights, "float32")
    chosen = ops.take_along_axis(
        weights, ops.expand_dims(ops.cast(locations, "int32"), -1), axis=-1
    )[..., 0]  # (B, T)
    log_prob = ops.log(ops.maximum(chosen, 1e-8))
    if step_mask is not None:
        log_prob = log_prob * ops.cast(step_mask, "float32")
    return ops.sum(log_prob, axis=-1)  # (B,)


def attention_entropy(weights, step_mask=None):
    """`H(α_t) = −Σ_i α_ti log α_ti` summed over the real steps, per
    sequence (the entropy term of Xu et al.'s learning rule).

    Args:
        weights: `(B, T, S)`.
        step_mask: `(B, T)` boolean (None: all steps).

    Returns:
        `(B,)` float32.

    Example:

    >>> import numpy as np
    >>> from keras_attention.ops.stochastic import attention_entropy
    >>> alpha = np.array([[[0.5, 0.5], [1.0, 0.0]]], "float32")
    >>> round(float(attention_entropy(alpha)[0]), 4)  # log 2 + 0
    0.6931
    """
    weights = ops.cast(weights, "float32")
    entropy = -ops.sum(weights * ops.log(ops.maximum(weights, 1e-8)),
                       axis=-1)  # (B, T)
    if step_mask is not None:
        entropy = entropy * ops.cast(step_mask, "float32")
    return ops.sum(entropy, axis=-1)


def reinforce_surrogate(log_probs, advantages):
    """The REINFORCE surrogate `−Σ_b A_b log p(s_b)` with the advantages
    held constant: its gradient is `−Σ_b A_b ∇ log p(s_b)`, the score-
    function estimator of `−∇ E[R]` (Williams 1992), where `A_b = R_b − b`
    is the reward less a baseline. Minimise it (added to a loss).

    Args:
        log_probs: `(B,)` the log-probability of each sampled action
            sequence (`location_log_prob`), differentiable.
        advantages: `(B,)` `R_b − b`; no gradient flows into it.

    Returns:
        A float32 scalar (a sum over the batch; divide as the loss does).

    Example:

    >>> import numpy as np
    >>> from keras_attention.ops.stochastic import reinforce_surrogate
    >>> float(reinforce_surrogate(np.array([-1.0, -2.0]), np.array([0.5, -1.0])))
    -1.5
    """
    advantages = ops.stop_gradient(ops.cast(advantages, "float32"))
    return -ops.sum(advantages * ops.cast(log_probs, "float32"))
