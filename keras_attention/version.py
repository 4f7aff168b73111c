"""The package version, read by `setup.py` and exported as `__version__`."""

__version__ = "0.1.0"
