"""Keras models built only from `keras_attention.layers`.

The translators share one decoding protocol (see `keras_attention.decoding`):
`encode`, `initial_cache`, `decode_step`. `TRANSLATORS` maps the names the
command line uses (`--model`) to their classes; each class owns its
`PRESETS`.
"""

from keras_attention.models.rnn_translator import RNNTranslator
from keras_attention.models.transformer_translator import PRESETS
from keras_attention.models.transformer_translator import TransformerTranslator

TRANSLATORS = {"transformer": TransformerTranslator, "rnn": RNNTranslator}

__all__ = ["PRESETS", "RNNTranslator", "TRANSLATORS", "TransformerTranslator"]
