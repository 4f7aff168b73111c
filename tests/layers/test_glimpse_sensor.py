"""`GlimpseSensor`: the shared harness, a NumPy reference (crop, zero pad,
block average), the boxes' geometry, the image gradient and argument
errors."""

import keras
import numpy as np
import pytest

from keras_attention.layers import GlimpseSensor
from keras_attention.layers.glimpse_sensor import extract_glimpses
from keras_attention.layers.glimpse_sensor import glimpse_boxes
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import gradient
from tests.harness import run_layer_test

RNG = np.random.default_rng(0)
IMAGES = RNG.random((3, 12, 10, 2)).astype("float32")  # (B, H, W, C)
# The centre, the top-left corner, a point near the bottom-right edge.
LOCATIONS = np.array([[0.0, 0.0], [-1.0, -1.0], [0.7, 0.9]], "float32")


def numpy_reference(images, locations, size, scales, scale):
    """Crop each patch from a zero-padded copy, then average its blocks."""
    batch, height, width, channels = images.shape
    margin = size * scale ** (scales - 1)
    padded = np.pad(images, ((0, 0), (margin, margin), (margin, margin),
                             (0, 0)))
    out = np.zeros((batch, scales, size, size, channels), "float64")
    for b in range(batch):
        # In float32, as the layer: (0.9 + 1) / 2 * 10 is 9.5 there.
        centre = ((locations[b].astype("float32") + np.float32(1))
                  / np.float32(2) * np.array([height, width], "float32"))
        for level in range(scales):
            side, block = size * scale**level, scale**level
            top, left = (np.round(centre - np.float32(side / 2)).astype(int)
                         + margin)
            crop = padded[b, top:top + side, left:left + side]
            out[b, level] = crop.reshape(size, block, size, block,
                                         channels).mean((1, 3))
    return out


def test_layer_harness():
    run_layer_test(
        GlimpseSensor,
        {"glimpse_size": 3, "num_scales": 2, "scale": 2},
        {"images": IMAGES, "locations": LOCATIONS},
        expected_num_trainable_weights=0,
        expected_output_shape=(3, 2, 3, 3, 2),
    )


@pytest.mark.parametrize("size, scales, scale", [(3, 2, 2), (2, 3, 2),
                                                 (4, 2, 3), (5, 1, 1)])
def test_equals_numpy_reference(size, scales, scale):
    locations = np.concatenate(
        [LOCATIONS, RNG.uniform(-1, 1, (3, 2)).astype("float32")])
    images = np.concatenate([IMAGES, IMAGES[::-1]])
    patches = GlimpseSensor(size, scales, scale)(images, locations)
    assert_allclose(patches, numpy_reference(images, locations, size, scales,
                                             scale), atol=1e-6)


def test_rank_three_images_get_one_channel():
    patches = GlimpseSensor(4, 2)(IMAGES[..., 0], LOCATIONS)
    assert tuple(patches.shape) == (3, 2, 4, 4, 1)
    assert_allclose(patches[..., 0], numpy_reference(
        IMAGES[..., :1], LOCATIONS, 4, 2, 2)[..., 0], atol=1e-6)


def test_boxes_centre_corner_and_scales():
    boxes = as_numpy(glimpse_boxes(LOCATIONS, (12, 10), 2, num_scales=3))
    assert boxes.shape == (3, 3, 4)
    # The centre (6, 5): sides 2, 4, 8 start at round(6 - side / 2) etc.
    assert boxes[0].tolist() == [[5, 4, 2, 2], [4, 3, 4, 4], [2, 1, 8, 8]]
    # The top-left corner: centred on pixel (0, 0)'s corner, off the image.
    assert boxes[1].tolist() == [[-1, -1, 2, 2], [-2, -2, 4, 4],
                                 [-4, -4, 8, 8]]


def test_a_patch_off_the_image_reads_zeros():
    ones = np.ones((1, 8, 8, 1), "float32")
    patches = as_numpy(extract_glimpses(ones, np.array([[-1.0, -1.0]]), 2,
                                        num_scales=2))
    # 2x2 at (-1, -1): only its bottom-right pixel is on the image.
    assert patches[0, 0, :, :, 0].tolist() == [[0.0, 0.0], [0.0, 1.0]]
    # 4x4 at (-2, -2) in 2x2 blocks: one block of four pixels on the image.
    assert patches[0, 1, :, :, 0].tolist() == [[0.0, 0.0], [0.0, 1.0]]


def test_gradient_with_respect_to_the_image_is_the_averaging_weights():
    """d(sum of patch j)/d pixel = (its share of the blocks) / block²."""
    image = IMAGES[:1, :, :, :1]
    location = np.array([[0.1, -0.2]], "float32")

    def total(x):
        return keras.ops.sum(extract_glimpses(x, location, 2, num_scales=2))

    (grad,) = gradient(total, image)
    expected = np.zeros((12, 10))
    for (top, left, side, _), level in zip(
            as_numpy(glimpse_boxes(location, (12, 10), 2, 2))[0], range(2)):
        block = 2**level
        expected[max(top, 0):top + side, max(left, 0):left + side] += (
            1.0 / block**2)
    assert_allclose(as_numpy(grad)[0, :, :, 0], expected,
                    atol=1e-6)


def test_the_output_does_not_depend_on_the_batch():
    sensor = GlimpseSensor(3, 2)
    whole = sensor(IMAGES, LOCATIONS)
    for row in range(3):
        assert_array_equal(sensor(IMAGES[row:row + 1],
                                  LOCATIONS[row:row + 1])[0], whole[row])


@pytest.mark.parametrize(
    "options, message",
    [({"glimpse_size": 0}, "glimpse_size=0"),
     ({"num_scales": -1}, "num_scales=-1"),
     ({"scale": 1.5}, "scale=1.5")],
)
def test_bad_arguments_name_themselves(options, message):
    with pytest.raises(ValueError, match=message):
        GlimpseSensor(**{"glimpse_size": 4, **options})


def test_bad_inputs_name_themselves():
    sensor = GlimpseSensor(2)
    with pytest.raises(ValueError, match="images.shape"):
        sensor(np.zeros((4, 4), "float32"), np.zeros((1, 2), "float32"))
    with pytest.raises(ValueError, match="locations.shape"):
        sensor(IMAGES, np.zeros((3, 3), "float32"))
