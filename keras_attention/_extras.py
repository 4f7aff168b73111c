"""`require`: a module's optional dependencies, checked when it is imported.

`pip install keras-attention` installs what the backend-neutral part needs
(Keras, NumPy, matplotlib): `keras_attention.layers`, `ops`, `models` and
`visualize` on JAX, PyTorch or TensorFlow. A module that needs more calls
`require` before its imports, so that importing it without its extra fails
at once with one line that names the extra, never deep inside a call:

>>> require("keras_attention.example", "translate", "os")  # present: no-op
>>> try:
...     require("keras_attention.example", "translate", "no_such_module_xyz")
... except MissingExtraError as error:
...     print(error)
keras_attention.example needs no_such_module_xyz, which is not installed: \
pip install "keras-attention[translate]"
"""

import importlib.util
import sys

# What each extra is for, as `pip install "keras-attention[EXTRA]"` names it.
EXTRAS = {
    "translate": "the translators, tokenizers, training and export "
                 "(TensorFlow, tensorflow-text, SentencePiece, sacreBLEU)",
    "serving": "the TF Serving-compatible server and its clients",
    "official": "beam search (tf-models-official)",
    "music": "MIDI files of chorales (mido)",
}


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra
    that installs it. The command line prints it as one line."""


def require(module, extra, *imports):
    """Raise `MissingExtraError` naming `extra` unless every top-level module
    in `imports` can be imported. `module` is the importing module's name.
    Only looks the modules up (`importlib.util.find_spec`): nothing is
    imported here."""
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {sorted(EXTRAS)}, got {extra!r}")
    missing = [name for name in imports if _missing(name.split(".")[0])]
    if missing:
        raise MissingExtraError(
            f"{module} needs {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed: "
            f'pip install "keras-attention[{extra}]"',
            name=missing[0])


def _missing(name):
    """Whether the top-level module `name` cannot be imported (`None` in
    `sys.modules` is how Python marks a module as blocked)."""
    if name in sys.modules:
        return sys.modules[name] is None
    return importlib.util.find_spec(name) is None
