"""The distributions as a user gets them (issue 27, "an install that fits
the backend"): the sdist and the wheel build and pass `twine check`, hold
the package and nothing else, and the wheel alone with `jax[cpu]` (no
TensorFlow) runs the README's backend-neutral snippets, trains a model
with our attention on JAX and draws attention, while a TensorFlow-only
module fails at import with one line naming its extra.

Everything runs in a fresh virtual environment, from a folder outside the
repository, without PYTHONPATH: only the installed wheel can be imported.
The `[translate,serving]` install and the command line are
tests/packaging/test_wheel_translate.py (a file of its own, so that
pytest-xdist's two workers run both environments at once).
"""

import email.parser
import json
import pathlib
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

from tests.packaging.distributions import REPO_ROOT
from tests.packaging.distributions import built_distributions
from tests.packaging.distributions import clean_environment
from tests.packaging.distributions import describe
from tests.packaging.distributions import installed_versions
from tests.packaging.distributions import new_virtual_environment
from tests.packaging.distributions import remove_virtual_environment
from tests.packaging.distributions import report_versions
from tests.packaging.distributions import run
from tests.packaging.distributions import source_version

README = REPO_ROOT / "README.md"
# What a README snippet must not mention to run without TensorFlow and
# without a server.
NOT_BACKEND_NEUTRAL = ("tensorflow", "localhost:")
# Folders of the repository that must stay out of the wheel.
NOT_IN_THE_WHEEL = ("tests", "benchmarks", "docs", "examples", "deploy",
                    "serving", "runs", "models", "site")


@pytest.fixture(scope="module")
def distributions(tmp_path_factory):
    return built_distributions(tmp_path_factory)


@pytest.fixture(scope="module")
def wheel_names(distributions):
    with zipfile.ZipFile(distributions[1]) as wheel:
        return wheel.namelist()


def _dist_info(wheel_names):
    (dist_info,) = {name.split("/")[0] for name in wheel_names
                    if name.split("/")[0].endswith(".dist-info")}
    return dist_info


# -- the distributions ---------------------------------------------------------

def test_twine_check_passes(distributions):
    run([sys.executable, "-m", "twine", "check", "--strict", *distributions],
        cwd=distributions[0].parent, env=clean_environment(), timeout=120)


def _tracked_modules():
    """keras_attention's files as git tracks them (a clean clone's), or as
    the folder holds them where git cannot say."""
    try:
        result = subprocess.run(
            ["git", "ls-files", "-z", "keras_attention"], cwd=REPO_ROOT,
            capture_output=True, text=True, timeout=60)
    except OSError:
        result = None
    if result is not None and result.returncode == 0 and result.stdout:
        names = [name for name in result.stdout.split("\0") if name]
    else:
        names = [path.relative_to(REPO_ROOT).as_posix()
                 for path in (REPO_ROOT / "keras_attention").rglob("*")
                 if path.is_file() and "__pycache__" not in path.parts]
    return sorted(name for name in names if name.endswith(".py")
                  and (REPO_ROOT / name).exists())


def test_the_wheel_holds_the_package_and_nothing_else(wheel_names):
    top = {name.split("/")[0] for name in wheel_names}
    assert top == {"keras_attention", _dist_info(wheel_names)}, sorted(top)
    for folder in NOT_IN_THE_WHEEL:
        assert not [name for name in wheel_names
                    if name.startswith(folder + "/")], folder
    assert not [name for name in wheel_names if name.endswith(".md")]
    assert not [name for name in wheel_names
                if "__pycache__" in name or name.endswith(".pyc")]
    missing = sorted(set(_tracked_modules()) - set(wheel_names))
    assert not missing, f"modules missing from the wheel: {missing}"
    for module in ("__init__.py", "version.py", "_extras.py", "layers/",
                   "ops/", "models/", "visualize/", "cli/", "serving/",
                   "translator.py"):
        assert any(name.startswith("keras_attention/" + module)
                   for name in wheel_names), module


def _metadata(distributions, wheel_names):
    with zipfile.ZipFile(distributions[1]) as wheel:
        text = wheel.read(f"{_dist_info(wheel_names)}/METADATA").decode()
        entry_points = wheel.read(
            f"{_dist_info(wheel_names)}/entry_points.txt").decode()
    return email.parser.Parser().parsestr(text), entry_points


def test_the_wheel_metadata(distributions, wheel_names):
    metadata, entry_points = _metadata(distributions, wheel_names)
    version = source_version()
    assert metadata["Name"] == "keras-attention"
    assert metadata["Version"] == version
    assert f"keras_attention-{version}-" in distributions[1].name
    # The base install fits any backend: TensorFlow and the rest only
    # come with an extra.
    requirements = metadata.get_all("Requires-Dist")
    base = sorted(re.split(r"[<>=~!\[; ]", requirement)[0].lower()
                  for requirement in requirements
                  if "extra ==" not in requirement)
    assert base == ["keras", "matplotlib", "numpy"], requirements
    assert {"translate", "serving", "official", "all", "docs", "torch",
            "dev"} <= set(metadata.get_all("Provides-Extra"))
    assert re.search(r"^keras-attention\s*=\s*keras_attention\.cli:main$",
                     entry_points, re.MULTILINE), entry_points


def test_the_sdist_holds_pyproject_and_readme(distributions):
    with tarfile.open(distributions[0]) as sdist:
        names = sdist.getnames()
    roots = {name.split("/")[0] for name in names}
    assert len(roots) == 1, sorted(roots)
    (root,) = roots
    # setuptools >= 69.3 normalizes the name (keras_attention-V), older
    # ones keep the project's (keras-attention-V).
    assert root in {f"{name}-{source_version()}"
                    for name in ("keras-attention", "keras_attention")}, root
    for name in ("pyproject.toml", "README.md", "keras_attention/__init__.py",
                 "keras_attention/version.py"):
        assert f"{root}/{name}" in names, name


# -- environment A: the wheel and jax[cpu], no TensorFlow ----------------------

@pytest.fixture(scope="module")
def jax_environment(tmp_path_factory, distributions):
    """(python, environment, cwd): a fresh venv with the wheel and
    jax[cpu]; the wheel brings Keras, NumPy and matplotlib, the newest
    releases the index has (pip's choice in an empty environment)."""
    folder = tmp_path_factory.mktemp("jax-only")
    python = new_virtual_environment(folder / "venv", distributions[1],
                                     "jax[cpu]")
    report_versions("packaging, the wheel with jax[cpu]",
                    installed_versions(python))
    cwd = folder / "cwd"
    cwd.mkdir()
    # XLA's backend optimizations take most of eager JAX's compile time
    # and buy nothing for inputs this small (as tests/conftest.py does for
    # `make test-jax`): the snippets' CPU time drops by about a quarter.
    environment = clean_environment(
        folder / "venv", KERAS_BACKEND="jax",
        XLA_FLAGS="--xla_backend_optimization_level=0")
    yield python, environment, cwd
    remove_virtual_environment(folder / "venv")


def _python(jax_environment, code, check=True, timeout=300):
    python, environment, cwd = jax_environment
    return run([python, "-c", code], cwd=cwd, env=environment, check=check,
               timeout=timeout)


def test_the_jax_environment_has_no_tensorflow(jax_environment):
    python, _, cwd = jax_environment
    code = ("import importlib.util, json, keras_attention, keras, numpy, "
            "matplotlib, sys\n"
            "print(json.dumps({'file': keras_attention.__file__,"
            " 'version': keras_attention.__version__,"
            " 'prefix': sys.prefix, 'base': sys.base_prefix, 'path': sys.path,"
            " 'tensorflow': importlib.util.find_spec('tensorflow') is not None,"
            " 'backend': keras.backend.backend()}))")
    found = json.loads(_python(jax_environment, code).stdout)
    venv_dir = python.parent.parent
    assert pathlib.Path(found["file"]).is_relative_to(venv_dir), found
    assert found["version"] == source_version()
    assert not found["tensorflow"], "TensorFlow is importable: " + str(found)
    assert found["backend"] == "jax"
    assert not any(pathlib.Path(entry).resolve() == REPO_ROOT
                   for entry in found["path"] if entry), found["path"]
    result = _python(jax_environment, "import tensorflow", check=False)
    assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr, (
        describe(result.args, result.returncode, result.stdout, result.stderr))


def _backend_neutral_blocks():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    return [block for block in blocks
            if not any(word in block for word in NOT_BACKEND_NEUTRAL)]


def test_the_readme_snippets_run_on_jax_without_tensorflow(jax_environment):
    """The README's ```python blocks that mention neither TensorFlow nor a
    server, concatenated in order (as tests/test_readme.py runs them)."""
    blocks = _backend_neutral_blocks()
    assert len(blocks) >= 4, f"only {len(blocks)} backend-neutral snippets"
    _, _, cwd = jax_environment
    script = cwd / "readme_snippets.py"
    script.write_text(
        "\n\n".join(blocks)
        + "\n\nimport keras, sys\n"
        "assert keras.backend.backend() == 'jax', keras.backend.backend()\n"
        "assert 'tensorflow' not in sys.modules\n"
        f"print('ran', {len(blocks)}, 'snippets')\n", encoding="utf-8")
    python, environment, _ = jax_environment
    result = run([python, script.name], cwd=cwd, env=environment)
    assert f"ran {len(blocks)} snippets" in result.stdout


FIT = """
import json, sys
import numpy as np
import keras
from keras_attention.layers import MultiHeadSelfAttention

assert keras.backend.backend() == "jax", keras.backend.backend()
keras.utils.set_random_seed(0)
# A sequence is positive when its tokens' first feature sums above 0.
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8, 16)).astype("float32")
y = (x[:, :, 0].sum(axis=1) > 0).astype("int32")
inputs = keras.Input((8, 16))
hidden = MultiHeadSelfAttention(num_heads=2, key_dim=8)(inputs)
hidden = keras.layers.GlobalAveragePooling1D()(hidden)
outputs = keras.layers.Dense(2, activation="softmax")(hidden)
model = keras.Model(inputs, outputs)
model.compile(optimizer=keras.optimizers.Adam(1e-2),
              loss="sparse_categorical_crossentropy")
history = model.fit(x, y, epochs=4, batch_size=32, verbose=0)
losses = [float(loss) for loss in history.history["loss"]]
print(json.dumps({"backend": keras.backend.backend(), "losses": losses,
                  "tensorflow": "tensorflow" in sys.modules}))
"""


def test_a_model_with_our_attention_trains_on_jax(jax_environment):
    found = json.loads(_python(jax_environment, FIT).stdout.splitlines()[-1])
    losses = found["losses"]
    assert found["backend"] == "jax" and not found["tensorflow"], found
    assert len(losses) == 4 and all(
        loss == loss and abs(loss) != float("inf") for loss in losses), losses
    assert losses[-1] < losses[0], losses


def test_visualize_draws_a_png_without_tensorflow(jax_environment):
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import keras_attention.visualize as visualize\n"
        "weights = np.random.default_rng(0).dirichlet(np.ones(4), size=3)\n"
        "visualize.plot_attention(weights, ['Ein', 'Hund', 'läuft'],"
        " ['A', 'dog', 'runs', '.'], path='attention.png')\n"
        "assert 'tensorflow' not in sys.modules\n")
    _python(jax_environment, code)
    png = jax_environment[2] / "attention.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 1000


def test_a_tensorflow_only_module_names_its_extra(jax_environment):
    result = _python(jax_environment, "import keras_attention.translator",
                     check=False)
    lines = result.stderr.strip().splitlines()
    message = describe(result.args, result.returncode, result.stdout,
                       result.stderr)
    assert result.returncode != 0, message
    assert lines and "keras-attention[translate]" in lines[-1], message


def test_the_command_line_without_tensorflow_names_the_extra(jax_environment):
    """The console script comes with the base install: its help works, and
    a command that needs TensorFlow stops with one line naming the extra
    (status 2, a user's mistake, no traceback)."""
    python, environment, cwd = jax_environment
    script = python.parent / "keras-attention"
    result = run([script, "--help"], cwd=cwd, env=environment, timeout=60)
    assert result.stdout.startswith("usage: keras-attention"), result.stdout
    result = run([script, "train", "--epochs", "1", "--output-dir", "run"],
                 cwd=cwd, env=environment, check=False, timeout=120)
    message = describe(result.args, result.returncode, result.stdout,
                       result.stderr)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, message
    assert len(lines) == 1 and "keras-attention[translate]" in lines[0], (
        message)
