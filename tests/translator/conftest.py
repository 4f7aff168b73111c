import pytest

from keras_attention.translator import TrainingConfig
from keras_attention.translator import train

VARIANTS = {
    "sinusoidal": dict(model="transformer"),
    "relative": dict(model="transformer", max_relative_position=4,
                     relative_values=True),
    "rnn": dict(model="rnn"),
}


@pytest.fixture(scope="session", params=list(VARIANTS))
def trained(tmp_path_factory, request):
    """A tiny translator trained briefly on the synthetic corpus: far from
    good, but its outputs vary with the input, which the decoding and
    export checks need. Every decoding and export test runs on each
    model: the Transformer with the paper's sinusoidal positions, with
    relative-position self-attention (δ = 4, keys and values), and the RNN
    encoder-decoder with additive attention."""
    directory = tmp_path_factory.mktemp("translator")
    translator = train(TrainingConfig(
        output_dir=str(directory), train_size=2000, epochs=5,
        bleu_sentences=0, verbose=0, warmup_steps=100,
        learning_rate_scale=2.0, max_length=48, **VARIANTS[request.param],
    ))
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
