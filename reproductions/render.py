"""One renderer for the reproductions' results: each results file's tables
and sentences from its table specs (`tables.json`, data), for
`benchmarks/RESULTS.md` and the model pages (`<!-- results NAME -->`).

A spec is a list of blocks, chosen by the results file's `benchmark`
name (the longest key of `tables.json` that starts it; a key whose spec
is null, such as `babi_backends`, is a benchmark without one):

- `{"commands": true}`: the commands that wrote the file, where there are
  several;
- `{"table": [[HEADER, TEMPLATE, CONDITION?, ELSE?], ...], "from": PATH,
  "where": {FIELD: VALUE}, "append": [...]}`: a Markdown table, a line for
  each item of the list or dict at `PATH` of the record (`rows`,
  `summary`; a dict's items carry their key as `key` and themselves as
  `item`; `where` keeps those with these values, `require` those with
  this field; `join` and `unnest` as `selected` says), each cell its
  template filled from the item; `append` adds lines filled from the
  record, each `{"if": PATH, "cells": {HEADER: TEMPLATE}}` (left out
  when `PATH` is missing; the other cells —); `above`, a paragraph
  filled from the record, is said above the table when it has lines;
- `{"text": TEMPLATE, "if": CONDITION, "unless": CONDITION}`: a
  paragraph filled from the record (left out when a field it names is
  missing, its `if` fails or its `unless` holds; either may be a list of
  conditions: all must hold, or none);
- `{"each": PATH, "blocks": [...]}`: the blocks once for each item at
  `PATH` (with `where` and `require` as a table's), filled from the item
  (an item that is not a dict as `value`).

Templates are Python format strings whose fields are dotted paths into
the item (`{test_error_mean:.2%}`, `{greedy.bleu:.2f}`), with `record.`
for the whole file; a cell whose field is missing or null is —, and a
column with no value in any line is left out. A column's `CONDITION`
(`"seeds > 1"`: a field, a comparison and a number; a bare `FIELD`,
that the field is there and not empty) shows its `ELSE` template, or —, where it does
not hold. `{x:min}` writes
seconds as minutes (`.1f`), `{x:gib}` and `{x:mib}` bytes as GiB (`.2f`)
and MiB (`.1f`), `{x:pairs}` a list of pairs as `a b; c d`, `{x:len}`
a list's length, `{x:inverse}` 1/x (`.3f`), `{x:each SPEC}` each entry
of a list by `SPEC` (of a dict, each key and its value), comma
separated, `{x:range_mib}` a `{median_mib, min_mib, max_mib}` as `median
(min–max)` MiB (the median alone where they round alike), `{x:/1e9
,.0f}` x divided by 1e9, then formatted by the rest, and
`{x:words.NAME}`
the value's words in `tables.json`'s `_words.NAME` (`{"tie": "a tie
..."}`).

    python -m reproductions render NAME   # a setting's results, re-rendered
"""

import functools
import json
import operator
import pathlib
import re
import string

HERE = pathlib.Path(__file__).resolve().parent
TABLES = HERE / "tables.json"
MISSING = "—"
_CONDITION = re.compile(r"^\s*([\w.]+)\s*(>=|<=|==|!=|>|<)\s*(-?[\d.]+)\s*$")
_COMPARE = {">": operator.gt, "<": operator.lt, ">=": operator.ge,
            "<=": operator.le, "==": operator.eq, "!=": operator.ne}
_UNITS = {"min": lambda v: f"{v / 60:.1f}",
          "gib": lambda v: f"{v / 2**30:.2f}",
          "mib": lambda v: f"{v / 2**20:.1f}",
          "pairs": lambda v: "; ".join(f"{a} {b}" for a, b in v),
          "len": len,
          "inverse": lambda v: f"{1 / v:.3f}",
          "range_mib": lambda v: (
              f"{v['median_mib']:.0f}"
              if round(v["min_mib"]) == round(v["max_mib"])
              else f"{v['median_mib']:.0f} ({v['min_mib']:.0f}–"
                   f"{v['max_mib']:.0f})")}


class Missing(LookupError):
    """A template's field that the item does not have (or holds null)."""


def lookup(context, path):
    """The value at dotted `path` of `context` (dicts by key, a dict's int
    keys read as text, as JSON writes them; lists by index); `Missing`
    where there is none, or it is null."""
    value = context
    for part in path.split("."):
        if isinstance(value, dict) and part not in value and part.lstrip(
                "-").isdigit() and int(part) in value:
            part = int(part)
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and (
                -len(value) <= int(part) < len(value)):
            value = value[int(part)]
        else:
            raise Missing(path)
    if value is None:
        raise Missing(path)
    return value


class _Formatter(string.Formatter):
    def get_field(self, field_name, args, kwargs):
        return lookup(kwargs, field_name), field_name

    def format_field(self, value, spec):
        if spec in _UNITS:
            return str(_UNITS[spec](value))
        if spec.startswith("each "):  # a list (or dict), each entry
            if isinstance(value, dict):
                return ", ".join(f"{key} {self.each(v, spec[5:])}"
                                 for key, v in value.items())
            return ", ".join(self.each(v, spec[5:]) for v in value)
        if spec.startswith("words."):  # a value named in words of tables.json
            return words()[spec[6:]][str(value)]
        if spec.startswith("/"):  # "/1e9 ,.0f": divided, then formatted
            divisor, _, rest = spec[1:].partition(" ")
            return super().format_field(value / float(divisor), rest)
        return super().format_field(value, spec)


    def each(self, value, spec):
        """An entry of a list: a null one as —."""
        return MISSING if value is None else self.format_field(value, spec)


_FORMATTER = _Formatter()


def fill(template, context):
    """`template` filled from `context`, or None where a field is
    missing; a `ValueError` naming the template where a value does not
    fit its format."""
    try:
        return _FORMATTER.vformat(template, (), context)
    except Missing:
        return None
    except (TypeError, ValueError, KeyError, IndexError) as error:
        raise ValueError(f"template {template!r}: a value does not fit its "
                         f"format ({type(error).__name__}: {error})") from None


def holds(condition, context):
    """Whether `condition` (`"FIELD OP NUMBER"`, or `"FIELD"`: it is
    there and not empty; or a list of them, all holding) holds for
    `context`."""
    if isinstance(condition, list):
        return all(holds(each, context) for each in condition)
    if re.fullmatch(r"[\w.]+", condition.strip()):
        try:
            found = lookup(context, condition.strip())
        except Missing:
            return False
        return not (isinstance(found, (str, list, dict)) and not found)
    match = _CONDITION.match(condition)
    if not match:
        raise ValueError(f"a condition is `FIELD OP NUMBER`, received: "
                         f"{condition!r}")
    field, op, number = match.groups()
    try:
        return _COMPARE[op](lookup(context, field), float(number))
    except Missing:
        return False
    except TypeError:
        raise ValueError(f"condition {condition!r}: `{field}` is not a "
                         "number") from None


def items(record, path):
    """The items at `path` of `record` as contexts: a list's entries, a
    dict's values with their `key`; each can reach `record.`."""
    try:
        found = lookup(record, path)
    except Missing:
        return []
    if isinstance(found, dict):
        found = [{**value, "key": key, "item": value}
                 for key, value in found.items() if isinstance(value, dict)]
    return [{**item, "record": record} if isinstance(item, dict)
            else {"value": item, "record": record} for item in found]


def selected(block, record, key):
    """The items at `block[key]` (default `rows`) that have `where`'s
    values and `require`'s field; with `join` (`{"on": FIELD, "with":
    PATH}`) each also has the fields of the entry of the dict at `PATH`
    named by its `FIELD`; with `unnest` (a field holding a list of
    dicts), an item per entry, with the entry's fields."""
    found = items(record, block.get(key, "rows"))
    if "join" in block:
        try:
            table = lookup(record, block["join"]["with"])
        except Missing:
            table = {}
        found = [{**item, **table.get(str(item.get(block["join"]["on"])), {})}
                 for item in found]
    if "unnest" in block:
        found = [{**item, **entry} for item in found
                 for entry in item.get(block["unnest"]) or []]
    return [item for item in found
            if all(item.get(name) == value
                   for name, value in block.get("where", {}).items())
            and holds(block.get("require", "record"), item)]


def table(block, record):
    """A table block's lines (none without lines)."""
    columns = block["table"]
    contexts = selected(block, record, "from")
    lines = []
    for context in contexts:
        cells = []
        for _, template, *condition in columns:
            if condition and not holds(condition[0], context):
                template = condition[1] if len(condition) > 1 else None
            cells.append(None if template is None
                         else fill(template, context))
        lines.append(cells)
    context = {**record, "record": record}
    for extra in block.get("append", []):
        try:
            lookup(context, extra["if"])
        except Missing:
            continue
        lines.append([fill(extra["cells"][header], context)
                      if header in extra["cells"] else None
                      for header, *_ in columns])
    if not lines:
        return []
    above = fill(block["above"], context) if "above" in block else None
    kept = [index for index in range(len(columns))
            if any(line[index] is not None for line in lines)
            or block.get("keep_empty_columns")]
    out = [above, ""] if above else []
    out += ["| " + " | ".join(columns[i][0] for i in kept) + " |",
            "|" + "---|" * len(kept)]
    for line in lines:
        out.append("| " + " | ".join(MISSING if line[i] is None else line[i]
                                     for i in kept) + " |")
    return out


def blocks(spec, record):
    """The lines of `spec`'s blocks for `record`, a blank line between
    blocks."""
    out = []
    for block in spec:
        if block.get("commands"):
            commands = record.get("commands", [])
            found = (["The rows come from " + ", then ".join(
                f"`{command}`" for command in commands) + "."]
                if len(commands) > 1 else [])
        elif "table" in block:
            found = table(block, record)
        elif "text" in block:
            context = {**record, "record": record}
            unless = block.get("unless", [])
            shown = holds(block.get("if", "record"), context) and not any(
                holds(each, context) for each in (
                    unless if isinstance(unless, list) else [unless]))
            text = fill(block["text"], context) if shown else None
            found = [] if text is None else [text]
        elif "each" in block:
            found = []
            for item in selected(block, record, "each"):
                inner = blocks(block["blocks"], item)
                found += inner + [""] if inner else []
            found = found[:-1]
        else:
            raise ValueError(f"a block is a table, text, each or commands, "
                             f"received: {sorted(block)}")
        if found:
            out += found + [""]
    return out[:-1]


@functools.lru_cache(maxsize=4)
def _read(path):
    """`tables.json` parsed, once per path (a page renders many cells)."""
    return json.loads(pathlib.Path(path).read_text())


def specs(path=TABLES):
    """`{benchmark prefix: blocks}` from `tables.json` (`_words` aside)."""
    return {key: value for key, value in _read(path).items()
            if key != "_words"}


def words(path=TABLES):
    """`tables.json`'s `_words`: `{name: {value: words}}`."""
    return _read(path).get("_words", {})


def spec_for(benchmark, found=None):
    """The blocks of the longest prefix of `benchmark` in `found`
    (default: `tables.json`), or None (none, or a null spec)."""
    found = specs() if found is None else found
    keys = [key for key in found if benchmark.startswith(key)]
    return found[max(keys, key=len)] if keys else None


def render(record, found=None):
    """`record`'s lines by its spec, or None where it has none."""
    spec = spec_for(record["benchmark"], found)
    return None if spec is None else blocks(spec, record)
