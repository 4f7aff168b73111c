"""Deprecated: bAbI moved to `keras_attention.data.babi`.

Importing this module warns (DeprecationWarning); every name it had reads
from here as before, for one more release.
"""

from keras_attention import _lazy

__getattr__, __dir__, __all__ = _lazy.moved_module(
    __name__, "keras_attention.data.babi")
