"""Captioner: shapes, cached steps == teacher forcing, the doubly
stochastic penalty (golden values, padded steps ignored, in the training
loss), greedy and beam decoding through `keras_attention.decoding`,
configuration round trip and argument errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import decoding
from keras_attention.models.captioner import PRESETS
from keras_attention.models.captioner import Captioner
from keras_attention.models.captioner import doubly_stochastic_penalty
from keras_attention.training.losses import MaskedCrossentropy

RNG = np.random.default_rng(0)
IMAGES = RNG.random((3, 16, 16)).astype("float32")  # (B, H, W)
TOKENS = np.array([[1, 5, 6, 7, 8], [1, 9, 4, 0, 0], [1, 3, 3, 10, 0]],
                  "int32")  # BOS = 1, PAD = 0
BOS, EOS, VOCABULARY = 1, 2, 12


def small(**options):
    options = {"filters": (4, 8), "feature_dim": 6, "embedding_dim": 5,
               "units": 7, "attention_units": 3, "dropout": 0.0, **options}
    model = Captioner(VOCABULARY, **options)
    model({"images": IMAGES, "decoder_tokens": TOKENS})
    return model


def test_shapes_and_locations():
    model = small()
    logits = model({"images": IMAGES, "decoder_tokens": TOKENS})
    assert tuple(logits.shape) == (3, 5, VOCABULARY)
    assert logits.dtype == "float32"
    memory, mask = model.encode(IMAGES)
    assert tuple(memory.shape) == (3, 16, 6)  # 16x16 / 4 = 4x4 locations
    assert np.array(mask).all()
    wide, _ = model.encode(RNG.random((2, 16, 32, 1)).astype("float32"))
    assert tuple(wide.shape) == (2, 32, 6)  # 4x8, a channel axis given


def test_cached_steps_equal_the_teacher_forced_pass():
    model = small()
    memory, mask = model.encode(IMAGES)
    full, weights = model.decode(TOKENS, memory, mask,
                                 return_attention_scores=True)
    cache = model.initial_cache(memory, mask, TOKENS.shape[1])
    for index in range(TOKENS.shape[1]):
        logits, cache, step_weights = model.decode_step(
            TOKENS[:, index:index + 1], index, cache, mask)
        np.testing.assert_allclose(logits, full[:, index], atol=1e-5)
        np.testing.assert_allclose(step_weights, weights[:, index], atol=1e-6)
    np.testing.assert_allclose(np.array(weights).sum(-1), 1.0, atol=1e-5)


def test_penalty_golden_values_ignore_padded_steps():
    attention = np.array([
        [[0.5, 0.5], [1.0, 0.0], [0.2, 0.8]],
        [[0.1, 0.9], [0.3, 0.7], [0.6, 0.4]],
    ], "float32")  # (B=2, T=3, L=2)
    step_mask = np.array([[True, True, False], [True, True, True]])
    # Row 0: coverage (1.5, 0.5) -> 0.25 + 0.25; row 1: (1.0, 2.0) -> 0 + 1.
    np.testing.assert_allclose(
        doubly_stochastic_penalty(attention, step_mask), [0.5, 1.0],
        atol=1e-6)
    # Unmasked, row 0's third step counts: (1.7, 1.3) -> 0.49 + 0.09.
    np.testing.assert_allclose(doubly_stochastic_penalty(attention),
                               [0.58, 1.0], atol=1e-6)


def test_the_penalty_enters_the_training_loss_over_real_steps_only():
    model = small(doubly_stochastic=0.7)
    inputs = {"images": IMAGES, "decoder_tokens": TOKENS}
    model(inputs)
    memory, mask = model.encode(IMAGES)
    _, weights = model.decode(TOKENS, memory, mask,
                              return_attention_scores=True)
    weights = np.array(weights)
    real = TOKENS != 0
    coverage = (weights * real[:, :, None]).sum(1)  # (B, L)
    expected = 0.7 * ((1 - coverage) ** 2).sum() / real.sum()
    assert len(model.losses) == 1
    np.testing.assert_allclose(model.losses[0], expected, rtol=1e-5)
    # What the padded steps attend does not matter.
    changed = np.where(real, TOKENS, 0)
    changed[1, 3:] = 0
    model({"images": IMAGES, "decoder_tokens": changed})
    np.testing.assert_allclose(model.losses[0], expected, rtol=1e-5)

    # evaluate(): cross-entropy + penalty; the same weights with λ = 0 give
    # the cross-entropy alone.
    targets = np.where(real, RNG.integers(3, VOCABULARY, TOKENS.shape), 0)
    without = Captioner.from_config({**model.get_config(),
                                     "doubly_stochastic": 0.0})
    without(inputs)
    without.set_weights(model.get_weights())
    assert without.losses == []
    losses = []
    for candidate in (model, without):
        candidate.compile(loss=MaskedCrossentropy(label_smoothing=0.0))
        losses.append(candidate.evaluate(inputs, targets, verbose=0,
                                         batch_size=3))
    np.testing.assert_allclose(losses[0] - losses[1], expected, rtol=1e-4)


def test_greedy_and_beam_search_decode_it():
    model = small()
    tokens, attention = decoding.greedy_decode(
        model, IMAGES, bos_id=BOS, eos_id=EOS, output_lengths=6)
    tokens = tokens.numpy()
    assert tokens.shape[0] == 3 and tokens.shape[1] <= 6
    assert attention.shape[2] == 16
    real = tokens != 0
    np.testing.assert_allclose(attention.numpy().sum(-1)[real], 1.0,
                               atol=1e-5)
    # Greedy with the cache == the argmax of teacher forcing on its output.
    previous = np.concatenate([np.full((3, 1), BOS), tokens[:, :-1]], 1)
    logits = model({"images": IMAGES, "decoder_tokens": previous})
    np.testing.assert_array_equal(np.argmax(logits, -1)[real], tokens[real])
    # Beam search with one beam and no length penalty is greedy search.
    beam = decoding.beam_search_decode(
        model, IMAGES, bos_id=BOS, eos_id=EOS, beam_size=1, alpha=0.0,
        output_lengths=6).numpy()
    np.testing.assert_array_equal(beam, tokens[:, :beam.shape[1]])
    assert (tokens[:, beam.shape[1]:] == 0).all()
    wide = decoding.beam_search_decode(
        model, IMAGES, bos_id=BOS, eos_id=EOS, beam_size=3,
        output_lengths=6).numpy()
    assert wide.shape[0] == 3 and wide.shape[1] <= 6
    # The attention of given outputs, from the steps, is greedy's own.
    forced = decoding.forced_attention(model, IMAGES, tokens, bos_id=BOS,
                                       token_inputs=False)
    np.testing.assert_allclose(forced, attention, atol=1e-6)


def test_output_lengths_per_row_capped_by_max_length_and_in_a_graph():
    model = small()
    full, _ = decoding.greedy_decode(model, IMAGES, bos_id=BOS, eos_id=EOS,
                                     output_lengths=6)
    limits = np.array([1, 3, 6])
    short, _ = decoding.greedy_decode(model, IMAGES, bos_id=BOS, eos_id=EOS,
                                      output_lengths=limits)
    short, full = short.numpy(), full.numpy()
    for row, limit in enumerate(limits):
        assert (short[row, limit:] == 0).all()
        np.testing.assert_array_equal(short[row, :limit], full[row, :limit])
    capped, _ = decoding.greedy_decode(model, IMAGES, bos_id=BOS, eos_id=EOS,
                                       output_lengths=6, max_length=2)
    np.testing.assert_array_equal(capped.numpy(), full[:, :2])
    graph = tf.function(
        lambda images: decoding.greedy_decode(
            model, images, bos_id=BOS, eos_id=EOS, output_lengths=6)[0],
        input_signature=[tf.TensorSpec([None, 16, 16], tf.float32)])
    np.testing.assert_array_equal(graph(IMAGES).numpy(), full)


def test_config_and_keras_serialization_round_trip():
    model = small(doubly_stochastic=0.5, attention_units=None)
    inputs = {"images": IMAGES, "decoder_tokens": TOKENS}
    config = keras.saving.serialize_keras_object(model)
    clone = keras.saving.deserialize_keras_object(config)
    assert isinstance(clone, Captioner)
    clone(inputs)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(inputs), model(inputs), atol=1e-6)
    assert clone.get_config() == model.get_config()
    assert clone.doubly_stochastic == 0.5 and clone.filters == (4, 8)


def test_presets():
    assert set(PRESETS) == {"tiny", "small"}
    model = Captioner.from_preset("tiny", vocabulary_size=21, dropout=0.2)
    assert model.dropout == 0.2 and model.units == PRESETS["tiny"]["units"]
    assert model.target_vocabulary_size == 21


@pytest.mark.parametrize(
    "options, message",
    [
        ({"vocabulary_size": 0}, "vocabulary_size=0"),
        ({"filters": ()}, r"filters=\(\)"),
        ({"filters": 8}, "filters=8"),
        ({"filters": (8, 0)}, "filters=0"),
        ({"units": -1}, "units=-1"),
        ({"dropout": 1.5}, "dropout=1.5"),
        ({"doubly_stochastic": -1.0}, "doubly_stochastic=-1.0"),
    ],
)
def test_bad_arguments_name_themselves(options, message):
    with pytest.raises(ValueError, match=message):
        Captioner(**{"vocabulary_size": 10, **options})


def test_bad_inputs_name_themselves():
    model = small()
    with pytest.raises(ValueError, match="images.shape"):
        model.encode(np.zeros((16, 16), "float32"))
    with pytest.raises(ValueError, match="output_lengths=0"):
        decoding.greedy_decode(model, IMAGES, bos_id=BOS, eos_id=EOS,
                               output_lengths=0)
    with pytest.raises(ValueError, match="preset='huge'"):
        Captioner.from_preset("huge", vocabulary_size=10)
