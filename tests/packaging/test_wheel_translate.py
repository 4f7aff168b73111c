"""The wheel with its `[translate,serving]` extras, in a fresh virtual
environment, used the way its README tells a user to: the installed
`keras-attention` console script (never the source tree) answers
`--help` and `--version`, and a tiny translator goes train -> export ->
serve -> REST predict.

The environment is the newest a user can have (issue 45): it holds the
newest TensorFlow our range allows (2.21 today) before the wheel is
installed, and the install must keep it (no downgrade); pip picks the
newest tensorflow-text, serving API and Keras beside it. The suite's own
environment runs the oldest TensorFlow (2.20, `.ci/oldest.txt`), so the
two check SavedModels across versions both ways: the export made here
loads and translates under the suite's TensorFlow, and the same training
run exported by the suite's TensorFlow loads and translates here, to the
same translations.

A file of its own (tests/packaging/test_wheel.py has the distributions and
the JAX-only environment) so that pytest-xdist's two workers install and
run both environments at once.
"""

import email.parser
import json
import pathlib
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
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
from tests.test_first_screen import tensorflow_log_lines

# The smallest run the command line allows that still trains: the tiny
# preset, one epoch over 200 pairs of the built-in synthetic corpus (about
# 30 s on 2 cores, most of it loading TensorFlow and tracing).
TRAIN_FLAGS = ["--corpus", "synthetic", "--preset", "tiny", "--epochs", "1",
               "--train-size", "200", "--vocabulary-size", "200",
               "--max-length", "32", "--bleu-sentences", "0",
               "--verbose", "0", "--precision", "float32", "--seed", "0"]
TEXTS = ["A dog runs.", "The old man sees a small dog.", "A woman cooks."]
SERVER_START_SECONDS = 180


# A SavedModel's translations, in the interpreter that runs it (argv: the
# SavedModel's folder, the texts as JSON); only tensorflow and
# tensorflow_text are imported, as TF Serving would load it.
TRANSLATE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
model = tf.saved_model.load(sys.argv[1])
texts = tf.constant(json.loads(sys.argv[2]))
out = model.signatures["serving_default"](text=texts)
print(json.dumps({"tensorflow": tf.__version__, "translations":
                  [t.decode("utf-8") for t in out["translation"].numpy()]}))
"""


def _requirement(wheel, name, extra):
    """`name`'s requirement in the wheel's metadata for `extra`, as pip
    reads it, e.g. `tensorflow<2.22,>=2.20`."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [entry for entry in archive.namelist()
                       if entry.endswith(".dist-info/METADATA")]
        parsed = email.parser.Parser().parsestr(
            archive.read(metadata).decode())
    for requirement in parsed.get_all("Requires-Dist"):
        match = re.match(rf"{re.escape(name)}\s*([<>=!~(][^;]*);.*extra\s*==\s*"
                         rf"[\"']{extra}[\"']", requirement)
        if match:
            return name + match.group(1).strip().strip("()")
    raise AssertionError(f"no {name} requirement for [{extra}] in the wheel")


def _minor(version):
    return tuple(int(part) for part in version.split(".")[:2])


@pytest.fixture(scope="module")
def translate_environment(tmp_path_factory):
    """(venv, environment, cwd): a fresh venv that holds the newest
    TensorFlow of the wheel's range first (a user's current TensorFlow),
    then `pip install "<wheel>[translate,serving]"`. The install keeps
    that TensorFlow, with a tensorflow-text of its minor version."""
    _, wheel = built_distributions(tmp_path_factory)
    folder = tmp_path_factory.mktemp("translate-serving")
    venv_dir = folder / "venv"
    python = new_virtual_environment(
        venv_dir, _requirement(wheel, "tensorflow", "translate"))
    before = installed_versions(python)
    run([python, "-m", "pip", "install", "--disable-pip-version-check",
         "--quiet", f"{wheel}[translate,serving]"], cwd=folder,
        env=clean_environment(venv_dir), timeout=420)
    after = installed_versions(python)
    report_versions("packaging, the wheel with [translate,serving]", after)
    assert after["tensorflow"] == before["tensorflow"], (
        f"the install changed TensorFlow: {before} -> {after}")
    # tensorflow-text and the serving API of TensorFlow's minor version,
    # and that the newest the index has (2.21 when this was written).
    assert len({_minor(after[name]) for name in (
        "tensorflow", "tensorflow-text", "tensorflow-serving-api")}) == 1, (
        after)
    assert _minor(after["tensorflow"]) >= (2, 21), after
    cwd = folder / "cwd"
    cwd.mkdir()
    # Without the suite's TF_CPP_MIN_LOG_LEVEL: the command line quiets
    # TensorFlow itself, as it does for a user.
    environment = clean_environment(venv_dir, KERAS_BACKEND="tensorflow")
    environment.pop("TF_CPP_MIN_LOG_LEVEL", None)
    yield venv_dir, environment, cwd
    remove_virtual_environment(venv_dir)


def _cli(translate_environment, *args, check=True, timeout=300):
    venv_dir, environment, cwd = translate_environment
    return run([venv_dir / "bin" / "keras-attention", *args], cwd=cwd,
               env=environment, check=check, timeout=timeout)


def test_the_console_script_is_the_installed_package(translate_environment):
    venv_dir, environment, cwd = translate_environment
    script = venv_dir / "bin" / "keras-attention"
    assert script.is_file(), f"no console script at {script}"
    shebang = script.read_text().splitlines()[0]
    assert shebang.startswith("#!") and str(venv_dir) in shebang, shebang
    found = run([venv_dir / "bin" / "python", "-c",
                 "import json, keras_attention, tensorflow\n"
                 "print(json.dumps([keras_attention.__file__,"
                 " keras_attention.__version__]))"],
                cwd=cwd, env=environment).stdout.splitlines()[-1]
    file, version = json.loads(found)
    assert pathlib.Path(file).is_relative_to(venv_dir), file
    assert version == source_version()


def test_help_and_version(translate_environment):
    result = _cli(translate_environment, "--help", timeout=60)
    assert result.stdout.startswith("usage: keras-attention"), result.stdout
    for command in ("train", "export", "serve"):
        assert command in result.stdout
    result = _cli(translate_environment, "--version", check=False, timeout=60)
    message = describe(result.args, result.returncode, result.stdout,
                       result.stderr)
    assert result.returncode == 0, message
    assert source_version() in result.stdout, message


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http(url, body=None, timeout=60):
    """(status, parsed JSON body) of a GET, or a POST of `body` as JSON."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def _server_log(log_path, process):
    return describe(process.args, process.poll(), "",
                    log_path.read_text(errors="replace"))


def _wait_until_available(url, process, log_path):
    deadline = time.monotonic() + SERVER_START_SECONDS
    last = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError("the server exited before answering\n"
                                 + _server_log(log_path, process))
        try:
            status, body = _http(url, timeout=5)
            last = (status, body)
            if status == 200 and any(
                    version.get("state") == "AVAILABLE"
                    for version in body.get("model_version_status", [])):
                return
        except (OSError, ValueError) as error:
            last = error
        time.sleep(0.5)
    raise AssertionError(f"no AVAILABLE model at {url} after "
                         f"{SERVER_START_SECONDS} s (last answer: {last!r})\n"
                         + _server_log(log_path, process))


@pytest.fixture(scope="module")
def trained(translate_environment):
    """The training run `run/` and its export `models/translator/1`,
    made by the installed command line; returns the first screen of
    `train` (its stdout and stderr)."""
    _, _, cwd = translate_environment
    result = _cli(translate_environment, "train", *TRAIN_FLAGS,
                  "--output-dir", "run", timeout=300)
    assert "saved to run" in result.stdout, result.stdout
    _cli(translate_environment, "export", "--model-dir", "run",
         "--base-path", "models", "--name", "translator", "--version", "1",
         timeout=300)
    assert (cwd / "models" / "translator" / "1" / "saved_model.pb").is_file()
    return result.stdout + result.stderr


def test_the_first_screen_holds_no_tensorflow_log_line(trained):
    assert tensorflow_log_lines(trained) == [], trained


def _translations(python, saved_model, environment, cwd):
    result = run([python, "-c", TRANSLATE, saved_model, json.dumps(TEXTS)],
                 cwd=cwd, env=environment, timeout=300)
    return json.loads(result.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def newest_translations(translate_environment, trained):
    """TEXTS translated by the export made here, loaded here."""
    venv_dir, environment, cwd = translate_environment
    return _translations(venv_dir / "bin" / "python",
                         cwd / "models" / "translator" / "1", environment, cwd)


def _suite_environment():
    """The suite's interpreter (TensorFlow 2.20) with this checkout's
    package: what exports and loads on the other side."""
    return clean_environment(KERAS_BACKEND="tensorflow",
                             TF_CPP_MIN_LOG_LEVEL="3",
                             PYTHONPATH=str(REPO_ROOT))


def test_savedmodels_load_and_translate_across_tensorflow_versions(
        translate_environment, newest_translations):
    """Exported with the newest TensorFlow, served by the suite's (2.20),
    and the other way: the same trained run exported by the suite's
    TensorFlow translates under the newest, to the same translations as
    the newest's own export gives under the newest."""
    venv_dir, environment, cwd = translate_environment
    newest = venv_dir / "bin" / "python"
    suite = _suite_environment()
    exported_newest = cwd / "models" / "translator" / "1"
    run([sys.executable, "-m", "keras_attention", "export", "--model-dir",
         cwd / "run", "--base-path", cwd / "models-suite", "--name",
         "translator", "--version", "1"], cwd=cwd, env=suite, timeout=300)
    exported_suite = cwd / "models-suite" / "translator" / "1"
    answers = {
        ("newest", "newest"): newest_translations,
        ("newest", "suite"): _translations(sys.executable, exported_newest,
                                           suite, cwd),
        ("suite", "newest"): _translations(newest, exported_suite,
                                           environment, cwd),
    }
    # The TensorFlow that served each answer.
    versions = {served: answer["tensorflow"]
                for (_, served), answer in answers.items()}
    assert _minor(versions["newest"]) != _minor(versions["suite"]), (
        f"both sides run TensorFlow {versions}: nothing crosses versions")
    reference = answers[("newest", "newest")]["translations"]
    assert len(reference) == len(TEXTS) and all(reference), reference
    for (exported, served), answer in answers.items():
        assert answer["translations"] == reference, (
            f"exported with TensorFlow {versions[exported]}, served by "
            f"{versions[served]}: {answer['translations']} != {reference}")
    report_versions("packaging, SavedModels across versions", {
        f"exported with {versions[exported]} served by "
        f"{versions[served]}": "same translations"
        for exported, served in answers})


def test_serve_and_predict_over_rest(translate_environment,
                                    newest_translations):
    venv_dir, environment, cwd = translate_environment
    port = _free_port()
    log_path = cwd / "serve.log"
    command = [venv_dir / "bin" / "keras-attention", "serve",
               "--rest_api_port", str(port), "--port", "0",
               "--model_name", "translator",
               "--model_base_path", cwd / "models" / "translator"]
    with open(log_path, "w") as log:
        process = subprocess.Popen([str(part) for part in command], cwd=cwd,
                                   env=environment, stdout=log,
                                   stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}/v1/models/translator"
        _wait_until_available(base, process, log_path)
        status, body = _http(base + ":predict", {"instances": TEXTS})
        assert status == 200, f"{status}: {body}\n" + _server_log(
            log_path, process)
        predictions = body["predictions"]
        assert len(predictions) == len(TEXTS), body
        assert all(isinstance(text, str) for text in predictions), body
        # The same graph over REST as loaded in a process of its own.
        assert predictions == newest_translations["translations"], (
            predictions, newest_translations)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
