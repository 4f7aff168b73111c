"""`BertClassifierModule`: tokenizer + packing + `BertClassifier` in one
graph, and `export_bert_classifier`, its SavedModel writer for TF Serving.

Strings in, class scores out: the SavedModel holds the SentencePiece
model, the `[CLS] A [SEP] B [SEP]` packing and the fine-tuned classifier,
so a client sends raw text. Two signatures:

- `serving_default` (TF Serving's `:predict`): one `string [batch]` input
  per segment (`text`, and e.g. `text_pair` for sentence pairs) ->
  `scores` float32 `[batch, C]` (softmax), `classes` string `[batch, C]`
  (the class names, in score order) and `label` string `[batch]` (the
  best class).
- `classify` (TF Serving's `:classify` and gRPC `Classify`): `inputs`,
  serialized `tf.Example`s with one bytes feature per segment (the same
  names) -> `classes` and `scores` `[batch, C]`, as TF Serving's
  classification API requires of a signature.

Letters: B batch, L packed length, C classes.
"""


from keras_attention._extras import require

require(__name__, "translate", "tensorflow", "tensorflow_serving")

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2
from tensorflow_serving.apis import input_pb2

from keras_attention import _validation
from keras_attention.export._held_model import hold_model
from keras_attention.export.saved_model import save_version
from keras_attention.export.warmup_requests import predict_request
from keras_attention.models.bert_classifier import BertClassifier
from keras_attention.text.bert_data import pack_segments

# Warm-up: each signature once with one example and once with a batch of
# three of different lengths (see `saved_model.WARMUP_BATCHES`).
WARMUP_BATCHES = (
    ("Mary went to the kitchen.",),
    ("John picked up the apple. He went to the garden.", "",
     "Sandra is in the office."),
)


def text_examples(columns):
    """Serialized `tf.Example`s, one per row of `columns` (feature name ->
    a list of str), each feature a bytes list of one value."""
    names = list(columns)
    rows = zip(*(columns[name] for name in names))
    return [tf.train.Example(features=tf.train.Features(feature={
        name: tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[value.encode("utf-8")]))
        for name, value in zip(names, row)})).SerializeToString()
        for row in rows]


class BertClassifierModule(tf.Module):
    """Raw strings in, class scores out.

    Args:
        classifier: a trained `BertClassifier`.
        tokenizer: the `SubwordTokenizer` it was trained with; its BOS and
            EOS ids are `[CLS]` and `[SEP]`, its pad id the padding.
        sequence_length: int, the packed length L (at most the encoder's
            `max_sequence_length`); longer inputs are trimmed round robin
            (see `pack_segments`).
        class_names: C strings, the names of the classifier's classes.
        segment_names: one or two names: the signatures' text inputs (and
            the `tf.Example` features of `classify`), first segment first.

    `scores(*texts)` computes the `(B, C)` softmax scores eagerly or in a
    graph; `serving_default(...)` and `classify(inputs)` are the exported
    signatures (see the module docstring).

    Example:

    >>> import numpy as np
    >>> from keras_attention.export.bert_classifier_module import (
    ...     BertClassifierModule)
    >>> from keras_attention.models.bert_classifier import BertClassifier
    >>> from keras_attention.models.bert_encoder import BertEncoder
    >>> from keras_attention.text.tokenizer import SubwordTokenizer
    >>> from keras_attention.text.tokenizer import train_sentencepiece
    >>> tokenizer = SubwordTokenizer(train_sentencepiece(
    ...     ["the cat sat on the mat", "the dog sat on the log"] * 50, 30))
    >>> encoder = BertEncoder(vocabulary_size=tokenizer.vocabulary_size,
    ...                       num_layers=1, num_heads=2, hidden_dim=8,
    ...                       intermediate_dim=16, max_sequence_length=16)
    >>> module = BertClassifierModule(
    ...     BertClassifier(encoder, num_classes=2), tokenizer,
    ...     sequence_length=16, class_names=["no", "yes"])
    >>> outputs = module.serving_default(["the cat sat", "a dog"])
    >>> outputs["scores"].shape, outputs["label"].shape
    (TensorShape([2, 2]), TensorShape([2]))
    >>> np.allclose(outputs["scores"].numpy().sum(axis=1), 1.0)
    True
    """

    def __init__(self, classifier, tokenizer, sequence_length, class_names,
                 segment_names=("text",), name=None):
        super().__init__(name=name)
        if not isinstance(classifier, BertClassifier):
            raise ValueError("`classifier` must be a BertClassifier, "
                             f"received: {type(classifier).__name__}")
        hold_model(self, "classifier", classifier)  # not its optimizer
        self.tokenizer = tokenizer
        self.sequence_length = _validation.positive_int(
            "sequence_length", sequence_length)
        longest = classifier.encoder.max_sequence_length
        if self.sequence_length > longest:
            raise ValueError(
                "`sequence_length` must be at most the encoder's "
                f"max_sequence_length={longest}, received: "
                f"sequence_length={sequence_length}")
        class_names = [str(name) for name in class_names]
        if len(class_names) != classifier.num_classes:
            raise ValueError(
                f"`class_names` must name the {classifier.num_classes} "
                f"classes, received: class_names={class_names!r}")
        self.class_names = tuple(class_names)
        segment_names = tuple(segment_names)
        if not 1 <= len(segment_names) <= 2 or len(set(segment_names)) != len(
                segment_names) or "inputs" in segment_names:
            raise ValueError(
                "`segment_names` must be one or two distinct names other "
                f"than 'inputs', received: segment_names={segment_names!r}")
        self.segment_names = segment_names
        self._classes = tf.constant(self.class_names)  # (C,)
        self.serving_default = tf.function(
            self._predict, input_signature=[
                tf.TensorSpec([None], tf.string, name=name)
                for name in segment_names])
        self.classify = tf.function(
            self._classify, input_signature=[
                tf.TensorSpec([None], tf.string, name="inputs")])

    def scores(self, *texts):
        """`(B,)` strings per segment -> `(B, C)` float32 softmax scores."""
        if len(texts) != len(self.segment_names):
            raise ValueError(
                f"give one batch of strings per segment "
                f"{list(self.segment_names)}, received: {len(texts)}")
        ids = [self.tokenizer.tokenize(text) for text in texts]
        packed = pack_segments(
            *ids, sequence_length=self.sequence_length,
            cls_id=self.tokenizer.bos_id, sep_id=self.tokenizer.eos_id,
            pad_id=self.tokenizer.pad_id)  # (B, L) each
        logits = self.classifier(packed, training=False)  # (B, C)
        return tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)

    def _tiled_classes(self, scores):
        return tf.tile(self._classes[tf.newaxis], [tf.shape(scores)[0], 1])

    def _predict(self, *texts):
        scores = self.scores(*texts)
        return {
            "scores": scores,  # (B, C)
            "classes": self._tiled_classes(scores),  # (B, C)
            "label": tf.gather(self._classes, tf.argmax(scores, axis=-1)),
        }

    def _classify(self, inputs):
        features = tf.io.parse_example(inputs, {
            name: tf.io.FixedLenFeature([], tf.string)
            for name in self.segment_names})
        scores = self.scores(*(features[name] for name in self.segment_names))
        return {"classes": self._tiled_classes(scores), "scores": scores}


def _warmup_requests(module, name):
    requests = []
    for batch in WARMUP_BATCHES:
        columns = {segment: list(batch) for segment in module.segment_names}
        requests.append(predict_request(
            {segment: np.array(texts, dtype=object)
             for segment, texts in columns.items()},
            "serving_default", model_name=name))
        request = classification_pb2.ClassificationRequest(
            input=input_pb2.Input(example_list=input_pb2.ExampleList(
                examples=[tf.train.Example.FromString(data)
                          for data in text_examples(columns)])))
        request.model_spec.name = name
        request.model_spec.signature_name = "classify"
        requests.append(request)
    return requests


def export_bert_classifier(module, base_path, name="bert_classifier",
                           version=None, warmup=True):
    """Save a `BertClassifierModule` as a SavedModel at `BASE/NAME/VERSION/`
    with the signatures `serving_default` and `classify`.

    Args:
        module: a `BertClassifierModule`.
        base_path: TF Serving's `--model_base_path` parent.
        name: the model name (TF Serving's `--model_name`).
        version: a positive int; defaults to one more than the newest.
        warmup: also write `assets.extra/tf_serving_warmup_requests`: each
            signature with `WARMUP_BATCHES` (the same text in every
            segment), replayed before the version serves.

    Returns:
        The path written.
    """
    if not isinstance(warmup, bool):
        raise ValueError("`warmup` must be True or False, received: "
                         f"warmup={warmup!r}")
    if not isinstance(module, BertClassifierModule):
        raise ValueError("`module` must be a BertClassifierModule, "
                         f"received: {type(module).__name__}")
    signatures = {
        "serving_default": module.serving_default.get_concrete_function(),
        "classify": module.classify.get_concrete_function(),
    }
    requests = _warmup_requests(module, name) if warmup else None
    return save_version(module, base_path, name, version, signatures,
                        requests)
