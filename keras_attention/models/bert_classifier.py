"""`BertClassifier`: a classification head on a `BertEncoder`'s pooled
output, for fine-tuning.

Letters: B batch, T sequence length, D hidden size, C classes.
"""

import keras

from keras_attention import _validation
from keras_attention.models.bert_encoder import BertEncoder
from keras_attention.models.bert_encoder import bert_initializer


@keras.saving.register_keras_serializable(package="keras_attention")
class BertClassifier(keras.Model):
    """A `BertEncoder` with a dense classification head on its pooled
    (`[CLS]`) output, as BERT is fine-tuned for sentence and
    sentence-pair classification.

    The pooled output `(B, D)` goes through dropout and a dense layer to
    `num_classes` logits. The encoder is shared, not copied: build the
    classifier on a pretrained encoder (e.g. `BertPretrainer.encoder`) to
    fine-tune its weights; train it with
    `keras.losses.SparseCategoricalCrossentropy(from_logits=True)`.

    Args:
        encoder: a `BertEncoder` (its weights are shared), or its
            serialized config dict.
        num_classes: int, C, at least 2.
        dropout: float in [0, 1), on the pooled output.

    Call arguments:
        inputs: the encoder's inputs, a dict with `"token_ids"` `(B, T)`,
            `"padding_mask"` `(B, T)` and optionally `"segment_ids"`
            `(B, T)` (see `keras_attention.text.bert_data.pack_segments`).
        training: bool; enables dropout.

    Returns:
        `(B, C)` logits.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.bert_classifier import BertClassifier
    >>> from keras_attention.models.bert_encoder import BertEncoder
    >>> encoder = BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2,
    ...                       hidden_dim=8, intermediate_dim=16,
    ...                       max_sequence_length=8)
    >>> classifier = BertClassifier(encoder, num_classes=3)
    >>> logits = classifier({
    ...     "token_ids": np.array([[2, 7, 9, 3, 11, 3]]),
    ...     "segment_ids": np.array([[0, 0, 0, 0, 1, 1]]),
    ...     "padding_mask": np.ones((1, 6), bool),
    ... })
    >>> tuple(logits.shape)
    (1, 3)

    Reference:
        Devlin, Chang, Lee, Toutanova. "BERT: Pre-training of Deep
        Bidirectional Transformers for Language Understanding", NAACL 2019,
        section 4.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        if not isinstance(encoder, BertEncoder):
            raise ValueError(
                "`encoder` must be a BertEncoder or its serialized config, "
                f"received: encoder of type {type(encoder).__name__}"
            )
        num_classes = _validation.positive_int("num_classes", num_classes)
        if num_classes < 2:
            raise ValueError("`num_classes` must be at least 2, received: "
                             f"num_classes={num_classes}")
        kwargs.setdefault("dtype", encoder.dtype_policy)
        super().__init__(**kwargs)
        self.encoder = encoder
        self.num_classes = num_classes
        self.dropout = _validation.rate("dropout", dropout)
        policy = self.dtype_policy
        self.pooled_dropout = keras.layers.Dropout(
            dropout, dtype=policy, name="pooled_dropout"
        )
        self.logits_dense = keras.layers.Dense(
            num_classes, kernel_initializer=bert_initializer(), dtype=policy,
            name="logits_dense",
        )

    def build(self, inputs_shape=None):
        if not self.encoder.built:
            self.encoder.build()
        self.logits_dense.build((None, self.encoder.hidden_dim))
        self.built = True

    def call(self, inputs, training=None):
        pooled = self.encoder(inputs, training=training)["pooled_output"]
        pooled = self.pooled_dropout(pooled, training=training)  # (B, D)
        return self.logits_dense(pooled)  # (B, C)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "encoder": keras.saving.serialize_keras_object(self.encoder),
                "num_classes": self.num_classes,
                "dropout": self.dropout,
            }
        )
        return config
