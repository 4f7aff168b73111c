import pytest

from keras_attention.translator import TrainingConfig
from keras_attention.translator import train


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """A tiny translator trained briefly on the synthetic corpus: far from
    good, but its outputs vary with the input, which the decoding and
    export checks need."""
    directory = tmp_path_factory.mktemp("translator")
    translator = train(TrainingConfig(
        output_dir=str(directory), train_size=2000, epochs=5,
        bleu_sentences=0, verbose=0, warmup_steps=100,
        learning_rate_scale=2.0, max_length=48,
    ))
    return translator, directory


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Overrides the suite's per-test Keras reset: `set_random_seed` and
    `clear_session` reset TensorFlow's eager context, which frees the
    SentencePiece resource of the session-wide translator (a
    tensorflow-text behaviour, documented on `SubwordTokenizer`)."""
    yield
