"""VideoCaptioner: shapes, cached steps == teacher forcing, greedy and beam
decoding through `keras_attention.decoding`, what each row of Yao et al.
can see (the Basic mean ignores the frames' order, temporal attention
weighs the frames and, with frame positions, reads their order; the 3-D
convolution sees exactly the neighbouring frames), configuration round
trip and argument errors."""

import keras
import numpy as np
import pytest

from keras_attention import decoding
from keras_attention.models.video_captioner import PRESETS
from keras_attention.models.video_captioner import VideoCaptioner

RNG = np.random.default_rng(0)
VIDEOS = RNG.random((3, 8, 16, 16)).astype("float32")  # (B, T, H, W)
TOKENS = np.array([[1, 5, 6, 7, 8], [1, 9, 4, 0, 0], [1, 3, 3, 10, 0]],
                  "int32")  # BOS = 1, PAD = 0
BOS, EOS, VOCABULARY = 1, 2, 12
ROWS = {  # Yao et al.'s rows: (local, temporal_attention)
    "basic": (False, False), "local": (True, False),
    "global": (False, True), "local_global": (True, True),
}


def small(**options):
    options = {"filters": (4, 8), "feature_dim": 6, "local_filters": 3,
               "embedding_dim": 5, "units": 7, "attention_units": 4,
               "dropout": 0.0, **options}
    model = VideoCaptioner(VOCABULARY, **options)
    model({"videos": VIDEOS, "decoder_tokens": TOKENS})
    return model


def row(name, **options):
    local, attention = ROWS[name]
    return small(local=local, temporal_attention=attention, **options)


def test_shapes_memory_and_frames():
    model = row("global")
    logits = model({"videos": VIDEOS, "decoder_tokens": TOKENS})
    assert tuple(logits.shape) == (3, 5, VOCABULARY)
    assert logits.dtype == "float32"
    memory, mask = model.encode(VIDEOS)
    assert tuple(memory.shape) == (3, 8, 6)  # (B, T, F)
    assert np.array(mask).all() and tuple(mask.shape) == (3, 8)
    local, _ = row("local_global").encode(VIDEOS)
    assert tuple(local.shape) == (3, 8, 6)  # the local map joins before F
    channels, _ = model.encode(RNG.random((2, 5, 16, 16, 1)).astype(
        "float32"))
    assert tuple(channels.shape) == (2, 5, 6)  # a channel axis, 5 frames


@pytest.mark.parametrize("name", sorted(ROWS))
def test_cached_steps_equal_the_teacher_forced_pass(name):
    model = row(name)
    memory, mask = model.encode(VIDEOS)
    full, weights = model.decode(TOKENS, memory, mask,
                                 return_attention_scores=True)
    cache = model.initial_cache(memory, mask, TOKENS.shape[1])
    for index in range(TOKENS.shape[1]):
        logits, cache, step_weights = model.decode_step(
            TOKENS[:, index:index + 1], index, cache, mask)
        np.testing.assert_allclose(logits, full[:, index], atol=1e-5)
        np.testing.assert_allclose(step_weights, weights[:, index], atol=1e-6)
    # The weights over the frames sum to 1; the mean's are 1 / T.
    np.testing.assert_allclose(np.array(weights).sum(-1), 1.0, atol=1e-5)
    if not model.temporal_attention:
        np.testing.assert_allclose(weights, 1 / 8, atol=1e-7)


@pytest.mark.parametrize("name", ["basic", "local_global"])
def test_greedy_and_beam_search_decode_it(name):
    model = row(name)
    tokens, attention = decoding.greedy_decode(
        model, VIDEOS, bos_id=BOS, eos_id=EOS, output_lengths=6)
    tokens = tokens.numpy()
    assert tokens.shape[0] == 3 and tokens.shape[1] <= 6
    assert attention.shape[2] == 8  # the frames
    real = tokens != 0
    np.testing.assert_allclose(attention.numpy().sum(-1)[real], 1.0,
                               atol=1e-5)
    # Greedy with the cache == the argmax of teacher forcing on its output.
    previous = np.concatenate([np.full((3, 1), BOS), tokens[:, :-1]], 1)
    logits = model({"videos": VIDEOS, "decoder_tokens": previous})
    np.testing.assert_array_equal(np.argmax(logits, -1)[real], tokens[real])
    # Beam search with one beam and no length penalty is greedy search.
    beam = decoding.beam_search_decode(
        model, VIDEOS, bos_id=BOS, eos_id=EOS, beam_size=1, alpha=0.0,
        output_lengths=6).numpy()
    np.testing.assert_array_equal(beam, tokens[:, :beam.shape[1]])
    assert (tokens[:, beam.shape[1]:] == 0).all()
    wide = decoding.beam_search_decode(
        model, VIDEOS, bos_id=BOS, eos_id=EOS, beam_size=3,
        output_lengths=6).numpy()
    assert wide.shape[0] == 3 and wide.shape[1] <= 6
    forced = decoding.forced_attention(model, VIDEOS, tokens, bos_id=BOS,
                                       token_inputs=False)
    # The attention of given outputs, from the steps, is greedy's own (at
    # real outputs: an untrained model may write PAD, which it zeroes).
    np.testing.assert_allclose(np.array(forced)[real],
                               attention.numpy()[real], atol=1e-6)


def _context_and_logits(model, videos):
    memory, mask = model.encode(videos)
    cache = model.initial_cache(memory, mask)
    logits, weights = model.decode(TOKENS, memory, mask,
                                   return_attention_scores=True)
    return cache, np.array(logits), np.array(weights)


def test_basic_reads_the_mean_and_ignores_the_frames_order():
    model = row("basic")  # frame positions on: their mean is a constant
    order = np.array([5, 2, 7, 0, 1, 6, 3, 4])
    cache, logits, _ = _context_and_logits(model, VIDEOS)
    shuffled, shuffled_logits, _ = _context_and_logits(model,
                                                       VIDEOS[:, order])
    assert tuple(cache["memory"].shape) == (3, 6)  # φ = the mean (B, M)
    memory, _ = model.encode(VIDEOS)
    np.testing.assert_allclose(cache["memory"], np.mean(memory, axis=1),
                               atol=1e-6)
    np.testing.assert_allclose(shuffled["memory"], cache["memory"], atol=1e-5)
    np.testing.assert_allclose(shuffled_logits, logits, atol=1e-5)


def test_temporal_attention_weighs_the_frames_and_reads_their_order():
    order = np.array([5, 2, 7, 0, 1, 6, 3, 4])
    model = row("global")
    _, logits, weights = _context_and_logits(model, VIDEOS)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert (weights > 0).all() and weights.std(-1).max() > 1e-4
    _, shuffled_logits, _ = _context_and_logits(model, VIDEOS[:, order])
    assert np.abs(shuffled_logits - logits).max() > 1e-4  # time is seen
    # Without frame positions the frames are a bag: the same weights,
    # permuted with the frames, and the same words.
    bag = row("global", frame_positions=False)
    _, logits, weights = _context_and_logits(bag, VIDEOS)
    _, shuffled_logits, shuffled_weights = _context_and_logits(
        bag, VIDEOS[:, order])
    np.testing.assert_allclose(shuffled_weights, weights[:, :, order],
                               atol=1e-6)
    np.testing.assert_allclose(shuffled_logits, logits, atol=1e-5)


@pytest.mark.parametrize("name", ["basic", "local"])
def test_the_local_features_see_exactly_the_neighbouring_frames(name):
    model = row(name)
    changed = VIDEOS.copy()
    changed[:, 4] = RNG.random((3, 16, 16))  # frame 4 only
    before, _ = model.encode(VIDEOS)
    after, _ = model.encode(changed)
    difference = np.abs(np.array(after) - np.array(before)).max(axis=(0, 2))
    # (T,): with the 3-D convolution frames 3, 4, 5 change, without it
    # frame 4 only; no other frame does.
    seen = [3, 4, 5] if model.local else [4]
    assert (difference[seen] > 1e-6).all(), difference
    np.testing.assert_array_equal(np.delete(difference, seen), 0.0)


@pytest.mark.parametrize("name", ["basic", "local_global"])
def test_config_and_keras_serialization_round_trip(name):
    model = row(name, attention_units=None, frame_positions=False)
    inputs = {"videos": VIDEOS, "decoder_tokens": TOKENS}
    config = keras.saving.serialize_keras_object(model)
    clone = keras.saving.deserialize_keras_object(config)
    assert isinstance(clone, VideoCaptioner)
    clone(inputs)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(inputs), model(inputs), atol=1e-6)
    assert clone.get_config() == model.get_config()
    assert (clone.local, clone.temporal_attention) == ROWS[name]
    assert clone.frame_positions is False and clone.filters == (4, 8)


def test_presets():
    assert set(PRESETS) == {"tiny", "small"}
    model = VideoCaptioner.from_preset("tiny", vocabulary_size=21,
                                       local=True, dropout=0.2)
    assert model.dropout == 0.2 and model.local
    assert model.units == PRESETS["tiny"]["units"]
    assert model.target_vocabulary_size == 21


@pytest.mark.parametrize(
    "options, message",
    [
        ({"vocabulary_size": 0}, "vocabulary_size=0"),
        ({"filters": ()}, r"filters=\(\)"),
        ({"filters": 8}, "filters=8"),
        ({"local": "yes"}, "local='yes'"),
        ({"local_filters": 0}, "local_filters=0"),
        ({"temporal_attention": 1}, "temporal_attention=1"),
        ({"frame_positions": None}, "frame_positions=None"),
        ({"dropout": 1.5}, "dropout=1.5"),
    ],
)
def test_bad_arguments_name_themselves(options, message):
    with pytest.raises(ValueError, match=message):
        VideoCaptioner(**{"vocabulary_size": 10, **options})


def test_bad_inputs_name_themselves():
    model = row("basic")
    with pytest.raises(ValueError, match="videos.shape"):
        model.encode(np.zeros((2, 16, 16), "float32"))
    with pytest.raises(ValueError, match="preset='huge'"):
        VideoCaptioner.from_preset("huge", vocabulary_size=10)
