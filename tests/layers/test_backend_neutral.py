"""The layers and ops are written with `keras.ops`: they never import
TensorFlow, so under the JAX backend they load without it."""

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
import keras_attention.layers, keras_attention.ops
print(json.dumps([keras_attention.layers.MultiHeadAttention.__name__,
                  sorted(m for m in sys.modules if m.startswith("tensorflow"))]))
"""


def test_layers_and_ops_load_under_jax_without_tensorflow():
    environment = dict(os.environ, KERAS_BACKEND="jax")
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=environment, capture_output=True,
        text=True, check=True, timeout=120,
    )
    name, tensorflow_modules = json.loads(result.stdout.splitlines()[-1])
    assert name == "MultiHeadAttention"
    assert tensorflow_modules == []
