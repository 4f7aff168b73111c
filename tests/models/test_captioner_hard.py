"""Captioner with hard (stochastic) attention: the REINFORCE terms against
NumPy, the estimator's gradient reaching only the attention, the baseline's
moving average, the training call, decoding by expectation or argmax
(cached == teacher forced), the configuration and argument errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import decoding
from keras_attention.models.captioner import Captioner

RNG = np.random.default_rng(1)
IMAGES = RNG.random((3, 16, 16)).astype("float32")  # (B, H, W)
TOKENS = np.array([[1, 5, 6, 7, 8], [1, 9, 4, 0, 0], [1, 3, 3, 10, 0]],
                  "int32")  # BOS = 1, PAD = 0
TARGETS = np.array([[5, 6, 7, 8, 2], [9, 4, 2, 0, 0], [3, 3, 10, 2, 0]],
                   "int32")  # EOS = 2
NOISE = RNG.random(TOKENS.shape).astype("float32")  # (B, T)
BOS, EOS, VOCABULARY = 1, 2, 12


def small(**options):
    options = {"filters": (4, 8), "feature_dim": 6, "embedding_dim": 5,
               "units": 7, "attention_units": 3, "dropout": 0.0,
               "attention": "hard", "seed": 3, **options}
    model = Captioner(VOCABULARY, **options)
    model({"images": IMAGES, "decoder_tokens": TOKENS})
    return model


def soft_twin(model):
    """A soft-attention Captioner with the hard model's weights (all but
    the baseline's)."""
    soft = Captioner.from_config({**model.get_config(), "attention": "soft"})
    soft({"images": IMAGES, "decoder_tokens": TOKENS})
    hard = {variable.path: variable for variable in model.weights}
    for variable in soft.weights:
        variable.assign(hard[variable.path])
    return soft


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_reinforce_terms_against_numpy():
    model = small(reinforce_weight=0.3, entropy_weight=0.05)
    memory, mask = model.encode(IMAGES)
    expectation = np.array([False, True, False])
    logits, weights = model.decode(
        TOKENS, memory, mask, return_attention_scores=True,
        location_noise=NOISE, expectation=expectation)
    terms = model.reinforce_terms(logits, weights, TARGETS, NOISE,
                                  expectation, baseline=4.0)
    logits, weights = np.array(logits), np.array(weights)
    real = TARGETS != 0
    token_nll = -np.take_along_axis(log_softmax(logits), TARGETS[..., None],
                                    -1)[..., 0]
    nll = (token_nll * real).sum(-1)  # (B,)
    drawn = (NOISE[..., None] >= np.cumsum(weights, -1)).sum(-1)  # (B, T)
    log_prob = (np.log(np.take_along_axis(weights, drawn[..., None], -1)[
        ..., 0]) * real).sum(-1)
    advantage = (4.0 - nll) * ~expectation  # the expectation row: none
    entropy = (-(weights * np.log(weights)).sum(-1) * real).sum()
    np.testing.assert_allclose(terms["nll"], nll, rtol=1e-5)
    np.testing.assert_allclose(
        terms["reinforce"], -0.3 * (advantage * log_prob).sum() / real.sum(),
        rtol=1e-4)
    np.testing.assert_allclose(terms["entropy"],
                               -0.05 * entropy / real.sum(), rtol=1e-5)


def test_the_estimator_trains_the_attention_only():
    """The REINFORCE term's gradient reaches the weights through log α:
    the attention's score and what feeds it (the encoder, the LSTM), never
    the output layer, whose effect enters as the constant reward."""
    model = small(entropy_weight=0.0)
    expectation = np.zeros((3,), bool)
    with tf.GradientTape(persistent=True) as tape:
        memory, mask = model.encode(IMAGES)
        logits, weights = model.decode(
            TOKENS, memory, mask, return_attention_scores=True,
            location_noise=NOISE, expectation=expectation)
        terms = model.reinforce_terms(logits, weights, TARGETS, NOISE,
                                      expectation, baseline=1.0)
    score = tape.gradient(terms["reinforce"],
                          model.decoder.attention_layer.trainable_variables)
    assert all(g is not None and float(tf.reduce_max(tf.abs(g))) > 0
               for g in score)
    output = tape.gradient(terms["reinforce"],
                           model.output_projection.trainable_variables)
    assert all(g is None for g in output)


def test_the_training_call_adds_the_terms_and_moves_the_baseline():
    model = small(doubly_stochastic=0.0, expectation_probability=0.0,
                  baseline_decay=0.9)
    inputs = {"images": IMAGES, "decoder_tokens": TOKENS, "targets": TARGETS}
    model(inputs, training=True)
    assert len(model.losses) == 1  # REINFORCE + entropy
    assert float(model.baseline_updates) == 1.0
    first = float(model.baseline) / 0.1  # b = 0.9 * 0 + 0.1 * mean NLL
    # Bias-corrected, the first average is the first batch's mean NLL.
    np.testing.assert_allclose(float(model.corrected_baseline()), first,
                               rtol=1e-5)
    assert 0.0 < first < 5 * np.log(VOCABULARY)
    model(inputs, training=True)
    assert float(model.baseline_updates) == 2.0
    # Two draws of the locations give two sets of logits.
    a = model(inputs, training=True)
    b = model(inputs, training=True)
    assert not np.allclose(a, b)
    with pytest.raises(ValueError, match="'targets'"):
        model({"images": IMAGES, "decoder_tokens": TOKENS}, training=True)


def test_fit_runs_and_always_expectation_trains_like_soft():
    model = small(expectation_probability=1.0, doubly_stochastic=0.0)
    soft = soft_twin(model)
    inputs = {"images": IMAGES, "decoder_tokens": TOKENS, "targets": TARGETS}
    # With every batch reading the expectation, the forward pass is soft's.
    np.testing.assert_allclose(model(inputs, training=True), soft(inputs),
                               atol=1e-5)
    model.compile(optimizer="adam", loss=keras.losses.
                  SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(inputs, TARGETS, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


@pytest.mark.parametrize("hard_decoding", ["expectation", "argmax"])
def test_decoding_reads_the_expectation_or_the_most_likely_location(
        hard_decoding):
    model = small(hard_decoding=hard_decoding)
    memory, mask = model.encode(IMAGES)
    full, weights = model.decode(TOKENS, memory, mask,
                                 return_attention_scores=True)
    soft = soft_twin(model)
    same = np.allclose(soft.decode(TOKENS, memory, mask), full, atol=1e-5)
    assert same == (hard_decoding == "expectation")
    cache = model.initial_cache(memory, mask, TOKENS.shape[1])
    for index in range(TOKENS.shape[1]):
        logits, cache, step_weights = model.decode_step(
            TOKENS[:, index:index + 1], index, cache, mask)
        np.testing.assert_allclose(logits, full[:, index], atol=1e-5)
        np.testing.assert_allclose(step_weights, weights[:, index], atol=1e-6)
    tokens, _ = decoding.greedy_decode(model, IMAGES, bos_id=BOS, eos_id=EOS,
                                       output_lengths=5)
    assert tuple(tokens.shape) == (3, 5)


def test_config_round_trip_and_errors():
    model = small(expectation_probability=0.25, reinforce_weight=0.2,
                  hard_decoding="argmax")
    clone = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(model))
    assert clone.get_config() == model.get_config()
    assert (clone.attention, clone.hard_decoding, clone.seed) == (
        "hard", "argmax", 3)
    for options, message in [
        ({"attention": "medium"}, "attention='medium'"),
        ({"hard_decoding": "mode"}, "hard_decoding='mode'"),
        ({"expectation_probability": 1.5}, "expectation_probability=1.5"),
        ({"reinforce_weight": -1.0}, "reinforce_weight=-1.0"),
    ]:
        with pytest.raises(ValueError, match=message):
            Captioner(10, **options)
