"""The README is a promise: its Python snippets run as written."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


def test_readme_snippets_run():
    """Every snippet but those that talk to a server on localhost:8500
    (tests/serving/test_grpc_contract.py runs those against one)."""
    blocks = [block for block in python_blocks()
              if "localhost:8500" not in block]
    assert len(blocks) >= 6
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102


def test_readme_shows_the_two_commands():
    text = README.read_text()
    assert "make demo" in text and "make test" in text
