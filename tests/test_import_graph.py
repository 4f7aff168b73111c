"""The package's modules import each other without a cycle.

The graph is read from the source with `ast`: each module's module-level
imports of `keras_attention` modules (`import a.b`, `from a import b`
where `b` is a submodule or a name in `a`, relative imports resolved).
Imports inside functions and classes are lazy imports (they keep
TensorFlow off a light path): they are not edges of the module-level
graph, but they are of the full graph, which must have no cycle either
(the serving package's two cycles, `client` <-> `grpc_client` and
`core` -> `warmup` -> `grpc_api` -> `core`, ran through lazy imports).
A cycle makes the import order matter and hides which module is the
lower one; the arrows should run one way.
"""

import ast
import pathlib

import keras_attention

PACKAGE = "keras_attention"
ROOT = pathlib.Path(keras_attention.__file__).parent


def module_names(root=ROOT, package=PACKAGE):
    """{module name: its file} for every module of the package."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join([package, *parts])] = path
    return names


def _top_level_imports(tree):
    """The import statements run when the module is imported: module
    level, and inside module-level `if`/`try` blocks (not in functions
    or classes)."""
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    body.extend(child.body if isinstance(
                        child, ast.ExceptHandler) else [child])


def _imported(node, module, is_package, modules):
    """The package modules an import statement names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: from the module's package, up level - 1
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    # `from a import b`: the submodule a.b if there is one, else a name in a.
    return [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules
            else source for alias in node.names]


def import_graph(root=ROOT, package=PACKAGE, lazy=False):
    """{module: set of package modules it imports at module level}, or
    anywhere in it (functions included) when `lazy`.
    Importing `a.b.c` also runs `a` and `a.b`, but those edges are left
    out: a package's `__init__` is not the module that needs it."""
    modules = module_names(root, package)
    graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        edges = set()
        nodes = ([node for node in ast.walk(tree)
                  if isinstance(node, (ast.Import, ast.ImportFrom))]
                 if lazy else _top_level_imports(tree))
        for node in nodes:
            for name in _imported(node, module, path.name == "__init__.py",
                                  modules):
                while name and name not in modules:  # a name in a module
                    name = name.rpartition(".")[0]
                if name and name != module:
                    edges.add(name)
        graph[module] = edges
    return graph


def find_cycle(graph):
    """One cycle of `graph` as a list of nodes (its first node repeated
    at the end), or None."""
    done, path, on_path = set(), [], set()

    def visit(node):
        path.append(node)
        on_path.add(node)
        for target in sorted(graph.get(node, ())):
            if target in on_path:
                return path[path.index(target):] + [target]
            if target not in done:
                cycle = visit(target)
                if cycle:
                    return cycle
        on_path.discard(path.pop())
        done.add(node)
        return None

    for node in sorted(graph):
        if node not in done:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "keras_attention.serving.core" in graph, sorted(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_package_has_no_import_cycle_even_through_lazy_imports():
    graph = import_graph(lazy=True)
    assert "keras_attention.serving.grpc_client" in (
        graph["keras_attention.serving.client"])
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_has_the_known_edges():
    graph = import_graph()
    assert "keras_attention.serving.errors" in (
        graph["keras_attention.serving.core"])
    # `from keras_attention.serving import protos` names the submodule.
    assert "keras_attention.serving.protos" in (
        graph["keras_attention.serving.grpc_api"])
    # The client's lazy import of the gRPC client is not an edge.
    assert "keras_attention.serving.grpc_client" not in (
        graph["keras_attention.serving.client"])


def test_a_cycle_is_found_and_named(tmp_path):
    """A hand-made package shaped like the serving modules before issue
    27: core -> warmup -> grpc_api -> core (warm-up imported at module
    level here), with a lazy import that is not an edge."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("from pkg import warmup\n")
    (package / "warmup.py").write_text(
        "from pkg.grpc_api import predict_call\n")
    (package / "grpc_api.py").write_text(
        "import os\nfrom . import core\n\ndef predict_call():\n    pass\n")
    (package / "client.py").write_text(
        "def make():\n    from pkg import grpc_client\n")
    (package / "grpc_client.py").write_text("from pkg.client import make\n")
    graph = import_graph(package, "pkg")
    assert graph["pkg.client"] == set()
    assert graph["pkg.grpc_client"] == {"pkg.client"}
    # Counting the lazy import, client <-> grpc_client is a cycle too.
    lazy = import_graph(package, "pkg", lazy=True)
    assert lazy["pkg.client"] == {"pkg.grpc_client"}
    del lazy["pkg.core"]
    assert find_cycle(lazy) == ["pkg.client", "pkg.grpc_client",
                                "pkg.client"]
    assert find_cycle(graph) == ["pkg.core", "pkg.warmup", "pkg.grpc_api",
                                 "pkg.core"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
