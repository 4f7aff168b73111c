"""The site's guides are a promise: every ```python block in docs/**/*.md
runs as written, the blocks of one page in order and in one namespace.

The one rule for leaving a block out: it talks to a running server, which
it says by containing "localhost:" (the serving tests run such requests
against a real one)."""

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
NEEDS_A_SERVER = "localhost:"


def python_blocks(path):
    return re.findall(r"^```python\n(.*?)^```", path.read_text(),
                      re.DOTALL | re.MULTILINE)


def pages():
    return sorted(path for path in DOCS.rglob("*.md")
                  if python_blocks(path))


def test_the_guides_have_snippets():
    assert len(pages()) >= 3


@pytest.mark.parametrize("page", pages(),
                         ids=lambda path: str(path.relative_to(DOCS)))
def test_snippets_run(page):
    blocks = [block for block in python_blocks(page)
              if NEEDS_A_SERVER not in block]
    namespace = {"__name__": "__docs__"}
    for block in blocks:
        exec(compile(block, str(page), "exec"), namespace)  # noqa: S102
