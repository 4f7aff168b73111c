"""LocalAttention2D against MultiHeadSelfAttention on the flattened image
with the equivalent (H·W, H·W) mask."""

import numpy as np
import pytest

from keras_attention.layers import LocalAttention2D
from keras_attention.layers import MultiHeadSelfAttention
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import tensorflow_only
from tests.harness import run_layer_test

RNG = np.random.default_rng(13)
BATCH, CHANNELS = 2, 5


def _image(height, width):
    return RNG.normal(size=(BATCH, height, width, CHANNELS)).astype("float32")


def _padding(height, width):
    padding = np.ones((BATCH, height, width), bool)
    padding[1, -1, 2:] = False
    padding[1, 0, :3] = False
    return padding


def generation_order(row, column, query_block):
    """Query blocks in raster order, pixels in raster order inside."""
    height, width = query_block
    return (row // height, column // width, row % height, column % width)


def dense_mask(height, width, query_block, memory_flange, masked):
    """`(H·W, H·W)`: pixel p may attend pixel p' (raster-flattened)."""
    block_height, block_width = query_block
    flange_height, flange_width = memory_flange
    below = 0 if masked else flange_height
    pixels = [(r, c) for r in range(height) for c in range(width)]
    mask = np.zeros((len(pixels), len(pixels)), bool)
    for p, (row, column) in enumerate(pixels):
        top = row // block_height * block_height
        left = column // block_width * block_width
        for k, (other_row, other_column) in enumerate(pixels):
            inside = (
                top - flange_height <= other_row
                < top + block_height + below
                and left - flange_width <= other_column
                < left + block_width + flange_width
            )
            earlier = generation_order(
                other_row, other_column, query_block
            ) <= generation_order(row, column, query_block)
            mask[p, k] = inside and (earlier or not masked)
    return mask


def _pair(**kwargs):
    local = LocalAttention2D(num_heads=2, key_dim=4, **kwargs)
    plain = {k: v for k, v in kwargs.items()
             if k not in ("query_block", "memory_flange", "masked")}
    full = MultiHeadSelfAttention(num_heads=2, key_dim=4, **plain)
    local(_image(2, 2))
    full(_image(2, 2).reshape(BATCH, 4, CHANNELS))
    for target, source in zip(full.weights, local.weights):
        assert target.path.split("/", 1)[1] == source.path.split("/", 1)[1]
        target.assign(source)
    return local, full


@pytest.mark.parametrize("masked", [True, False])
@pytest.mark.parametrize(
    "height, width, query_block, memory_flange",
    [
        (6, 8, (2, 4), (1, 2)),
        (5, 7, (2, 4), (1, 2)),  # not multiples of the block: padded
        (6, 8, (2, 2), (3, 3)),  # flanges wider than the block
        (3, 5, (4, 4), (0, 1)),  # image smaller than a block
        (4, 6, (1, 3), (2, 0)),
    ],
)
def test_equals_dense_attention_with_the_mask(height, width, query_block,
                                              memory_flange, masked):
    local, full = _pair(query_block=query_block, memory_flange=memory_flange,
                        masked=masked)
    image, padding = _image(height, width), _padding(height, width)
    output = local(image, padding_mask=padding)
    mask = dense_mask(height, width, query_block, memory_flange, masked)
    pixels = height * width
    want = full(image.reshape(BATCH, pixels, CHANNELS),
                padding_mask=padding.reshape(BATCH, pixels),
                attention_mask=np.broadcast_to(mask, (BATCH, pixels, pixels)))
    assert_allclose(
        as_numpy(output).reshape(BATCH, pixels, -1), want, atol=1e-5)


def test_masked_pixel_sees_no_later_pixel():
    """Changing a pixel changes no output at or before it in order."""
    local, _ = _pair(query_block=(2, 3), memory_flange=(1, 2))
    image = _image(4, 6)
    before = as_numpy(local(image))
    changed = image.copy()
    changed[:, 2, 1] += 5.0
    after = as_numpy(local(changed))
    for row in range(4):
        for column in range(6):
            earlier = generation_order(row, column, (2, 3)) < (
                generation_order(2, 1, (2, 3)))
            if earlier:
                assert_allclose(after[:, row, column],
                                before[:, row, column], atol=1e-6)
    assert not np.allclose(after[:, 2, 1], before[:, 2, 1])


def test_blocked_weights_shape_and_sums():
    local, _ = _pair(query_block=(2, 4), memory_flange=(1, 2))
    _, weights = local(_image(6, 8), return_attention_scores=True)
    assert tuple(weights.shape) == (BATCH, 2, 6, 8, 3 * 8)
    assert_allclose(np.sum(as_numpy(weights), -1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    "init_kwargs, size",
    [
        ({"query_block": (2, 4), "memory_flange": (1, 2), "dropout": 0.1},
         (4, 8)),
        ({"query_block": (2, 2), "memory_flange": (1, 1), "masked": False,
          "value_dim": 3, "output_dim": 6, "head_merge": "mean",
          "diversity_penalty": 0.1}, (3, 5)),
    ],
    ids=["masked_dropout", "unmasked_padded"],
)
def test_harness(init_kwargs, size):
    run_layer_test(
        LocalAttention2D,
        {"num_heads": 2, "key_dim": 4, **init_kwargs},
        expected_num_trainable_weights=8,  # MultiHeadSelfAttention's
        expected_num_losses=int("diversity_penalty" in init_kwargs),
        inputs={"inputs": _image(*size), "padding_mask": _padding(*size)},
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=(BATCH,) + size
        + (init_kwargs.get("output_dim", CHANNELS),),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"query_block": (0, 2)}, r"query_block=\(0, 2\)"),
        ({"query_block": 4}, "query_block=4"),
        ({"memory_flange": (1, -1)}, r"memory_flange=\(1, -1\)"),
        ({"memory_flange": (1, 2, 3)}, r"memory_flange=\(1, 2, 3\)"),
        ({"key_dim": 0}, "key_dim=0"),
    ],
)
def test_argument_errors_name_the_argument(kwargs, message):
    kwargs = {"num_heads": 2, "key_dim": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        LocalAttention2D(**kwargs)


def test_input_errors_name_the_argument():
    layer = LocalAttention2D(num_heads=2, key_dim=4, query_block=(2, 2),
                             memory_flange=(1, 1))
    with pytest.raises(ValueError, match="inputs.shape"):
        layer(np.zeros((2, 4, 5), "float32"))
    with pytest.raises(ValueError, match="padding_mask.shape"):
        layer(_image(4, 4), padding_mask=np.ones((BATCH, 4, 3), bool))


@tensorflow_only("tf.TensorSpec: unknown batch and image size")
@pytest.mark.parametrize("masked", [True, False])
def test_unknown_batch_and_size_in_tf_function(masked):
    import tensorflow as tf

    local, _ = _pair(query_block=(2, 3), memory_flange=(1, 1), masked=masked)
    run = tf.function(local, input_signature=[
        tf.TensorSpec((None, None, None, CHANNELS))])
    for size in ((2, 3), (5, 7)):
        image = _image(*size)
        assert_allclose(run(image), local(image), atol=1e-5)
