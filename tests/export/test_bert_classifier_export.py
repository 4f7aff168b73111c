"""The BERT classifier's SavedModel (strings in, class scores out)
computes what the in-memory classifier computes on the same strings, its
`classify` signature (tf.Examples in) equals its `serving_default`, and
its warm-up file holds a request of each signature."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_attention.export.bert_classifier_module import BertClassifierModule
from keras_attention.export.bert_classifier_module import export_bert_classifier
from keras_attention.export.bert_classifier_module import text_examples
from keras_attention.export.warmup_requests import warmup_path
from keras_attention.models.bert_classifier import BertClassifier
from keras_attention.models.bert_encoder import BertEncoder
from keras_attention.text.bert_data import pack_segments
from keras_attention.text.stories import generate_stories
from keras_attention.text.tokenizer import SubwordTokenizer
from keras_attention.text.tokenizer import train_sentencepiece

LENGTH = 24
CLASSES = ("false", "true", "unknown")
TEXTS = ["Mary went to the kitchen. She picked up the apple.",
         "",
         "John met Sandra in the garden.",
         "Ünïcödé, émigré — naïve façade 日本語 ✓",
         " ".join(["Fred ran to the cellar."] * 20)]  # trimmed to LENGTH
PAIRS = ["Mary is in the kitchen.", "John is in the garden.", "",
         "Sandra is in the office.", "Fred is in the cellar."]


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """No per-test reset: it would free the tokenizer's TensorFlow
    resource that the module-wide fixtures hold."""
    yield


@pytest.fixture(scope="module")
def tokenizer():
    keras.utils.set_random_seed(7)  # before the tokenizer, see its docs
    sentences = [s for document in generate_stories(300, seed=0)
                 for s in document]
    return SubwordTokenizer(train_sentencepiece(sentences, 60))


def make_classifier(tokenizer):
    encoder = BertEncoder(
        vocabulary_size=tokenizer.vocabulary_size, num_layers=1, num_heads=2,
        hidden_dim=16, intermediate_dim=32, max_sequence_length=32)
    classifier = BertClassifier(encoder, num_classes=len(CLASSES))
    classifier(pack_segments([[5]], [[6]], sequence_length=LENGTH))
    rng = np.random.default_rng(0)
    for weight in classifier.weights:  # outputs that vary with the input
        weight.assign(rng.normal(size=weight.shape).astype("float32") * 0.5)
    return classifier


@pytest.fixture(scope="module")
def exported(tokenizer, tmp_path_factory):
    """(the module, the loaded SavedModel) of a sentence-pair classifier."""
    module = BertClassifierModule(
        make_classifier(tokenizer), tokenizer, LENGTH, CLASSES,
        segment_names=("text", "text_pair"))
    base = tmp_path_factory.mktemp("models")
    path = export_bert_classifier(module, base, name="stories")
    assert path == base / "stories" / "1"
    return module, tf.saved_model.load(str(path)), path


def in_memory_scores(module, first, second=None):
    """Softmax of the Keras classifier on the packed strings, computed
    here, not by the module."""
    tokenizer = module.tokenizer
    second = None if second is None else tokenizer.tokenize(second)
    packed = pack_segments(tokenizer.tokenize(first), second,
                           sequence_length=LENGTH)
    logits = keras.ops.convert_to_numpy(module.classifier(packed))
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def test_exported_predict_equals_the_in_memory_classifier(exported):
    module, loaded, _ = exported
    outputs = loaded.signatures["serving_default"](
        text=tf.constant(TEXTS), text_pair=tf.constant(PAIRS))
    assert set(outputs) == {"scores", "classes", "label"}
    scores = outputs["scores"].numpy()
    want = in_memory_scores(module, TEXTS, PAIRS)
    np.testing.assert_allclose(scores, want, rtol=1e-5, atol=1e-6)
    # The inputs give different answers (the test would see a swap).
    assert len({tuple(np.round(row, 4)) for row in want}) == len(TEXTS)
    assert outputs["classes"].numpy().tolist() == [
        [c.encode() for c in CLASSES]] * len(TEXTS)
    assert outputs["label"].numpy().tolist() == [
        CLASSES[i].encode() for i in np.argmax(want, -1)]
    # One example at a time equals the batch.
    for index, (text, pair) in enumerate(zip(TEXTS, PAIRS)):
        one = loaded.signatures["serving_default"](
            text=tf.constant([text]), text_pair=tf.constant([pair]))
        np.testing.assert_allclose(one["scores"].numpy()[0], scores[index],
                                   rtol=1e-5, atol=1e-6)


def test_classify_signature_equals_predict(exported):
    _, loaded, _ = exported
    predicted = loaded.signatures["serving_default"](
        text=tf.constant(TEXTS), text_pair=tf.constant(PAIRS))
    classified = loaded.signatures["classify"](inputs=tf.constant(
        text_examples({"text": TEXTS, "text_pair": PAIRS})))
    assert set(classified) == {"classes", "scores"}
    assert classified["scores"].dtype == tf.float32
    np.testing.assert_array_equal(classified["scores"].numpy(),
                                  predicted["scores"].numpy())
    np.testing.assert_array_equal(classified["classes"].numpy(),
                                  predicted["classes"].numpy())


def test_classify_without_a_feature_is_an_invalid_argument(exported):
    _, loaded, _ = exported
    with pytest.raises(tf.errors.InvalidArgumentError, match="text_pair"):
        loaded.signatures["classify"](
            inputs=tf.constant(text_examples({"text": TEXTS[:1]})))


def test_warmup_file_holds_each_signature(exported):
    _, loaded, path = exported
    logs = [prediction_log_pb2.PredictionLog.FromString(record.numpy())
            for record in tf.data.TFRecordDataset(str(warmup_path(path)))]
    kinds = [log.WhichOneof("log_type") for log in logs]
    assert kinds == ["predict_log", "classify_log"] * 2
    for log in logs:
        if log.HasField("predict_log"):
            request = log.predict_log.request
            inputs = {name: tf.make_ndarray(proto)
                      for name, proto in request.inputs.items()}
            assert request.model_spec.signature_name == "serving_default"
            assert set(inputs) == {"text", "text_pair"}
            loaded.signatures["serving_default"](**{
                name: tf.constant(value) for name, value in inputs.items()})
        else:
            request = log.classify_log.request
            assert request.model_spec.signature_name == "classify"
            examples = [e.SerializeToString()
                        for e in request.input.example_list.examples]
            assert len(examples) in (1, 3)
            loaded.signatures["classify"](inputs=tf.constant(examples))


def test_single_segment_module_and_next_version(tokenizer, tmp_path):
    module = BertClassifierModule(make_classifier(tokenizer), tokenizer,
                                  LENGTH, CLASSES)
    np.testing.assert_allclose(module.scores(tf.constant(TEXTS)).numpy(),
                               in_memory_scores(module, TEXTS), rtol=1e-5,
                               atol=1e-6)
    (tmp_path / "bert_classifier" / "3").mkdir(parents=True)
    path = export_bert_classifier(module, tmp_path, warmup=False)
    assert path == tmp_path / "bert_classifier" / "4"
    assert not warmup_path(path).exists()
    loaded = tf.saved_model.load(str(path))
    outputs = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(outputs["scores"].numpy(),
                               in_memory_scores(module, TEXTS), rtol=1e-5,
                               atol=1e-6)
    examples = text_examples({"text": TEXTS})
    np.testing.assert_array_equal(
        loaded.signatures["classify"](inputs=tf.constant(examples))[
            "scores"].numpy(), outputs["scores"].numpy())


@pytest.mark.parametrize("options, message", [
    (dict(sequence_length=33), "sequence_length=33"),
    (dict(class_names=("a", "b")), "class_names="),
    (dict(segment_names=("a", "b", "c")), "segment_names="),
    (dict(segment_names=("inputs",)), "segment_names="),
    (dict(segment_names=("a", "a")), "segment_names="),
])
def test_bad_arguments_name_the_argument(tokenizer, options, message):
    arguments = dict(classifier=make_classifier(tokenizer),
                     tokenizer=tokenizer, sequence_length=LENGTH,
                     class_names=CLASSES)
    arguments.update(options)
    with pytest.raises(ValueError, match=message):
        BertClassifierModule(**arguments)
    with pytest.raises(ValueError, match="version=0"):
        export_bert_classifier(BertClassifierModule(
            make_classifier(tokenizer), tokenizer, LENGTH, CLASSES),
            "/nonexistent", version=0)
