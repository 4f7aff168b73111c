"""`BertEncoder`: the bidirectional Transformer encoder of BERT (Devlin et
al., 2019), built from the package's `TransformerEncoder`.

Letters: B batch, T sequence length, D hidden size, V vocabulary size.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import TransformerEncoder

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="keras_attention")
def gelu_approximate(x):
    """GELU with the tanh approximation, BERT's feed-forward activation."""
    return keras.activations.gelu(x, approximate=True)


def bert_initializer(stddev=0.02):
    """BERT's initializer of every kernel and embedding table."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="keras_attention")
class BertEncoder(keras.Model):
    """A BERT encoder: embeddings, a stack of Transformer encoder blocks and
    the pooled `[CLS]` output.

    The input embedding is the sum of a token embedding, a learned
    position embedding (`max_sequence_length` rows) and a segment
    embedding, followed by layer normalization (epsilon 1e-12) and
    dropout. `num_layers` post-norm `TransformerEncoder` blocks (GELU with
    the tanh approximation, epsilon 1e-12) follow. The pooled output is a
    tanh dense layer on the first token (`[CLS]`). Every kernel and table
    starts from a truncated normal of standard deviation 0.02. With the
    same weights it computes what `keras_hub.models.BertBackbone` of the
    same configuration computes (see `tests/models/test_bert_encoder.py`).

    The token embedding is a `keras.layers.ReversibleEmbedding`, so a
    masked-language-model head can tie its output weights to it (see
    `BertPretrainer`).

    Args:
        vocabulary_size: int, V.
        num_layers: int, the number of encoder blocks.
        num_heads: int; `hidden_dim` must be divisible by it.
        hidden_dim: int, D.
        intermediate_dim: int, the feed-forward size of each block.
        dropout: float in [0, 1), on the embeddings, the attention weights
            and the residual sub-layer outputs.
        max_sequence_length: int, the rows of the position embedding: the
            longest input the encoder takes.
        num_segments: int, the rows of the segment embedding.
        activation: the feed-forward activation (default BERT's tanh GELU).
        layer_norm_epsilon: float > 0, of every layer normalization.

    Call arguments:
        inputs: dict with `"token_ids"` `(B, T)` int, `"padding_mask"`
            `(B, T)` (True or 1 at tokens, False or 0 at padding) and,
            optionally, `"segment_ids"` `(B, T)` int (default all 0). See
            `keras_attention.text.bert_data.pack_segments`.
        training: bool; enables dropout.

    Returns:
        dict with `"sequence_output"` `(B, T, D)` (padded positions hold
        values that the mask tells to ignore) and `"pooled_output"`
        `(B, D)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.bert_encoder import BertEncoder
    >>> encoder = BertEncoder(vocabulary_size=50, num_layers=2, num_heads=2,
    ...                       hidden_dim=8, intermediate_dim=16,
    ...                       max_sequence_length=16)
    >>> outputs = encoder({
    ...     "token_ids": np.array([[2, 7, 9, 3, 11, 3, 0, 0]]),
    ...     "segment_ids": np.array([[0, 0, 0, 0, 1, 1, 0, 0]]),
    ...     "padding_mask": np.array([[1, 1, 1, 1, 1, 1, 0, 0]]),
    ... })
    >>> tuple(outputs["sequence_output"].shape), tuple(
    ...     outputs["pooled_output"].shape)
    ((1, 8, 8), (1, 8))

    Reference:
        Devlin, Chang, Lee, Toutanova. "BERT: Pre-training of Deep
        Bidirectional Transformers for Language Understanding", NAACL 2019.
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        activation=gelu_approximate,
        layer_norm_epsilon=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = _validation.positive_int(
            "vocabulary_size", vocabulary_size
        )
        self.num_layers = _validation.positive_int("num_layers", num_layers)
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        self.hidden_dim = _validation.positive_int("hidden_dim", hidden_dim)
        if hidden_dim % num_heads:
            raise ValueError(
                "`hidden_dim` must be divisible by `num_heads`, received: "
                f"hidden_dim={hidden_dim}, num_heads={num_heads}"
            )
        self.intermediate_dim = _validation.positive_int(
            "intermediate_dim", intermediate_dim
        )
        self.dropout = _validation.rate("dropout", dropout)
        self.max_sequence_length = _validation.positive_int(
            "max_sequence_length", max_sequence_length
        )
        self.num_segments = _validation.positive_int(
            "num_segments", num_segments
        )
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = _validation.positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        policy = self.dtype_policy
        self.token_embedding = keras.layers.ReversibleEmbedding(
            vocabulary_size, hidden_dim,
            embeddings_initializer=bert_initializer(), dtype=policy,
            name="token_embedding",
        )
        self.position_embedding = keras.layers.Embedding(
            max_sequence_length, hidden_dim,
            embeddings_initializer=bert_initializer(), dtype=policy,
            name="position_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim,
            embeddings_initializer=bert_initializer(), dtype=policy,
            name="segment_embedding",
        )
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy,
            name="embeddings_layer_norm",
        )
        self.embeddings_dropout = keras.layers.Dropout(
            dropout, dtype=policy, name="embeddings_dropout"
        )
        self.transformer_layers = [
            TransformerEncoder(
                intermediate_dim=intermediate_dim,
                num_heads=num_heads,
                dropout=dropout,
                activation=self.activation,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=bert_initializer(),
                dtype=policy,
                name=f"transformer_layer_{index}",
            )
            for index in range(num_layers)
        ]
        self.pooled_dense = keras.layers.Dense(
            hidden_dim, activation="tanh",
            kernel_initializer=bert_initializer(), dtype=policy,
            name="pooled_dense",
        )

    def build(self, inputs_shape=None):
        hidden = (None, None, self.hidden_dim)
        self.token_embedding.build((None, None))
        self.position_embedding.build((None,))
        self.segment_embedding.build((None, None))
        self.embeddings_layer_norm.build(hidden)
        for layer in self.transformer_layers:
            layer.build(hidden)
        self.pooled_dense.build((None, self.hidden_dim))
        self.built = True

    def _check_inputs(self, inputs):
        if not isinstance(inputs, dict) or not {
            "token_ids", "padding_mask"
        } <= set(inputs) or not set(inputs) <= set(INPUT_NAMES):
            keys = sorted(inputs) if isinstance(inputs, dict) else inputs
            raise ValueError(
                "`inputs` must be a dict with 'token_ids', 'padding_mask' and "
                f"optionally 'segment_ids', received: inputs={keys!r}"
            )
        length = inputs["token_ids"].shape[-1]
        if length is not None and length > self.max_sequence_length:
            raise ValueError(
                "The inputs must be at most `max_sequence_length` = "
                f"{self.max_sequence_length} tokens long, received: "
                f"token_ids.shape={tuple(inputs['token_ids'].shape)}"
            )

    def embed(self, token_ids, segment_ids=None, training=None):
        """`(B, T)` ids -> the normalised input embeddings `(B, T, D)`."""
        token_ids = ops.convert_to_tensor(token_ids, "int32")
        if segment_ids is None:
            segment_ids = ops.zeros_like(token_ids)
        tokens = self.token_embedding(token_ids)  # (B, T, D)
        positions = self.position_embedding(
            ops.arange(ops.shape(token_ids)[1], dtype="int32")
        )  # (T, D)
        segments = self.segment_embedding(
            ops.convert_to_tensor(segment_ids, "int32")
        )  # (B, T, D)
        x = tokens + ops.expand_dims(positions, 0) + segments
        x = self.embeddings_layer_norm(x)
        return self.embeddings_dropout(x, training=training)

    def call(self, inputs, training=None):
        self._check_inputs(inputs)
        padding_mask = ops.cast(inputs["padding_mask"], "bool")  # (B, T)
        x = self.embed(inputs["token_ids"], inputs.get("segment_ids"),
                       training)
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=padding_mask, training=training)
        return {
            "sequence_output": x,  # (B, T, D)
            "pooled_output": self.pooled_dense(x[:, 0, :]),  # (B, D)
        }

    @classmethod
    def from_keras_hub(cls, backbone, **kwargs):
        """Our encoder with the configuration and the weights of a KerasHub
        `keras_hub.models.BertBackbone` (a preset's, e.g. `BertBackbone.
        from_preset("bert_base_en")`, or one of your own).

        It computes what the backbone computes (tested against it), with
        every attention layer ours: on TensorFlow, a sequence of 1,024
        tokens or more takes the block-wise exact core
        (`ops.blockwise_attention`), in memory linear in the length, where
        the backbone's `keras.layers.MultiHeadAttention` holds the whole
        `(batch, heads, T, T)` scores (see the benchmarks page). Keras
        offers no public hook to change the attention inside a KerasHub
        backbone, so this builds the same network from our blocks and
        copies the weights, matched by their paths.

        Args:
            backbone: a built `BertBackbone`.
            **kwargs: overrides of its configuration (e.g. `dropout`,
                `dtype`).

        Returns:
            A built `BertEncoder`.
        """
        config = backbone.get_config()
        names = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                 "intermediate_dim", "dropout", "max_sequence_length",
                 "num_segments")
        missing = [name for name in names if name not in config]
        if missing:
            raise ValueError(
                "`backbone` must be a keras_hub BertBackbone, received: a "
                f"{type(backbone).__name__} whose config has no "
                f"{', '.join(missing)}")
        encoder = cls(**{**{name: config[name] for name in names}, **kwargs})
        encoder({"token_ids": ops.zeros((1, 1), "int32"),
                 "padding_mask": ops.ones((1, 1), "bool")})
        theirs = {}
        for weight in backbone.weights:
            path = weight.path
            if path.startswith(backbone.name + "/"):
                path = path[len(backbone.name) + 1:]
            # KerasHub's block names its attention `self_attention_layer`
            theirs[path.replace("self_attention_layer/",
                                "self_attention/")] = weight
        for weight in encoder.weights:
            path = weight.path.split("/", 1)[1]
            match = theirs.get(path)
            if match is None or tuple(match.shape) != tuple(weight.shape):
                raise ValueError(
                    f"`backbone` has no weight {path} of shape "
                    f"{tuple(weight.shape)}, received: "
                    + (f"shape {tuple(match.shape)}" if match is not None
                       else f"weights {sorted(theirs)[:4]}..."))
            weight.assign(ops.cast(match, weight.dtype))
        return encoder

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_layers": self.num_layers,
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
