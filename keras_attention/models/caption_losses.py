"""The captioner's training terms beyond the cross-entropy: Xu et al.'s
doubly stochastic attention penalty, and the REINFORCE learning rule of
their hard (stochastic) attention.

Letters: B batch, T caption length, L locations, V vocabulary size.
"""

import keras
from keras import ops

from keras_attention.ops import stochastic


def doubly_stochastic_penalty(attention, step_mask=None):
    """Xu et al.'s doubly stochastic attention penalty per example,
    `Σ_i (1 − Σ_t α_ti)²`: each location should get, over the caption, a
    total weight of about one.

    Args:
        attention: `(B, T, L)` the weights `α_ti` of each step.
        step_mask: `(B, T)` boolean, True at the caption's real steps
            (padded steps add nothing); None counts every step.

    Returns:
        `(B,)` float32.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.captioner import doubly_stochastic_penalty
    >>> alpha = np.array([[[0.5, 0.5], [1.0, 0.0]]], "float32")  # (1, 2, 2)
    >>> float(doubly_stochastic_penalty(alpha)[0])  # (1 - 1.5)² + (1 - 0.5)²
    0.5
    """
    attention = ops.cast(attention, "float32")
    if step_mask is not None:
        attention = attention * ops.cast(step_mask, "float32")[:, :, None]
    coverage = ops.sum(attention, axis=1)  # (B, T, L) -> (B, L)
    return ops.sum(ops.square(1.0 - coverage), axis=-1)  # (B,)


def reinforce_terms(logits, weights, targets, location_noise, expectation,
                    baseline, pad_id=0, reinforce_weight=0.1,
                    entropy_weight=0.002):
    """Hard attention's learning rule for one batch (Xu et al.,
    equation 12), as losses to minimise.

    Args:
        logits: `(B, T, V)` under the sampled locations.
        weights: `(B, T, L)` the distributions `α_t` they came from.
        targets: `(B, T)` the labels (`pad_id` after the caption).
        location_noise: `(B, T)` the uniforms that drew the locations.
        expectation: `(B,)` boolean: rows that read the expectation
            (no sample, so no REINFORCE term).
        baseline: the scalar `b` subtracted from each caption's NLL.
        pad_id: the padding label.
        reinforce_weight: λ_r.
        entropy_weight: λ_e.

    Returns:
        dict: `nll` `(B,)` each caption's `−log p(y | s̃, a)`,
        `reinforce` `λ_r Σ_b (NLL_b − b) Σ_t log α_t[s_t] / steps`
        (gradient through `log α` only) and `entropy`
        `−λ_e Σ_b Σ_t H(α_t) / steps`, both scalars.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.caption_losses import reinforce_terms
    >>> alpha = np.full((1, 2, 4), 0.25, "float32")  # (B, T, L): uniform
    >>> terms = reinforce_terms(
    ...     np.zeros((1, 2, 3), "float32"), alpha, np.array([[1, 2]]),
    ...     np.array([[0.1, 0.6]], "float32"), np.array([False]),
    ...     baseline=0.0, reinforce_weight=1.0, entropy_weight=0.0)
    >>> round(float(terms["nll"][0]), 4)  # 2 log 3
    2.1972
    >>> round(float(terms["reinforce"]), 4)  # −(0 − 2 log 3)(2 log ¼) / 2
    -3.046
    """
    step_mask = ops.not_equal(targets, pad_id)  # (B, T)
    mask = ops.cast(step_mask, "float32")
    steps = ops.maximum(ops.sum(mask), 1.0)
    token_nll = keras.losses.sparse_categorical_crossentropy(
        targets, ops.cast(logits, "float32"), from_logits=True)  # (B, T)
    nll = ops.sum(token_nll * mask, axis=-1)  # (B,)
    batch, length, locations = ops.shape(weights)
    sampled = stochastic.sample_locations(
        ops.reshape(weights, (-1, locations)),
        ops.reshape(location_noise, (-1,)))  # (B * T,)
    sampled = ops.reshape(sampled, (batch, length))  # (B, T)
    log_prob = stochastic.location_log_prob(weights, sampled, step_mask)
    sampled_rows = 1.0 - ops.cast(expectation, "float32")  # (B,)
    # REINFORCE maximises the reward −NLL: the advantage is b − NLL.
    advantage = (ops.cast(baseline, "float32") - nll) * sampled_rows
    reinforce = reinforce_weight * stochastic.reinforce_surrogate(
        log_prob, advantage) / steps
    entropy = -entropy_weight * ops.sum(
        stochastic.attention_entropy(weights, step_mask)) / steps
    return {"nll": nll, "reinforce": reinforce, "entropy": entropy}
