"""`DualEncoder`: two self-attentive sentence encoders mapping sentences of
two languages into one space, trained with an in-batch contrastive loss.

Letters: B batch, S sentence length, E embedding size, H recurrent units
per direction, N hops, P projection size.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import SelfAttentivePooling

RNN_LAYERS = {"gru": keras.layers.GRU, "lstm": keras.layers.LSTM}
SIDES = ("source", "target")


def in_batch_softmax_loss(source, target, temperature):
    """The symmetric in-batch softmax (InfoNCE) loss.

    Pair `i` of the batch is the positive of row `i`; the other `B - 1`
    targets are its negatives, and the other way round. With `logits =
    source targetᵀ / temperature (B, B)`, the loss is the mean of the
    cross-entropies of the rows (source -> target) and of the columns
    (target -> source) against the diagonal.

    Args:
        source: `(B, P)` embeddings, L2-normalised.
        target: `(B, P)` embeddings, L2-normalised.
        temperature: float > 0.

    Returns:
        A float32 scalar.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.dual_encoder import in_batch_softmax_loss
    >>> same = np.eye(3, dtype="float32")          # orthogonal pairs
    >>> round(float(in_batch_softmax_loss(same, same, 1.0)), 4)  # ln(1+2/e)
    0.5514
    """
    source = ops.cast(source, "float32")
    target = ops.cast(target, "float32")
    # (B, P) x (P, B) -> (B, B)
    logits = ops.matmul(source, ops.transpose(target)) / temperature
    labels = ops.arange(ops.shape(logits)[0], dtype="int32")
    forward = keras.losses.sparse_categorical_crossentropy(
        labels, logits, from_logits=True
    )
    backward = keras.losses.sparse_categorical_crossentropy(
        labels, ops.transpose(logits), from_logits=True
    )
    return (ops.mean(forward) + ops.mean(backward)) / 2.0


@keras.saving.register_keras_serializable(package="keras_attention")
class DualEncoder(keras.Model):
    """A dual encoder of sentence pairs (retrieval, bitext mining).

    Each side (source, target) has its own encoder: token embeddings, a
    bidirectional LSTM (or GRU), `SelfAttentivePooling` (Lin et al., 2017)
    with `num_hops` hops flattened to `(B, N * 2H)`, and a dense projection
    to `(B, P)`, L2-normalised. `fit()` minimises `in_batch_softmax_loss`
    over the batch's pairs, plus the pooling layers' penalties when
    `penalty > 0`: compile it with an optimizer only.

    Args:
        source_vocabulary_size, target_vocabulary_size: ints.
        embedding_dim: E.
        encoder_units: H, per direction.
        cell: `"lstm"` (the paper's) or `"gru"`.
        attention_units: the pooling's hidden size `d_a`.
        num_hops: N, the rows of the attention matrix.
        penalty: the coefficient of `||A Aᵀ - I||_F^2` in each encoder.
        projection_dim: P, the size of the shared space.
        temperature: float > 0, divides the cosine similarities.
        dropout: dropout rate on the embeddings.
        pad_id: the padding token id; padded positions are masked.

    Call arguments:
        inputs: dict with `"source_tokens"` `(B, S)` and `"target_tokens"`
            `(B, T)` int tensors.
        training: bool.

    Returns:
        `(source_embeddings, target_embeddings)`, each `(B, P)` float32 and
        of unit L2 norm.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.models.dual_encoder import DualEncoder
    >>> model = DualEncoder(20, 30, embedding_dim=8, encoder_units=8,
    ...                     attention_units=4, num_hops=2, projection_dim=6)
    >>> source = ops.convert_to_numpy(model.encode_source(np.array([[3, 4, 5, 0]])))
    >>> tuple(source.shape), round(float(np.linalg.norm(source)), 5)
    ((1, 6), 1.0)

    Reference:
        Lin, Feng, Nogueira dos Santos, Yu, Xiang, Zhou, Bengio. "A
        Structured Self-attentive Sentence Embedding", ICLR 2017.
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        embedding_dim=128,
        encoder_units=128,
        cell="lstm",
        attention_units=64,
        num_hops=4,
        penalty=0.0,
        projection_dim=128,
        temperature=0.05,
        dropout=0.0,
        pad_id=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.source_vocabulary_size = _validation.positive_int(
            "source_vocabulary_size", source_vocabulary_size
        )
        self.target_vocabulary_size = _validation.positive_int(
            "target_vocabulary_size", target_vocabulary_size
        )
        self.embedding_dim = _validation.positive_int(
            "embedding_dim", embedding_dim
        )
        self.encoder_units = _validation.positive_int(
            "encoder_units", encoder_units
        )
        self.cell = _validation.choice("cell", cell, RNN_LAYERS)
        self.attention_units = _validation.positive_int(
            "attention_units", attention_units
        )
        self.num_hops = _validation.positive_int("num_hops", num_hops)
        self.penalty = _validation.non_negative_float("penalty", penalty)
        self.projection_dim = _validation.positive_int(
            "projection_dim", projection_dim
        )
        self.temperature = _validation.positive_float(
            "temperature", temperature
        )
        self.dropout = _validation.rate("dropout", dropout)
        self.pad_id = _validation.non_negative_int("pad_id", pad_id)
        policy = self.dtype_policy
        for side, size in zip(SIDES, (source_vocabulary_size,
                                      target_vocabulary_size)):
            setattr(self, f"{side}_embedding", keras.layers.Embedding(
                size, embedding_dim, dtype=policy, name=f"{side}_embedding"))
            setattr(self, f"{side}_encoder", keras.layers.Bidirectional(
                RNN_LAYERS[cell](encoder_units, return_sequences=True,
                                 dtype=policy),
                dtype=policy, name=f"{side}_encoder"))
            setattr(self, f"{side}_pooling", SelfAttentivePooling(
                attention_units, num_hops, penalty=penalty, flatten=True,
                dtype=policy, name=f"{side}_pooling"))
            setattr(self, f"{side}_projection", keras.layers.Dense(
                projection_dim, dtype=policy, name=f"{side}_projection"))
        self.embedding_dropout = keras.layers.Dropout(
            dropout, dtype=policy, name="embedding_dropout"
        )

    def build(self, inputs_shape=None):
        states = 2 * self.encoder_units
        for side in SIDES:
            getattr(self, f"{side}_embedding").build((None, None))
            getattr(self, f"{side}_encoder").build(
                (None, None, self.embedding_dim))
            getattr(self, f"{side}_pooling").build((None, None, states))
            getattr(self, f"{side}_projection").build(
                (None, self.num_hops * states))
        self.built = True

    def _encode(self, side, tokens, training=None,
                return_attention_scores=False):
        tokens = ops.convert_to_tensor(tokens, "int32")
        padding_mask = ops.not_equal(tokens, self.pad_id)  # (B, S)
        embedded = getattr(self, f"{side}_embedding")(tokens)  # (B, S, E)
        embedded = self.embedding_dropout(embedded, training=training)
        states = getattr(self, f"{side}_encoder")(
            embedded, mask=padding_mask, training=training
        )  # (B, S, 2H)
        pooled, weights = getattr(self, f"{side}_pooling")(
            states, padding_mask=padding_mask, return_attention_scores=True
        )  # (B, N * 2H), (B, N, S)
        projected = getattr(self, f"{side}_projection")(pooled)  # (B, P)
        embeddings = ops.normalize(ops.cast(projected, "float32"), axis=-1)
        if return_attention_scores:
            return embeddings, ops.cast(weights, "float32")
        return embeddings

    def encode_source(self, tokens, training=None,
                      return_attention_scores=False):
        """Source sentences `(B, S)` -> unit vectors `(B, P)` (and, if
        asked, the pooling's attention `(B, N, S)`)."""
        return self._encode("source", tokens, training,
                            return_attention_scores)

    def encode_target(self, tokens, training=None,
                      return_attention_scores=False):
        """Target sentences `(B, T)` -> unit vectors `(B, P)` (and, if
        asked, the pooling's attention `(B, N, T)`)."""
        return self._encode("target", tokens, training,
                            return_attention_scores)

    def call(self, inputs, training=None):
        return (self.encode_source(inputs["source_tokens"], training),
                self.encode_target(inputs["target_tokens"], training))

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        """`in_batch_softmax_loss` plus the layers' losses (penalties,
        regularizers); `y` is not used."""
        source, target = y_pred
        loss = in_batch_softmax_loss(source, target, self.temperature)
        if self.losses:
            loss = loss + super().compute_loss(
                x, y, y_pred, sample_weight, training
            )
        return loss

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_vocabulary_size": self.source_vocabulary_size,
                "target_vocabulary_size": self.target_vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "encoder_units": self.encoder_units,
                "cell": self.cell,
                "attention_units": self.attention_units,
                "num_hops": self.num_hops,
                "penalty": self.penalty,
                "projection_dim": self.projection_dim,
                "temperature": self.temperature,
                "dropout": self.dropout,
                "pad_id": self.pad_id,
            }
        )
        return config
