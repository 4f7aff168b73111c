"""The README is a promise and a front page: its Python snippets run as
written, it stays short, its links resolve, and its figures are ones the
benchmark results or a guide state with their commands."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def python_blocks(path=README):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.DOTALL)


def test_readme_snippets_run():
    """Every snippet runs (tests/packaging runs them again from the wheel,
    on JAX, without TensorFlow)."""
    blocks = python_blocks()
    assert len(blocks) >= 4
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102


def test_readme_shows_the_two_commands_and_the_installs():
    text = README.read_text()
    assert "make demo" in text and "make test" in text
    for line in ('pip install keras-attention',
                 'pip install "keras-attention[translate]"',
                 'pip install "keras-attention[serving]"'):
        assert line in text


def test_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    # Nothing stale: no internal issue numbers, no list of what is coming.
    assert not re.search(r"\bissues? \d+", text, re.IGNORECASE)
    assert not re.search(r"\bcoming\b", text, re.IGNORECASE)


def test_readme_links_resolve():
    text = README.read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 10
    for link in local:
        assert (ROOT / link).exists(), link


def test_readme_figures_are_measured_elsewhere():
    """Each bold figure is in the benchmark results (RESULTS.md, generated
    from benchmarks/results/*.json) or in a guide beside its command."""
    text = README.read_text()
    figures = re.findall(r"\*\*([0-9][0-9.,–×%]*)\*\*", text)
    assert len(figures) >= 5
    sources = [(ROOT / "benchmarks" / "RESULTS.md").read_text()]
    sources += [page.read_text() for page in (ROOT / "docs").rglob("*.md")]
    for figure in figures:
        assert any(figure in source for source in sources), figure
