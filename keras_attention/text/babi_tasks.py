"""Deprecated: the bAbI release's files and validation split moved to
`keras_attention.data.babi` (`task_file`, `split_validation`, `TASK_NAMES`
and the rest).

Importing this module warns (DeprecationWarning); every name it had reads
from here as before, for one more release.
"""

from keras_attention import _lazy

__getattr__, __dir__, __all__ = _lazy.moved_module(
    __name__, "keras_attention.data._babi_tasks", "keras_attention.data.babi")
