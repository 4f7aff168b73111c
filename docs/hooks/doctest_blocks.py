"""A griffe extension: the `>>>` examples of our docstrings as code.

The docstrings write their runnable examples as plain doctest lines after
`Example:`, not indented under it, so the Google-style parser leaves them
as text, which Markdown would read as nested block quotes. This wraps each
run of doctest lines (from a `>>>` line to the next blank line) in a
```` ```pycon ```` fence, so the site shows them as Python sessions. It is
registered in mkdocs.yml under the python handler's `extensions`.
"""

import griffe


def fence_doctests(text):
    """`text` with every doctest run fenced as `pycon`.

    >>> print(fence_doctests("Example:\\n\\n>>> 1 + 1\\n2\\n\\nAfter."))
    Example:
    <BLANKLINE>
    ```pycon
    >>> 1 + 1
    2
    ```
    <BLANKLINE>
    After.
    """
    lines = text.splitlines()
    output = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip()
        if not (stripped == ">>>" or stripped.startswith(">>> ")):
            output.append(line)
            index += 1
            continue
        indent = line[:len(line) - len(stripped)]
        output.append(f"{indent}```pycon")
        while index < len(lines) and lines[index].strip():
            output.append(lines[index])
            index += 1
        output.append(f"{indent}```")
    return "\n".join(output)


class DoctestBlocks(griffe.Extension):
    """Fence the doctest examples of every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs):
        docstring = obj.docstring
        if docstring is not None and ">>>" in docstring.value:
            docstring.value = fence_doctests(docstring.value)
