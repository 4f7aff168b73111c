"""Keras models built only from `keras_attention.layers`."""

from keras_attention.models.transformer_translator import PRESETS
from keras_attention.models.transformer_translator import TransformerTranslator

__all__ = ["PRESETS", "TransformerTranslator"]
