import keras
import pytest


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Overrides the suite's Keras reset for tests/data, as tests/text
    does: the generators build no Keras model, and clear_session's garbage
    collection costs about a second per test here."""
    keras.utils.set_random_seed(1234)
    yield
