"""An install without the TensorFlow extras: the backend-neutral part
imports and works; a module that needs an extra fails at import with one
line naming it; the command line prints that line, not a traceback.

Each check runs in a subprocess where `tensorflow` (or another extra's
module) is blocked (`sys.modules[name] = None`, which makes `import name`
fail), on the JAX backend. tests/packaging installs the real wheel without
TensorFlow.
"""

import json
import os
import subprocess
import sys

import pytest

from keras_attention._extras import MissingExtraError
from keras_attention._extras import require

BACKEND_NEUTRAL = ["keras_attention", "keras_attention.layers",
                   "keras_attention.ops", "keras_attention.models",
                   "keras_attention.visualize", "keras_attention.cli",
                   "keras_attention.training.config",
                   "keras_attention.training.precision",
                   "keras_attention.text.corpora"]
NEEDS_TENSORFLOW = ["keras_attention.translator", "keras_attention.decoding",
                    "keras_attention.export", "keras_attention.text.tokenizer",
                    "keras_attention.text.pipeline",
                    "keras_attention.text.bert_data",
                    "keras_attention.training.seq2seq",
                    "keras_attention.training.losses",
                    "keras_attention.training.strategy",
                    "keras_attention.serving.server"]

PROBE = """
import importlib, json, sys
for name in sys.argv[2].split(","):
    sys.modules[name] = None  # blocked: `import name` raises ImportError
results = {}
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
        results[module] = "ok"
    except ImportError as error:
        results[module] = f"{type(error).__name__}: {error}"
print(json.dumps(results))
"""


def probe(modules, blocked):
    env = dict(os.environ, KERAS_BACKEND="jax")
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules), ",".join(blocked)],
        capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_the_backend_neutral_part_imports_without_tensorflow():
    results = probe(BACKEND_NEUTRAL, ["tensorflow"])
    assert results == {name: "ok" for name in BACKEND_NEUTRAL}


def test_modules_that_need_tensorflow_name_their_extra():
    results = probe(NEEDS_TENSORFLOW, ["tensorflow"])
    for module, outcome in results.items():
        assert outcome.startswith("MissingExtraError: "), (module, outcome)
        assert "needs tensorflow" in outcome, (module, outcome)
        assert "\n" not in outcome, (module, outcome)
        extra = "serving" if module.startswith("keras_attention.serving") \
            else "translate"
        assert outcome.endswith(f'pip install "keras-attention[{extra}]"'), \
            (module, outcome)


def test_the_serving_client_without_grpc_names_the_serving_extra():
    results = probe(["keras_attention.serving.grpc_client"], ["grpc"])
    outcome = results["keras_attention.serving.grpc_client"]
    assert outcome.startswith("MissingExtraError: "), outcome
    assert outcome.endswith('pip install "keras-attention[serving]"'), outcome


def test_the_command_line_prints_the_missing_extra_as_one_line(tmp_path):
    code = ("import sys; sys.modules['tensorflow'] = None\n"
            "from keras_attention.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    result = subprocess.run(
        [sys.executable, "-c", code, "train", "--output-dir",
         str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, KERAS_BACKEND="jax"))
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.splitlines() == [
        "keras-attention: error: keras_attention.translator needs tensorflow, "
        'which is not installed: pip install "keras-attention[translate]"']
    assert "Traceback" not in result.stderr


def test_the_command_line_prints_its_version():
    from keras_attention import __version__

    result = subprocess.run(
        [sys.executable, "-m", "keras_attention", "--version"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"keras-attention {__version__}\n"


def test_require_lists_every_missing_module_and_checks_the_extra():
    with pytest.raises(MissingExtraError, match=(
            r"^m needs no_such_a, no_such_b.sub, which are not installed: "
            r'pip install "keras-attention\[official\]"$')) as caught:
        require("m", "official", "no_such_a", "os", "no_such_b.sub")
    assert caught.value.name == "no_such_a"
    with pytest.raises(ValueError, match="extra must be one of .* got 'tf'"):
        require("m", "tf", "os")
