"""load_multi30k and load_corpus on a tiny gzip Multi30k written to tmp_path.

The network is never used: `urllib.request.urlretrieve` is replaced for every
test in this module, and the download tests write local fixture files.
"""

import gzip
import pathlib
import urllib.request

import pytest

from keras_attention.text import MULTI30K_ALIASES
from keras_attention.text import MULTI30K_LANGUAGES
from keras_attention.text import MULTI30K_SPLITS
from keras_attention.text import CorpusError
from keras_attention.text import corpora
from keras_attention.text import load_corpus
from keras_attention.text import load_multi30k

SPLIT_FILES = {"train": "train", "val": "val", "test": "test_2016_flickr"}
FIXTURE = {
    "train": [
        ("A man in an orange hat starring at something.",
         "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt."),
        ("Zoë eats cheese over the table.", "Zoë isst Käse über dem Tisch."),
        ("Two dogs run through the snow.", "Zwei Hunde laufen durch den Schnee."),
        ("The street is wide.", "Die Straße ist breit."),
    ],
    "val": [
        ("A group of men are loading cotton onto a truck",
         "Eine Gruppe von Männern lädt Baumwolle auf einen Lastwagen"),
        ("A café in the city.", "Ein Café in der Stadt."),
    ],
    "test": [
        ("A man with a hat smiles.", "Ein Mann mit Hut lächelt."),
        ("Bears are fishing.", "Bären fischen."),
        ("A girl in a blue dress.", "Ein Mädchen in einem blauen Kleid."),
    ],
}
REAL_MULTI30K = pathlib.Path("/work/shared/data/multi30k")


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(url, *args, **kwargs):
        raise AssertionError(f"network access attempted: {url}")

    monkeypatch.setattr(urllib.request, "urlretrieve", refuse)
    monkeypatch.delenv("MULTI30K_DIR", raising=False)


def write_lines(path, lines, newline="\n"):
    with gzip.open(path, "wt", encoding="utf-8", newline="") as file:
        file.write("".join(line + newline for line in lines))


def write_split(directory, split, pairs, newline="\n"):
    name = SPLIT_FILES[split]
    write_lines(directory / f"{name}.en.gz", [en for en, _ in pairs], newline)
    write_lines(directory / f"{name}.de.gz", [de for _, de in pairs], newline)


@pytest.fixture
def multi30k_dir(tmp_path):
    directory = tmp_path / "multi30k"
    directory.mkdir()
    for split, pairs in FIXTURE.items():
        write_split(directory, split, pairs)
    return directory


# --------------------------------------------------------------------------
# reading


def test_fixture_files_are_gzip_utf8(multi30k_dir):
    names = sorted(p.name for p in multi30k_dir.iterdir())
    assert names == sorted(
        f"{name}.{language}.gz"
        for name in SPLIT_FILES.values() for language in ("en", "de")
    )
    raw = gzip.decompress((multi30k_dir / "val.de.gz").read_bytes())
    assert "Männern lädt".encode() in raw


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_load_each_split_from_directory_argument(multi30k_dir, split):
    pairs = load_multi30k(split, multi30k_dir)
    assert pairs == FIXTURE[split]
    assert all(isinstance(en, str) and isinstance(de, str) for en, de in pairs)
    # a str path works too
    assert load_multi30k(split, str(multi30k_dir)) == FIXTURE[split]


def test_non_ascii_text_is_decoded_as_utf8(multi30k_dir):
    train = dict(load_multi30k("train", multi30k_dir))
    assert train["Zoë eats cheese over the table."] == "Zoë isst Käse über dem Tisch."
    assert train["The street is wide."] == "Die Straße ist breit."


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_load_each_split_from_environment_variable(multi30k_dir, monkeypatch,
                                                   split):
    monkeypatch.setenv("MULTI30K_DIR", str(multi30k_dir))
    assert load_multi30k(split) == FIXTURE[split]


def test_directory_argument_wins_over_environment_variable(
    multi30k_dir, tmp_path, monkeypatch
):
    other = tmp_path / "other"
    other.mkdir()
    write_split(other, "val", [("Other.", "Andere.")])
    monkeypatch.setenv("MULTI30K_DIR", str(other))
    assert load_multi30k("val") == [("Other.", "Andere.")]
    assert load_multi30k("val", multi30k_dir) == FIXTURE["val"]


def test_windows_line_endings_are_stripped(tmp_path):
    write_split(tmp_path, "val", FIXTURE["val"], newline="\r\n")
    assert load_multi30k("val", tmp_path) == FIXTURE["val"]


def test_last_line_without_newline_and_inner_blank_lines(tmp_path):
    with gzip.open(tmp_path / "val.en.gz", "wt", encoding="utf-8") as file:
        file.write("One.\n\nThree.")
    with gzip.open(tmp_path / "val.de.gz", "wt", encoding="utf-8") as file:
        file.write("Eins.\n\nDrei.\n")
    assert load_multi30k("val", tmp_path) == [
        ("One.", "Eins."), ("", ""), ("Three.", "Drei.")
    ]


# --------------------------------------------------------------------------
# errors


def test_no_directory_and_no_environment_variable_raises():
    with pytest.raises(ValueError, match="MULTI30K_DIR"):
        load_multi30k("val")


def test_empty_environment_variable_raises(monkeypatch):
    monkeypatch.setenv("MULTI30K_DIR", "")
    with pytest.raises(ValueError, match="MULTI30K_DIR"):
        load_multi30k("val")


@pytest.mark.parametrize(
    "split, missing",
    [
        ("train", "train.en.gz"),
        ("train", "train.de.gz"),
        ("val", "val.de.gz"),
        ("test", "test_2016_flickr.en.gz"),
    ],
)
def test_missing_file_raises_naming_it(multi30k_dir, split, missing):
    (multi30k_dir / missing).unlink()
    with pytest.raises(FileNotFoundError, match=missing.replace(".", r"\.")) as info:
        load_multi30k(split, multi30k_dir)
    message = str(info.value)
    assert repr(split) in message
    # only the missing file is named, not its partner in the other language
    name, language, _ = missing.split(".")
    partner = f"{name}.{'de' if language == 'en' else 'en'}.gz"
    assert partner not in message


def test_missing_directory_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"val\.en\.gz.*val\.de\.gz"):
        load_multi30k("val", tmp_path / "does-not-exist")


def test_missing_split_does_not_affect_other_splits(multi30k_dir):
    (multi30k_dir / "train.en.gz").unlink()
    assert load_multi30k("val", multi30k_dir) == FIXTURE["val"]
    with pytest.raises(FileNotFoundError):
        load_multi30k("train", multi30k_dir)


def test_line_count_mismatch_raises_naming_both_files(multi30k_dir):
    write_lines(multi30k_dir / "val.de.gz", [de for _, de in FIXTURE["val"]][:1])
    with pytest.raises(CorpusError) as info:
        load_multi30k("val", multi30k_dir)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(
        f"{multi30k_dir / 'val.en.gz'} has 2 lines but "
        f"{multi30k_dir / 'val.de.gz'} has 1 lines"
    )


@pytest.mark.parametrize(
    "split", ["validation", "test_2019_flickr", "TRAIN", "", None, ["val"]]
)
def test_bad_split_raises_naming_split_and_listing_the_valid_ones(
    multi30k_dir, split
):
    with pytest.raises(ValueError, match="split") as info:
        load_multi30k(split, multi30k_dir)
    message = str(info.value)
    assert f"split={split!r}" in message
    for name in (*MULTI30K_SPLITS, "test"):
        assert name in message


def test_bad_split_is_reported_before_the_missing_directory():
    with pytest.raises(ValueError, match="`split`"):
        load_multi30k("dev")


# --------------------------------------------------------------------------
# download (no network: urlretrieve is replaced)


def test_download_skips_files_that_exist(multi30k_dir):
    # the autouse `no_network` fixture fails the test on any download
    assert load_multi30k("test", multi30k_dir, download=True) == FIXTURE["test"]


def test_download_fetches_only_the_missing_files_of_the_split(
    tmp_path, monkeypatch
):
    directory = tmp_path / "new" / "multi30k"  # created by the download
    fetched = []

    def fake_urlretrieve(url, target):
        fetched.append(url)
        language = url.rsplit(".", 2)[-2]
        lines = [pair[0 if language == "en" else 1] for pair in FIXTURE["test"]]
        write_lines(target, lines)

    monkeypatch.setattr(urllib.request, "urlretrieve", fake_urlretrieve)
    assert load_multi30k("test", directory, download=True) == FIXTURE["test"]
    base = ("https://raw.githubusercontent.com/multi30k/dataset/master/data/"
            "task1/raw/")
    assert fetched == [base + "test_2016_flickr.en.gz",
                       base + "test_2016_flickr.de.gz"]
    # present now: a second call downloads nothing
    fetched.clear()
    assert load_multi30k("test", directory, download=True) == FIXTURE["test"]
    assert fetched == []
    assert corpora.MULTI30K_URL.format(name="val", language="de") == (
        base + "val.de.gz")


# --------------------------------------------------------------------------
# load_corpus


def test_load_corpus_multi30k_returns_the_three_splits(multi30k_dir):
    corpus = load_corpus("multi30k", multi30k_dir)
    # the optional 2017/2018 test splits are absent from this folder
    assert list(corpus) == ["train", "val", "test", "test_2016_flickr"]
    for split in ("train", "val", "test"):
        assert corpus[split] == FIXTURE[split]
    assert corpus["test_2016_flickr"] is corpus["test"]


def test_load_corpus_multi30k_from_environment_variable(multi30k_dir,
                                                        monkeypatch):
    monkeypatch.setenv("MULTI30K_DIR", str(multi30k_dir))
    assert load_corpus("multi30k") == {
        **FIXTURE, "test_2016_flickr": FIXTURE["test"]
    }


def test_load_corpus_multi30k_without_directory_raises():
    with pytest.raises(ValueError, match="MULTI30K_DIR"):
        load_corpus("multi30k")


def test_load_corpus_multi30k_with_a_missing_split_raises(multi30k_dir):
    (multi30k_dir / "val.en.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"val\.en\.gz"):
        load_corpus("multi30k", multi30k_dir)


@pytest.mark.parametrize("name", ["nope", "Multi30k", "", None])
def test_load_corpus_unknown_name_raises(multi30k_dir, name):
    with pytest.raises(ValueError, match="'synthetic' or 'multi30k'") as info:
        load_corpus(name, multi30k_dir)
    assert repr(name) in str(info.value)


# --------------------------------------------------------------------------
# every task 1 split, other language pairs

# (split, language) files the Multi30k repository has (no Czech 2017 tests)
REPOSITORY_FILES = {
    (name, language)
    for name in MULTI30K_SPLITS for language in ("en", "de", "fr", "cs")
} - {("test_2017_flickr", "cs"), ("test_2017_mscoco", "cs")}
WORDS = {"en": "Sentence", "de": "Satz", "fr": "Phrase", "cs": "Věta"}


def sentences(name, language):
    """Line i of `{name}.{language}.gz` in the full fixture."""
    size = len(name)  # a different number of pairs for each split
    return [f"{WORDS[language]} {i} ({name})" for i in range(size)]


def expected_pairs(name, source, target):
    return list(zip(sentences(name, source), sentences(name, target)))


@pytest.fixture
def full_multi30k_dir(tmp_path):
    """Every split and language of the repository, a few lines each."""
    directory = tmp_path / "full"
    directory.mkdir()
    for name, language in REPOSITORY_FILES:
        write_lines(directory / f"{name}.{language}.gz",
                    sentences(name, language))
    return directory


def test_split_names_are_the_repository_file_names():
    assert MULTI30K_SPLITS == ("train", "val", "test_2016_flickr",
                               "test_2017_flickr", "test_2017_mscoco",
                               "test_2018_flickr")
    assert MULTI30K_ALIASES == {"test": "test_2016_flickr"}
    assert MULTI30K_LANGUAGES == ("en", "de", "fr", "cs")


@pytest.mark.parametrize("split", MULTI30K_SPLITS)
def test_load_every_split(full_multi30k_dir, split):
    pairs = load_multi30k(split, full_multi30k_dir)
    assert pairs == expected_pairs(split, "en", "de")
    assert len(pairs) == len(split)


def test_test_is_an_alias_of_test_2016_flickr(full_multi30k_dir):
    assert load_multi30k("test", full_multi30k_dir) == expected_pairs(
        "test_2016_flickr", "en", "de")


@pytest.mark.parametrize(
    "split, source, target",
    [
        ("train", "fr", "en"),
        ("val", "en", "cs"),
        ("test", "de", "fr"),
        ("test_2017_mscoco", "en", "fr"),
        ("test_2018_flickr", "cs", "de"),
    ],
)
def test_other_language_pairs(full_multi30k_dir, split, source, target):
    pairs = load_multi30k(split, full_multi30k_dir, source_language=source,
                          target_language=target)
    name = MULTI30K_ALIASES.get(split, split)
    assert pairs == expected_pairs(name, source, target)
    assert pairs[1] == (f"{WORDS[source]} 1 ({name})",
                        f"{WORDS[target]} 1 ({name})")


def test_split_the_repository_lacks_in_a_language_raises(full_multi30k_dir):
    with pytest.raises(FileNotFoundError) as info:
        load_multi30k("test_2017_flickr", full_multi30k_dir,
                      source_language="cs", target_language="en")
    message = str(info.value)
    assert "test_2017_flickr.cs.gz" in message
    assert "test_2017_flickr.en.gz" not in message
    assert "has no test_2017_flickr file for ['cs']" in message


@pytest.mark.parametrize("argument", ["source_language", "target_language"])
@pytest.mark.parametrize("language", ["es", "EN", "", None, "german"])
def test_bad_language_raises_naming_argument_and_value(multi30k_dir, argument,
                                                       language):
    languages = {"source_language": "en", "target_language": "de",
                 argument: language}
    with pytest.raises(ValueError, match=argument) as info:
        load_multi30k("val", multi30k_dir, **languages)
    assert f"{argument}={language!r}" in str(info.value)
    assert "'en', 'de', 'fr', 'cs'" in str(info.value)
    with pytest.raises(ValueError, match=f"{argument}={language!r}"):
        load_corpus("multi30k", multi30k_dir, **languages)


def test_same_source_and_target_language_raises(multi30k_dir):
    with pytest.raises(ValueError, match="must differ"):
        load_multi30k("val", multi30k_dir, source_language="de",
                      target_language="de")


def test_load_corpus_reads_every_split_in_the_folder(full_multi30k_dir):
    corpus = load_corpus("multi30k", full_multi30k_dir)
    assert list(corpus) == ["train", "val", "test", *MULTI30K_SPLITS[2:]]
    for name in MULTI30K_SPLITS:
        assert corpus[name] == expected_pairs(name, "en", "de"), name
    assert corpus["test"] is corpus["test_2016_flickr"]


def test_load_corpus_other_pair_leaves_out_splits_it_lacks(full_multi30k_dir):
    corpus = load_corpus("multi30k", full_multi30k_dir, source_language="cs",
                         target_language="fr")
    assert list(corpus) == ["train", "val", "test", "test_2016_flickr",
                            "test_2018_flickr"]
    assert corpus["test_2018_flickr"] == expected_pairs("test_2018_flickr",
                                                        "cs", "fr")


def test_load_corpus_skips_an_optional_split_with_one_file(full_multi30k_dir):
    (full_multi30k_dir / "test_2017_mscoco.de.gz").unlink()
    corpus = load_corpus("multi30k", full_multi30k_dir)
    assert "test_2017_mscoco" not in corpus
    assert corpus["test_2018_flickr"] == expected_pairs("test_2018_flickr",
                                                        "en", "de")


def test_load_corpus_reports_a_broken_optional_split(full_multi30k_dir):
    write_lines(full_multi30k_dir / "test_2017_flickr.de.gz", ["Nur eins."])
    with pytest.raises(CorpusError, match=r"test_2017_flickr\.en\.gz has 16 "
                                          r"lines but .*test_2017_flickr"
                                          r"\.de\.gz has 1 lines"):
        load_corpus("multi30k", full_multi30k_dir)


def test_load_corpus_requires_test_2016_flickr(full_multi30k_dir):
    (full_multi30k_dir / "test_2016_flickr.en.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"test_2016_flickr\.en\.gz"):
        load_corpus("multi30k", full_multi30k_dir)


def test_synthetic_corpus_refuses_other_languages():
    with pytest.raises(ValueError, match="source_language='fr'"):
        load_corpus("synthetic", source_language="fr", target_language="de")


def test_empty_or_undecodable_multi30k_file_names_it(multi30k_dir):
    write_lines(multi30k_dir / "val.de.gz", [])
    with pytest.raises(CorpusError, match=r"val\.de\.gz is empty"):
        load_multi30k("val", multi30k_dir)
    (multi30k_dir / "val.de.gz").write_bytes(
        gzip.compress(b"Eine Gruppe\ncaf\xe9\n"))
    with pytest.raises(CorpusError, match=r"val\.de\.gz: line 2 is not valid"):
        load_multi30k("val", multi30k_dir)


def test_download_of_a_language_pair_fetches_only_existing_files(
    tmp_path, monkeypatch
):
    fetched = []

    def fake_urlretrieve(url, target):
        fetched.append(url.rsplit("/", 1)[-1])
        name, language, _ = url.rsplit("/", 1)[-1].split(".")
        write_lines(target, sentences(name, language))

    monkeypatch.setattr(urllib.request, "urlretrieve", fake_urlretrieve)
    corpus = load_corpus("multi30k", tmp_path, download=True,
                         source_language="cs", target_language="en")
    assert fetched == [f"{name}.{language}.gz"
                       for name in ("train", "val", "test_2016_flickr",
                                    "test_2018_flickr")
                       for language in ("cs", "en")]
    assert list(corpus) == ["train", "val", "test", "test_2016_flickr",
                            "test_2018_flickr"]
    assert corpus["val"] == expected_pairs("val", "cs", "en")
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(fetched)


def test_interrupted_download_leaves_no_file_under_the_real_name(
    tmp_path, monkeypatch
):
    def failing_urlretrieve(url, target):
        pathlib.Path(target).write_bytes(b"\x1f\x8b\x08")  # a truncated gzip
        raise OSError("connection reset")

    monkeypatch.setattr(urllib.request, "urlretrieve", failing_urlretrieve)
    with pytest.raises(OSError, match="connection reset"):
        load_multi30k("val", tmp_path, download=True)
    assert not (tmp_path / "val.en.gz").exists()


# --------------------------------------------------------------------------
# the real corpus, when the shared copy is present


@pytest.mark.skipif(not REAL_MULTI30K.is_dir(),
                    reason=f"{REAL_MULTI30K} is not present")
def test_real_multi30k_sizes_and_alignment():
    sizes = {"train": 29000, "val": 1014, "test": 1000}
    for split, size in sizes.items():
        pairs = load_multi30k(split, REAL_MULTI30K)
        assert len(pairs) == size, split
        assert all(en.strip() and de.strip() for en, de in pairs), split
        assert not any("\n" in en or "\n" in de for en, de in pairs), split
    assert load_multi30k("test_2016_flickr", REAL_MULTI30K) == load_multi30k(
        "test", REAL_MULTI30K)
    # the shared copy holds only the required splits, in English and German
    assert list(load_corpus("multi30k", REAL_MULTI30K)) == [
        "train", "val", "test", "test_2016_flickr"]
    val = load_multi30k("val", REAL_MULTI30K)
    assert val[0] == ("A group of men are loading cotton onto a truck",
                      "Eine Gruppe von Männern lädt Baumwolle auf einen Lastwagen")
    assert val[1] == ("A man sleeping in a green room on a couch.",
                      "Ein Mann schläft in einem grünen Raum auf einem Sofa.")
