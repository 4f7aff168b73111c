"""`lazy_exports`: a package's names imported on first use (PEP 562)."""

import importlib


def lazy_exports(package, exports):
    """`(__getattr__, __dir__)` for `package`, whose name `n` comes from
    its submodule `exports[n]` when first read.

    >>> getattr_, dir_ = lazy_exports("keras_attention", {"__version__": "version"})
    >>> getattr_("__version__") == __import__("keras_attention").__version__
    True
    """

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}"
            )
        module = importlib.import_module(f"{package}.{exports[name]}")
        return getattr(module, name)

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__
