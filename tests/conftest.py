import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Training runs say precision="auto" by default, which picks bfloat16 only
# on some CPUs: the suite's numbers must not depend on the CPU it runs on
# (tests/training/test_precision.py checks "auto" itself).
os.environ.setdefault("KERAS_ATTENTION_PRECISION", "float32")
if os.environ.get("KERAS_BACKEND") == "jax":
    # Eager JAX compiles every op for every new shape; on CPU, XLA's
    # backend optimizations take most of that time and buy nothing for
    # inputs this small: `make test-jax` runs in about half the time.
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Every test starts from float32, a fixed seed and fresh layer names."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")
    keras.backend.clear_session()
