"""Parallel corpora by name: Multi30k (task 1, raw) and the embedded one.

Multi30k is read from the gzip files `{split}.{language}.gz` of a directory
given by argument or by the `MULTI30K_DIR` environment variable;
`download=True` fetches missing files from the Multi30k repository into
that directory first (needs internet). The files are read by
`keras_attention.text.parallel_files`, which also reads the user's own
corpus (`load_parallel`).
"""

import os
import pathlib
import urllib.request

from keras_attention.text import synthetic
from keras_attention.text.parallel_files import read_parallel_files

# Task 1 splits, named as in the repository's data/task1/raw folder.
MULTI30K_SPLITS = (
    "train",
    "val",
    "test_2016_flickr",
    "test_2017_flickr",
    "test_2017_mscoco",
    "test_2018_flickr",
)
# Other names accepted for a split; "test" predates the 2017/2018 splits.
MULTI30K_ALIASES = {"test": "test_2016_flickr"}
MULTI30K_LANGUAGES = ("en", "de", "fr", "cs")
# The (split, language) files that the repository does not have.
MULTI30K_ABSENT = {("test_2017_flickr", "cs"), ("test_2017_mscoco", "cs")}
# load_corpus("multi30k") needs these; the other test splits are optional.
MULTI30K_REQUIRED = ("train", "val", "test_2016_flickr")
MULTI30K_URL = (
    "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
    "{name}.{language}.gz"
)
ENVIRONMENT_VARIABLE = "MULTI30K_DIR"


def multi30k_directory(directory=None):
    """The directory argument, else `$MULTI30K_DIR`, else an error."""
    directory = directory or os.environ.get(ENVIRONMENT_VARIABLE)
    if not directory:
        raise ValueError(
            "Multi30k needs a directory: pass `directory=` (the CLI's "
            f"--data-dir) or set {ENVIRONMENT_VARIABLE}, received neither"
        )
    return pathlib.Path(directory)


def _split_name(split):
    """The repository's name of `split` (an alias resolved), or an error."""
    if isinstance(split, str) and split in MULTI30K_SPLITS:
        return split
    if isinstance(split, str) and split in MULTI30K_ALIASES:
        return MULTI30K_ALIASES[split]
    valid = list(MULTI30K_SPLITS) + [
        f"{alias} (= {name})" for alias, name in MULTI30K_ALIASES.items()
    ]
    raise ValueError(
        f"`split` must be one of {', '.join(valid)}, received: split={split!r}"
    )


def _check_languages(source_language, target_language):
    for argument, language in (("source_language", source_language),
                               ("target_language", target_language)):
        if language not in MULTI30K_LANGUAGES:
            raise ValueError(
                f"`{argument}` must be one of the Multi30k task 1 languages "
                f"{list(MULTI30K_LANGUAGES)}, received: "
                f"{argument}={language!r}"
            )
    if source_language == target_language:
        raise ValueError(
            "`source_language` and `target_language` must differ, received: "
            f"source_language={source_language!r}, "
            f"target_language={target_language!r}"
        )


def _multi30k_paths(directory, name, languages):
    return [directory / f"{name}.{language}.gz" for language in languages]


def download_multi30k(directory, splits=MULTI30K_SPLITS, languages=("en", "de")):
    """Fetch the missing gzip files of `splits` x `languages` into `directory`.

    Needs internet. A split that the repository lacks in one of the
    `languages` (the 2017 test sets in Czech) is skipped; files already
    present are not fetched again. A file is written under a `.part` name
    and renamed when complete.
    """
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for split in splits:
        name = _split_name(split)
        if any((name, language) in MULTI30K_ABSENT for language in languages):
            continue
        for language in languages:
            target = directory / f"{name}.{language}.gz"
            if target.exists():
                continue
            url = MULTI30K_URL.format(name=name, language=language)
            partial = target.with_name(target.name + ".part")
            urllib.request.urlretrieve(url, partial)  # noqa: S310
            partial.replace(target)


def load_multi30k(split, directory=None, download=False, source_language="en",
                  target_language="de"):
    """(source, target) pairs of a Multi30k task 1 split.

    Args:
        split: one of `MULTI30K_SPLITS`: `"train"` (29,000 pairs), `"val"`
            (1,014), `"test_2016_flickr"` (1,000; also `"test"`),
            `"test_2017_flickr"` (1,000), `"test_2017_mscoco"` (461) or
            `"test_2018_flickr"` (1,071).
        directory: folder of the `{split}.{language}.gz` files; defaults to
            `$MULTI30K_DIR`.
        download: fetch the split's missing files first (needs internet).
        source_language, target_language: two of `"en"`, `"de"`, `"fr"`,
            `"cs"` (the repository has no Czech 2017 test sets).

    Returns:
        A list of `(source, target)` str tuples, pair N from line N.

    Raises:
        ValueError: an unknown split (the message lists the valid ones) or
            language, or no directory.
        FileNotFoundError: the split's files are not in the directory (the
            message names the missing ones).
        CorpusError: (a `ValueError`) the files differ in length, are empty
            or are not UTF-8 (see `keras_attention.text.load_parallel`).

    Example:

    >>> import gzip, pathlib, tempfile
    >>> from keras_attention.text import load_multi30k
    >>> folder = tempfile.TemporaryDirectory()
    >>> for language, text in [("en", "A dog runs."), ("fr", "Un chien court.")]:
    ...     path = pathlib.Path(folder.name) / f"test_2017_mscoco.{language}.gz"
    ...     _ = path.write_bytes(gzip.compress(text.encode("utf-8")))
    >>> load_multi30k("test_2017_mscoco", folder.name, source_language="fr",
    ...               target_language="en")
    [('Un chien court.', 'A dog runs.')]
    >>> folder.cleanup()
    """
    name = _split_name(split)
    _check_languages(source_language, target_language)
    directory = multi30k_directory(directory)
    languages = (source_language, target_language)
    if download:
        download_multi30k(directory, [name], languages)
    paths = _multi30k_paths(directory, name, languages)
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        absent = [language for language in languages
                  if (name, language) in MULTI30K_ABSENT]
        hint = (f"Multi30k task 1 has no {name} file for {absent}"
                if absent else "they are in the Multi30k repository's "
                "data/task1/raw folder; load_multi30k(..., download=True) "
                "fetches them on a machine with internet")
        raise FileNotFoundError(
            f"Multi30k {split!r} files not found: {', '.join(missing)} "
            f"({hint})"
        )
    return read_parallel_files(*paths)


def _load_multi30k_corpus(directory, download, source_language,
                          target_language):
    """Every split of the folder: the required ones, and the optional test
    splits whose two files are both present."""
    _check_languages(source_language, target_language)
    directory = multi30k_directory(directory)
    languages = (source_language, target_language)
    if download:
        download_multi30k(directory, MULTI30K_SPLITS, languages)
    corpus = {}
    for name in MULTI30K_SPLITS:
        present = all(path.exists() for path in
                      _multi30k_paths(directory, name, languages))
        if name in MULTI30K_REQUIRED or present:
            corpus[name] = load_multi30k(name, directory, False,
                                         source_language, target_language)
    aliases = {alias: corpus[name] for alias, name in MULTI30K_ALIASES.items()}
    # "train", "val", "test" first, as for the synthetic corpus
    return {"train": corpus.pop("train"), "val": corpus.pop("val"),
            **aliases, **corpus}


def load_corpus(name="synthetic", directory=None, download=False,
                source_language="en", target_language="de"):
    """The splits of a named corpus, as lists of (source, target) pairs.

    `"synthetic"` is the embedded English->German-like corpus generated by
    `keras_attention.text.synthetic` (no files, no download; the languages
    must stay `"en"`, `"de"`): splits `"train"`, `"val"`, `"test"`.

    `"multi30k"` reads Multi30k task 1 from `directory` (or
    `$MULTI30K_DIR`): `"train"`, `"val"` and `"test"` (= `"test_2016_flickr"`,
    present under both keys as the same list) are required; each other name
    of `MULTI30K_SPLITS` is a key too when both of its files are in the
    folder (with `download=True`, every split the repository has for the
    language pair is fetched first).

    The user's own files are read by `keras_attention.text.load_parallel`.

    Example:

    >>> import gzip, pathlib, tempfile
    >>> from keras_attention.text import load_corpus
    >>> folder = tempfile.TemporaryDirectory()
    >>> for name in ("train", "val", "test_2016_flickr", "test_2018_flickr"):
    ...     for language, text in [("en", "A dog runs."), ("de", "Ein Hund rennt.")]:
    ...         path = pathlib.Path(folder.name) / f"{name}.{language}.gz"
    ...         _ = path.write_bytes(gzip.compress(text.encode("utf-8")))
    >>> corpus = load_corpus("multi30k", folder.name)
    >>> list(corpus)
    ['train', 'val', 'test', 'test_2016_flickr', 'test_2018_flickr']
    >>> corpus["test_2018_flickr"]
    [('A dog runs.', 'Ein Hund rennt.')]
    >>> folder.cleanup()
    """
    if name == "synthetic":
        if (source_language, target_language) != ("en", "de"):
            raise ValueError(
                "the synthetic corpus is English->German only: "
                "`source_language` and `target_language` must be 'en' and "
                f"'de', received: source_language={source_language!r}, "
                f"target_language={target_language!r}"
            )
        return synthetic.synthetic_corpus()
    if name == "multi30k":
        return _load_multi30k_corpus(directory, download, source_language,
                                     target_language)
    raise ValueError(
        "`corpus` must be 'synthetic' or 'multi30k', received: "
        f"corpus={name!r}"
    )
