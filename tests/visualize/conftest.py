import pytest


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Overrides the suite's Keras reset for tests/visualize: these tests
    build no Keras model, and clear_session's garbage collection costs about
    half a second per test."""
    yield
