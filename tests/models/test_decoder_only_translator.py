"""DecoderOnlyTranslator (Liu et al.'s T-D): the joint sequence equals a
packed one without padding, cached decoding equals the full pass, the
target is causal, the decoding protocol and serialization hold, and bad
arguments are named."""

import keras
import numpy as np
import pytest

from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import greedy_decode
from keras_attention.models import TRANSLATORS
from keras_attention.models import DecoderOnlyTranslator
from keras_attention.models.decoder_only_translator import PRESETS
from keras_attention.training.config import PRESET_NAMES

BOS, EOS, PAD = 1, 2, 0
# A full row, a padded row and a row of padding only (an empty input).
SOURCE = np.array([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0], [0, 0, 0, 0, 0]])
TARGET = np.array([[1, 11, 12, 13], [1, 14, 15, 0], [1, 16, 0, 0]])


def _model(**options):
    keras.utils.set_random_seed(0)
    model = DecoderOnlyTranslator(30, 30, num_layers=2, hidden_dim=16,
                                  num_heads=2, intermediate_dim=32,
                                  dropout=0.0, **options)
    model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    return model


def _logits(model, source=SOURCE, target=TARGET):
    return keras.ops.convert_to_numpy(
        model({"encoder_tokens": source, "decoder_tokens": target}))


def test_the_joint_sequence_is_the_packed_one_without_padding():
    """Each row computes what the language model computes on its source's
    real tokens followed by the target: the padding between them changes
    nothing, neither as keys nor as positions."""
    model = _model()
    logits = _logits(model)
    for row in range(len(SOURCE)):
        source = SOURCE[row][SOURCE[row] != PAD]
        target = TARGET[row][TARGET[row] != PAD]
        packed = np.concatenate([source, target])[None]
        expected = keras.ops.convert_to_numpy(model.language_model(packed))
        np.testing.assert_allclose(logits[row, :len(target)],
                                   expected[0, len(source):], atol=1e-5)
    wider = np.pad(SOURCE, ((0, 0), (0, 3)))
    np.testing.assert_allclose(_logits(model, wider), logits, atol=1e-5)


def test_target_positions_are_causal_and_the_source_reaches_all():
    model = _model()
    logits = _logits(model)
    changed = TARGET.copy()
    changed[:, 2] = 20
    other = _logits(model, target=changed)
    np.testing.assert_allclose(other[:, :2], logits[:, :2], atol=1e-6)
    assert np.abs(other[:2, 2:] - logits[:2, 2:]).max() > 1e-4
    source = SOURCE.copy()
    source[0, 0] = 21
    assert (np.abs(_logits(model, source)[0] - logits[0]).max(-1)
            > 1e-4).all()


def test_cached_steps_equal_the_full_pass_and_report_source_attention():
    model = _model()
    logits = _logits(model)
    cross = keras.ops.convert_to_numpy(
        model.cross_attention(SOURCE, TARGET))  # (B, K, N, T, S)
    assert cross.shape == (3, 2, 2, 4, 5)
    memory, mask = model.encode(SOURCE)
    cache = model.initial_cache(memory, mask, TARGET.shape[1])
    for index in range(TARGET.shape[1]):
        step, cache, attention = model.decode_step(
            TARGET[:, index:index + 1], index, cache, mask)
        step = keras.ops.convert_to_numpy(step)
        attention = keras.ops.convert_to_numpy(attention)
        assert np.isfinite(step).all()
        real = TARGET[:, index] != PAD
        np.testing.assert_allclose(step[real], logits[real, index],
                                   atol=1e-5)
        # The last block's weights over the source, averaged over heads
        # and renormalized: a distribution over the real source tokens.
        np.testing.assert_allclose(attention[:2].sum(-1), 1.0, atol=1e-5)
        assert (attention[SOURCE == PAD] == 0).all()
        rows = real & (SOURCE != PAD).any(-1)  # the full pass's real rows
        mean = cross[rows, -1, :, index].mean(1)
        np.testing.assert_allclose(
            attention[rows], mean / mean.sum(-1, keepdims=True), atol=1e-5)
    # A row's attention to the source and to the target so far sums to 1.
    target = keras.ops.convert_to_numpy(
        model.decoder_self_attention(SOURCE, TARGET))
    total = cross.sum(-1) + target.sum(-1)
    np.testing.assert_allclose(total[0], 1.0, atol=1e-5)
    source = keras.ops.convert_to_numpy(model.encoder_self_attention(SOURCE))
    assert source.shape == (3, 2, 2, 5, 5)
    np.testing.assert_allclose(np.triu(source[0, 0, 0], 1), 0.0)


def test_greedy_and_beam_search_decode_it():
    model = _model()
    source = SOURCE[:2]
    ids = dict(bos_id=BOS, eos_id=EOS, max_length=6)
    tokens, attention = greedy_decode(model, source, **ids)
    tokens = np.asarray(tokens)
    assert tokens.shape[0] == 2 and tokens.shape[1] <= 6
    assert np.asarray(attention).shape == (*tokens.shape, 5)
    # Greedy is the argmax of the full pass on its own outputs.
    decoder = np.concatenate([np.full((2, 1), BOS), tokens[:, :-1]], 1)
    chosen = _logits(model, source, decoder).argmax(-1)
    for row in range(2):
        length = (list(tokens[row]).index(EOS) + 1 if EOS in tokens[row]
                  else tokens.shape[1])
        np.testing.assert_array_equal(chosen[row, :length],
                                      tokens[row, :length])
    beam = np.asarray(beam_search_decode(model, source, beam_size=1, **ids))
    np.testing.assert_array_equal(beam, tokens[:, :beam.shape[1]])
    wide = np.asarray(beam_search_decode(model, source, beam_size=3, **ids))
    assert wide.shape[0] == 2 and BOS not in wide


def test_config_round_trip_and_presets():
    model = _model()
    clone = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(model))
    clone({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(_logits(clone), _logits(model), atol=1e-6)
    assert TRANSLATORS["decoder_only"] is DecoderOnlyTranslator
    assert set(PRESET_NAMES["decoder_only"]) == set(PRESETS)
    small = DecoderOnlyTranslator.from_preset("small", 100, 100)
    assert small.language_model.num_layers == 6
    assert small.hidden_dim == 256


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="source_vocabulary_size=20"):
        DecoderOnlyTranslator(20, 30)
    with pytest.raises(ValueError, match="share_embeddings=False"):
        DecoderOnlyTranslator(20, 20, share_embeddings=False)
    with pytest.raises(ValueError, match="preset"):
        DecoderOnlyTranslator.from_preset("huge", 20, 20)
    model = _model()
    with pytest.raises(ValueError, match="position_ids"):
        model.language_model(TARGET, position_ids=np.zeros((3, 2), "int32"))
