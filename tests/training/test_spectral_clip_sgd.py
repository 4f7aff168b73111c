"""`SpectralClipSGD`: a matrix's gradient scaled to a largest singular
value of `clipnorm` at most (numpy's SVD as the reference), a vector's
clipped as Keras clips, and the optimizer saved and loaded by name."""

import keras
import numpy as np

from keras_attention.training import SpectralClipSGD


def test_a_matrix_step_clips_its_largest_singular_value():
    rng = np.random.default_rng(0)
    grad = rng.normal(size=(6, 4)).astype("float32") * 10
    start = rng.normal(size=(6, 4)).astype("float32")
    weight = keras.Variable(start)
    SpectralClipSGD(0.1, clipnorm=2.0).apply([grad], [weight])
    largest = np.linalg.svd(grad, compute_uv=False)[0]
    expected = start - 0.1 * grad * (2.0 / largest)
    np.testing.assert_allclose(np.asarray(weight), expected, rtol=1e-4,
                               atol=1e-5)
    # Keras's own clip (Frobenius) would have scaled further down.
    assert np.linalg.norm(grad) > largest


def test_a_small_matrix_and_a_vector_as_sgd_does():
    rng = np.random.default_rng(1)
    small = rng.normal(size=(3, 3)).astype("float32") * 0.01
    vector = rng.normal(size=(5,)).astype("float32") * 10
    ours = [keras.Variable(np.zeros((3, 3), "float32")),
            keras.Variable(np.zeros(5, "float32"))]
    theirs = [keras.Variable(np.zeros((3, 3), "float32")),
              keras.Variable(np.zeros(5, "float32"))]
    SpectralClipSGD(1.0, clipnorm=1.0).apply([small, vector], ours)
    keras.optimizers.SGD(1.0, clipnorm=1.0).apply([small, vector], theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)


def test_it_is_saved_and_loaded_by_name():
    optimizer = SpectralClipSGD(0.01, clipnorm=40.0)
    again = keras.optimizers.deserialize(
        keras.optimizers.serialize(optimizer))
    assert type(again) is SpectralClipSGD and again.clipnorm == 40.0


def test_an_embedding_gradient_on_tensorflow_is_clipped_dense():
    """TensorFlow gives an embedding's gradient as IndexedSlices."""
    import pytest

    tf = pytest.importorskip("tensorflow")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("IndexedSlices are TensorFlow's")
    grad = tf.IndexedSlices(tf.constant([[3.0, 4.0]]), tf.constant([1]),
                            tf.constant([2, 2]))
    clipped = SpectralClipSGD(1.0, clipnorm=1.0)._clip_by_norm(grad)
    np.testing.assert_allclose(np.asarray(clipped), [[0, 0], [0.6, 0.8]],
                               atol=1e-6)
