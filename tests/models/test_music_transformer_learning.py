"""The learning test of the Music Transformer: a tiny relative-attention
language model learns toy chorales whose voices move together (alto,
tenor and bass a fixed interval under the soprano; the soprano moves
every other step) to a note-wise NLL far below the rule that repeats each
voice's previous step, on chorales it never saw. A model that cannot tell
the voices apart, a broken relative attention, or a loss that does not
reach the targets stays at or above the rule."""

import keras
import numpy as np

from keras_attention.data import chorales
from keras_attention.models import TransformerLanguageModel

INTERVALS = np.array([0, -3, -7, -12])  # S, A, T, B under the soprano


def _toy_chorales(count, steps, rng):
    """Soprano: a walk moving by ±1 or ±2 semitones every other step;
    the other voices follow it at fixed intervals."""
    made = []
    for _ in range(count):
        soprano, line = int(rng.integers(64, 72)), []
        for step in range(steps):
            if step and step % 2 == 0:
                soprano = int(np.clip(soprano + rng.choice([-2, -1, 1, 2]),
                                      60, 76))
            line.append(soprano + INTERVALS)
        made.append(np.array(line, "int32"))
    return made


def test_relative_attention_learns_voices_that_move_together():
    rng = np.random.default_rng(0)
    train, held_out = _toy_chorales(512, 8, rng), _toy_chorales(64, 8, rng)
    keras.utils.set_random_seed(0)
    model = TransformerLanguageModel(
        vocabulary_size=chorales.VOCABULARY_SIZE, num_layers=2, num_heads=2,
        hidden_dim=32, intermediate_dim=64, attention="relative",
        positions="none", max_relative_position=8, relative_values=True,
        voices=4)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True,
                      reduction="mean_with_sample_weight"))
    for _ in range(12):  # the benchmark's windows: 16 tokens, cut anew
        rows = chorales.training_windows(train, 16, rng, start_every=8)
        model.fit(rows[:, :-1], rows[:, 1:], batch_size=32, epochs=1,
                  sample_weight=(rows[:, 1:] != chorales.PAD_ID).astype(
                      "float32"), verbose=0)
    rule = chorales.repeat_rule_nll(held_out,
                                    chorales.repeat_rate(train))
    # Scored as the benchmark scores: windows of 16 every 8 tokens.
    learned = chorales.negative_log_likelihood(model, held_out, 16)
    # The rule: 2.51 nats (half the tokens repeat). The best model pays
    # only the soprano's four-way choice every other step, and the first
    # step; this one reached 0.21 (TensorFlow, 2026-11-27).
    assert 2.3 < rule < 2.7
    assert learned < 0.4, (learned, rule)
