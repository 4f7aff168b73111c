"""`SelfAttentivePooling`: the structured self-attentive sentence embedding
of Lin et al. (2017).

Letters: B batch, S sequence length, D feature size, U hidden units of the
score network, N hops (rows of the attention matrix A).
"""

import keras
from keras import ops
from keras import tree

from keras_attention import _validation
from keras_attention import ops as attention_ops


@keras.saving.register_keras_serializable(package="keras_attention")
class SelfAttentivePooling(keras.layers.Layer):
    """Pools a sequence into `num_hops` attention-weighted sums of its states.

    `A = softmax(W2 tanh(W1 Hᵀ))`, the softmax over the sequence axis, and
    `M = A H`: each of the `num_hops` rows of `A` is a distribution over the
    positions of `H (seq_len, dim)`, and each row of `M` the matching
    weighted sum of the states. `W1 (units, dim)` and `W2 (num_hops, units)`
    have no bias, as in the paper; they are stored transposed, as Keras
    kernels: `hidden_kernel (dim, units)`, `hop_kernel (units, num_hops)`.

    With `penalty > 0` the layer adds `penalty * P` to its losses
    (`self.add_loss`), where `P` is the paper's `||A Aᵀ - I||_F^2` averaged
    over the sequences of the batch that have at least one real position.
    A fully padded sequence has `A = 0`, so `||A Aᵀ - I||_F^2 = num_hops`
    whatever the weights: a constant with no gradient, which would only shift
    the loss with the amount of padding, so such rows are left out of the mean
    (and a batch of fully padded sequences adds 0).

    Args:
        units: int, the hidden size `d_a` of the score network.
        num_hops: int, the rows `r` of `A`.
        penalty: float >= 0, the coefficient of the penalty term.
        flatten: bool, return `M` as `(batch, num_hops * dim)`.
        kernel_initializer: initializer of both kernels.
        kernel_regularizer: optional regularizer of both kernels.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(batch, seq_len, dim)`, the states `H`.
        padding_mask: `(batch, seq_len)` boolean, True for real positions.
        return_attention_scores: bool; also return `A`.
        mask: the Keras implicit mask `(batch, seq_len)` of `inputs` (from
            `Embedding(mask_zero=True)` or `Masking`), filled in by Keras.

    Masks: every mask given applies (logical AND of `padding_mask` and the
    implicit mask). Padded positions get exactly zero weight; a fully padded
    sequence gets zero weights and a zero output. The output has no sequence
    axis, so it carries no mask.

    Returns:
        `M (batch, num_hops, dim)`, or `(batch, num_hops * dim)` with
        `flatten=True`, and, if `return_attention_scores`, `A
        (batch, num_hops, seq_len)`, both in the compute dtype (the scores
        and the softmax are computed in float32).

    Quantization: the two kernels stay float32 under `model.quantize(...)`
    (which warns that this layer keeps its score network in float32): they
    are the score network, computed in float32 like the softmax it feeds,
    and small (`dim * units + units * num_hops` weights).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.layers import SelfAttentivePooling
    >>> layer = SelfAttentivePooling(units=8, num_hops=3, penalty=1.0)
    >>> states = np.random.default_rng(0).normal(size=(2, 5, 4))
    >>> padding_mask = np.array([[True] * 5, [True, True, False, False, False]])
    >>> pooled, weights = layer(states.astype("float32"),
    ...                         padding_mask=padding_mask,
    ...                         return_attention_scores=True)
    >>> tuple(pooled.shape), tuple(weights.shape)
    ((2, 3, 4), (2, 3, 5))
    >>> weights = ops.convert_to_numpy(weights)
    >>> float(weights[1, :, 2:].max())              # padded: exactly zero
    0.0
    >>> bool(np.allclose(weights.sum(-1), 1.0))
    True
    >>> len(layer.losses)                     # the penalty
    1

    Reference:
        Lin, Feng, Nogueira dos Santos, Yu, Xiang, Zhou, Bengio. "A
        Structured Self-attentive Sentence Embedding", ICLR 2017.
    """

    def __init__(
        self,
        units,
        num_hops,
        penalty=0.0,
        flatten=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = _validation.positive_int("units", units)
        self.num_hops = _validation.positive_int("num_hops", num_hops)
        self.penalty = _validation.non_negative_float("penalty", penalty)
        if not isinstance(flatten, bool):
            raise ValueError(
                f"`flatten` must be a bool, received: flatten={flatten!r}"
            )
        self.flatten = flatten
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.supports_masking = True

    def build(self, inputs_shape):
        _validation.rank("inputs", inputs_shape, (3,), "(batch, seq_len, dim)")
        if inputs_shape[-1] is None:
            raise ValueError(
                "`inputs` must have a known feature size, received: "
                f"inputs.shape={tuple(inputs_shape)}"
            )
        self._dim = inputs_shape[-1]

        def kernel(name, shape):
            return self.add_weight(
                name=name, shape=shape, initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
            )

        self.hidden_kernel = kernel("hidden_kernel", (self._dim, self.units))
        self.hop_kernel = kernel("hop_kernel", (self.units, self.num_hops))

    def call(self, inputs, padding_mask=None, return_attention_scores=False,
             mask=None):
        _validation.rank("inputs", inputs.shape, (3,), "(batch, seq_len, dim)")
        _validation.same_dim("inputs", inputs.shape, -1, self._dim,
                             "the `dim` it was built with")
        if mask is None:
            mask = attention_ops.implicit_mask(inputs)
        padding_mask = attention_ops.merge_checked_masks(
            {"padding_mask": padding_mask, "mask": mask},
            tuple(inputs.shape[:2]), "(batch, seq_len)",
        )
        # The score network in float32: (B, S, D) -> (B, S, U) -> (B, S, N)
        states = ops.cast(inputs, "float32")
        hidden = ops.tanh(
            ops.matmul(states, ops.cast(self.hidden_kernel, "float32"))
        )
        scores = ops.matmul(hidden, ops.cast(self.hop_kernel, "float32"))
        scores = ops.transpose(scores, (0, 2, 1))  # (B, N, S)
        key_mask = (None if padding_mask is None
                    else ops.expand_dims(padding_mask, 1))  # (B, 1, S)
        weights = attention_ops.masked_softmax(scores, key_mask)  # (B, N, S)
        if self.penalty > 0.0:
            self.add_loss(self.penalty * self._penalty(weights, padding_mask))
        weights = ops.cast(weights, self.compute_dtype)
        # (B, N, S) x (B, S, D) -> (B, N, D)
        pooled = ops.einsum("bns,bsd->bnd", weights, inputs)
        if self.flatten:
            pooled = ops.reshape(pooled, (-1, self.num_hops * self._dim))
        if return_attention_scores:
            return pooled, weights
        return pooled

    @staticmethod
    def _penalty(weights, padding_mask):
        """`||A Aᵀ - I||_F^2`, averaged over the sequences with a real
        position: `weights (B, N, S)` float32, `padding_mask (B, S)`."""
        has_tokens = (None if padding_mask is None
                      else ops.any(padding_mask, axis=1, keepdims=True))
        # One "query" per sequence: (B, N, S) -> (B, N, 1, S), mask (B, 1).
        return attention_ops.head_diversity_penalty(
            ops.expand_dims(weights, 2), has_tokens
        )

    def quantize(self, mode=None, type_check=True, config=None):
        # `Model.quantize` shows this as a warning and goes on.
        raise NotImplementedError(
            f"Layer {type(self).__name__} keeps its score network in float32 "
            "(see its docstring), received: "
            f"mode={mode!r}"
        )

    def compute_mask(self, inputs, mask=None):
        return None  # the sequence axis is pooled away

    def compute_output_shape(self, inputs_shape, return_attention_scores=False):
        batch, seq_len, dim = inputs_shape
        pooled = ((batch, self.num_hops * dim) if self.flatten
                  else (batch, self.num_hops, dim))
        if return_attention_scores:
            return pooled, (batch, self.num_hops, seq_len)
        return pooled

    def compute_output_spec(self, inputs, padding_mask=None,
                            return_attention_scores=False, mask=None):
        shapes = self.compute_output_shape(
            tuple(inputs.shape), return_attention_scores
        )
        return tree.map_shape_structure(
            lambda shape: keras.KerasTensor(shape, dtype=self.compute_dtype),
            shapes,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "num_hops": self.num_hops,
                "penalty": self.penalty,
                "flatten": self.flatten,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
            }
        )
        return config
