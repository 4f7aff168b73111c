"""benchmarks/translator_multi30k.py's decoding-speed check: its cached
and uncached fixed-length greedy decoders run for every kind of
translator (the decoder-only one has no decoder of its own to re-run) and
draw the same tokens."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.models import DecoderOnlyTranslator
from keras_attention.models import RNNTranslator
from keras_attention.models import TransformerTranslator
from tests.test_benchmarks_summary import load_script

SOURCE = np.array([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]], "int32")
TARGET = np.array([[1, 11, 12], [1, 14, 0]], "int32")
MODELS = {
    "transformer": lambda: TransformerTranslator(
        30, 30, num_layers=1, hidden_dim=16, num_heads=2,
        intermediate_dim=32, dropout=0.0),
    "rnn": lambda: RNNTranslator(30, 30, encoder_units=8, decoder_units=8,
                                 embedding_dim=8),
    "decoder_only": lambda: DecoderOnlyTranslator(
        30, 30, num_layers=2, hidden_dim=16, num_heads=2,
        intermediate_dim=32, dropout=0.0),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_cached_and_uncached_decoders_agree(name, monkeypatch):
    script = load_script("translator_multi30k", monkeypatch)
    keras.utils.set_random_seed(0)
    model = MODELS[name]()
    model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    decoders = script.fixed_length_decoders(model, bos_id=1)
    steps = tf.constant(6)
    cached = decoders[True](tf.constant(SOURCE), steps).numpy()
    uncached = decoders[False](tf.constant(SOURCE), steps).numpy()
    assert cached.shape == uncached.shape == (2, 6)
    # The full pass masks padding it emitted itself as keys, the cache
    # does not: the comparison holds where no padding is drawn.
    assert (cached != 0).all()
    np.testing.assert_array_equal(cached, uncached)
