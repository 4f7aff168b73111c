"""SinusoidalPositionEmbedding: pinned values and KerasHub parity."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_attention.layers import SinusoidalPositionEmbedding
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.harness import run_layer_test

INPUTS = np.zeros((2, 7, 6), "float32")


def test_harness():
    run_layer_test(
        SinusoidalPositionEmbedding,
        {"max_wavelength": 500.0},
        expected_num_trainable_weights=0,
        inputs={"inputs": INPUTS},
        expected_output_shape=(2, 7, 6),
    )


def test_pinned_values():
    """Hand-computed: sin(p / 10000^(2i/d)) on even, cos on odd, d = 4."""
    table = as_numpy(SinusoidalPositionEmbedding()(np.zeros((1, 3, 4))))[0]
    want = np.array(
        [
            [0.0, 1.0, 0.0, 1.0],
            [np.sin(1.0), np.cos(1.0), np.sin(0.01), np.cos(0.01)],
            [np.sin(2.0), np.cos(2.0), np.sin(0.02), np.cos(0.02)],
        ]
    )
    assert_allclose(table, want, atol=1e-6)
    # Golden numbers at position 50 of a 6-dim table (base 10000), worked
    # out in float64: sin(50), cos(50), sin(50 / 10000^(2/6)), ...
    row = as_numpy(
        SinusoidalPositionEmbedding()(np.zeros((1, 1, 6)), start_index=50)
    )[0, 0]
    assert_allclose(
        row,
        [-0.26237485, 0.96496603, 0.73169017, -0.68163736, 0.10751352,
         0.99420362],
        atol=1e-5,
    )


@pytest.mark.parametrize("dim", [6, 7, 64])
def test_equals_keras_hub_sine_position_encoding(dim):
    inputs = np.zeros((2, 300, dim), "float32")
    ours = SinusoidalPositionEmbedding(max_wavelength=1000.0)(inputs)
    hub = keras_hub.layers.SinePositionEncoding(max_wavelength=1000.0)(inputs)
    assert_allclose(ours, hub, atol=1e-4)


def test_no_maximum_length_and_start_index():
    layer = SinusoidalPositionEmbedding()
    long = as_numpy(layer(np.zeros((1, 5000, 8), "float32")))
    tail = as_numpy(layer(np.zeros((1, 3, 8), "float32"), start_index=4997))
    assert_allclose(tail, long[:, 4997:], atol=1e-5)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_half_precision_table_is_accurate_at_long_positions(policy):
    layer = SinusoidalPositionEmbedding(dtype=policy)
    table = layer(np.zeros((1, 4096, 16), "float32"))
    assert keras.backend.standardize_dtype(table.dtype) == (
        keras.DTypePolicy(policy).compute_dtype
    )
    exact = as_numpy(SinusoidalPositionEmbedding()(np.zeros((1, 4096, 16))))
    error = np.abs(as_numpy(keras.ops.cast(table, "float32")) - exact).max()
    # Only the final rounding to half precision: < 1 ulp near 1.0.
    assert error < (1e-3 if policy == "mixed_float16" else 8e-3), error


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_wavelength=0"):
        SinusoidalPositionEmbedding(max_wavelength=0)
    with pytest.raises(ValueError, match=r"inputs.shape=\(2, 7\)"):
        SinusoidalPositionEmbedding()(INPUTS[..., 0])
