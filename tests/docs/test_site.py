"""The site builds in strict mode, its hook's docstring check works, and
every public name of every documented package has its API entry."""

import importlib
import importlib.util
import logging
import re
import types

import pytest

from tests.docs.conftest import ROOT


def _load_hook():
    spec = importlib.util.spec_from_file_location(
        "docs_hooks_api", ROOT / "docs" / "hooks" / "api.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


hook = _load_hook()


def _docstrings_extension():
    spec = importlib.util.spec_from_file_location(
        "docs_hooks_docstrings", ROOT / "docs" / "hooks" / "docstrings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docstring_extension_examples_run():
    import doctest

    results = doctest.testmod(_docstrings_extension(),
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert results.attempted >= 2 and results.failed == 0


def test_doctest_examples_are_fenced_as_code():
    """The griffe extension that shows the docstrings' `>>>` examples as
    Python sessions (unindented after `Example:`, Markdown would read them
    as nested quotes)."""
    blocks = _docstrings_extension()
    text = "Example:\n\n>>> x = 1\n>>> x\n1\n\nAfter.\n    >>> y\n"
    assert blocks.fence_doctests(text).splitlines() == [
        "Example:", "", "```pycon", ">>> x = 1", ">>> x", "1", "```", "",
        "After.", "    ```pycon", "    >>> y", "    ```"]

# What the site must document (the API reference's packages).
PACKAGES = ["keras_attention.layers", "keras_attention.ops",
            "keras_attention.models", "keras_attention.visualize",
            "keras_attention.decoding", "keras_attention.training",
            "keras_attention.export", "keras_attention.serving",
            "keras_attention.translator"]


def test_the_strict_build_succeeds(built_site):
    _, build = built_site
    assert build["returncode"] == 0, build["output"][-5000:]
    assert "WARNING" not in build["output"], build["output"][-5000:]


def _fake_module():
    module = types.ModuleType("fake_package")

    def documented():
        """Has one."""

    def undocumented():
        pass

    class Undocumented:
        pass

    class Documented(Undocumented):
        """A docstring of its own; its base's absence is not inherited."""

    module.__all__ = ["documented", "undocumented", "Undocumented",
                      "Documented"]
    for value in (documented, undocumented, Undocumented, Documented):
        value.__module__ = module.__name__
        setattr(module, value.__name__, value)
    return module


def test_the_hook_warns_about_a_public_name_without_a_docstring(caplog):
    module = _fake_module()
    assert hook.missing_docstrings(module) == ["undocumented", "Undocumented"]
    with caplog.at_level(logging.WARNING):
        assert hook.check_docstrings(module) == 2
    warnings = [record for record in caplog.records
                if record.levelno == logging.WARNING]
    assert [record.getMessage() for record in warnings] == [
        "public name without a docstring: fake_package.undocumented",
        "public name without a docstring: fake_package.Undocumented"]
    # `mkdocs build --strict` counts the warnings of the "mkdocs" loggers
    # and fails when there is one.
    assert all(record.name.startswith("mkdocs.") for record in warnings)


def test_the_hook_reads_attribute_docstrings():
    models = importlib.import_module("keras_attention.models")
    assert "TRANSLATORS" in hook.public_names(models)
    assert "TRANSLATORS" not in hook.missing_docstrings(models)


def test_every_documented_package_has_no_missing_docstring():
    for name in PACKAGES:
        assert hook.missing_docstrings(importlib.import_module(name)) == [], name


def _documented_modules():
    yield hook.LAYERS, None
    for _, _, sections in hook.PAGES:
        for module_name, names, _ in sections:
            yield module_name, names


def test_the_reference_covers_every_package():
    assert set(PACKAGES) <= {name for name, _ in _documented_modules()}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_its_api_entry(built_site, package):
    """Each name's object is rendered (mkdocstrings gives its heading the
    object's path as id) on its package's page, or on its own page for a
    layer."""
    site, build = built_site
    assert build["returncode"] == 0
    module = importlib.import_module(package)
    names = hook.public_names(module)
    assert names
    for name in names:
        if package == hook.LAYERS:
            page = site / "api" / "layers" / name / "index.html"
        else:
            short = package.removeprefix("keras_attention.")
            page = site / "api" / short / "index.html"
        html = page.read_text()
        assert f'id="{hook.object_path(module, name)}"' in html, (package, name)


def test_the_serving_page_documents_the_server_entry_points(built_site):
    site, _ = built_site
    html = (site / "api" / "serving" / "index.html").read_text()
    for path in ["keras_attention.serving.server.run_server",
                 "keras_attention.serving.main.serve",
                 "keras_attention.serving.main.main",
                 "keras_attention.cli.main"]:
        assert f'id="{path}"' in html, path


def test_the_benchmark_page_is_rendered_from_the_results(built_site):
    site, _ = built_site
    html = (site / "benchmarks" / "index.html").read_text()
    results = sorted(path.stem for path in
                     (ROOT / "benchmarks" / "results").glob("*.json")
                     if not path.stem.endswith("_quick"))
    assert results
    for stem in results:
        assert f"results/{stem}.json" in html, stem
    assert "<!-- benchmark-results -->" not in html


def test_the_reproductions_page_is_rendered_from_the_results(built_site):
    """The scoreboard: the verdicts counted by system, one table of the
    claims, the plot drawn at build time, each system's details."""
    site, _ = built_site
    html = (site / "reproductions" / "index.html").read_text()
    assert "<!-- reproductions -->" not in html
    assert re.search(r"<strong>\d+ claims: \d+ yes · \d+ partly · \d+ "
                     r"no\.</strong>", html)
    assert re.search(r"<li>Universal Transformer: \d+ yes · \d+ partly · "
                     r"\d+ no</li>", html)
    assert html.count("<th>verdict</th>") == 1
    assert "<th>paper</th>" in html and "<th>ours</th>" in html
    assert html.count('<details class="info">') >= 5
    assert "<summary>Music Transformer: command, data" in html
    assert "results/music_transformer_jsb.json" in html
    assert "results/babi_memory_network.json" in html
    assert 'src="../reproductions.png"' in html
    assert (site / "reproductions.png").read_bytes().startswith(b"\x89PNG")


def test_the_model_pages_render_their_babi_results(built_site):
    """`<!-- results NAME -->`: one results file's table on a page."""
    site, _ = built_site
    for page, stem in [("memory-network", "babi_memory_network"),
                       ("universal-transformer",
                        "babi_universal_transformer_10k_task2")]:
        html = (site / "models" / page / "index.html").read_text()
        assert f"results/{stem}.json" in html, page
        assert "paper&rsquo;s error" in html or "paper's error" in html


def test_every_placeholder_of_the_hook_is_filled(built_site):
    """The benchmark tables, the command help and the included READMEs."""
    site, _ = built_site
    for page in site.rglob("*.html"):
        html = page.read_text()
        for marker in ("<!-- benchmark-results -->", "<!-- cli-help -->",
                       "<!-- reproductions -->", "<!-- include ",
                       "<!-- results "):
            assert marker not in html, (page, marker)
    cli = (site / "cli" / "index.html").read_text()
    assert "usage: keras-attention train" in cli
    assert "Path A: our server" in (site / "tf-serving" / "index.html").read_text()
