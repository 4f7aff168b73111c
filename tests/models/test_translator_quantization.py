"""`model.quantize("int8")` on the translators whose output projection is
tied to the target embeddings (`models/_tied_logits.py`): no warning names
one of our layers, the logits stay near the float ones (before, the tied
projection read the int8 embeddings unscaled: logits off by a factor of
hundreds), a `mixed_bfloat16` model runs quantized, and the `.keras` round
trip gives the same logits."""

import os
import tempfile
import warnings

import keras
import numpy as np
import pytest

from keras_attention import layers
from keras_attention.models import RNNTranslator
from keras_attention.models import TransformerTranslator
from keras_attention.models._tied_logits import tied_logits
from tests.backend import as_numpy

VOCABULARY = 300
RNG = np.random.default_rng(51)
TOKENS = {
    "encoder_tokens": RNG.integers(1, VOCABULARY, (4, 9)).astype("int32"),
    "decoder_tokens": RNG.integers(1, VOCABULARY, (4, 7)).astype("int32"),
}
TOKENS["encoder_tokens"][1, 6:] = 0  # padding
# Relative to the float logits' largest magnitude; measured about 0.02.
TOLERANCE = 0.05
OURS = [*layers.__all__, "FlatEinsumDense", "TransformerTranslator",
        "RNNTranslator"]


def test_int8_tied_logits_equal_the_dequantized_product():
    embedding = keras.layers.Embedding(VOCABULARY, 16)
    embedding.build((None,))
    inputs = RNG.normal(size=(3, 5, 16)).astype("float32")
    expected = as_numpy(tied_logits(inputs, embedding))
    embedding.quantize("int8")
    got = as_numpy(tied_logits(inputs, embedding))
    assert got.shape == (3, 5, VOCABULARY) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected,
                               atol=0.02 * np.abs(expected).max())


def test_weight_only_int8_tied_logits_are_the_float_product():
    """Weight-only int8 (`Translator.quantize`'s default): the inputs stay
    float, the product is the inputs times the dequantized rows."""
    embedding = keras.layers.Embedding(VOCABULARY, 16)
    embedding.build((None,))
    embedding.quantize("int8", config=keras.quantizers.Int8QuantizationConfig(
        activation_quantizer=None))
    inputs = RNG.normal(size=(3, 5, 16)).astype("float32")
    rows = as_numpy(embedding.embeddings).astype("float64")  # int8 values
    scale = as_numpy(embedding.embeddings_scale).astype("float64")  # (V,)
    expected = inputs @ (rows / scale[:, None]).T
    got = as_numpy(tied_logits(inputs, embedding))
    assert got.shape == (3, 5, VOCABULARY)
    np.testing.assert_allclose(got, expected, rtol=1e-4,
                               atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize("model_class", [TransformerTranslator,
                                         RNNTranslator])
def test_quantized_translator(model_class, policy):
    model = model_class.from_preset("tiny", VOCABULARY, VOCABULARY,
                                    share_embeddings=True, pad_id=0,
                                    dtype=policy)
    before = as_numpy(model(TOKENS))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.quantize("int8")
    ours = [str(w.message) for w in caught
            if any(f"Layer {name} " in str(w.message) for name in OURS)]
    assert not ours, ours
    assert model.target_embedding.quantization_mode == "int8"
    after = as_numpy(model(TOKENS))
    error = np.abs(after - before).max() / np.abs(before).max()
    assert error <= TOLERANCE, error

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "translator.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    assert restored.target_embedding.quantization_mode == "int8"
    np.testing.assert_array_equal(as_numpy(restored(TOKENS)), after)
