"""An exported BERT classifier (strings in, class scores out) served by
our server: REST `:predict`, REST `:classify` and gRPC `Classify` answer
what the same SavedModel answers in-process."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.export.bert_classifier_module import BertClassifierModule
from keras_attention.export.bert_classifier_module import export_bert_classifier
from keras_attention.export.bert_classifier_module import text_examples
from keras_attention.models.bert_classifier import BertClassifier
from keras_attention.models.bert_encoder import BertEncoder
from keras_attention.serving.client import Client
from keras_attention.text.bert_data import pack_segments
from keras_attention.text.stories import STATEMENT_CLASSES
from keras_attention.text.stories import generate_statement_task
from keras_attention.text.stories import generate_stories
from keras_attention.text.tokenizer import SubwordTokenizer
from keras_attention.text.tokenizer import train_sentencepiece
from tests.serving import http
from tests.serving.conftest import EXTERNAL_URL
from tests.serving.conftest import running_server

pytestmark = pytest.mark.skipif(
    EXTERNAL_URL is not None,
    reason="the test exports its own model and starts our server on it")

NAME = "bert_stories"
LENGTH = 48
STORIES, STATEMENTS, _ = generate_statement_task(4, seed=11)
TEXTS = [*STORIES, "", "Ünïcödé ✓"]
PAIRS = [*STATEMENTS, "Mary is in the garden.", ""]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(model folder, in-process outputs of both signatures on TEXTS)."""
    keras.utils.set_random_seed(3)  # before the tokenizer, see its docs
    sentences = [s for document in generate_stories(300, seed=0)
                 for s in document]
    tokenizer = SubwordTokenizer(train_sentencepiece(sentences, 60))
    encoder = BertEncoder(
        vocabulary_size=tokenizer.vocabulary_size, num_layers=1, num_heads=2,
        hidden_dim=16, intermediate_dim=32, max_sequence_length=LENGTH)
    classifier = BertClassifier(encoder, num_classes=2)
    classifier(pack_segments([[5]], [[6]], sequence_length=LENGTH))
    rng = np.random.default_rng(1)
    for weight in classifier.weights:  # answers that vary with the input
        weight.assign(rng.normal(size=weight.shape).astype("float32") * 0.5)
    module = BertClassifierModule(classifier, tokenizer, LENGTH,
                                  STATEMENT_CLASSES,
                                  segment_names=("text", "text_pair"))
    base = tmp_path_factory.mktemp("models")
    path = export_bert_classifier(module, base, name=NAME)
    loaded = tf.saved_model.load(str(path))
    predicted = loaded.signatures["serving_default"](
        text=tf.constant(TEXTS), text_pair=tf.constant(PAIRS))
    classified = loaded.signatures["classify"](inputs=tf.constant(
        text_examples({"text": TEXTS, "text_pair": PAIRS})))
    answers = {key: value.numpy() for key, value in predicted.items()}
    answers.update({f"classify_{key}": value.numpy()
                    for key, value in classified.items()})
    return base / NAME, answers


@pytest.fixture(scope="module")
def server(exported):
    """(REST url, gRPC host:port) of our server on the exported model."""
    folder, _ = exported
    with running_server(f"--model_name={NAME}",
                        f"--model_base_path={folder}",
                        model=NAME) as (url, process):
        yield url, process.grpc_target


def test_rest_predict_equals_in_process(server, exported):
    url, _ = server
    _, answers = exported
    instances = [{"text": t, "text_pair": p} for t, p in zip(TEXTS, PAIRS)]
    reply = http.call(url, "predict", {"instances": instances}, model=NAME)
    assert reply.status == 200, reply.raw
    predictions = reply.json["predictions"]
    assert len(predictions) == len(TEXTS)
    assert all(set(p) == {"scores", "classes", "label"}
               for p in predictions)
    np.testing.assert_allclose([p["scores"] for p in predictions],
                               answers["scores"], rtol=1e-6)
    assert [p["label"] for p in predictions] == [
        label.decode() for label in answers["label"].tolist()]
    assert all(p["classes"] == list(STATEMENT_CLASSES) for p in predictions)
    # The scores are not all the same (a swap of rows would show).
    assert len({tuple(np.round(row, 5)) for row in answers["scores"]}) > 3


def test_rest_classify_equals_in_process(server, exported):
    url, _ = server
    _, answers = exported
    examples = [{"text": t, "text_pair": p} for t, p in zip(TEXTS, PAIRS)]
    reply = http.call(url, "classify", {"signature_name": "classify",
                                        "examples": examples}, model=NAME)
    assert reply.status == 200, reply.raw
    results = reply.json["results"]
    assert [[label for label, _ in row] for row in results] == [
        list(STATEMENT_CLASSES)] * len(TEXTS)
    np.testing.assert_allclose(
        [[score for _, score in row] for row in results],
        answers["classify_scores"], rtol=1e-6)
    np.testing.assert_array_equal(answers["classify_scores"],
                                  answers["scores"])


def test_grpc_classify_equals_rest(server, exported):
    url, target = server
    _, answers = exported
    examples = [{"text": t, "text_pair": p} for t, p in zip(TEXTS, PAIRS)]
    with Client(f"grpc://{target}", NAME) as client:
        over_grpc = client.classify(examples, signature_name="classify")
        predicted = client.predict(
            inputs={"text": TEXTS, "text_pair": PAIRS})
    over_rest = Client(url, NAME).classify(examples,
                                           signature_name="classify")
    assert over_grpc == over_rest
    np.testing.assert_allclose(predicted["scores"], answers["scores"],
                               rtol=1e-6)


def test_missing_feature_is_a_bad_request(server):
    url, _ = server
    reply = http.call(url, "classify", {"signature_name": "classify",
                                        "examples": [{"text": "Mary"}]},
                      model=NAME)
    assert reply.status == 400, reply.raw
    assert "text_pair" in reply.error
