"""`BertPretrainer`: BERT's two pretraining heads on a `BertEncoder`.

Letters: B batch, T sequence length, P masked positions, D hidden size,
V vocabulary size.
"""

import keras
from keras import ops

from keras_attention.models.bert_encoder import BertEncoder
from keras_attention.models.bert_encoder import bert_initializer

LABEL_NAMES = ("mask_ids", "mask_weights", "next_sentence_labels")


def masked_lm_loss(mask_ids, logits, mask_weights):
    """The cross-entropy of the masked tokens, averaged over the chosen
    positions only.

    Args:
        mask_ids: `(B, P)` int, the original ids at the chosen positions.
        logits: `(B, P, V)`.
        mask_weights: `(B, P)`, 1 at chosen positions, 0 at padding slots.

    Returns:
        A float32 scalar: `sum(weights * xent) / max(sum(weights), 1)`; a
        slot of weight 0 (its id and logits) does not count.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.bert_pretrainer import masked_lm_loss
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1]]], "float32"))
    >>> round(float(masked_lm_loss([[0, 1]], logits, [[1.0, 0.0]])), 4)
    0.6931
    """
    logits = ops.cast(logits, "float32")
    mask_weights = ops.cast(mask_weights, "float32")
    losses = keras.losses.sparse_categorical_crossentropy(
        ops.convert_to_tensor(mask_ids, "int32"), logits, from_logits=True
    )  # (B, P)
    # `where`, not a product: a weight of 0 also hides a non-finite loss.
    losses = ops.where(mask_weights > 0, losses * mask_weights, 0.0)
    return ops.sum(losses) / ops.maximum(ops.sum(mask_weights), 1.0)


@keras.saving.register_keras_serializable(package="keras_attention")
class BertPretrainer(keras.Model):
    """A `BertEncoder` with the masked-language-model (MLM) and
    next-sentence-prediction (NSP) heads of BERT's pretraining.

    MLM head: the encoder's sequence output at the chosen positions goes
    through a dense layer (hidden size, the encoder's activation) and layer
    normalization, then is multiplied by the transposed token embedding
    (the output weights are tied to the input embedding, as in the paper)
    plus a per-token bias. NSP head: a dense layer on the pooled output,
    two logits (`IS_NEXT` = 0, `NOT_NEXT` = 1). `fit()` minimises
    `masked_lm_loss` plus the NSP cross-entropy: compile it with an
    optimizer only. `keras_attention.text.bert_data.pretraining_batch`
    makes the `(x, y)` batches.

    Args:
        encoder: a `BertEncoder` (its weights are shared), or its
            serialized config dict.

    Call arguments:
        inputs: the encoder's inputs plus `"mask_positions"` `(B, P)` int,
            the positions to predict.
        training: bool.

    Returns:
        dict with `"mlm_logits"` `(B, P, V)` and `"nsp_logits"` `(B, 2)`.

    `y` for `fit`: dict with `"mask_ids"` `(B, P)`, `"mask_weights"`
    `(B, P)` and `"next_sentence_labels"` `(B,)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.bert_encoder import BertEncoder
    >>> from keras_attention.models.bert_pretrainer import BertPretrainer
    >>> encoder = BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2,
    ...                       hidden_dim=8, intermediate_dim=16,
    ...                       max_sequence_length=8)
    >>> pretrainer = BertPretrainer(encoder)
    >>> outputs = pretrainer({
    ...     "token_ids": np.array([[2, 29, 9, 3, 11, 3]]),
    ...     "segment_ids": np.array([[0, 0, 0, 0, 1, 1]]),
    ...     "padding_mask": np.ones((1, 6), bool),
    ...     "mask_positions": np.array([[1, 0]]),
    ... })
    >>> tuple(outputs["mlm_logits"].shape), tuple(outputs["nsp_logits"].shape)
    ((1, 2, 30), (1, 2))

    Reference:
        Devlin, Chang, Lee, Toutanova. "BERT: Pre-training of Deep
        Bidirectional Transformers for Language Understanding", NAACL 2019,
        3.1 and appendix A.1.
    """

    def __init__(self, encoder, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        if not isinstance(encoder, BertEncoder):
            raise ValueError(
                "`encoder` must be a BertEncoder or its serialized config, "
                f"received: encoder of type {type(encoder).__name__}"
            )
        kwargs.setdefault("dtype", encoder.dtype_policy)
        super().__init__(**kwargs)
        self.encoder = encoder
        policy = self.dtype_policy
        self.mlm_dense = keras.layers.Dense(
            encoder.hidden_dim, activation=encoder.activation,
            kernel_initializer=bert_initializer(), dtype=policy,
            name="mlm_dense",
        )
        self.mlm_layer_norm = keras.layers.LayerNormalization(
            epsilon=encoder.layer_norm_epsilon, dtype=policy,
            name="mlm_layer_norm",
        )
        self.nsp_dense = keras.layers.Dense(
            2, kernel_initializer=bert_initializer(), dtype=policy,
            name="nsp_dense",
        )

    def build(self, inputs_shape=None):
        if not self.encoder.built:
            self.encoder.build()
        hidden = self.encoder.hidden_dim
        self.mlm_dense.build((None, None, hidden))
        self.mlm_layer_norm.build((None, None, hidden))
        self.mlm_bias = self.add_weight(
            name="mlm_bias", shape=(self.encoder.vocabulary_size,),
            initializer="zeros",
        )
        self.nsp_dense.build((None, hidden))
        self.built = True

    def call(self, inputs, training=None):
        if not isinstance(inputs, dict) or "mask_positions" not in inputs:
            keys = sorted(inputs) if isinstance(inputs, dict) else inputs
            raise ValueError(
                "`inputs` must be a dict with the encoder's inputs and "
                f"'mask_positions', received: inputs={keys!r}"
            )
        encoder_inputs = {key: value for key, value in inputs.items()
                          if key != "mask_positions"}
        encoded = self.encoder(encoder_inputs, training=training)
        positions = ops.convert_to_tensor(inputs["mask_positions"], "int32")
        chosen = ops.take_along_axis(
            encoded["sequence_output"], ops.expand_dims(positions, -1), axis=1
        )  # (B, P, D)
        chosen = self.mlm_layer_norm(self.mlm_dense(chosen))
        # Tied output weights: (B, P, D) x (D, V) -> (B, P, V)
        logits = self.encoder.token_embedding(chosen, reverse=True)
        logits = ops.cast(logits, self.compute_dtype) + ops.cast(
            self.mlm_bias, self.compute_dtype)
        return {
            "mlm_logits": logits,
            "nsp_logits": self.nsp_dense(encoded["pooled_output"]),  # (B, 2)
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        """`masked_lm_loss` plus the mean NSP cross-entropy (and the
        layers' losses, if any)."""
        if not isinstance(y, dict) or not set(LABEL_NAMES) <= set(y):
            keys = sorted(y) if isinstance(y, dict) else y
            raise ValueError(
                f"`y` must be a dict with {list(LABEL_NAMES)}, received: "
                f"y={keys!r}"
            )
        loss = masked_lm_loss(y["mask_ids"], y_pred["mlm_logits"],
                              y["mask_weights"])
        loss = loss + ops.mean(keras.losses.sparse_categorical_crossentropy(
            ops.convert_to_tensor(y["next_sentence_labels"], "int32"),
            ops.cast(y_pred["nsp_logits"], "float32"), from_logits=True,
        ))
        if self.losses:
            loss = loss + ops.sum(self.losses)
        return loss

    def get_config(self):
        config = super().get_config()
        config["encoder"] = keras.saving.serialize_keras_object(self.encoder)
        return config
