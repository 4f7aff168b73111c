"""DualEncoder: unit vectors, padding invariance, the loss against NumPy, the
penalties, a .keras round trip and a loss that falls in training."""

import os
import tempfile

import keras
import numpy as np
import pytest

from keras_attention.models.dual_encoder import DualEncoder
from keras_attention.models.dual_encoder import in_batch_softmax_loss
from tests.backend import as_numpy
from tests.backend import assert_allclose

RNG = np.random.default_rng(0)
SOURCE = np.array([[5, 6, 7, 8, 9], [4, 9, 3, 0, 0], [2, 0, 0, 0, 0]], "int32")
TARGET = np.array([[3, 11, 12, 13], [2, 14, 15, 0], [7, 7, 0, 0]], "int32")
INPUTS = {"source_tokens": SOURCE, "target_tokens": TARGET}


def small(**options):
    options = {"embedding_dim": 8, "encoder_units": 6, "attention_units": 5,
               "num_hops": 3, "projection_dim": 7, **options}
    return DualEncoder(20, 30, **options)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_unit_vectors_and_attention_shapes(cell):
    model = small(cell=cell)
    source, target = model(INPUTS)
    assert tuple(source.shape) == (3, 7) and tuple(target.shape) == (3, 7)
    assert_allclose(np.linalg.norm(as_numpy(source), axis=-1), 1.0, atol=1e-6)
    assert_allclose(np.linalg.norm(as_numpy(target), axis=-1), 1.0, atol=1e-6)
    _, weights = model.encode_target(TARGET, return_attention_scores=True)
    weights = as_numpy(weights)
    assert weights.shape == (3, 3, 4)
    assert_allclose(weights.sum(-1), 1.0, atol=1e-6)
    assert np.abs(weights[1, :, 3:]).max() == 0.0  # padding never attended


def test_padding_does_not_change_a_sentence():
    model = small()
    alone = model.encode_source(SOURCE[1:2, :3])
    padded = model.encode_source(np.pad(SOURCE[1:2, :3], ((0, 0), (0, 6))))
    assert_allclose(padded, alone, atol=1e-6)
    assert_allclose(model.encode_source(SOURCE)[1], as_numpy(alone)[0],
                    atol=1e-6)


def test_loss_equals_numpy():
    source = RNG.normal(size=(4, 5)).astype("float32")
    target = RNG.normal(size=(4, 5)).astype("float32")
    logits = source @ target.T / 0.5

    def cross_entropy(rows):
        rows = rows - rows.max(-1, keepdims=True)
        log_softmax = rows - np.log(np.exp(rows).sum(-1, keepdims=True))
        return -np.mean(np.diag(log_softmax))

    want = (cross_entropy(logits) + cross_entropy(logits.T)) / 2
    assert_allclose(in_batch_softmax_loss(source, target, 0.5), want,
                    rtol=1e-5)
    # Not symmetric in its arguments' rows and columns: both directions count.
    assert not np.isclose(cross_entropy(logits), cross_entropy(logits.T))


def test_penalties_enter_the_loss():
    model = small(penalty=0.5)
    source, target = model(INPUTS)
    assert len(model.losses) == 2  # one per encoder
    contrastive = as_numpy(in_batch_softmax_loss(source, target,
                                                 model.temperature))
    total = model.compute_loss(INPUTS, None, (source, target))
    want = contrastive + sum(as_numpy(loss) for loss in model.losses)
    assert_allclose(total, want, rtol=1e-5)
    assert float(as_numpy(model.losses[0])) > 0.0
    unpenalised = small()
    unpenalised(INPUTS)
    assert unpenalised.losses == []


def test_keras_round_trip():
    model = small(cell="gru", penalty=1.0, temperature=0.1)
    want = model(INPUTS)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "dual.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    assert isinstance(restored, DualEncoder)
    assert restored.get_config() == model.get_config()
    for got, expected in zip(restored(INPUTS), want):
        assert_allclose(got, expected, atol=1e-6)


def test_training_lowers_the_loss():
    # 8 pairs; sentence i draws its tokens from {2i+1, 2i+2} (source) and
    # those plus 13 (target). Chance is ln 8 = 2.08 (all pairs alike).
    source = np.zeros((8, 5), "int32")
    for pair in range(8):
        length = RNG.integers(2, 6)
        source[pair, :length] = RNG.integers(2 * pair + 1, 2 * pair + 3,
                                             size=length)
    target = np.where(source > 0, source + 13, 0)
    data = {"source_tokens": source, "target_tokens": target}
    model = small(temperature=0.1)
    before = as_numpy(in_batch_softmax_loss(*model(data), 0.1))
    model.compile(optimizer=keras.optimizers.Adam(0.03))
    history = model.fit(data, batch_size=8, epochs=30, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    source_vectors, target_vectors = model(data)
    after = as_numpy(in_batch_softmax_loss(source_vectors, target_vectors,
                                           0.1))
    assert after < 0.5 * np.log(8) < before, (before, after)
    similarity = as_numpy(source_vectors) @ as_numpy(target_vectors).T
    assert (similarity.argmax(-1) == np.arange(8)).mean() >= 0.75


@pytest.mark.parametrize("name, value", [
    ("cell", "rnn"), ("num_hops", 0), ("penalty", -1.0), ("temperature", 0.0),
    ("dropout", 1.5), ("projection_dim", 0),
])
def test_argument_errors_name_the_argument(name, value):
    with pytest.raises(ValueError, match=f"{name}={value!r}"):
        small(**{name: value})


def test_mixed_precision_gives_float32_unit_vectors():
    model = small(dtype="mixed_bfloat16", penalty=1.0)
    source, target = model(INPUTS)
    assert keras.backend.standardize_dtype(source.dtype) == "float32"
    assert_allclose(np.linalg.norm(as_numpy(target), axis=-1), 1.0, atol=1e-5)
    assert model.source_pooling.compute_dtype == "bfloat16"
    assert np.isfinite(as_numpy(model.losses[0]))
