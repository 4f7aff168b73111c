"""load_parallel: the user's own corpus, two aligned files or one TSV file.

Every file is written to tmp_path as bytes, so each test states exactly what
is on disk.
"""

import gzip
import pathlib

import pytest

from keras_attention.text import CorpusError
from keras_attention.text import load_parallel
from keras_attention.text.parallel_files import read_lines

SOURCE = ["A dog runs.", "Zoë eats cheese.", "The street is wide."]
TARGET = ["Ein Hund rennt.", "Zoë isst Käse.", "Die Straße ist breit."]
PAIRS = list(zip(SOURCE, TARGET))


def write(path, text, compress=False, newline="\n"):
    """Write `text` (str lines joined by `newline`, or bytes) to `path`."""
    data = text if isinstance(text, bytes) else (
        "".join(line + newline for line in text).encode("utf-8"))
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.fixture
def two_files(tmp_path):
    return (write(tmp_path / "train.en", SOURCE),
            write(tmp_path / "train.de", TARGET))


# --------------------------------------------------------------------------
# reading


@pytest.mark.parametrize("compress_source", [False, True])
@pytest.mark.parametrize("compress_target", [False, True])
def test_two_files_plain_or_gzip(tmp_path, compress_source, compress_target):
    source = write(tmp_path / ("s.gz" if compress_source else "s.txt"), SOURCE,
                   compress_source)
    target = write(tmp_path / ("t.gz" if compress_target else "t.txt"), TARGET,
                   compress_target)
    pairs = load_parallel([source, target])
    assert pairs == PAIRS
    assert all(type(side) is str for pair in pairs for side in pair)
    assert all(type(pair) is tuple for pair in pairs)


def test_gzip_is_recognised_by_content_not_by_name(tmp_path):
    # gzip bytes without the .gz suffix, plain text with it
    source = write(tmp_path / "source.txt", SOURCE, compress=True)
    target = write(tmp_path / "target.gz", TARGET, compress=False)
    assert load_parallel([source, target]) == PAIRS


def test_str_paths_and_tuples_work(two_files):
    source, target = two_files
    assert load_parallel((str(source), str(target))) == PAIRS
    assert load_parallel([source, str(target)]) == PAIRS


@pytest.mark.parametrize("compress", [False, True])
def test_tsv(tmp_path, compress):
    path = write(tmp_path / "pairs.tsv",
                 [f"{s}\t{t}" for s, t in PAIRS], compress)
    assert load_parallel([path]) == PAIRS
    assert load_parallel((str(path),)) == PAIRS


@pytest.mark.parametrize("compress", [False, True])
def test_crlf_line_endings_are_stripped(tmp_path, compress):
    source = write(tmp_path / "s", SOURCE, compress, newline="\r\n")
    target = write(tmp_path / "t", TARGET, compress, newline="\r\n")
    assert load_parallel([source, target]) == PAIRS
    table = write(tmp_path / "p.tsv", [f"{s}\t{t}" for s, t in PAIRS],
                  compress, newline="\r\n")
    assert load_parallel([table]) == PAIRS


def test_only_the_line_ending_is_removed(tmp_path):
    # spaces, tabs, a lone "\r", form feeds and "\u2028" are the user's text
    source = write(tmp_path / "s", b"  padded  \r\na\rb\x0cc\r\nline\xe2\x80\xa8sep")
    target = write(tmp_path / "t", b"\teins\t\nzwei\nend\r")
    assert load_parallel([source, target]) == [
        ("  padded  ", "\teins\t"),
        ("a\rb\x0cc", "zwei"),
        ("line\u2028sep", "end\r"),  # no newline after the "\r": kept
    ]


def test_blank_lines_are_kept_as_pairs(tmp_path):
    source = write(tmp_path / "s", ["One.", "", "Three.", "", ""])
    target = write(tmp_path / "t", ["Eins.", "Zwei.", "", "", ""])
    assert load_parallel([source, target]) == [
        ("One.", "Eins."), ("", "Zwei."), ("Three.", ""), ("", ""), ("", ""),
    ]
    table = write(tmp_path / "p.tsv", ["One.\tEins.", "", "\t", "Three.\t"])
    assert load_parallel([table]) == [
        ("One.", "Eins."), ("", ""), ("", ""), ("Three.", ""),
    ]


def test_last_line_without_newline(tmp_path):
    source = write(tmp_path / "s", b"One.\nTwo.")
    target = write(tmp_path / "t", b"Eins.\nZwei.\n")
    assert load_parallel([source, target]) == [("One.", "Eins."),
                                                ("Two.", "Zwei.")]


def test_a_file_of_one_newline_is_one_blank_line(tmp_path):
    assert read_lines(write(tmp_path / "s", b"\n")) == [""]
    assert read_lines(write(tmp_path / "t", b"\r\n")) == [""]


def test_utf8_byte_order_mark_is_removed(tmp_path):
    source = write(tmp_path / "s", b"\xef\xbb\xbfOne.\r\nTwo.\r\n")
    target = write(tmp_path / "t", b"Eins.\nZwei.\n", compress=True)
    assert load_parallel([source, target]) == [("One.", "Eins."),
                                                ("Two.", "Zwei.")]


def test_multi_member_gzip(tmp_path):
    path = tmp_path / "s.gz"
    path.write_bytes(gzip.compress(b"One.\n") + gzip.compress(b"Two.\n"))
    assert read_lines(path) == ["One.", "Two."]


# --------------------------------------------------------------------------
# errors


def test_unequal_line_counts_name_both_files_and_counts(tmp_path):
    source = write(tmp_path / "train.en", SOURCE)
    target = write(tmp_path / "train.de.gz", TARGET[:2], compress=True)
    with pytest.raises(CorpusError) as info:
        load_parallel([source, target])
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(
        f"{source} has 3 lines but {target} has 2 lines")


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("which", [0, 1])
def test_empty_file_is_named(tmp_path, compress, which):
    paths = [write(tmp_path / "s", SOURCE), write(tmp_path / "t", TARGET)]
    write(paths[which], b"", compress)
    with pytest.raises(CorpusError, match="is empty") as info:
        load_parallel(paths)
    assert str(info.value).startswith(f"{paths[which]} is empty")


def test_empty_tsv_and_bom_only_files_are_empty(tmp_path):
    with pytest.raises(CorpusError, match=r"p\.tsv is empty"):
        load_parallel([write(tmp_path / "p.tsv", b"")])
    with pytest.raises(CorpusError, match=r"bom is empty"):
        read_lines(write(tmp_path / "bom", b"\xef\xbb\xbf"))


@pytest.mark.parametrize("compress", [False, True])
def test_undecodable_bytes_name_file_and_line(tmp_path, compress):
    source = write(tmp_path / "s", SOURCE)
    # line 3 is Latin-1, not UTF-8
    target = write(tmp_path / "t.txt",
                   b"Ein Hund.\n\nDie Stra\xdfe.\nEnde.\n", compress)
    with pytest.raises(CorpusError) as info:
        load_parallel([source, target])
    message = str(info.value)
    assert message.startswith(f"{target}: line 3 is not valid UTF-8")
    assert "b'\\xdf' at byte 9 of the line" in message  # 1-based
    assert "UTF-8" in message


def test_undecodable_first_line_of_a_tsv(tmp_path):
    path = write(tmp_path / "p.tsv", b"caf\xe9\tcaf\xc3\xa9\n")
    with pytest.raises(CorpusError, match=r"p\.tsv: line 1 is not valid UTF-8"):
        load_parallel([path])


def test_damaged_gzip_is_named(tmp_path):
    data = gzip.compress("".join(s + "\n" for s in SOURCE).encode())
    source = write(tmp_path / "s.gz", data[: len(data) // 2])
    with pytest.raises(CorpusError, match="cannot be decompressed") as info:
        load_parallel([source, write(tmp_path / "t", TARGET)])
    assert str(info.value).startswith(f"{source}: starts like a gzip file")


@pytest.mark.parametrize(
    "line, found",
    [("no tab here", "no tab"), ("a\tb\tc", "2 tabs"), ("\t\t\t", "3 tabs"),
     ("  ", "no tab")],
)
def test_tsv_line_without_exactly_one_tab(tmp_path, line, found):
    path = write(tmp_path / "pairs.tsv", ["One.\tEins.", "", line, "Two.\tZwei."])
    with pytest.raises(CorpusError) as info:
        load_parallel([path])
    assert str(info.value).startswith(
        f"{path}: line 3 has {found}, expected exactly one")
    assert repr(line) in str(info.value)


def test_long_tsv_line_is_shortened_in_the_message(tmp_path):
    path = write(tmp_path / "pairs.tsv", ["x" * 500])
    with pytest.raises(CorpusError, match=r"line 1 has no tab") as info:
        load_parallel([path])
    assert len(str(info.value)) < len(str(path)) + 200


@pytest.mark.parametrize("which", [0, 1])
def test_missing_file_is_named(two_files, tmp_path, which):
    paths = list(two_files)
    paths[which] = tmp_path / "does-not-exist.txt"
    with pytest.raises(FileNotFoundError, match="does-not-exist") as info:
        load_parallel(paths)
    assert info.value.filename == str(paths[which])
    with pytest.raises(FileNotFoundError, match="does-not-exist"):
        load_parallel([paths[which]])


@pytest.mark.parametrize(
    "paths",
    [[], ["a", "b", "c"], "pairs.tsv", pathlib.Path("pairs.tsv"), None, 3,
     b"pairs.tsv"],
)
def test_wrong_paths_argument_raises_naming_it(paths):
    with pytest.raises(ValueError, match="`paths` must be a sequence of 1") as info:
        load_parallel(paths)
    assert f"paths={paths!r}" in str(info.value)


@pytest.mark.parametrize("bad", [None, 3, b"train.en"])
def test_path_of_a_wrong_type_raises_naming_it(two_files, bad):
    with pytest.raises(ValueError, match=r"`paths\[1\]` must be a str") as info:
        load_parallel([two_files[0], bad])
    assert f"paths[1]={bad!r}" in str(info.value)
