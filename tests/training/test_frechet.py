"""The Fréchet distance against its closed form, and its refusals."""

import numpy as np
import pytest

from keras_attention.training.frechet import feature_classifier
from keras_attention.training.frechet import frechet_distance


def test_diagonal_gaussians_match_the_closed_form():
    # For diagonal covariances the trace term is sum((s1 - s2)^2): the
    # distance is |m1 - m2|^2 + sum((s1 - s2)^2) of the sample moments.
    rng = np.random.default_rng(0)
    a = rng.normal(size=(20_000, 3)) * [1.0, 2.0, 0.5] + [0.0, 1.0, -1.0]
    b = rng.normal(size=(20_000, 3)) * [1.5, 2.0, 1.0]
    closed = (((a.mean(0) - b.mean(0)) ** 2).sum()
              + ((a.std(0, ddof=1) - b.std(0, ddof=1)) ** 2).sum())
    # means: 0 + 1 + 1; standard deviations: 0.25 + 0 + 0.25; 2.5 in all
    assert frechet_distance(a, b) == pytest.approx(closed, abs=0.02)
    assert frechet_distance(a, b) == pytest.approx(2.5, abs=0.1)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)


def test_a_dead_feature_gives_a_finite_distance():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(100, 4)), rng.normal(size=(100, 4))
    a[:, 2] = 0.0  # a ReLU unit that never fires
    assert np.isfinite(frechet_distance(a, b))


@pytest.mark.parametrize("features, reference, message", [
    (np.zeros((5, 3)), np.zeros((5, 4)), "same F"),
    (np.zeros(5), np.zeros((5, 1)), "same F"),
    (np.zeros((1, 3)), np.zeros((5, 3)), "at least 2 rows"),
])
def test_bad_shapes_are_named(features, reference, message):
    with pytest.raises(ValueError, match=message):
        frechet_distance(features, reference)


def test_feature_classifier_shares_its_weights():
    classifier, extract = feature_classifier((8, 8, 1), classes=3,
                                             filters=(4,), features=5)
    images = np.random.default_rng(2).normal(size=(2, 8, 8, 1))
    assert tuple(classifier(images).shape) == (2, 3)
    assert tuple(extract(images).shape) == (2, 5)
    assert len(extract.weights) == len(classifier.weights) - 2
