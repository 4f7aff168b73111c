"""`GlimpseSensor`: the retina of Mnih et al.'s recurrent attention model
(2014), k square patches around a location, each coarser than the last.

Letters: B batch, H, W image height and width, C channels, k scales,
g the glimpse size (pixels per side of every patch after averaging), n the
side of a patch on the image (`g * scale**j` at scale j).

Locations are `(row, column)` pairs in [-1, 1]: (-1, -1) is the image's
top-left corner, (0, 0) its centre, (1, 1) its bottom-right corner. A
location maps to the point `(l + 1) / 2 * H` on the image (pixel i covers
`[i, i + 1)`); a patch of side n starts at the pixel
`round((l + 1) / 2 * H - n / 2)` (round half to even).
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers.quantization import NothingToQuantize


def glimpse_boxes(locations, image_shape, glimpse_size, num_scales=1,
                  scale=2):
    """The patches' boxes on the image: `(..., k, 4)` int32 rows
    `(top, left, height, width)`, the first patch of side `glimpse_size`,
    each next one `scale` times wider. Boxes may reach past the image
    (the sensor reads zeros there).

    Args:
        locations: `(..., 2)` `(row, column)` in [-1, 1].
        image_shape: `(H, W)`.
        glimpse_size: g.
        num_scales: k.
        scale: s, an int >= 1.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers.glimpse_sensor import glimpse_boxes
    >>> boxes = glimpse_boxes([[0.0, -1.0]], (16, 16), 4, num_scales=2)
    >>> np.asarray(boxes).tolist()  # centred on row 8, on the left edge
    [[[6, -2, 4, 4], [4, -4, 8, 8]]]
    """
    locations = ops.cast(ops.convert_to_tensor(locations), "float32")
    sizes = [glimpse_size * scale**j for j in range(num_scales)]
    extent = ops.convert_to_tensor([float(image_shape[0]),
                                    float(image_shape[1])])
    centres = (locations + 1.0) / 2.0 * extent  # (..., 2) in pixels
    boxes = []
    for size in sizes:
        corners = ops.cast(ops.round(centres - size / 2.0), "int32")
        sides = ops.zeros_like(corners) + size  # (..., 2)
        boxes.append(ops.concatenate([corners, sides], axis=-1))  # (..., 4)
    return ops.stack(boxes, axis=-2)  # (..., k, 4)


def averaging_matrix(starts, length, glimpse_size, block, dtype="float32"):
    """`(B, g, length)`: row r averages the `block` pixels from
    `starts + r * block`; pixels off the image (`< 0` or `>= length`) are
    zeros of the average (zero padding), not dropped from it.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers.glimpse_sensor import averaging_matrix
    >>> # Row 0 averages pixels -1 (off the image) and 0, row 1 pixels 1, 2.
    >>> np.asarray(averaging_matrix([-1], 4, 2, 2)).tolist()
    [[[0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0]]]
    """
    starts = ops.cast(ops.convert_to_tensor(starts), "int32")
    offsets = ops.arange(length, dtype="int32")[None, :] - starts[:, None]
    rows = ops.floor_divide(offsets, block)  # (B, length); < 0 off the start
    chosen = ops.equal(rows[:, None, :],
                       ops.arange(glimpse_size, dtype="int32")[None, :, None])
    return ops.cast(chosen, dtype) / block  # (B, g, length)


def extract_glimpses(images, locations, glimpse_size, num_scales=1, scale=2):
    """The pure function under `GlimpseSensor`: `(B, H, W, C)` images and
    `(B, 2)` locations -> `(B, k, g, g, C)`, patch j the average of
    `scale**j x scale**j` blocks of the `g * scale**j` square around the
    location (zeros off the image): `A_y · I · A_xᵀ` per channel, with the
    `averaging_matrix` of each axis. Exact, and differentiable with respect
    to the images (not the locations: the corners are rounded).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers.glimpse_sensor import extract_glimpses
    >>> image = np.arange(16, dtype="float32").reshape(1, 4, 4, 1)
    >>> patches = extract_glimpses(image, np.zeros((1, 2)), 2, num_scales=2)
    >>> patches = np.asarray(patches)
    >>> patches[0, 0, :, :, 0].tolist()  # the centre 2x2
    [[5.0, 6.0], [9.0, 10.0]]
    >>> patches[0, 1, :, :, 0].tolist()  # the 4x4 in 2x2 blocks
    [[2.5, 4.5], [10.5, 12.5]]
    """
    images = ops.convert_to_tensor(images)
    height, width = images.shape[1], images.shape[2]
    boxes = glimpse_boxes(locations, (height, width), glimpse_size,
                          num_scales, scale)  # (B, k, 4)
    patches = []
    for level in range(num_scales):
        block = scale**level
        rows = averaging_matrix(boxes[:, level, 0], height, glimpse_size,
                                block, images.dtype)  # (B, g, H)
        columns = averaging_matrix(boxes[:, level, 1], width, glimpse_size,
                                   block, images.dtype)  # (B, g, W)
        patch = ops.einsum("brh,bhwc->brwc", rows, images)  # (B, g, W, C)
        patches.append(ops.einsum("brwc,bsw->brsc", patch, columns))
    return ops.stack(patches, axis=1)  # (B, k, g, g, C)


@keras.saving.register_keras_serializable(package="keras_attention")
class GlimpseSensor(NothingToQuantize, keras.layers.Layer):
    """A retina-like glimpse: `num_scales` square patches centred on a
    location, the first `glimpse_size` pixels wide, each next one `scale`
    times wider, all averaged down to `glimpse_size x glimpse_size`
    (Mnih et al.'s `ρ(x, l)`). Parts of a patch off the image read zeros.

    The patch at scale j is `A_y · I · A_xᵀ`, where `A` is a
    `(g, H)` matrix whose row r averages the `scale**j` pixels from the
    rounded patch corner `+ r * scale**j` (`extract_glimpses`): exact block
    averages, differentiable with respect to the image. The locations get
    no gradient (the corner is rounded); the recurrent attention model
    trains where to look with REINFORCE. No weights.

    Args:
        glimpse_size: g, the side of every returned patch.
        num_scales: k, the number of patches.
        scale: s, an int >= 1: patch j is `g * s**j` pixels wide on the
            image, averaged in `s**j x s**j` blocks (the paper's s = 2).
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        images: `(batch, H, W)` or `(batch, H, W, channels)`.
        locations: `(batch, 2)` `(row, column)` in [-1, 1], `(0, 0)` the
            image's centre (see the module's docstring for the mapping).

    Returns:
        `(batch, num_scales, glimpse_size, glimpse_size, channels)` in the
        compute dtype (channels = 1 for `(batch, H, W)` images).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import GlimpseSensor
    >>> sensor = GlimpseSensor(glimpse_size=4, num_scales=3)
    >>> patches = sensor(np.ones((2, 16, 16), "float32"),
    ...                  np.zeros((2, 2), "float32"))
    >>> tuple(patches.shape)
    (2, 3, 4, 4, 1)
    >>> float(patches[0, 2, 0, 0, 0])  # 4x4 block of the 16x16 patch
    1.0

    References:
        Mnih, Heess, Graves, Kavukcuoglu. "Recurrent Models of Visual
        Attention", NeurIPS 2014 (section 4, the retina).
    """

    def __init__(self, glimpse_size, num_scales=3, scale=2, **kwargs):
        super().__init__(**kwargs)
        self.glimpse_size = _validation.positive_int("glimpse_size",
                                                     glimpse_size)
        self.num_scales = _validation.positive_int("num_scales", num_scales)
        self.scale = _validation.positive_int("scale", scale)

    def call(self, images, locations):
        images = ops.convert_to_tensor(images)
        locations = ops.convert_to_tensor(locations)
        _validation.rank("images", images.shape, (3, 4),
                         "(batch, height, width) or (batch, H, W, channels)")
        _validation.rank("locations", locations.shape, (2,), "(batch, 2)")
        _validation.same_dim("locations", locations.shape, -1, 2,
                             "(row, column)")
        if len(images.shape) == 3:
            images = ops.expand_dims(images, -1)  # (B, H, W, 1)
        images = ops.cast(images, self.compute_dtype)
        return extract_glimpses(images, locations, self.glimpse_size,
                                self.num_scales, self.scale)

    def compute_output_shape(self, images_shape, locations_shape):
        channels = images_shape[3] if len(images_shape) == 4 else 1
        return (images_shape[0], self.num_scales, self.glimpse_size,
                self.glimpse_size, channels)

    def get_config(self):
        config = super().get_config()
        config.update({"glimpse_size": self.glimpse_size,
                       "num_scales": self.num_scales, "scale": self.scale})
        return config
