"""MkDocs hook: the API reference generated from `__all__`, the docstring
check, and the benchmark tables rendered from `benchmarks/results/*.json`.

- `on_config` appends the "API reference" section to the navigation: one
  page per layer (`api/layers/NAME/`), one page per other package.
- `on_files` adds those pages as generated files. Each holds one
  `::: module.Name` block per public name, written with the module that
  defines the object (`keras_attention.layers.relative_attention.
  RelativeAttention`), so names that packages load lazily (PEP 562,
  `keras_attention._lazy`) are found by griffe's static analysis too.
- Every public name without a docstring is logged as a WARNING, which
  `mkdocs build --strict` turns into a failure (`missing_docstrings`).
- `on_page_markdown` replaces `<!-- benchmark-results -->` with
  `benchmarks/summary.py`'s rendering of every results file,
  `<!-- reproductions -->` with `reproductions/scoreboard.py`'s scoreboard
  of the paper figures those files carry (a malformed claim fails the
  build), whose plot `on_files` adds as the generated `reproductions.png`,
  `<!-- cli-help -->` with every command's `--help`, and
  `<!-- include PATH -->` with a file of the repository (less its title),
  and `<!-- results NAME -->` with the section of `results/NAME.json`.

Public names: a module's `__all__`, or, for a module without one
(`keras_attention.decoding`), the functions and classes it defines whose
names do not start with "_".
"""

import importlib
import importlib.util
import inspect
import json
import logging
import pathlib
import re
import sys

from mkdocs.structure.files import File

LOG = logging.getLogger("mkdocs.hooks.api")
ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCHMARK_MARKER = "<!-- benchmark-results -->"
REPRODUCTIONS_MARKER = "<!-- reproductions -->"
# The Reproductions page's plot, drawn at build time beside the page (its
# link is relative to docs/reproductions.md).
REPRODUCTIONS_PLOT = "reproductions.png"
CLI_MARKER = "<!-- cli-help -->"
# `<!-- include serving/README.md -->`: that file of the repository, less its
# title, so a guide and the README beside the files it explains cannot
# disagree.
INCLUDE = re.compile(r"<!-- include ([\w./-]+) -->")
# `<!-- results babi_memory_network -->`: that results file's section.
RESULTS_FILE = re.compile(r"<!-- results ([\w-]+) -->")

# (page, title, [(module, names or None for its public names, heading)]).
# Layers get a page each, under api/layers/.
LAYERS = "keras_attention.layers"
PAGES = [
    ("api/ops.md", "keras_attention.ops", [("keras_attention.ops", None, None)]),
    ("api/models.md", "keras_attention.models",
     [("keras_attention.models", None, None)]),
    ("api/visualize.md", "keras_attention.visualize",
     [("keras_attention.visualize", None, None)]),
    ("api/decoding.md", "keras_attention.decoding",
     [("keras_attention.decoding", None, None)]),
    ("api/training.md", "keras_attention.training",
     [("keras_attention.training", None, None)]),
    ("api/export.md", "keras_attention.export",
     [("keras_attention.export", None, None)]),
    ("api/translator.md", "keras_attention.translator",
     [("keras_attention.translator", None, None)]),
    ("api/serving.md", "keras_attention.serving", [
        ("keras_attention.serving", None, "The client"),
        ("keras_attention.serving.server", None, "The server"),
        ("keras_attention.serving.main", ["serve", "main"],
         "Starting the server: `keras-attention serve`"),
        ("keras_attention.cli", ["main"], "The `keras-attention` command"),
    ]),
]


def public_names(module):
    """The names `module` documents: its `__all__`, else the functions and
    classes it defines that do not start with "_"."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return sorted(
        name for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__)


def _own_docstring(value):
    """The docstring written for `value` itself (a class's is not
    inherited; an instance of a builtin type has none of its own)."""
    if inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(
            value):
        return (value.__doc__ or "").strip()
    return None  # data: its docstring is the string under its assignment


def _attribute_docstring(module_name, name):
    """The attribute docstring (a string literal right under the
    assignment) of `module_name.name`, following imports, via griffe."""
    import griffe

    try:
        found = griffe.load(module_name, resolve_aliases=False)[name]
        docstring = found.docstring
    except (KeyError, ImportError, griffe.AliasResolutionError,
            griffe.CyclicAliasError):
        return ""
    return (docstring.value if docstring else "").strip()


def missing_docstrings(module):
    """The public names of `module` that have no docstring."""
    missing = []
    for name in public_names(module):
        value = getattr(module, name)
        docstring = _own_docstring(value)
        if docstring is None:
            docstring = _attribute_docstring(module.__name__, name)
        if not docstring:
            missing.append(name)
    return missing


def check_docstrings(module, names=None):
    """Log a WARNING for each of `names` (default: the public names) of
    `module` without a docstring; returns how many."""
    missing = [name for name in missing_docstrings(module)
               if names is None or name in names]
    for name in missing:
        LOG.warning("public name without a docstring: %s.%s",
                    module.__name__, name)
    return len(missing)


def object_path(module, name):
    """The dotted path of `module.name` in the module that defines it
    (`keras_attention.layers.relative_attention.RelativeAttention`), or
    `module.name` for data."""
    value = getattr(module, name)
    if inspect.isclass(value) or inspect.isroutine(value):
        return f"{value.__module__}.{value.__qualname__}"
    return f"{module.__name__}.{name}"


def _summary(value):
    lines = (inspect.getdoc(value) or "").strip().splitlines()
    return lines[0] if lines else ""


OPTIONS = """
    options:
      heading_level: {level}
      show_root_heading: true
      show_root_full_path: false
      toc_label: {name}"""


def _block(path, name, level, inherited=False):
    options = OPTIONS.format(level=level, name=name)
    if inherited:  # the serving client's methods live in its base class
        options += "\n      inherited_members: true"
    return f"::: {path}{options}\n"


def layer_pages():
    """`{page: markdown}` for the layers: an index and a page per layer."""
    module = importlib.import_module(LAYERS)
    names = public_names(module)
    index = [f"# `{LAYERS}`", "", inspect.getdoc(module) or "", "",
             "Every layer is also importable from `keras_attention`.", "",
             "| layer | what it does |", "| --- | --- |"]
    pages = {}
    for name in names:
        index.append(f"| [`{name}`]({name}.md) "
                     f"| {_summary(getattr(module, name))} |")
        pages[f"api/layers/{name}.md"] = (
            f"# {name}\n\n`from {LAYERS} import {name}`\n\n"
            + _block(object_path(module, name), name, 2))
    pages["api/layers/index.md"] = "\n".join(index) + "\n"
    return pages


def package_pages():
    """`{page: markdown}` for the packages other than the layers."""
    pages = {}
    for page, title, sections in PAGES:
        lines = [f"# `{title}`", ""]
        for module_name, names, heading in sections:
            module = importlib.import_module(module_name)
            level = 2
            if heading:
                lines += [f"## {heading}", "", f"`{module_name}`", ""]
                level = 3
            if module_name == title:
                lines += [inspect.getdoc(module) or "", ""]
            for name in names or public_names(module):
                lines.append(_block(object_path(module, name), name, level,
                                    inherited=title == "keras_attention.serving"))
        pages[page] = "\n".join(lines)
    return pages


def api_index():
    lines = ["# API reference", "",
             "Generated from the docstrings of every public name (`__all__`)"
             " of each package at build time.", "",
             "| package | page |", "| --- | --- |",
             f"| `{LAYERS}` | [one page per layer](layers/index.md) |"]
    for page, title, _ in PAGES:
        lines.append(f"| `{title}` | [{title}]({page.removeprefix('api/')}) |")
    return "\n".join(lines) + "\n"


def check_all():
    """Warn about every documented public name without a docstring."""
    count = check_docstrings(importlib.import_module(LAYERS))
    for _, _, sections in PAGES:
        for module_name, names, _ in sections:
            count += check_docstrings(importlib.import_module(module_name),
                                      names)
    return count


_PAGES = {}


def all_pages():
    if not _PAGES:
        _PAGES.update(layer_pages())
        _PAGES.update(package_pages())
        _PAGES["api/index.md"] = api_index()
    return _PAGES


def on_config(config):
    _PAGES.clear()  # `mkdocs serve` rebuilds: the names may have changed
    pages = all_pages()
    layers = sorted(page for page in pages
                    if page.startswith("api/layers/")
                    and page != "api/layers/index.md")
    api = ["api/index.md",
           {"Layers": ["api/layers/index.md"]
            + [{pathlib.PurePosixPath(page).stem: page} for page in layers]}]
    api += [{title.removeprefix("keras_attention."): page}
            for page, title, _ in PAGES]
    nav = [entry for entry in (config["nav"] or [])
           if not (isinstance(entry, dict) and "API reference" in entry)]
    config["nav"] = nav + [{"API reference": api}]
    return config


def on_files(files, config):
    check_all()
    for page, content in all_pages().items():
        files.append(File.generated(config, page, content=content))
    plot = reproductions_plot()
    if plot:
        files.append(File.generated(config, REPRODUCTIONS_PLOT, content=plot))
    return files


def _summary_module():
    spec = importlib.util.spec_from_file_location(
        "benchmarks_summary", ROOT / "benchmarks" / "summary.py")
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    return summary


def results_file_markdown(match):
    """One results file's section (`<!-- results NAME -->`), its heading
    two levels down, as on a model's page."""
    summary = _summary_module()
    path = summary.RESULTS / f"{match.group(1)}.json"
    lines = summary.render(json.loads(path.read_text()), path.stem)
    return "\n".join("##" + line if line.startswith("## ") else line
                     for line in lines)


def benchmark_markdown():
    """`benchmarks/summary.py`'s rendering of every results file (smoke
    runs left out, as in `benchmarks/RESULTS.md`)."""
    spec = importlib.util.spec_from_file_location(
        "benchmarks_summary", ROOT / "benchmarks" / "summary.py")
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    lines = []
    for path in sorted(summary.RESULTS.glob("*.json")):
        if path.stem.endswith("_quick"):
            continue
        lines += summary.render(json.loads(path.read_text()), path.stem)
    # One level down: the page's own sections are `##`.
    return "\n".join("#" + line if line.startswith("## ") else line
                     for line in lines)


def _reproductions_module():
    if str(ROOT) not in sys.path:  # the checkout's `reproductions` package
        sys.path.insert(0, str(ROOT))
    from reproductions import scoreboard

    return scoreboard


def reproductions_markdown():
    """`reproductions/scoreboard.py`'s scoreboard of every paper figure the
    results files carry, its plot at `REPRODUCTIONS_PLOT`; a malformed
    claim raises ValueError, which fails the build."""
    reproductions = _reproductions_module()
    return reproductions.render(reproductions.RESULTS,
                                plot_path=REPRODUCTIONS_PLOT)


def reproductions_plot():
    """The PNG of ours against the papers' figures (bytes), None where no
    claim has numbers (then the page links no plot either)."""
    reproductions = _reproductions_module()
    return reproductions.plot(reproductions.scoreboard(reproductions.RESULTS))


def _help(parser, arguments):
    """What `parser.parse_args(arguments)` prints for `--help`."""
    import contextlib
    import io

    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.suppress(SystemExit):
        parser.parse_args(arguments)
    return output.getvalue()


def cli_markdown():
    """Every `keras-attention` command's `--help`, from its parser."""
    import os

    from keras_attention.cli import build_parser
    from keras_attention.cli.commands import COMMANDS

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"  # argparse wraps to the terminal's width
    try:
        parser = build_parser()
        sections = [("keras-attention", _help(parser, ["--help"]))]
        sections += [(f"keras-attention {name}", _help(parser, [name, "--help"]))
                     for name in COMMANDS]
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(f"### `{title}`\n\n```\n{text.rstrip()}\n```\n"
                     for title, text in sections)


def _included(match):
    text = (ROOT / match.group(1)).read_text()
    first, _, rest = text.partition("\n")
    return rest.lstrip("\n") if first.startswith("# ") else text


def on_page_markdown(markdown, page, config, files):
    markdown = INCLUDE.sub(_included, markdown)
    markdown = RESULTS_FILE.sub(results_file_markdown, markdown)
    if BENCHMARK_MARKER in markdown:
        markdown = markdown.replace(BENCHMARK_MARKER, benchmark_markdown())
    if REPRODUCTIONS_MARKER in markdown:
        markdown = markdown.replace(REPRODUCTIONS_MARKER,
                                    reproductions_markdown())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_markdown())
    return markdown
