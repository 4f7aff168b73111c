"""BertClassifier: logits from the pooled output, a .keras round trip,
weights shared with a pretrained encoder, argument errors."""

import keras
import numpy as np
import pytest

from keras_attention.models.bert_classifier import BertClassifier
from keras_attention.models.bert_encoder import BertEncoder
from keras_attention.models.bert_pretrainer import BertPretrainer

CONFIG = dict(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
              intermediate_dim=16, max_sequence_length=10, dropout=0.0)
INPUTS = {
    "token_ids": np.array([[2, 29, 9, 3, 11, 3, 0, 0],
                           [2, 5, 28, 7, 3, 8, 9, 3]], "int32"),
    "segment_ids": np.array([[0, 0, 0, 0, 1, 1, 0, 0],
                             [0, 0, 0, 0, 0, 1, 1, 1]], "int32"),
    "padding_mask": np.array([[1] * 6 + [0] * 2, [1] * 8], bool),
}


def make_classifier(num_classes=3, dropout=0.1):
    classifier = BertClassifier(BertEncoder(**CONFIG), num_classes, dropout)
    classifier(INPUTS)
    rng = np.random.default_rng(0)
    for weight in classifier.weights:  # non-trivial norms and biases
        weight.assign(rng.normal(size=weight.shape).astype("float32") * 0.3)
    return classifier


def test_logits_are_a_dense_layer_on_the_pooled_output():
    classifier = make_classifier()
    logits = keras.ops.convert_to_numpy(classifier(INPUTS))
    assert logits.shape == (2, 3)
    pooled = keras.ops.convert_to_numpy(
        classifier.encoder(INPUTS)["pooled_output"])
    kernel, bias = (keras.ops.convert_to_numpy(w)
                    for w in classifier.logits_dense.weights)
    np.testing.assert_allclose(logits, pooled @ kernel + bias, rtol=1e-5,
                               atol=1e-6)
    assert not np.allclose(logits[0], logits[1])
    # Dropout acts in training only.
    trained = keras.ops.convert_to_numpy(classifier(INPUTS, training=True))
    assert not np.allclose(trained, logits)


def test_keras_file_round_trip_gives_equal_outputs(tmp_path):
    classifier = make_classifier()
    path = tmp_path / "classifier.keras"
    classifier.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertClassifier)
    assert isinstance(loaded.encoder, BertEncoder)
    assert (loaded.num_classes, loaded.dropout) == (3, 0.1)
    assert loaded.encoder.get_config() == classifier.encoder.get_config()
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loaded(INPUTS)),
        keras.ops.convert_to_numpy(classifier(INPUTS)), rtol=1e-6, atol=1e-6)


def test_config_round_trip():
    classifier = make_classifier(num_classes=4, dropout=0.3)
    clone = BertClassifier.from_config(classifier.get_config())
    assert clone.get_config() == classifier.get_config()
    assert clone.encoder is not classifier.encoder


def test_built_on_a_pretrained_encoder_it_shares_its_weights():
    encoder = BertEncoder(**CONFIG)
    pretrainer = BertPretrainer(encoder)
    pretrainer(dict(INPUTS, mask_positions=np.zeros((2, 1), "int32")))
    classifier = BertClassifier(pretrainer.encoder, num_classes=2)
    classifier(INPUTS)
    encoder_variables = {id(v) for v in encoder.weights}
    assert encoder_variables <= {id(v) for v in classifier.weights}
    assert len(classifier.weights) == len(encoder.weights) + 2
    # A training step of the classifier moves the pretrainer's encoder.
    before = keras.ops.convert_to_numpy(
        pretrainer.encoder.token_embedding.embeddings).copy()
    classifier.compile(optimizer=keras.optimizers.SGD(0.5),
                       loss=keras.losses.SparseCategoricalCrossentropy(
                           from_logits=True))
    classifier.fit(INPUTS, np.array([0, 1]), epochs=1, verbose=0)
    after = keras.ops.convert_to_numpy(
        pretrainer.encoder.token_embedding.embeddings)
    assert not np.allclose(before, after)


@pytest.mark.parametrize("arguments, message", [
    (dict(num_classes=1), "num_classes=1"),
    (dict(num_classes=0), "num_classes=0"),
    (dict(num_classes=2.5), "num_classes=2.5"),
    (dict(num_classes=2, dropout=1.0), "dropout=1.0"),
    (dict(num_classes=2, encoder="bert"), "encoder of type str"),
])
def test_bad_arguments_name_the_argument(arguments, message):
    arguments.setdefault("encoder", BertEncoder(**CONFIG))
    with pytest.raises(ValueError, match=message):
        BertClassifier(**arguments)
