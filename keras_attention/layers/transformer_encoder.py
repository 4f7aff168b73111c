"""`TransformerEncoder`: one encoder block of Vaswani et al. (2017)."""

import keras

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers._transformer_block import TransformerBlock


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerEncoder(TransformerBlock):
    """Self-attention and a position-wise feed-forward network, each wrapped
    in dropout, a residual connection and layer normalization. The
    self-attention is a `MultiHeadSelfAttention` unless another layer is
    given as `self_attention` (relative, local or the user's own).

    By default the normalization follows each sub-layer as in the paper
    (`LayerNorm(x + Dropout(Sublayer(x)))`); `normalize_first=True` puts it
    before (`x + Dropout(Sublayer(LayerNorm(x)))`), which trains more stably
    in deep stacks. With the same weights it computes what
    `keras_hub.layers.TransformerEncoder` computes, at every unpadded position.

    Args:
        intermediate_dim: int, the feed-forward hidden size (d_ff).
        num_heads: int, attention heads of the default self-attention.
        key_dim: int, size per head of the default self-attention; defaults
            to model size / `num_heads`.
        dropout: float in [0, 1), on the residual sub-layer outputs (and
            the attention weights of the default self-attention).
        activation: the feed-forward activation.
        layer_norm_epsilon: float > 0.
        normalize_first: bool, pre-norm instead of post-norm.
        kernel_initializer, bias_initializer: for every dense projection the
            block builds.
        self_attention: the self-attention sub-layer. `None` (default): a
            `MultiHeadSelfAttention` from `num_heads`, `key_dim`, `dropout`
            and the initializers. Otherwise a Keras layer with the call
            contract of `MultiHeadSelfAttention` (`layer(inputs,
            padding_mask=..., use_causal_mask=..., training=...)`, plus
            `return_attention_scores=True` and `attention_mask` when those
            are used) returning the model size, e.g.
            `RelativeAttention(num_heads=4, key_dim=16,
            max_relative_position=8)` (relative positions, Shaw et al.,
            2018, so no position embedding is needed) or
            `LocalSelfAttention`; or its serialized config dict
            (`keras.saving.serialize_keras_object(layer)`, or
            `{"class_name": "RelativeAttention", "config": {...}}`), which
            makes a new layer. The block uses a layer instance itself (its
            weights become the block's): give every block its own layer, or
            a config dict. An unbuilt layer is given the block's dtype
            policy, as the block's other sublayers are; a built layer keeps
            its own. `get_config()` holds the layer's config, so
            `from_config` rebuilds it.

    Call arguments:
        inputs: `(batch, seq_len, dim)`.
        padding_mask: `(batch, seq_len)` boolean; defaults to the Keras
            implicit mask of `inputs`.
        attention_mask: `(batch, seq_len, seq_len)` boolean.
        use_causal_mask: bool.
        return_attention_scores: bool; also return the self-attention weights
            as the layer gives them: `(batch, num_heads, seq_len, seq_len)`
            for the default and `RelativeAttention`.
        training: bool; enables dropout.

    Returns:
        `(batch, seq_len, dim)`, and the weights if asked.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import TransformerEncoder
    >>> encoder = TransformerEncoder(intermediate_dim=32, num_heads=2)
    >>> tokens = np.random.rand(2, 6, 16).astype("float32")
    >>> padding = np.array([[1] * 6, [1] * 4 + [0] * 2], bool)
    >>> tuple(encoder(tokens, padding_mask=padding).shape)
    (2, 6, 16)

    Relative positions instead of a position embedding: plug a
    `RelativeAttention`.

    >>> from keras_attention.layers import RelativeAttention
    >>> relative = TransformerEncoder(
    ...     intermediate_dim=32, num_heads=2,
    ...     self_attention=RelativeAttention(num_heads=2, key_dim=8,
    ...                                      max_relative_position=4))
    >>> tuple(relative(tokens, padding_mask=padding).shape)
    (2, 6, 16)
    >>> type(relative.self_attention).__name__
    'RelativeAttention'
    >>> clone = TransformerEncoder.from_config(relative.get_config())
    >>> type(clone.self_attention).__name__
    'RelativeAttention'

    References:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017, 3.1.
        Shaw et al. "Self-Attention with Relative Position
        Representations", NAACL 2018.
    """

    def build(self, inputs_shape):
        _validation.rank("inputs", inputs_shape, (3,), "(batch, seq_len, dim)")
        self._build_self_attention(inputs_shape)
        self._build_feedforward(inputs_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        if padding_mask is None:
            padding_mask = attention_ops.implicit_mask(inputs)
        x = self._pre_norm(inputs, self.self_attention_layer_norm)
        attended = self._call_self_attention(
            x, padding_mask, attention_mask, use_causal_mask,
            return_attention_scores, training,
        )
        if return_attention_scores:
            attended, scores = attended
        x = self._residual(
            inputs, attended, self.self_attention_layer_norm,
            self.self_attention_dropout, training,
        )
        outputs = self._feedforward(x, training)
        if return_attention_scores:
            return outputs, scores
        return outputs
