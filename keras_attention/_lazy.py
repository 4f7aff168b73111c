"""`lazy_exports`: a package's names imported on first use (PEP 562);
`moved_module`: the old path of a module that moved, kept for a release.
"""

import importlib
import sys
import warnings


def _moved(old, new):
    return (f"{old} is deprecated: it moved to {new}, import it from there "
            f"({old} will be removed after the next release)")


def lazy_exports(package, exports, moved=None):
    """`(__getattr__, __dir__)` for `package`, whose name `n` comes from
    its submodule `exports[n]` when first read.

    `moved` maps names the package used to export to the module that has
    them now (its full name): reading one still works, with a
    DeprecationWarning that points at the reader. They are not listed by
    `__dir__`.

    >>> getattr_, dir_ = lazy_exports("keras_attention", {"__version__": "version"})
    >>> getattr_("__version__") == __import__("keras_attention").__version__
    True
    """
    moved = moved or {}

    def __getattr__(name):
        if name in moved:
            # `from package import name` reads it twice, importlib's
            # `hasattr` first: warn once, at the statement's own read.
            if "_bootstrap" not in sys._getframe(1).f_code.co_filename:
                warnings.warn(
                    _moved(f"{package}.{name}", f"{moved[name]}.{name}"),
                    DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        if name not in exports:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}"
            )
        module = importlib.import_module(f"{package}.{exports[name]}")
        return getattr(module, name)

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__


def moved_module(old, module, new=None):
    """`(__getattr__, __dir__, __all__)` for the module `old` (its full
    name), whose code moved to the module named `module`: every name of
    `module` reads from `old` as before, `from old import *` included.

    Call it at the module level of `old`: it warns (DeprecationWarning,
    pointing at the statement that imports `old`) that `old` moved to
    `new`, the full name to import instead (default: `module`). Like
    `lazy_exports`' `moved`, the new home is named, not imported by the
    old package: a deprecated path adds no import between packages.
    """
    warnings.warn(_moved(old, new or module), DeprecationWarning,
                  stacklevel=3)
    module = importlib.import_module(module)

    def __getattr__(name):
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(
                f"module {old!r} has no attribute {name!r}") from None

    def __dir__():
        return sorted(vars(module))

    public = [name for name in vars(module) if not name.startswith("_")]
    return __getattr__, __dir__, public
