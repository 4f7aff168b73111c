"""The learning test of the Image Transformer's local 2-D attention: on
4x4 images that repeat one random row of bits all the way down, every
pixel below the first row is its column's first pixel, which a model can
read only by attending to the rows above. A model whose memory block
reaches one row up learns them to near 0 nats; the same model whose block
holds its own row only stays at chance on them (it can learn the last
column alone: the token at a row's first position is the pixel before it
in raster order, the row above's last). A model that saw the future
would also beat chance on the first row, which is coin flips.

Letters: B images, H = W = 4 the side.
"""

import keras
import numpy as np

from keras_attention.models.image_transformer import ImageTransformer
from keras_attention.models.image_transformer import independent_pixel_model

SIDE = 4


def _stripes(count, rng):
    """`(count, 4, 4)` int32: one row of coin flips repeated down."""
    first = rng.integers(0, 2, (count, 1, SIDE))
    return np.repeat(first, SIDE, axis=1).astype("int32")


def _pixel_nll(model, images):
    """`(B, H, W)` nats: each pixel's NLL given the pixels before it."""
    logits = model.predict(images, batch_size=256, verbose=0)
    logits = logits.astype("float64")  # (B, H, W, 2)
    peak = logits.max(-1, keepdims=True)
    log_norm = peak[..., 0] + np.log(np.exp(logits - peak).sum(-1))
    chosen = np.take_along_axis(logits, images[..., None], -1)[..., 0]
    return log_norm - chosen


def _trained(memory_flange, images):
    """One layer of local attention in raster order (query blocks of one
    row), `memory_flange` = (rows above, columns either side)."""
    keras.utils.set_random_seed(0)
    model = ImageTransformer(
        image_shape=(SIDE, SIDE), num_levels=2, attention="local",
        query_block=(1, SIDE), memory_flange=memory_flange, num_layers=1,
        num_heads=2, hidden_dim=16, intermediate_dim=32)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.fit(images, images, batch_size=16, epochs=5, verbose=0)
    return model


def test_local_attention_reads_the_row_above_only_when_it_reaches_it():
    rng = np.random.default_rng(0)
    train, held_out = _stripes(1024, rng), _stripes(256, rng)
    # The rule with no weights: each pixel at its training frequency.
    probabilities = independent_pixel_model(train, 2)  # (H, W, 2)
    chosen = np.take_along_axis(
        np.broadcast_to(probabilities, held_out.shape + (2,)),
        held_out[..., None], -1)[..., 0]  # (B, H, W)
    baseline = float(-np.log(chosen[:, 1:]).mean())
    seeing = _pixel_nll(_trained((1, 0), train), held_out)
    blind = _pixel_nll(_trained((0, 0), train), held_out)
    # ln 2 = 0.693 each. The model that reaches the row above reached
    # 0.0004 nats per pixel below the first row (seeds 0 to 4 all under
    # 0.005 by epoch 4 of 5; TensorFlow, 2026-11-27); the blind one 0.72
    # on the first three columns, 0.54 over all four.
    assert 0.65 < baseline < 0.75
    assert seeing[:, 1:].mean() < 0.1 * baseline, seeing[:, 1:].mean()
    assert blind[:, 1:, :-1].mean() > 0.9 * baseline, blind.mean((0, 1))
    assert seeing[:, 0].mean() > 0.9 * baseline  # no look at the future
