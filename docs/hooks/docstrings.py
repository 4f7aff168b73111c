"""A griffe extension: our docstrings' examples and call arguments as
Markdown the site can show.

Examples. The docstrings write their runnable examples as plain doctest lines after
`Example:`, not indented under it, so the Google-style parser leaves them
as text, which Markdown would read as nested block quotes. This wraps each
run of doctest lines (from a `>>>` line to the next blank line) in a
```` ```pycon ```` fence, so the site shows them as Python sessions.

Call arguments. Keras layers document `call()`'s arguments in a
`Call arguments:` section, which the Google-style parser does not know and
keeps as text; each `name: description` item there becomes a list item, so
they do not run together into one paragraph.

Registered in mkdocs.yml under the python handler's `extensions`.
"""

import re

import griffe


def fence_doctests(text):
    r"""`text` with every doctest run fenced as `pycon`.

    >>> fence_doctests("Example:\n\n>>> 1 + 1\n2\n\nAfter.").splitlines()
    ['Example:', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'After.']
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


_ITEM = re.compile(r"(\s*)(\*{0,2}[A-Za-z_][\w, *]*):\s")


def list_call_arguments(text):
    r"""`text` with the items of its `Call arguments:` sections as a list.

    >>> print(list_call_arguments(
    ...     "Call arguments:\n    x: the input\n        (B, T).\n"
    ...     "    mask: boolean.\n\nReturns:\n    y: z."))
    Call arguments:
        - `x`: the input
            (B, T).
        - `mask`: boolean.
    <BLANKLINE>
    Returns:
        y: z.
    """
    lines = text.splitlines()
    output = []
    item_indent = None
    for line in lines:
        stripped = line.strip()
        if stripped == "Call arguments:":
            item_indent = len(line) - len(line.lstrip()) + 4
            output.append(line)
            continue
        if item_indent is not None:
            indent = len(line) - len(line.lstrip())
            if stripped and indent < item_indent:
                item_indent = None  # the next section
            else:
                match = _ITEM.match(line)
                if stripped and indent == item_indent and match:
                    rest = line[match.end():]
                    line = f"{match.group(1)}- `{match.group(2)}`: {rest}"
        output.append(line)
    return "\n".join(output)


class DocstringMarkdown(griffe.Extension):
    """Fence the doctest examples and list the call arguments of every
    docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs):
        docstring = obj.docstring
        if docstring is None:
            return
        value = docstring.value
        if ">>>" in value:
            value = fence_doctests(value)
        if "Call arguments:" in value:
            value = list_call_arguments(value)
        docstring.value = value
