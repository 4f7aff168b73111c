"""LoRA on the translators (`enable_lora`, `models/_lora.py`): only the
adapters train, they learn (the loss falls on a batch the frozen model
gets wrong), every other weight stays bit-identical, and saving merges
them into a plain model that computes the same logits."""

import os
import tempfile

import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from keras_attention.models import DecoderOnlyTranslator
from keras_attention.models import TransformerTranslator
from tests.backend import as_numpy

VOCABULARY, RANK = 40, 4
RNG = np.random.default_rng(53)
TOKENS = {
    "encoder_tokens": RNG.integers(1, VOCABULARY, (16, 7)).astype("int32"),
    "decoder_tokens": RNG.integers(1, VOCABULARY, (16, 6)).astype("int32"),
}
# The new data: each target token a fixed function of the decoder input.
TARGETS = (TOKENS["decoder_tokens"] * 7 + 3) % VOCABULARY


def _model(model_class):
    keras.utils.set_random_seed(5)
    model = model_class.from_preset("tiny", VOCABULARY, VOCABULARY,
                                    share_embeddings=True, pad_id=0)
    model(TOKENS)
    return model


@pytest.mark.parametrize("model_class", [TransformerTranslator,
                                         DecoderOnlyTranslator])
def test_adapters_learn_and_the_rest_stays_frozen(model_class):
    model = _model(model_class)
    model.enable_lora(RANK)
    trainable = model.trainable_weights
    assert trainable and all("lora_kernel" in w.path for w in trainable)
    # Query and value of every attention layer: 2 adapters of 2 matrices.
    attention = [layer for layer in model._flatten_layers()
                 if isinstance(layer, MultiHeadAttention)]
    assert len(attention) == (6 if model_class is TransformerTranslator
                              else 2)
    assert len(trainable) == 4 * len(attention)
    counted = sum(int(np.prod(w.shape)) for w in trainable)
    total = sum(int(np.prod(w.shape)) for w in model.weights)
    assert counted < 0.1 * total
    _adapters_learn_frozen_and_merge(model)


def _adapters_learn_frozen_and_merge(model):
    """Fit `model` (LoRA enabled) to the new targets: the loss falls,
    every weight but the adapters stays bit-identical, and the saved model
    holds no adapter and computes the same logits."""
    frozen = {w.path: as_numpy(w).copy() for w in model.weights
              if "lora" not in w.path}
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    history = model.fit(TOKENS, TARGETS, batch_size=16, epochs=40,
                        verbose=0).history["loss"]
    assert history[-1] < 0.7 * history[0], history
    for weight in model.weights:
        if weight.path in frozen:
            np.testing.assert_array_equal(as_numpy(weight),
                                          frozen[weight.path],
                                          err_msg=weight.path)
    adapted = as_numpy(model(TOKENS))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "adapted.keras")
        model.save(path)
        merged = keras.saving.load_model(path)
    assert not any("lora" in w.path for w in merged.weights)
    np.testing.assert_allclose(as_numpy(merged(TOKENS)), adapted,
                               rtol=1e-4, atol=1e-4)


def test_enable_lora_needs_a_built_model():
    model = TransformerTranslator.from_preset("tiny", VOCABULARY, VOCABULARY)
    with pytest.raises(ValueError, match="Build TransformerTranslator"):
        model.enable_lora(RANK)
    built = _model(TransformerTranslator)
    with pytest.raises(ValueError, match="projections='keys'"):
        built.enable_lora(RANK, projections=("keys",))


@pytest.mark.parametrize("query, adapted", [
    ("current", ["attentional", "output_hidden"]),
    ("previous", ["output_hidden"]),
])
def test_rnn_translator_adapters_learn_and_merge(query, adapted):
    """The RNN translator's Dense projections take Keras's own adapters:
    only they train, they learn, the rest (cells, score weights) stays
    bit-identical, and saving merges them."""
    from keras_attention.models import RNNTranslator

    keras.utils.set_random_seed(5)
    model = RNNTranslator.from_preset("tiny", VOCABULARY, VOCABULARY,
                                      query=query)
    model(TOKENS)
    layers = model.enable_lora(RANK)
    assert [layer.name for layer in layers] == adapted
    trainable = model.trainable_weights
    assert len(trainable) == 2 * len(adapted)
    assert all("lora_kernel" in w.path for w in trainable)
    _adapters_learn_frozen_and_merge(model)


def test_rnn_translator_lora_mistakes_name_the_projection():
    from keras_attention.models import RNNTranslator

    model = RNNTranslator.from_preset("tiny", VOCABULARY, VOCABULARY)
    with pytest.raises(ValueError, match="Build RNNTranslator"):
        model.enable_lora(RANK)
    model(TOKENS)
    with pytest.raises(ValueError, match="no `attentional` projection"):
        model.enable_lora(RANK, projections=("attentional",))
    with pytest.raises(ValueError, match="projections='cell'"):
        model.enable_lora(RANK, projections=("cell",))
