import pytest

from keras_attention.translator import TrainingConfig
from keras_attention.translator import train


@pytest.fixture(scope="session", params=[None, 4],
                ids=["sinusoidal", "relative"])
def trained(tmp_path_factory, request):
    """A tiny translator trained briefly on the synthetic corpus: far from
    good, but its outputs vary with the input, which the decoding and
    export checks need. Once with the paper's sinusoidal positions, once
    with relative-position self-attention (δ = 4, keys and values)."""
    directory = tmp_path_factory.mktemp("translator")
    translator = train(TrainingConfig(
        output_dir=str(directory), train_size=2000, epochs=5,
        bleu_sentences=0, verbose=0, warmup_steps=100,
        learning_rate_scale=2.0, max_length=48,
        max_relative_position=request.param,
        relative_values=request.param is not None,
    ))
    # The two variants really differ: no sinusoids in the relative one.
    assert (translator.model.positions is None) == (request.param is not None)
    return translator, directory


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Overrides the suite's per-test Keras reset: `set_random_seed` and
    `clear_session` reset TensorFlow's eager context, which frees the
    SentencePiece resource of the session-wide translator (a
    tensorflow-text behaviour, documented on `SubwordTokenizer`)."""
    yield
