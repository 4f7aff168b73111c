"""A clean first screen (issue 45): the demo, the examples and the
benchmarks start without TensorFlow's start-up log lines (`Could not find
cuda drivers`, `oneDNN custom operations are on`, the CPU-instructions
notice and, on a machine without a GPU, the error-level `failed call to
cuInit`), as the command line does (tests/test_cli.py).

One fresh interpreter, without the suite's TF_CPP_MIN_LOG_LEVEL, imports
the demo and runs a TensorFlow op (the `cuInit` line comes with the first
op, not with the import); the examples and benchmarks are checked from
their source: each calls `keras_attention.logs.quiet_tensorflow()` (a
benchmark: or imports `harness`, which calls it) before any module-level
import that may load TensorFlow. The installed wheel's command line is
checked the same way on the newest TensorFlow by
tests/packaging/test_wheel_translate.py.
"""

import ast
import logging
import os
import pathlib
import re
import subprocess
import sys

import pytest

from keras_attention.logs import quiet_tensorflow

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
# A line TensorFlow (or XLA, absl) writes while it starts: glog's prefix
# (`2026-11-28 01:48:19.188142: I tensorflow/...`, `E0000 00:00:...`),
# absl's pre-initialization notice, and the known start-up messages.
TENSORFLOW_LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] "
    r"|^[IWEF]\d{4} \d\d:\d\d:\d\d"
    r"|All log messages before absl::InitializeLog"
    r"|cuInit|oneDNN custom operations|cuda drivers"
    r"|rebuild TensorFlow with the appropriate compiler flags")
# Top-level modules whose import may load TensorFlow.
LOADS_TENSORFLOW = {"keras", "tensorflow", "tensorflow_text", "keras_hub",
                    "keras_attention", "tf_keras", "official"}


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """These tests build no Keras model: no per-test Keras reset."""
    yield


def tensorflow_log_lines(text):
    return [line for line in text.splitlines()
            if TENSORFLOW_LOG_LINE.search(line)]


def test_the_pattern_knows_tensorflow_s_start_up_lines():
    lines = (
        "2026-11-28 01:48:24.642469: E external/local_xla/xla/stream_executor"
        "/cuda/cuda_platform.cc:51] failed call to cuInit: INTERNAL: CUDA "
        "error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
        "2026-11-28 01:48:19.188701: I tensorflow/core/util/port.cc:153] "
        "oneDNN custom operations are on.\n"
        "To enable the following instructions: AVX2 FMA, in other "
        "operations, rebuild TensorFlow with the appropriate compiler flags.\n"
        "WARNING: All log messages before absl::InitializeLog() is called "
        "are written to STDERR\n"
        "E0000 00:00:1732755000.123456   12 cuda_executor.cc:1228] x\n")
    assert len(tensorflow_log_lines(lines)) == 5
    assert tensorflow_log_lines(
        "Training a 1+1 block Transformer to reverse digit strings\n"
        "sacreBLEU on the synthetic test split (500 sentences):\n"
        "Epoch 1/6 - 2026-11-28: loss 3.2\n") == []


def test_a_level_the_user_set_is_kept(monkeypatch):
    for name in ("tensorflow", "absl"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "level", logger.level)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    quiet_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1"
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    quiet_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert logging.getLogger("absl").getEffectiveLevel() == logging.ERROR
    quiet_tensorflow(show_logs=True)
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


DEMO_FIRST_SCREEN = """
import keras_attention.demo  # as `make demo` starts
import tensorflow as tf
print("demo imported; an op:", int(tf.constant(1) + 1))
"""


def test_the_demo_starts_without_tensorflow_log_lines(tmp_path):
    environment = {name: value for name, value in os.environ.items()
                   if name != "TF_CPP_MIN_LOG_LEVEL"}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    result = subprocess.run(
        [sys.executable, "-c", DEMO_FIRST_SCREEN], cwd=tmp_path,
        env=environment, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["demo imported; an op: 2"], (
        result.stdout)
    screen = result.stdout + result.stderr
    assert tensorflow_log_lines(screen) == [], screen


def _names(node):
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module or ""]


def _quiets(node, allow_harness):
    """Whether a module-level statement quiets TensorFlow: a call of
    `quiet_tensorflow()` (or, for a benchmark, `import harness`)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        function = node.value.func
        return getattr(function, "id", getattr(function, "attr", None)) == (
            "quiet_tensorflow")
    return allow_harness and isinstance(node, ast.Import) and "harness" in (
        _names(node))


def _loads_tensorflow(node):
    if not isinstance(node, (ast.Import, ast.ImportFrom)):
        return False
    return any(name.split(".")[0] in LOADS_TENSORFLOW
               and name != "keras_attention.logs" for name in _names(node))


def _entry_points(folder):
    return sorted(path for path in (REPO_ROOT / folder).glob("*.py")
                  if 'if __name__ == "__main__":' in path.read_text())


@pytest.mark.parametrize("folder", ["examples", "benchmarks",
                                    "reproductions/systems"])
def test_entry_points_quiet_tensorflow_before_loading_it(folder):
    """Module level only: an import inside a function runs later, and a
    benchmark's functions import `harness` before Keras."""
    late = []
    scripts = _entry_points(folder)
    assert len(scripts) >= 10, scripts
    for path in scripts:
        for node in ast.parse(path.read_text(), str(path)).body:
            if _quiets(node, allow_harness=folder != "examples"):
                break
            if _loads_tensorflow(node):
                late.append(f"{path.name}:{node.lineno}")
                break
    assert not late, ("imports that may load TensorFlow before "
                      f"quiet_tensorflow(): {late}")


FAKE_TENSORFLOW = """
import os
os.write(2, b"WARNING: All log messages before absl::InitializeLog() is "
            b"called are written to STDERR\\n"
            b"I0000 00:00:1795831243.123778   32248 port.cc:153] oneDNN\\n"
            b"E0000 00:00:1795831243.123779   32248 x.cc:7] kept: an error\\n"
            b"not a log line: kept\\n")
raise ImportError("the fake TensorFlow fails to load")
"""


def test_the_first_import_passes_on_all_but_the_hidden_lines(tmp_path):
    """A stand-in `tensorflow` package that writes TensorFlow 2.21's
    first lines to file descriptor 2 and fails: at level 2 the info line
    and absl's notice are dropped, the error line, a plain line and the
    ImportError reach the user."""
    (tmp_path / "tensorflow").mkdir()
    (tmp_path / "tensorflow" / "__init__.py").write_text(FAKE_TENSORFLOW)
    code = ("from keras_attention.logs import quiet_tensorflow\n"
            "quiet_tensorflow()\n"
            "try:\n"
            "    import tensorflow\n"
            "except ImportError as error:\n"
            "    print('raised:', error)\n")
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                       PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                   str(REPO_ROOT)]))
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                            env=environment, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "raised: the fake TensorFlow fails to load\n"
    assert result.stderr.splitlines() == [
        "E0000 00:00:1795831243.123779   32248 x.cc:7] kept: an error",
        "not a log line: kept"], result.stderr
