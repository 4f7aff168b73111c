"""`sampled_path_probabilities`: the mean of the softmax over paths drawn
from the RAM's own policy; with no noise, the mean path's prediction."""

import numpy as np
import pytest

from keras_attention.models import RecurrentAttentionModel
from keras_attention.training.glimpse_paths import sampled_path_probabilities

IMAGES = np.random.default_rng(0).random((7, 16, 16)).astype("float32")


def _model(location_std, first_location="centre"):
    model = RecurrentAttentionModel(
        num_glimpses=3, glimpse_size=4, num_scales=2, glimpse_units=8,
        units=8, num_classes=4, location_std=location_std, seed=0,
        first_location=first_location)
    model(IMAGES[:1])
    return model


def _softmax(logits):
    logits = np.asarray(logits, "float64")
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def test_without_noise_it_is_the_mean_path():
    model = _model(location_std=1e-7)
    mean_path = _softmax(model(IMAGES)["logits"])
    sampled = sampled_path_probabilities(model, IMAGES, paths=3,
                                         batch_size=3)
    np.testing.assert_allclose(sampled, mean_path, atol=1e-5)


def test_it_averages_the_softmax_of_each_drawn_path():
    model = _model(location_std=0.3)
    rng = np.random.default_rng(5)
    expected = np.mean([
        _softmax(model(IMAGES, training=True, noise=rng.normal(
            size=(7, 2, 2)).astype("float32"))["logits"])
        for _ in range(3)], axis=0)
    got = sampled_path_probabilities(model, IMAGES, paths=3, seed=5,
                                     batch_size=4)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)
    # The paths move: another seed gives other probabilities, and so
    # does the mean path.
    other = sampled_path_probabilities(model, IMAGES, paths=3, seed=6)
    assert np.abs(got - other).max() > 1e-4
    mean_path = _softmax(model(IMAGES)["logits"])
    assert np.abs(got - mean_path).max() > 1e-4


def test_a_drawn_first_glimpse_is_drawn_for_each_path():
    """`first_location="random"`: each path starts at a location drawn
    uniformly on the image, after its noise, from the same generator."""
    model = _model(location_std=0.3, first_location="random")
    rng = np.random.default_rng(2)
    expected = []
    for _ in range(4):
        noise = rng.normal(size=(7, 2, 2)).astype("float32")
        first = rng.uniform(-1, 1, (7, 2)).astype("float32")
        outputs = model(IMAGES, training=True, noise=noise, first=first)
        np.testing.assert_allclose(outputs["locations"][:, 0], first)
        expected.append(_softmax(outputs["logits"]))
    got = sampled_path_probabilities(model, IMAGES, paths=4, seed=2)
    np.testing.assert_allclose(got, np.mean(expected, axis=0), atol=1e-5)


@pytest.mark.parametrize("arguments, message", [
    (dict(paths=0), "paths must be a positive int, received: paths=0"),
    (dict(batch_size=0), "batch_size must be a positive int"),
])
def test_bad_arguments_are_named(arguments, message):
    with pytest.raises(ValueError, match=message):
        sampled_path_probabilities(_model(0.1), IMAGES, **arguments)
