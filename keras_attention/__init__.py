"""keras-attention: reusable Keras 3 attention layers.

Every layer is importable from `keras_attention.layers` and from here.
"""

from keras_attention import layers
from keras_attention import ops
from keras_attention.layers import *  # noqa: F401,F403
from keras_attention.layers import __all__ as _layer_names
from keras_attention.version import __version__

__all__ = ["__version__", "layers", "ops", *_layer_names]
