"""TransformerLanguageModel: causality for every attention, cached == full
decoding, cached == uncached sampling, the likelihood, saving, errors."""

import os

import keras
import numpy as np
import pytest

from keras_attention.models import TransformerLanguageModel
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import tensorflow_only

RNG = np.random.default_rng(2018)
VOCABULARY = 13
T_DMCA = ["local", "compressed", "local", "compressed", "local"]


def _model(attention="full", positions="sinusoidal", **kwargs):
    options = dict(vocabulary_size=VOCABULARY, num_layers=2, num_heads=2,
                   hidden_dim=8, intermediate_dim=16, attention=attention,
                   positions=positions, max_relative_position=3, window=3,
                   compression=2)
    options.update(kwargs)
    if not isinstance(attention, str):
        options["num_layers"] = len(attention)
    return TransformerLanguageModel(**options)


def _tokens(batch=2, length=10):
    return RNG.integers(1, VOCABULARY, (batch, length)).astype("int32")


def _assert_cached_steps_equal_the_full_pass(model, tokens, prompt):
    """`prompt` positions at once, then one at a time, == one full pass."""
    full = model(tokens)
    length = tokens.shape[1]
    cache = model.initial_cache(len(tokens), length)
    first, cache = model.step(tokens[:, :prompt], 0, cache)
    steps = [as_numpy(first)]
    for index in range(prompt, length):
        logits, cache = model.step(tokens[:, index:index + 1], index, cache)
        steps.append(as_numpy(logits))
    assert_allclose(np.concatenate(steps, 1), full, atol=1e-4)


def test_voice_labels_are_periodic_after_the_start_token():
    model = _model("relative", "none", voices=4)
    tokens = _tokens(length=10)
    model(tokens)
    labels = as_numpy(model._voice_labels(tokens, 0, None))
    np.testing.assert_array_equal(labels[0], [4, 0, 1, 2, 3, 0, 1, 2, 3, 0])
    # From cache slot 6 on, and from explicit positions.
    np.testing.assert_array_equal(
        as_numpy(model._voice_labels(tokens[:, :3], 6, None))[1], [1, 2, 3])
    positions = np.array([[0, 1, 2, 0, 1, 5]] * 2)
    np.testing.assert_array_equal(
        as_numpy(model._voice_labels(tokens[:, :6], 0, positions))[0],
        [4, 0, 1, 4, 0, 0])
    # The label's embedding is added to the token's: with the table
    # zeroed, the model is the one without voices (same other weights).
    plain = _model("relative", "none")
    plain(tokens)
    table = model.voice_embedding.embeddings
    table.assign(np.zeros(table.shape, "float32"))
    plain.set_weights([w for w in model.get_weights()
                       if w.shape != tuple(table.shape)])
    assert_allclose(plain(tokens), model(tokens), atol=1e-5)
    table.assign(RNG.normal(size=table.shape).astype("float32"))
    assert not np.allclose(as_numpy(plain(tokens)), as_numpy(model(tokens)),
                           atol=1e-4)


@pytest.mark.parametrize("attention, positions", [("relative", "none"),
                                                  ("full", "sinusoidal")])
def test_voice_labels_cached_steps_equal_the_full_pass(attention, positions):
    model = _model(attention, positions, voices=3)
    tokens = _tokens(length=8)
    _assert_cached_steps_equal_the_full_pass(model, tokens, prompt=2)
    prompt = tokens[:, :2]
    np.testing.assert_array_equal(
        model.generate(prompt, 6, seed=3),
        model.generate(prompt, 6, seed=3, use_cache=False))


ATTENTIONS = [("full", "sinusoidal"), ("relative", "none"),
              ("local", "sinusoidal"), ("compressed", "sinusoidal"),
              (T_DMCA, "sinusoidal"), (["relative", "compressed"], "none")]
IDS = ["full", "relative", "local", "compressed", "t_dmca",
       "relative_compressed"]


@pytest.mark.parametrize("attention, positions", ATTENTIONS, ids=IDS)
def test_logits_are_causal(attention, positions):
    model = _model(attention, positions)
    tokens = _tokens()
    logits = as_numpy(model(tokens))
    for cut in (1, 4, 7):
        changed = tokens.copy()
        changed[:, cut:] = RNG.integers(1, VOCABULARY, changed[:, cut:].shape)
        assert_allclose(model(changed)[:, :cut], logits[:, :cut], atol=1e-5)
        assert not np.allclose(as_numpy(model(changed))[:, cut:],
                               logits[:, cut:], atol=1e-4)


@pytest.mark.parametrize("attention, positions",
                         [a for a in ATTENTIONS if "local" not in a[0]],
                         ids=[i for i, a in zip(IDS, ATTENTIONS)
                              if "local" not in a[0]])
def test_cached_steps_equal_the_full_pass(attention, positions):
    model = _model(attention, positions)
    _assert_cached_steps_equal_the_full_pass(model, _tokens(length=9),
                                             prompt=3)


@pytest.mark.parametrize("attention, positions",
                         [("relative", "none"), ("compressed", "sinusoidal")])
def test_sampling_with_the_cache_equals_sampling_without(attention,
                                                         positions):
    model = _model(attention, positions)
    prompt = _tokens(length=3)
    cached = model.generate(prompt, steps=8, seed=5, temperature=1.5)
    uncached = model.generate(prompt, steps=8, seed=5, temperature=1.5,
                              use_cache=False)
    np.testing.assert_array_equal(cached, uncached)
    np.testing.assert_array_equal(cached[:, :3], prompt)
    assert cached.shape == (2, 11)
    assert not np.array_equal(
        cached, model.generate(prompt, steps=8, seed=6, temperature=1.5))


def test_local_attention_generates_by_full_passes_only():
    model = _model("local")
    prompt = _tokens(length=2)
    assert model.generate(prompt, 4, use_cache=False).shape == (2, 6)
    with pytest.raises(ValueError, match="use_cache=False"):
        model.generate(prompt, 4)


def test_negative_log_likelihood_is_the_mean_cross_entropy_of_real_targets():
    model = _model("relative", "none")
    windows = _tokens(batch=3, length=8)
    windows[1, 5:] = 0  # padding targets are left out
    logits = as_numpy(model(windows[:, :-1])).astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = windows[:, 1:]
    picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
    real = targets != 0
    expected = -(picked * real).sum() / real.sum()
    np.testing.assert_allclose(model.negative_log_likelihood(windows, 2),
                               expected, rtol=1e-5)


def test_padding_positions_are_masked_keys():
    """`padding_id` tokens are masked keys by default: what stands at a
    masked position changes nothing at the positions after it."""
    model = _model("full")
    padded = _tokens(length=6)
    padded[:, 3] = 0
    explicit = np.ones((2, 6), bool)
    explicit[:, 3] = False
    other = padded.copy()
    other[:, 3] = 5
    assert_allclose(model(padded)[:, 4:],
                    model(other, padding_mask=explicit)[:, 4:], atol=1e-5)
    assert not np.allclose(as_numpy(model(padded))[:, 4:],
                           as_numpy(model(other))[:, 4:], atol=1e-4)


def test_fits_and_saves(tmp_path):
    model = _model(["relative", "compressed"], "none", dropout=0.1, voices=4)
    windows = _tokens(batch=8, length=9)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    history = model.fit(windows[:, :-1], windows[:, 1:], epochs=3,
                        batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.get_config() == model.get_config()
    assert_allclose(restored(windows), model(windows), atol=1e-5)
    clone = TransformerLanguageModel.from_config(model.get_config())
    assert clone.attention == ["relative", "compressed"]


@pytest.mark.parametrize(
    "kwargs, message",
    [({"attention": "sparse"}, "attention='sparse'"),
     ({"attention": ["full"]}, "num_layers=2"),
     ({"positions": "learned"}, "positions='learned'"),
     ({"hidden_dim": 9}, "hidden_dim=9, num_heads=2"),
     ({"padding_id": 13}, "padding_id=13"),
     ({"vocabulary_size": 1}, "vocabulary_size=1"),
     ({"compression": 0}, "compression=0"),
     ({"voices": 0}, "voices=0")])
def test_argument_errors_name_the_argument(kwargs, message):
    options = dict(vocabulary_size=VOCABULARY, num_layers=2, num_heads=2,
                   hidden_dim=8)
    options.update(kwargs)
    with pytest.raises(ValueError, match=message):
        TransformerLanguageModel(**options)


def test_token_errors_name_the_argument():
    model = _model()
    with pytest.raises(ValueError, match=r"prompt.*\(2, 3\).*float"):
        model.generate(np.zeros((2, 3)), 2)
    with pytest.raises(ValueError, match="vocabulary_size=13"):
        model.negative_log_likelihood(np.full((2, 4), 13))
    with pytest.raises(ValueError, match="steps=0"):
        model.generate(_tokens(length=2), 0)
    with pytest.raises(ValueError, match="padding_id=0"):
        model.generate(np.array([[3, 0, 4]]), 2)


@tensorflow_only("the block-wise core runs on TensorFlow")
def test_blockwise_core_equals_the_dense_one():
    dense = _model(["full", "relative"], "sinusoidal",
                   attention_impl="dense")
    blockwise = _model(["full", "relative"], "sinusoidal",
                       attention_impl="blockwise")
    tokens = _tokens(length=40)
    dense(tokens)
    blockwise(tokens)
    blockwise.set_weights(dense.get_weights())
    assert_allclose(blockwise(tokens), dense(tokens), atol=1e-4)
    with pytest.raises(ValueError, match="attention_impl='fast'"):
        _model(attention_impl="fast")


def test_negative_log_likelihood_weights_choose_the_targets():
    model = _model("relative", "none")
    windows = _tokens(batch=2, length=8)
    logits = as_numpy(model(windows[:, :-1])).astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, windows[:, 1:, None], -1)[..., 0]
    weights = np.zeros((2, 7))  # 7 targets each
    weights[:, 4:] = 1  # the last three only
    np.testing.assert_allclose(
        model.negative_log_likelihood(windows, 1, weights=weights),
        -picked[:, 4:].mean(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"weights of shape \(2, 8\)"):
        model.negative_log_likelihood(windows, weights=np.ones((2, 8)))
