"""`seq2seq.fit`, the one training loop's `fit` call, hands Keras its
`tf.data.Dataset` without `shuffle` (the Dataset shuffles itself): no
"`shuffle=True` was passed, but will be ignored" warning on the first
screen of `make demo` or `keras-attention train`."""

import warnings

import keras
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from keras_attention.training import seq2seq  # noqa: E402
from keras_attention.training.config import TrainingConfig  # noqa: E402


def test_fit_on_a_dataset_does_not_warn_about_shuffle(tmp_path):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(8, 3)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, features.sum(-1, keepdims=True))).batch(4)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    data = seq2seq.PreparedData(corpus={}, tokenizer=None, train_data=dataset,
                                val_data=dataset, report=None)
    config = TrainingConfig(output_dir=str(tmp_path), epochs=1, verbose=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = seq2seq.fit(config, data, model)
    assert len(history.epoch) == 1
    messages = [str(warning.message) for warning in caught]
    assert not [m for m in messages if "shuffle" in m], messages
