"""Checkpoint averaging: the mean of the saved weights, file by file."""

import keras
import numpy as np
import pytest

from keras_attention.training import average_checkpoints


def _model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2),
                              keras.layers.Dense(1)])
    return model


def test_average_of_saved_weights_is_their_mean(tmp_path):
    model = _model()
    rng = np.random.default_rng(0)
    saved = []
    for index in range(3):
        weights = [rng.normal(size=weight.shape).astype("float32")
                   for weight in model.get_weights()]
        model.set_weights(weights)
        model.save_weights(tmp_path / f"{index}.weights.h5")
        saved.append(weights)
    model.set_weights([np.zeros_like(w) for w in saved[0]])
    paths = [tmp_path / f"{index}.weights.h5" for index in range(3)]
    averaged = average_checkpoints(model, paths).get_weights()
    for position, weight in enumerate(averaged):
        want = np.mean([weights[position] for weights in saved], axis=0)
        np.testing.assert_allclose(weight, want, rtol=1e-6, atol=1e-7)
        assert weight.dtype == np.float32
    # One file is that file's weights.
    one = average_checkpoints(model, paths[1:2]).get_weights()
    for weight, want in zip(one, saved[1]):
        np.testing.assert_array_equal(weight, want)


def test_no_paths_is_an_error():
    with pytest.raises(ValueError, match=r"paths=\[\]"):
        average_checkpoints(_model(), [])
