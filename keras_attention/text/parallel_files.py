"""The user's own parallel corpus: two aligned text files, or one TSV file.

Two formats, each file plain or gzip-compressed (recognised by its first
two bytes, `1f 8b`, whatever its name), UTF-8:

- a source file and a target file, one sentence a line; line N of one is
  the translation of line N of the other;
- one tab-separated file, one pair a line: `source<TAB>target`.

Only the line ending (`"\\n"` or `"\\r\\n"`) and a UTF-8 byte order mark at the
start of a file are removed; everything else the user wrote is kept as is,
blank lines included (as `("", "")` pairs), so that pair N is line N of the
files. The tf.data pipeline drops empty pairs itself.

A file that cannot be read that way raises `CorpusError` (a `ValueError`)
naming the file, and the line where there is one; a missing file raises
`FileNotFoundError` naming its path.
"""

import codecs
import errno
import gzip
import os
import zlib
from collections.abc import Sequence

from keras_attention import _validation

GZIP_MAGIC = b"\x1f\x8b"


class CorpusError(ValueError):
    """A corpus file that is not in the documented format.

    The message names the file, and the 1-based line number when the fault
    is on one line.
    """


def _read_bytes(path):
    """The bytes of `path`, gunzipped when they start with the gzip magic."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(
            errno.ENOENT, "corpus file not found", str(path)
        ) from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise CorpusError(
                f"{path}: starts like a gzip file but cannot be "
                f"decompressed ({error})"
            ) from None
    return data


def read_lines(path):
    """The lines of a text file (plain or gzip, UTF-8), line endings removed.

    A last line without a newline is a line; a file that ends with a
    newline has no extra empty line at the end. Blank lines are kept; a
    UTF-8 byte order mark at the start of the file is dropped.

    Args:
        path: str or `os.PathLike`.

    Returns:
        A list of str, one per line.

    Raises:
        FileNotFoundError: `path` does not exist.
        CorpusError: the file is empty, is a damaged gzip file, or a line
            is not valid UTF-8 (the message gives its 1-based number).

    Example:

    >>> import pathlib, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(folder.name) / "lines.txt"
    >>> _ = path.write_bytes(b"One.\\r\\n\\n  Three\\t3  \\n")
    >>> read_lines(path)
    ['One.', '', '  Three\\t3  ']
    >>> folder.cleanup()
    """
    path = _validation.path("path", path)
    data = _read_bytes(path)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if not data:
        raise CorpusError(
            f"{path} is empty: expected one sentence a line (UTF-8 text, "
            "plain or gzip)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line_number = data.count(b"\n", 0, error.start) + 1
        raise CorpusError(
            f"{path}: line {line_number} is not valid UTF-8 (bytes "
            f"{data[error.start:error.end]!r} at byte {error.start - line_start + 1}"
            " of the line); save the file as UTF-8"
        ) from None
    lines = text.split("\n")
    ends_with_newline = lines[-1] == ""
    if ends_with_newline:
        lines.pop()  # the newline ending the last line starts no new line
    return _strip_endings(lines, ends_with_newline)


def _strip_endings(lines, ends_with_newline):
    """Drop the "\\r" of each "\\r\\n" (a last line without "\\n" keeps its "\\r")."""
    last = len(lines) - 1
    return [
        line[:-1]
        if line.endswith("\r") and (number < last or ends_with_newline)
        else line
        for number, line in enumerate(lines)
    ]


def read_tsv(path):
    """(source, target) pairs of a tab-separated file, one pair a line.

    A blank line is the pair `("", "")`; any other line must hold exactly
    one tab.

    Raises:
        FileNotFoundError, CorpusError: as `read_lines`, and `CorpusError`
            for a line with no tab or more than one (the message gives the
            file and the 1-based line number).
    """
    path = _validation.path("path", path)
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        if line == "":
            pairs.append(("", ""))
            continue
        tabs = line.count("\t")
        if tabs != 1:
            found = "no tab" if tabs == 0 else f"{tabs} tabs"
            raise CorpusError(
                f"{path}: line {number} has {found}, expected exactly one "
                f"between source and target: {_excerpt(line)}"
            )
        source, target = line.split("\t")
        pairs.append((source, target))
    return pairs


def _excerpt(line, width=60):
    return repr(line if len(line) <= width else line[:width] + "...")


def read_parallel_files(source_path, target_path):
    """(source, target) pairs of two line-aligned files.

    Raises:
        FileNotFoundError, CorpusError: as `read_lines`, and `CorpusError`
            when the files have different numbers of lines (the message
            names both files and both counts).
    """
    source_path = _validation.path("source_path", source_path)
    target_path = _validation.path("target_path", target_path)
    sources = read_lines(source_path)
    targets = read_lines(target_path)
    if len(sources) != len(targets):
        raise CorpusError(
            f"{source_path} has {len(sources)} lines but {target_path} has "
            f"{len(targets)} lines: line N of the source file must be the "
            "translation pair of line N of the target file"
        )
    return list(zip(sources, targets))


def load_parallel(paths):
    """(source, target) str pairs from the user's own files.

    Args:
        paths: a sequence of one path, a tab-separated file
            (`source<TAB>target` a line), or of two paths, a source file
            and a target file with one sentence a line. Each path is a str
            or `os.PathLike`; each file is UTF-8, plain or gzip (recognised
            by its content, not its name).

    Returns:
        A list of `(source, target)` tuples of str, pair N from line N.
        Only line endings are removed; blank lines are kept.

    Raises:
        ValueError: `paths` is not a sequence of 1 or 2 paths.
        FileNotFoundError: a file does not exist (the message names it).
        CorpusError: (a `ValueError`) an empty file, a line that is not
            UTF-8, a TSV line without exactly one tab, or two files of
            different lengths; the message names the file(s) and the line.

    Example:

    >>> import gzip, pathlib, tempfile
    >>> from keras_attention.text import load_parallel
    >>> folder = tempfile.TemporaryDirectory()
    >>> source = pathlib.Path(folder.name) / "train.en"
    >>> target = pathlib.Path(folder.name) / "train.de.gz"
    >>> _ = source.write_text("A dog runs.\\nTwo cats sleep.\\n", encoding="utf-8")
    >>> with gzip.open(target, "wt", encoding="utf-8") as file:
    ...     _ = file.write("Ein Hund rennt.\\nZwei Katzen schlafen.\\n")
    >>> load_parallel([source, target])
    [('A dog runs.', 'Ein Hund rennt.'), ('Two cats sleep.', 'Zwei Katzen schlafen.')]
    >>> table = pathlib.Path(folder.name) / "train.tsv"
    >>> _ = table.write_text("A dog runs.\\tEin Hund rennt.\\n", encoding="utf-8")
    >>> load_parallel([str(table)])
    [('A dog runs.', 'Ein Hund rennt.')]
    >>> _ = table.write_text("A dog runs.\\n", encoding="utf-8")
    >>> try:
    ...     load_parallel([table])
    ... except ValueError as error:  # a CorpusError
    ...     print(error)  # doctest: +ELLIPSIS
    /...train.tsv: line 1 has no tab, expected exactly one between source and
    target: 'A dog runs.'
    >>> folder.cleanup()
    """
    if (isinstance(paths, (str, bytes, os.PathLike))
            or not isinstance(paths, Sequence) or len(paths) not in (1, 2)):
        raise ValueError(
            "`paths` must be a sequence of 1 path (a tab-separated file, "
            "source<TAB>target a line) or 2 paths (a source file and a "
            f"target file, one sentence a line), received: paths={paths!r}"
        )
    if len(paths) == 1:
        return read_tsv(_validation.path("paths[0]", paths[0]))
    return read_parallel_files(
        _validation.path("paths[0]", paths[0]),
        _validation.path("paths[1]", paths[1])
    )
