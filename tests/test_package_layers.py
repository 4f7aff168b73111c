"""The package's rooms (ops, layers, models, text, data, ...) and the
arrows between them: no import cycle, no private module or name of one
package imported by another, and one deprecation mechanism
(`keras_attention._lazy`), which names a moved module's new home instead of
importing it."""

import ast
import collections
import pathlib

import pytest

from tests.test_import_graph import find_cycle
from tests.test_import_graph import import_graph

ROOT = pathlib.Path(__file__).resolve().parents[1] / "keras_attention"


def _unit(module):
    """The room of `keras_attention.a.b...`: its package `a`, or the
    top-level module `a`; None for the root package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _private(part):
    return part.startswith("_") and not part.startswith("__")


def imports(root=ROOT):
    """`[(importer, imported)]` of every `import` statement in the package
    (at any depth of the code), full module or name paths."""
    found = []
    for file in sorted(root.rglob("*.py")):
        parts = file.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.Import):
                found += [(module, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 \
                    and node.module:
                found += [(module, f"{node.module}.{alias.name}")
                          for alias in node.names]
    return [(a, b) for a, b in found if b.startswith("keras_attention.")]


def rooms(graph):
    """`{room: {rooms it imports}}` of a module graph (`import_graph`'s),
    between different rooms."""
    collapsed = collections.defaultdict(set)
    for module, imported in graph.items():
        for other in imported:
            a, b = _unit(module), _unit(other)
            if a and b and a != b:
                collapsed[a].add(b)
    return collapsed


def private_crossings(found, root=ROOT):
    """Imports of a package's private module (`data._babi_tasks`) or of a
    private name of one of its modules (`text.parallel_files._as_path`)
    from outside that package. The top-level private modules
    (`keras_attention._validation`, ...) are the package's shared helpers."""
    crossings = []
    for importer, imported in found:
        room = _unit(imported)
        if not (root / room).is_dir() or _unit(importer) == room:
            continue
        if any(_private(part) for part in imported.split(".")[2:]):
            crossings.append((importer, imported))
    return crossings


def test_no_cycle_between_the_package_rooms():
    """`test_import_graph` checks modules; rooms can have a cycle that no
    module has (text.babi -> data.babi -> text.parallel_files)."""
    cycle = find_cycle(rooms(import_graph(lazy=True)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_private_module_or_name_crosses_a_room():
    assert private_crossings(imports()) == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """The same checks on a small package with a cycle and a private
    import: they are found (so the two tests above can fail)."""
    package = tmp_path / "keras_attention"
    for room, text in {
        "text": "from keras_attention.data import _babi\n",
        "data": "def f():\n    import keras_attention.text.corpora\n",
        "ops": "from keras_attention import _validation\n",
        "data/_babi": "",
        "text/corpora": "",
    }.items():
        (package / room).mkdir(parents=True)
        (package / room / "__init__.py").write_text(text)
    graph = import_graph(package, "keras_attention", lazy=True)
    assert find_cycle(rooms(graph)) == ["data", "text", "data"]
    assert private_crossings(imports(package), package) == [
        ("keras_attention.text", "keras_attention.data._babi")]


def test_one_deprecation_mechanism():
    """Only `_lazy` raises DeprecationWarning; old paths go through it."""
    raisers = sorted(
        str(file.relative_to(ROOT)) for file in ROOT.rglob("*.py")
        if any(isinstance(node, ast.Name) and node.id in (
            "DeprecationWarning", "FutureWarning")
            for node in ast.walk(ast.parse(file.read_text()))))
    assert raisers == ["_lazy.py"]


@pytest.mark.parametrize("old", ["babi", "babi_tasks", "babi_generator"])
def test_moved_modules_name_their_new_home(old):
    """The deprecated `text` paths import nothing from `data` (the new
    home is a string `_lazy.moved_module` resolves when the old path is
    imported)."""
    tree = ast.parse((ROOT / "text" / f"{old}.py").read_text())
    imported = {alias.name if isinstance(node, ast.Import)
                else f"{node.module}.{alias.name}"
                for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert imported == {"keras_attention._lazy"}
