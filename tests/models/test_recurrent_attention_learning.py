"""The learning test of the recurrent attention model: a striped square in
one of the four quadrants of a 16x16 canvas, vertical or horizontal
stripes for the two classes. The stripes average to a flat grey at every
scale but the finest, so the centre glimpse sees where the square is but
not which it is; the second glimpse must go there. The model trained with
REINFORCE reads it; the same model whose location policy cannot learn
(its head frozen at the centre) stays near chance, so a broken estimator, baseline or
sign cannot pass."""

import keras
import numpy as np

from keras_attention.models import RecurrentAttentionModel

SIZE, SQUARE = 16, 4
CORNERS = [(2, 2), (2, 10), (10, 2), (10, 10)]  # the quadrants' squares


def _canvases(count, rng):
    """`(N, 16, 16)` canvases and `(N,)` labels: 0 vertical stripes,
    1 horizontal."""
    labels = rng.integers(0, 2, count)
    images = np.zeros((count, SIZE, SIZE), "float32")
    stripes = (np.arange(SQUARE) % 2).astype("float32")
    patterns = [np.tile(stripes, (SQUARE, 1)), np.tile(stripes, (SQUARE, 1)).T]
    for row, (label, corner) in enumerate(
            zip(labels, rng.integers(0, 4, count))):
        top, left = CORNERS[corner]
        images[row, top:top + SQUARE, left:left + SQUARE] = patterns[label]
    return images, labels


def _accuracy(freeze_policy):
    rng = np.random.default_rng(0)
    train_images, train_labels = _canvases(2048, rng)
    test_images, test_labels = _canvases(512, rng)
    keras.utils.set_random_seed(0)
    model = RecurrentAttentionModel(
        num_classes=2, num_glimpses=2, glimpse_size=4, num_scales=3,
        glimpse_units=32, units=64, location_std=0.15, seed=0)
    model(train_images[:2])
    # Both start looking at the centre again: only learning moves them.
    model.location_head.set_weights(
        [np.zeros_like(w) for w in model.location_head.get_weights()])
    if freeze_policy:
        model.location_head.trainable = False
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit(train_images, train_labels, batch_size=64, epochs=12,
              verbose=0)
    logits = model.predict(test_images, batch_size=512, verbose=0)["logits"]
    return float(np.mean(np.argmax(logits, -1) == test_labels))


def test_reinforce_learns_where_to_look():
    learned, frozen = _accuracy(False), _accuracy(True)
    assert learned >= 0.9, (learned, frozen)
    assert frozen <= 0.7, (learned, frozen)
