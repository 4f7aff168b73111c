import keras
import pytest


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Overrides the suite's Keras reset for tests/text: same seed, no
    clear_session. These tests build no Keras model, and clear_session's
    garbage collection costs about half a second per test."""
    keras.utils.set_random_seed(1234)
    yield
