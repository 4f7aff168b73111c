"""bAbI's old paths: `keras_attention.text.babi`, `babi_tasks` and
`babi_generator` (now `keras_attention.data.babi` and its private helpers)
and the bAbI names `keras_attention.text` exported still work, for one
release, each warning (DeprecationWarning, at the importing line) with
the new path.

A module warns when it is first imported, so the in-process tests reload
it, and the test of where the warning points imports it in a fresh
interpreter."""

import importlib
import subprocess
import sys
import warnings

import pytest

from keras_attention.data import _babi_generator
from keras_attention.data import _babi_tasks
from keras_attention.data import babi

MOVED = [("keras_attention.text.babi", babi),
         ("keras_attention.text.babi_tasks", _babi_tasks),
         ("keras_attention.text.babi_generator", _babi_generator)]
NEW = "keras_attention.data.babi"


def old_module(name):
    """The old module, reloaded so that its import warns again; returns
    it and the warnings of the reload."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(name)
    with pytest.warns(DeprecationWarning) as record:
        importlib.reload(module)
    return module, [str(warning.message) for warning in record]


@pytest.mark.parametrize("old, new", MOVED)
def test_an_old_module_warns_and_reads_every_name_of_the_new(old, new):
    module, messages = old_module(old)
    assert messages == [
        f"{old} is deprecated: it moved to {NEW}, import it from there "
        f"({old} will be removed after the next release)"]
    names = [name for name in vars(new) if not name.startswith("__")]
    assert names  # private helpers (`_task`) and imports (`np`) too
    for name in names:
        assert getattr(module, name) is getattr(new, name), name
    assert set(names) <= set(dir(module))
    star = {}
    exec(f"from {old} import *", star)  # noqa: S102
    assert {name for name in star if name != "__builtins__"} == {
        name for name in names if not name.startswith("_")}
    with pytest.raises(AttributeError, match=f"module '{old}' has no"):
        module.no_such_name  # noqa: B018


def test_every_babi_name_still_reads_from_the_old_module():
    module, _ = old_module("keras_attention.text.babi")
    for name in ["BabiSample", "BabiTask", "BabiVocabulary", "PAD",
                 "TASK_NAMES", "SIZES", "SIZE_DIRECTORIES", "SPLITS",
                 "ENVIRONMENT_VARIABLE", "PEOPLE", "PLACES", "OBJECTS",
                 "TASKS", "answer_token", "babi_directory", "generate_babi",
                 "load_task", "load_tasks", "parse_babi", "read_babi",
                 "split_validation", "task_file", "tokenize",
                 "vectorize_babi", "write_babi", "_task", "_fraction"]:
        assert getattr(module, name) is getattr(babi, name), name
    assert module.parse_babi(module.generate_babi(1, 5, seed=0))


@pytest.mark.parametrize("name", [
    "BabiSample", "BabiTask", "BabiVocabulary", "TASK_NAMES", "answer_token",
    "generate_babi", "load_task", "load_tasks", "parse_babi", "read_babi",
    "split_validation", "task_file", "vectorize_babi", "write_babi"])
def test_the_text_package_names_warn_where_they_are_read(name):
    import keras_attention.text

    with pytest.warns(DeprecationWarning, match=(
            rf"keras_attention\.text\.{name} is deprecated: it moved to "
            rf"keras_attention\.data\.babi\.{name},")) as record:
        value = getattr(keras_attention.text, name)
    assert value is getattr(babi, name)
    assert record[0].filename == __file__
    assert name not in keras_attention.text.__all__
    assert name not in dir(keras_attention.text)


def test_the_warnings_point_at_the_importing_line(tmp_path):
    """In a fresh interpreter, each old import warns once, at its line:
    `from keras_attention.text import babi` (reproductions/systems/babi.py's), a
    plain `import` and a `from ... import name`."""
    script = tmp_path / "user.py"
    script.write_text(
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "from keras_attention.text import babi\n"
        "import keras_attention.text.babi_tasks\n"
        "from keras_attention.text.babi_generator import generate_babi\n"
        "from keras_attention.text import babi as again\n"
        "from keras_attention.text import read_babi\n"
        "print(babi.load_task.__module__, again is babi,\n"
        "      read_babi is babi.read_babi, generate_babi is babi.generate_babi)\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True,
                            text=True, timeout=120, check=True)
    assert result.stdout == f"{NEW} True True True\n"
    warned = [line for line in result.stderr.splitlines()
              if "DeprecationWarning" in line]
    assert warned == [
        f"{script}:{line}: DeprecationWarning: {old} is deprecated: it moved "
        f"to {new}, import it from there ({old} will be removed after the "
        "next release)"
        for line, old, new in [
            (3, "keras_attention.text.babi", NEW),
            (4, "keras_attention.text.babi_tasks", NEW),
            (5, "keras_attention.text.babi_generator", NEW),
            (7, "keras_attention.text.read_babi", f"{NEW}.read_babi")]]
