"""The wheel with its `[translate,serving]` extras, in a fresh virtual
environment, used the way its README tells a user to: the installed
`keras-attention` console script (never the source tree) answers
`--help` and `--version`, and a tiny translator goes train -> export ->
serve -> REST predict.

A file of its own (tests/packaging/test_wheel.py has the distributions and
the JAX-only environment) so that pytest-xdist's two workers install and
run both environments at once.
"""

import json
import pathlib
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.packaging.distributions import built_distributions
from tests.packaging.distributions import clean_environment
from tests.packaging.distributions import describe
from tests.packaging.distributions import new_virtual_environment
from tests.packaging.distributions import remove_virtual_environment
from tests.packaging.distributions import run
from tests.packaging.distributions import source_version

# The smallest run the command line allows that still trains: the tiny
# preset, one epoch over 200 pairs of the built-in synthetic corpus (about
# 30 s on 2 cores, most of it loading TensorFlow and tracing).
TRAIN_FLAGS = ["--corpus", "synthetic", "--preset", "tiny", "--epochs", "1",
               "--train-size", "200", "--vocabulary-size", "200",
               "--max-length", "32", "--bleu-sentences", "0",
               "--verbose", "0", "--precision", "float32", "--seed", "0"]
TEXTS = ["A dog runs.", "The old man sees a small dog.", "A woman cooks."]
SERVER_START_SECONDS = 180


@pytest.fixture(scope="module")
def translate_environment(tmp_path_factory):
    """(venv, environment, cwd): a fresh venv with
    `pip install "<wheel>[translate,serving]"`."""
    _, wheel = built_distributions(tmp_path_factory)
    folder = tmp_path_factory.mktemp("translate-serving")
    venv_dir = folder / "venv"
    new_virtual_environment(venv_dir, f"{wheel}[translate,serving]")
    cwd = folder / "cwd"
    cwd.mkdir()
    environment = clean_environment(venv_dir, KERAS_BACKEND="tensorflow",
                                    TF_CPP_MIN_LOG_LEVEL="2")
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


def test_train_export_serve_and_predict_over_rest(translate_environment):
    venv_dir, environment, cwd = translate_environment
    result = _cli(translate_environment, "train", *TRAIN_FLAGS,
                  "--output-dir", "run", timeout=300)
    assert "saved to run" in result.stdout, result.stdout
    _cli(translate_environment, "export", "--model-dir", "run",
         "--base-path", "models", "--name", "translator", "--version", "1",
         timeout=300)
    assert (cwd / "models" / "translator" / "1" / "saved_model.pb").is_file()

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
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
