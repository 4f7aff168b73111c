"""keras-attention: reusable Keras 3 attention layers.

Every layer is importable from `keras_attention.layers` and from here. The
subpackages load on first use (PEP 562), so the command line and
`keras_attention.training.config` start without importing TensorFlow. When
Keras is already imported, the layers are imported (and so registered for
`keras.saving.load_model`) at once, as before; otherwise touch any layer,
or `import keras_attention.layers`, before loading a `.keras` file.
"""

import importlib
import sys

from keras_attention.version import __version__

# The public layers, as `keras_attention.layers.__all__` lists them.
_LAYER_NAMES = (
    "AdditiveAttention",
    "AttentionRNNDecoder",
    "DotAttention",
    "GeneralAttention",
    "GlimpseSensor",
    "LocalAttention2D",
    "LocalSelfAttention",
    "MemoryCompressedAttention",
    "MultiHeadAttention",
    "MultiHeadSelfAttention",
    "RelativeAttention",
    "ScaledDotAttention",
    "ScoreAttention",
    "SelfAttention2D",
    "SelfAttentivePooling",
    "SequentialLocalAttention2D",
    "SinusoidalPositionEmbedding",
    "TransformerDecoder",
    "TransformerEncoder",
    "UniversalTransformerEncoder",
)

__all__ = ["__version__", "layers", "ops", *_LAYER_NAMES]


def __getattr__(name):
    if name in ("layers", "ops"):
        return importlib.import_module(f"keras_attention.{name}")
    if name in _LAYER_NAMES:
        return getattr(importlib.import_module("keras_attention.layers"), name)
    raise AttributeError(f"module 'keras_attention' has no attribute {name!r}")


def __dir__():
    return __all__


if "keras" in sys.modules:  # nothing to save: register the layers now
    importlib.import_module("keras_attention.layers")
