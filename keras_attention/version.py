"""The package version, in one place: pyproject.toml reads it (`dynamic`),
`keras-attention --version` prints it, CHANGELOG.md says what it added."""

__version__ = "0.1.0"
