"""`make test-jax` and `make test-torch` keep one case of each
parametrized test, the first and the last (tests/conftest.py): which
ones, and that the rest of the collection is untouched."""

import types

import pytest

from tests.conftest import _spread
from tests.conftest import pytest_collection_modifyitems


def test_the_kept_cases_are_the_ends_and_evenly_between():
    assert _spread(2, 3) == [0, 1]
    assert _spread(3, 3) == [0, 1, 2]
    assert _spread(7, 3) == [0, 3, 6]
    assert _spread(10, 3) == [0, 4, 9]  # round(4.5) is 4
    assert _spread(5, 1) == [0]


def _collection():
    def item(path, name, case=None):
        return types.SimpleNamespace(
            nodeid=f"{path}::{name}" + (f"[{case}]" if case is not None
                                        else ""),
            originalname=name, name=name)

    return ([item("tests/a.py", "test_grid", x) for x in range(9)]
            + [item("tests/a.py", "test_plain"),
               item("tests/b.py", "test_grid", 0),
               item("tests/b.py", "test_grid", 1)])


def _config(deselected):
    hook = types.SimpleNamespace(
        pytest_deselected=lambda items: deselected.extend(items))
    return types.SimpleNamespace(hook=hook)


def test_the_variable_samples_each_grid(monkeypatch):
    items, deselected = _collection(), []
    monkeypatch.setenv("KERAS_ATTENTION_MAX_PARAMS", "3")
    pytest_collection_modifyitems(_config(deselected), items)
    assert [item.nodeid for item in items] == [
        "tests/a.py::test_grid[0]", "tests/a.py::test_grid[4]",
        "tests/a.py::test_grid[8]", "tests/a.py::test_plain",
        "tests/b.py::test_grid[0]", "tests/b.py::test_grid[1]"]
    assert len(deselected) == 6


def test_last_keeps_each_grids_last_case(monkeypatch):
    items, deselected = _collection(), []
    monkeypatch.setenv("KERAS_ATTENTION_MAX_PARAMS", "last")
    pytest_collection_modifyitems(_config(deselected), items)
    assert [item.nodeid for item in items] == [
        "tests/a.py::test_grid[8]", "tests/a.py::test_plain",
        "tests/b.py::test_grid[1]"]
    assert len(deselected) == 9


def test_unset_keeps_everything_and_a_bad_value_is_refused(monkeypatch):
    items, deselected = _collection(), []
    monkeypatch.delenv("KERAS_ATTENTION_MAX_PARAMS", raising=False)
    pytest_collection_modifyitems(_config(deselected), items)
    assert len(items) == 12 and not deselected
    monkeypatch.setenv("KERAS_ATTENTION_MAX_PARAMS", "zero")
    with pytest.raises(pytest.UsageError,
                       match="positive int or 'last', received: 'zero'"):
        pytest_collection_modifyitems(_config(deselected), items)
