"""The masked, label-smoothed loss's written-out gradient against the
formula and against automatic differentiation of the plain loss."""

import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_attention.training import MaskedCrossentropy

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(2, 4, 7)).astype("float32") * 3
LABELS = np.array([[5, 6, 4, 0], [4, 3, 0, 0]], "int32")  # 0 = padding
REAL = LABELS != 0


def plain_loss(labels, logits, label_smoothing):
    """The loss as written before its gradient was: gather, mean, mask."""
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    target = ops.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    per_token = -((1.0 - label_smoothing) * target
                  + label_smoothing * ops.mean(log_probs, axis=-1))
    mask = ops.cast(labels != 0, "float32")
    return ops.sum(per_token * mask) / ops.sum(mask)


def gradient(loss, logits):
    logits = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        value = loss(logits)
    return value, tape.gradient(value, logits)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_gradient_is_the_formula(label_smoothing):
    _, ours = gradient(
        lambda z: MaskedCrossentropy(label_smoothing)(LABELS, z), LOGITS)
    logits = LOGITS.astype("float64")
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    vocabulary = LOGITS.shape[-1]
    smoothed = (np.eye(vocabulary)[LABELS] * (1 - label_smoothing)
                + label_smoothing / vocabulary)
    want = (probs - smoothed) * REAL[..., None] / REAL.sum()
    np.testing.assert_allclose(np.array(ours), want, atol=1e-7)


def test_value_and_gradient_equal_the_plain_loss():
    loss = MaskedCrossentropy(0.1)
    ours_value, ours = gradient(lambda z: loss(LABELS, z), LOGITS)
    plain_value, plain = gradient(lambda z: plain_loss(LABELS, z, 0.1),
                                  LOGITS)
    assert float(ours_value) == float(plain_value)
    np.testing.assert_allclose(np.array(ours), np.array(plain), atol=1e-7)
    assert not np.array(ours)[~REAL].any()  # padding gets no gradient


def test_half_precision_logits_get_a_gradient_of_their_dtype():
    logits = tf.cast(LOGITS, "bfloat16")
    with tf.GradientTape() as tape:
        tape.watch(logits)
        value = MaskedCrossentropy(0.1)(LABELS, logits)
    ours = tape.gradient(value, logits)
    assert ours.dtype == tf.bfloat16
    _, plain = gradient(lambda z: plain_loss(LABELS, z, 0.1),
                        np.array(tf.cast(logits, "float32")))
    np.testing.assert_allclose(np.array(tf.cast(ours, "float32")),
                               np.array(plain), atol=1e-3)
