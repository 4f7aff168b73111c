"""The masked, label-smoothed loss and accuracy against references."""

import keras
import numpy as np
import pytest

from keras_attention.training import MaskedAccuracy
from keras_attention.training import MaskedCrossentropy
from keras_attention.training import TransformerSchedule

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(2, 4, 7)).astype("float32") * 3
LABELS = np.array([[5, 6, 4, 0], [4, 3, 0, 0]], "int32")  # 0 = padding
REAL = LABELS != 0


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_without_smoothing_equals_keras_on_real_tokens():
    ours = float(MaskedCrossentropy(label_smoothing=0.0)(LABELS, LOGITS))
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    want = float(keras_loss(LABELS[REAL], LOGITS[REAL]))
    assert ours == pytest.approx(want, rel=1e-5)


def test_label_smoothing_formula():
    log_probs = log_softmax(LOGITS.astype("float64"))
    target = np.take_along_axis(log_probs, LABELS[..., None], -1)[..., 0]
    per_token = -(0.9 * target + 0.1 * log_probs.mean(-1))
    want = per_token[REAL].mean()
    ours = float(MaskedCrossentropy(label_smoothing=0.1)(LABELS, LOGITS))
    assert ours == pytest.approx(want, rel=1e-5)


def test_padding_logits_do_not_matter():
    changed = LOGITS.copy()
    changed[~REAL] = RNG.normal(size=changed[~REAL].shape) * 100
    loss = MaskedCrossentropy()
    assert float(loss(LABELS, changed)) == pytest.approx(
        float(loss(LABELS, LOGITS)), rel=1e-6
    )


def test_accuracy_counts_real_tokens_only():
    metric = MaskedAccuracy()
    metric.update_state(LABELS, LOGITS)
    correct = (LOGITS.argmax(-1) == LABELS)[REAL]
    assert float(metric.result()) == pytest.approx(correct.mean())


def test_schedule_warms_up_then_decays():
    schedule = TransformerSchedule(hidden_dim=512, warmup_steps=4000)
    for step in (1, 100, 4000, 10000):
        want = 512**-0.5 * min(step**-0.5, step * 4000**-1.5)
        assert float(schedule(step - 1)) == pytest.approx(want, rel=1e-5)
