"""`FlatEinsumDense` (the projections of `MultiHeadAttention`) computes what
`keras.layers.EinsumDense` computes with the same weights, outputs and
gradients, for every equation attention uses; other equations and LoRA
take `EinsumDense`'s own path."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.layers._flat_einsum_dense import FlatEinsumDense
from keras_attention.layers._flat_einsum_dense import _flat_split
from tests.backend import gradient

CASES = {
    "query": ("btd,dnh->btnh", (None, 3, 4), "nh", (2, 5, 8)),
    "output": ("btnv,nvd->btd", (None, 8), "d", (2, 5, 3, 4)),
    "merged": ("btv,vd->btd", (None, 8), "d", (2, 5, 6)),
    "no-bias": ("bsd,dnv->bsnv", (None, 2, 3), None, (3, 1, 8)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_equals_einsum_dense_with_the_same_weights(case):
    equation, output_shape, bias_axes, input_shape = CASES[case]
    inputs = np.random.default_rng(0).normal(size=input_shape).astype(
        "float32")
    reference = keras.layers.EinsumDense(
        equation, output_shape, bias_axes=bias_axes,
        bias_initializer="random_normal")
    flat = FlatEinsumDense(equation, output_shape, bias_axes=bias_axes)
    reference.build(input_shape)
    flat.build(input_shape)
    flat.set_weights(reference.get_weights())
    assert flat._flat is not None
    np.testing.assert_allclose(ops.convert_to_numpy(flat(inputs)),
                               ops.convert_to_numpy(reference(inputs)),
                               rtol=1e-5, atol=1e-5)
    weights = [ops.convert_to_numpy(w) for w in reference.trainable_variables]

    def loss(layer):  # of the input and every weight, stateless
        def value(inputs, *weights):
            outputs, _ = layer.stateless_call(list(weights), [], inputs)
            return ops.sum(ops.square(outputs))
        return value

    ours = gradient(loss(flat), inputs, *weights)
    theirs = gradient(loss(reference), inputs, *weights)
    assert len(ours) == len(theirs) == 1 + len(weights)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_allclose(mine, expected, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("equation, expected", [
    ("btd,dnh->btnh", 1), ("btnv,nvd->btd", 2), ("ab,bc->ac", 1),
    ("btd,dnh->bnth", None),  # output axes reordered
    ("btnv,vnd->btd", None),  # contracted axes in another order
    ("ab,cd->abcd", None),  # nothing contracted
    ("...d,dh->...h", None),
])
def test_only_trailing_by_leading_products_are_flattened(equation, expected):
    assert _flat_split(equation) == expected


def test_other_equations_and_lora_take_einsum_dense_s_path():
    inputs = np.random.default_rng(1).normal(size=(2, 3, 4)).astype(
        "float32")
    transposed = FlatEinsumDense("btd,dnh->bnth", (2, 3, 5))
    reference = keras.layers.EinsumDense("btd,dnh->bnth", (2, 3, 5))
    transposed.build(inputs.shape)
    reference.build(inputs.shape)
    transposed.set_weights(reference.get_weights())
    np.testing.assert_allclose(ops.convert_to_numpy(transposed(inputs)),
                               ops.convert_to_numpy(reference(inputs)),
                               rtol=1e-6)
    lora = FlatEinsumDense("btd,dnh->btnh", (None, 2, 5), bias_axes="nh")
    lora.build(inputs.shape)
    before = ops.convert_to_numpy(lora(inputs))
    lora.enable_lora(2)
    lora.lora_kernel_b.assign(np.ones(lora.lora_kernel_b.shape, "float32"))
    reference = keras.layers.EinsumDense("btd,dnh->btnh", (None, 2, 5),
                                         bias_axes="nh")
    reference.build(inputs.shape)
    reference.set_weights(lora.get_weights()[:2])
    reference.kernel.assign(ops.convert_to_numpy(lora.kernel))
    after = ops.convert_to_numpy(lora(inputs))
    assert not np.allclose(after, before)  # the LoRA delta is used
    np.testing.assert_allclose(after, ops.convert_to_numpy(reference(inputs)),
                               rtol=1e-5, atol=1e-5)
