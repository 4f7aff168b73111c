"""LoRA on the attention layers' projections (`MultiHeadAttention.
enable_lora`, Keras's `EinsumDense.enable_lora` underneath): the flat
projections compute with the adapted kernel, the adapters learn while every
other weight stays bit-identical (float and int8 models), and saving merges
them."""

import os
import tempfile

import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from tests.backend import as_numpy

RNG = np.random.default_rng(4)
BATCH, LENGTH, DIM, RANK = 8, 6, 8, 2
INPUTS = RNG.normal(size=(BATCH, LENGTH, DIM)).astype("float32")
TARGETS = RNG.normal(size=(BATCH, LENGTH, DIM)).astype("float32")
LAYERS = {
    "self": lambda: MultiHeadSelfAttention(num_heads=2, key_dim=4),
    "relative": lambda: RelativeAttention(num_heads=2, key_dim=4,
                                          max_relative_position=3),
}


def _model(make):
    inputs = keras.Input((LENGTH, DIM))
    layer = make()
    return keras.Model(inputs, layer(inputs)), layer


def test_flat_projections_use_the_adapted_kernels():
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    layer(INPUTS)
    plain = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    plain(INPUTS)
    plain.set_weights(layer.get_weights())
    before = as_numpy(layer(INPUTS))
    layer.enable_lora(RANK, projections=("query", "key", "value",
                                         "attention_output"))
    projections = (layer.query_dense, layer.key_dense, layer.value_dense,
                   layer.output_dense)
    for projection in projections:
        assert projection._flat is not None  # the 2-D matmul path
        projection.lora_kernel_b.assign(
            RNG.normal(size=projection.lora_kernel_b.shape) * 0.1)
    for projection, twin in zip(projections, (
            plain.query_dense, plain.key_dense, plain.value_dense,
            plain.output_dense)):
        twin.kernel.assign(as_numpy(projection.kernel))  # merged
    adapted = as_numpy(layer(INPUTS))
    assert not np.allclose(adapted, before, atol=1e-3)
    np.testing.assert_allclose(adapted, as_numpy(plain(INPUTS)),
                               rtol=1e-5, atol=1e-5)


# Keras warns about its own layers without weights (InputLayer, Dropout).
@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize`")
@pytest.mark.parametrize("quantized", [False, True], ids=["float", "int8"])
@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_adapters_learn_and_the_rest_stays_frozen(kind, quantized):
    model, layer = _model(LAYERS[kind])
    if quantized:
        model.quantize("int8")
    layer.enable_lora(RANK)
    adapters = [layer.query_dense.lora_kernel_a, layer.query_dense.lora_kernel_b,
                layer.value_dense.lora_kernel_a, layer.value_dense.lora_kernel_b]
    assert {id(w) for w in model.trainable_weights} == {id(w) for w in adapters}
    frozen = {weight.path: as_numpy(weight).copy()
              for weight in model.weights if "lora" not in weight.path}
    model.compile(optimizer=keras.optimizers.Adam(0.03), loss="mse")
    history = model.fit(INPUTS, TARGETS, batch_size=BATCH, epochs=40,
                        verbose=0).history["loss"]
    assert history[-1] < 0.9 * history[0], history
    for weight in model.weights:
        if weight.path in frozen:
            np.testing.assert_array_equal(as_numpy(weight), frozen[weight.path],
                                          err_msg=weight.path)


def test_saving_merges_the_adapters():
    model, layer = _model(LAYERS["self"])
    layer.enable_lora(RANK)
    layer.value_dense.lora_kernel_b.assign(
        RNG.normal(size=layer.value_dense.lora_kernel_b.shape))
    expected = as_numpy(model(INPUTS))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "lora.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    assert not any("lora" in weight.path for weight in restored.weights)
    np.testing.assert_allclose(as_numpy(restored(INPUTS)), expected,
                               rtol=1e-5, atol=1e-5)


def test_enable_lora_names_the_projection():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    with pytest.raises(ValueError, match="unbuilt"):
        layer.enable_lora(RANK)
    layer(INPUTS, INPUTS)
    with pytest.raises(ValueError, match="projections='output'"):
        layer.enable_lora(RANK, projections=("query", "output"))
    assert layer.trainable_weights  # nothing frozen by the failed call
