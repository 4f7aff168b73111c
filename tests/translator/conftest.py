import pytest

from keras_attention.translator import Translator
from tests.trained_translators import VARIANTS
from tests.trained_translators import trained_translator


@pytest.fixture(scope="session", params=list(VARIANTS))
def trained(tmp_path_factory, request):
    """A tiny translator trained briefly on the synthetic corpus (see
    tests/trained_translators.py), loaded from its run folder: far from
    good, but its outputs vary with the input, which the decoding and
    export checks need. Every decoding and export test runs on each
    model: the Transformer with the paper's sinusoidal positions, with
    relative-position self-attention (δ = 4, keys and values), and the RNN
    encoder-decoder with additive attention."""
    directory = trained_translator(tmp_path_factory, request.param,
                                   then=list(VARIANTS))
    translator = Translator.load(directory)
    # The variants really differ.
    model = translator.model
    if request.param == "rnn":
        assert type(model).__name__ == "RNNTranslator"
    else:
        assert (model.positions is None) == (request.param == "relative")
    return translator, directory


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Overrides the suite's per-test Keras reset: `set_random_seed` and
    `clear_session` reset TensorFlow's eager context, which frees the
    SentencePiece resource of the session-wide translator (a
    tensorflow-text behaviour, documented on `SubwordTokenizer`)."""
    yield
