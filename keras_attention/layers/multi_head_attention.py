"""`MultiHeadAttention`: Vaswani et al. (2017) multi-head attention.

Letters: B batch, T query length, S key length, N heads, H key size per head,
V value size per head, D feature size.
"""

import numbers

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers._flat_einsum_dense import FlatEinsumDense
from keras_attention.layers.quantization import quantized_dtype_config
from keras_attention.ops.blockwise import default_block_size

HEAD_MERGES = ("concat", "mean")
# How the core is computed: "dense" materialises the (B, N, T, S) weights;
# "blockwise" is `ops.blockwise_attention` (on TensorFlow, exact attention
# in memory linear in the length); "auto" takes "blockwise" on TensorFlow
# from BLOCKWISE_MIN_LENGTH keys on, or when the queries fit one block, and
# no weights are needed.
ATTENTION_IMPLS = ("auto", "dense", "blockwise")
# The key length from which "auto" computes TensorFlow's core in blocks:
# at 1,024 keys and more the blocks were as fast or faster than the dense
# core on the machines measured (benchmarks/long_attention.py), and the
# dense weights grow with the square of the length.
BLOCKWISE_MIN_LENGTH = 1024
# Backends whose `keras.ops.dot_product_attention` computes the attention
# core for "auto" (see `_blockwise_core`): their fused kernels.
FUSED_CORE_BACKENDS = ("jax", "torch")


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention over a query, key and value.

    Each of `num_heads` heads projects the inputs to `key_dim` (queries,
    keys) and `value_dim` (values), attends, and the heads are merged:
    `head_merge="concat"` concatenates them and projects back with a learned
    matrix, as in the paper; `head_merge="mean"` averages the heads' context
    vectors and then projects them. The weights have the layout of
    `keras.layers.MultiHeadAttention` (`query`, `key`, `value`,
    `attention_output` kernels `(D, N, H)`, ..., `(N, V, D)`), so weights can
    be copied between the two.

    With `diversity_penalty=λ > 0` the layer adds `λ·mean ||A Aᵀ - I||²_F`
    to its `losses`, where `A` is the `(N, S)` matrix of the heads' weights
    at a query position (Lin et al., 2017); this pushes heads to attend to
    different keys.

    Args:
        num_heads: int, number of heads N.
        key_dim: int, size H of each head's queries and keys.
        value_dim: int, size V of each head's values; defaults to `key_dim`.
        dropout: float in [0, 1), dropout rate on the attention weights.
        use_bias: bool, whether the projections have biases.
        output_dim: int, size of the output; defaults to the query's size.
        head_merge: `"concat"` or `"mean"`.
        diversity_penalty: float >= 0, the λ above; 0 disables it.
        kernel_initializer, bias_initializer: for the four projections.
        kernel_regularizer, bias_regularizer: for the four projections.
        num_key_value_heads: int dividing `num_heads`, or None (as many
            as query heads). Fewer key/value heads than query heads is
            grouped-query attention (one head: multi-query attention):
            query head `n` reads key/value head `n // (num_heads /
            num_key_value_heads)`, as in `keras.layers.GroupQueryAttention`,
            whose weights this layer then takes; the decoding cache holds
            `num_key_value_heads` heads.
        sliding_window: int >= 1 or None: query `i` attends only keys `j`
            with `|i - j| < sliding_window` (Keras's `sliding_window`; with
            `use_causal_mask`, the last `sliding_window` positions). The
            block-wise core skips the keys outside it.
        rope_max_wavelength: float or None: rotary position embeddings
            (RoPE; `keras_attention.ops.rotary_embedding`) applied to the
            projected queries and keys at their positions (the cache's
            when decoding); None for none. 10000 is the paper's.
        rope_scaling_factor: float > 0, positions divided by it (RoPE).
        alibi_bias_max: number or None: ALiBi, the bias `-slope_n |i - j|`
            added to head `n`'s logits, slopes `ops.alibi_slopes(num_heads,
            alibi_bias_max)` (8 in the paper); None for none. Never a
            `(T, S)` tensor in the block-wise core on TensorFlow.
        attention_impl: how the core is computed. `"dense"` computes the
            `(B, N, T, S)` weights. `"blockwise"` is
            `keras_attention.ops.blockwise_attention`: on TensorFlow, exact
            attention over blocks of queries in memory linear in the length
            (causal blocks skip the keys they never see); on JAX and
            PyTorch, their fused `dot_product_attention`. It cannot return
            the weights, add the diversity penalty or drop weights out, and
            says so. `"auto"` (the default) takes `"blockwise"` when none
            of those is asked for and either the backend is JAX or PyTorch
            or, on TensorFlow, the queries are more than one (a decoding
            step's weights are small) and either the keys number at least
            1,024 or the queries fit one block (`ops.blockwise.
            default_block_size`: then the kernel keeps the block's weights
            for the gradient, the dense algorithm in fewer passes); else
            `"dense"`. (A
            subclass with terms of its own, `RelativeAttention`, keeps the
            dense core on JAX and PyTorch, whose fused kernels would take
            its terms only as a dense bias.)

    Call arguments:
        query: `(batch, query_len, query_dim)`.
        value: `(batch, key_len, value_dim)`; may be `None` (left out)
            when `cache` holds the projected keys and values and there is
            no `cache_update_index`.
        key: `(batch, key_len, key_dim)`; defaults to `value`.
        padding_mask: `(batch, query_len)` boolean. Padded query rows
            attend to nothing.
        key_padding_mask: `(batch, key_len)` boolean; masked keys are never
            attended.
        attention_mask: `(batch, query_len, key_len)` boolean.
        use_causal_mask: bool; query `i` attends to keys `j <= i` (shifted
            by `cache_update_index` when decoding with a cache).
        return_attention_scores: bool; also return the weights
            `(batch, num_heads, query_len, key_len)`.
        training: bool; enables dropout.
        cache: optional `(key_cache, value_cache)`, each
            `(batch, max_len, key_value_heads, head_size)` of projected
            keys and
            values (see `compute_key_value`). With `cache_update_index`, the
            projections of `key`/`value` are written into the cache at that
            index and the whole cache is attended (self-attention decoding);
            without it, the cache is attended as it is and `key`/`value` are
            ignored and may be left out (cross-attention with keys computed
            once).
        cache_update_index: int or scalar tensor, see `cache`; also the
            position of the first query for the causal mask, the sliding
            window, RoPE and ALiBi.
        attention_bias: float `(batch|1, num_heads|1, query_len,
            key_len)` added to the scaled logits (a learned or computed
            bias; differentiable in both cores), or None. Keep it finite
            (mask with the masks): under a mixed policy Keras casts it to
            the compute dtype, where a large negative may become -inf.
        query_mask, value_mask, key_mask: Keras's names (as in
            `keras.layers.MultiHeadAttention`) for `padding_mask` and
            `key_padding_mask`, `(batch, query_len)` and `(batch, key_len)`.
            Keras fills them from the implicit masks of `query`, `value`
            and `key` (e.g. from `Embedding(mask_zero=True)`); every mask
            given, under either name, applies.

    Returns:
        `output (batch, query_len, output_dim)`; then the weights if
        `return_attention_scores`; then the updated cache if `cache` was
        given (a tuple when there is more than one item). Masks are boolean,
        True meaning "may attend", and are all combined; a query row with
        every key masked gets zero weights, so its output is finite.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import MultiHeadAttention
    >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
    >>> target = np.ones((2, 3, 8), "float32")
    >>> source = np.ones((2, 5, 8), "float32")
    >>> output, scores = layer(target, source, return_attention_scores=True)
    >>> tuple(output.shape), tuple(scores.shape)
    ((2, 3, 8), (2, 2, 3, 5))

    It is a drop-in replacement for `keras.layers.MultiHeadAttention`: the
    same weights, and Keras's call arguments.

    >>> import keras
    >>> keras_layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    >>> _ = keras_layer(target, source)
    >>> _ = layer.set_weights(keras_layer.get_weights())
    >>> query_mask = np.array([[True] * 3, [True, True, False]])
    >>> ours = layer(target, source, query_mask=query_mask)
    >>> theirs = keras_layer(target, source, query_mask=query_mask)
    >>> bool(np.allclose(ours[:, :2], theirs[:, :2], atol=1e-6))
    True

    Where Keras gives a query row whose keys are all masked (a padded query)
    uniform weights over every key, this layer gives it zero weights.

    Keras's model APIs reach the four projections (`query`, `key`, `value`,
    `attention_output`, each an `EinsumDense`): `model.quantize("int8")`
    quantizes them, and the config records it, so the quantized model saves
    and loads; `enable_lora(rank)` fine-tunes low-rank adapters of the
    query and value projections with every other weight frozen.

    References:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017, 3.2.2.
        Lin et al. "A Structured Self-attentive Sentence Embedding", ICLR 2017.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_dim=None,
        head_merge="concat",
        diversity_penalty=0.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        num_key_value_heads=None,
        sliding_window=None,
        rope_max_wavelength=None,
        rope_scaling_factor=1.0,
        alibi_bias_max=None,
        attention_impl="auto",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.attention_impl = _validation.choice(
            "attention_impl", attention_impl, ATTENTION_IMPLS
        )
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        self.key_dim = _validation.positive_int("key_dim", key_dim)
        self.value_dim = _validation.optional_positive_int(
            "value_dim", value_dim
        )
        self.dropout = _validation.rate("dropout", dropout)
        self.use_bias = bool(use_bias)
        self.output_dim = _validation.optional_positive_int(
            "output_dim", output_dim
        )
        self.head_merge = _validation.choice(
            "head_merge", head_merge, HEAD_MERGES
        )
        self.diversity_penalty = _validation.non_negative_float(
            "diversity_penalty", diversity_penalty
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.num_key_value_heads = _validation.optional_positive_int(
            "num_key_value_heads", num_key_value_heads
        )
        if self.num_key_value_heads and num_heads % self.num_key_value_heads:
            raise ValueError(
                "`num_key_value_heads` must divide `num_heads` "
                f"({num_heads}), received: "
                f"num_key_value_heads={num_key_value_heads!r}"
            )
        self.sliding_window = _validation.optional_positive_int(
            "sliding_window", sliding_window
        )
        self.rope_max_wavelength = (
            None if rope_max_wavelength is None else
            _validation.positive_float("rope_max_wavelength",
                                       rope_max_wavelength)
        )
        self.rope_scaling_factor = _validation.positive_float(
            "rope_scaling_factor", rope_scaling_factor
        )
        if self.rope_max_wavelength is not None and key_dim % 2:
            raise ValueError(
                "Rotary embeddings rotate pairs of features, so `key_dim` "
                "must be even with `rope_max_wavelength`, received: "
                f"key_dim={key_dim}"
            )
        self.alibi_bias_max = (
            None if alibi_bias_max is None else
            _validation.positive_float("alibi_bias_max", alibi_bias_max)
        )
        self._check_variants_supported()
        self.supports_masking = True

    # Whether the subclass computes its core with this class's `call`, so
    # that the options above apply (the local layers have their own).
    _takes_position_options = True

    def _check_variants_supported(self):
        if type(self)._takes_position_options:
            return
        given = {
            name: getattr(self, name)
            for name in ("num_key_value_heads", "sliding_window",
                         "rope_max_wavelength", "alibi_bias_max")
            if getattr(self, name) is not None
        }
        if given:
            name, value = next(iter(given.items()))
            raise ValueError(
                f"{type(self).__name__} computes its own core and does not "
                f"take `{name}`, received: {name}={value!r}"
            )

    @property
    def key_value_heads(self):
        """The key/value heads: `num_key_value_heads` or `num_heads`."""
        return self.num_key_value_heads or self.num_heads

    def _projection(self, name, equation, output_shape, bias_axes):
        # EinsumDense computing its product as one 2-D matmul (the weight
        # gradient of TensorFlow's einsum is a batched product summed over
        # the batch); the same weights.
        projection = FlatEinsumDense(
            equation,
            output_shape=output_shape,
            bias_axes=bias_axes if self.use_bias else None,
            kernel_initializer=keras.initializers.get(
                keras.initializers.serialize(self.kernel_initializer)
            ),
            bias_initializer=keras.initializers.get(
                keras.initializers.serialize(self.bias_initializer)
            ),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            dtype=self.dtype_policy,
            name=name,
        )
        # The inputs may carry a Keras mask (read once in `call`); letting
        # the projection pass it on avoids a warning that it is dropped.
        projection.supports_masking = True
        return projection

    def _check_inputs(self, query_shape, value_shape, key_shape):
        """Ranks, key/value lengths and, once built, the feature sizes of
        the shapes given: `query_shape` is `None` when projecting keys and
        values only, `value_shape` and `key_shape` when attending a cache
        of projected keys and values."""
        shapes = {"query": query_shape, "value": value_shape, "key": key_shape}
        shapes = {name: shape for name, shape in shapes.items()
                  if shape is not None}
        for name, shape in shapes.items():
            _validation.rank(
                name, shape, (3,), f"(batch, {name}_len, {name}_dim)"
            )
        if value_shape is not None:
            _validation.same_length(key_shape, value_shape)
        if self.built:
            for name, shape in shapes.items():
                dense = getattr(self, f"{name}_dense")
                _validation.same_dim(
                    name, shape, -1, dense.kernel.shape[0],
                    f"the `{name}_dim` it was built with",
                )

    def _check_cache(self, cache, cache_update_index, query_len):
        if not isinstance(cache, (tuple, list)) or len(cache) != 2:
            raise ValueError(
                "`cache` must be a pair (key_cache, value_cache), received: "
                f"cache of type {type(cache).__name__}"
            )
        for name, part, size in zip(
            ("key_cache", "value_cache"),
            cache,
            (self.key_dim, self.value_dim or self.key_dim),
        ):
            shape = tuple(part.shape)
            if len(shape) != 4 or any(
                got is not None and got != want
                for got, want in zip(shape[2:], (self.key_value_heads, size))
            ):
                raise ValueError(
                    f"`cache` must hold {name} of shape (batch, max_len, "
                    f"key_value_heads, head_size) = (batch, max_len, "
                    f"{self.key_value_heads}, {size}), received: "
                    f"{name}.shape={shape}"
                )
        if isinstance(cache_update_index, numbers.Integral) and (
            query_len is not None
        ):
            max_len = cache[0].shape[1]
            if cache_update_index < 0 or (
                max_len is not None and cache_update_index + query_len > max_len
            ):
                raise ValueError(
                    f"`cache_update_index` must be in [0, {max_len} - "
                    f"{query_len}] to write {query_len} position(s) into a "
                    f"cache of length {max_len}, received: "
                    f"cache_update_index={cache_update_index}"
                )

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        self._check_inputs(query_shape, value_shape, key_shape)
        value_dim = self.value_dim or self.key_dim
        output_dim = self.output_dim or query_shape[-1]
        heads = self.num_heads
        # (B, T, D) -> (B, T, N, H)
        self.query_dense = self._projection(
            "query", "btd,dnh->btnh", (None, heads, self.key_dim), "nh"
        )
        self.query_dense.build(query_shape)
        # (B, S, D) -> (B, S, K, H), K = key_value_heads
        key_heads = self.key_value_heads
        self.key_dense = self._projection(
            "key", "bsd,dnh->bsnh", (None, key_heads, self.key_dim), "nh"
        )
        self.key_dense.build(key_shape)
        self.value_dense = self._projection(
            "value", "bsd,dnv->bsnv", (None, key_heads, value_dim), "nv"
        )
        self.value_dense.build(value_shape)
        if self.head_merge == "concat":
            # (B, T, N, V) -> (B, T, D)
            self.output_dense = self._projection(
                "attention_output", "btnv,nvd->btd", (None, output_dim), "d"
            )
            self.output_dense.build(
                (query_shape[0], query_shape[1], heads, value_dim)
            )
        else:
            # mean over heads (B, T, V) -> (B, T, D)
            self.output_dense = self._projection(
                "attention_output", "btv,vd->btd", (None, output_dim), "d"
            )
            self.output_dense.build((query_shape[0], query_shape[1], value_dim))
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )

    def enable_lora(self, rank, lora_alpha=None,
                    projections=("query", "value")):
        """Freeze the layer and add LoRA adapters to some projections.

        Every weight of the layer (and of its sublayers) stops training;
        each named projection gets Keras's `EinsumDense.enable_lora(rank,
        lora_alpha)`: trainable `lora_kernel_a`, `lora_kernel_b` whose
        product, scaled by `lora_alpha / rank`, is added to its frozen
        kernel. Saving merges the adapters into the kernels.

        Args:
            rank: int, the adapters' rank.
            lora_alpha: optional float, the scale's numerator (default:
                `rank`).
            projections: names among "query", "key", "value" and
                "attention_output"; by default the query and value
                projections, as in Hu et al. (2021), 7.1.

        Reference:
            Hu et al. "LoRA: Low-Rank Adaptation of Large Language Models",
            ICLR 2022.
        """
        if not self.built:
            raise ValueError(
                f"Build {type(self).__name__} before `enable_lora` (call it "
                "once), received: an unbuilt layer"
            )
        available = {"query": self.query_dense, "key": self.key_dense,
                     "value": self.value_dense,
                     "attention_output": self.output_dense}
        for name in projections:
            _validation.choice("projections", name, available)
        for variable in self.weights:
            variable.trainable = False
        for name in projections:
            available[name].enable_lora(rank, lora_alpha=lora_alpha)

    def compute_key_value(self, value, key=None, start_index=0):
        """Project keys and values once, e.g. a cross-attention cache.

        Args:
            value: `(batch, key_len, value_dim)`.
            key: `(batch, key_len, key_dim)`; defaults to `value`.
            start_index: the position of the first key (for RoPE).

        Returns:
            `(key (B, S, K, H), value (B, S, K, V))`, usable as `cache`
            (`K` the key/value heads); with RoPE the keys are rotated.
        """
        key = value if key is None else key
        self._check_inputs(None, value.shape, key.shape)
        return (self._rotate(self.key_dense(key), start_index),
                self.value_dense(value))

    def _rotate(self, projected, start_index):
        """RoPE of projected queries or keys `(B, L, ., H)` whose first
        position is `start_index`; unchanged without RoPE."""
        if self.rope_max_wavelength is None:
            return projected
        positions = ops.arange(ops.shape(projected)[1], dtype="int32")
        positions = positions + ops.cast(start_index, "int32")  # (L,)
        return attention_ops.rotary_embedding(
            projected, positions, self.rope_max_wavelength,
            self.rope_scaling_factor,
        )

    def _alibi_slopes(self):
        return (None if self.alibi_bias_max is None else
                attention_ops.alibi_slopes(self.num_heads,
                                           self.alibi_bias_max))

    def _window(self):
        """The blocks' and the masks' `window`: Keras's `sliding_window`
        counts the query itself, `|i - j| < sliding_window`."""
        return None if self.sliding_window is None else self.sliding_window - 1

    def _attention_scores(self, projected_query, projected_key,
                          query_offset=None, use_causal_mask=False):
        """The hook scoring variants override: query `(B, T, N, H)` and
        key `(B, S, K, H)` (K key/value heads; the whole cache when
        decoding) to `(B, N, T, S)`
        float32 logits. `query_offset` is `cache_update_index` (`None`
        without a cache); `use_causal_mask` says whether it will apply."""
        return attention_ops.scaled_dot_product_scores(
            projected_query, projected_key
        )

    def _attend(self, weights, projected_value, query_offset=None,
                use_causal_mask=False):
        """The hook value variants override: weights `(B, N, T, S)` and
        value `(B, S, K, V)` to the context `(B, T, N, V)`; the other
        arguments as in `_attention_scores`."""
        return attention_ops.weighted_sum(weights, projected_value)

    # The end of every variant's call (this one, `LocalSelfAttention`,
    # `LocalAttention2D`): penalty, dropout, head merge and projection.

    def _add_penalty(self, weights, padding_mask):
        """Add the diversity penalty of the float32 weights `(B, N, T, S)`
        (padded query rows `(B, T)` left out) to the losses, if any."""
        if self.diversity_penalty > 0.0:
            self.add_loss(
                self.diversity_penalty
                * attention_ops.head_diversity_penalty(weights, padding_mask)
            )

    def _drop(self, weights, training):
        """The float32 weights (any layout) in the compute dtype, then with
        dropout: `(weights, dropped)`."""
        weights = ops.cast(weights, self.compute_dtype)
        return weights, self.dropout_layer(weights, training=training)

    def _merge_heads(self, context):
        """The heads' context `(B, T, N, V)` to the output `(B, T, D)`:
        concatenated (or averaged) and projected."""
        if self.head_merge == "mean":
            context = ops.mean(context, axis=2)  # (B, T, V)
        return self.output_dense(context)  # (B, T, D)

    def _blockwise_supported(self):
        """Whether `ops.blockwise_attention` can compute this layer's core:
        the plain scores and weighted sum, unless a subclass that
        overrides them says so (and passes its terms in
        `_blockwise_options`)."""
        cls = type(self)
        return (
            cls._attention_scores is MultiHeadAttention._attention_scores
            and cls._attend is MultiHeadAttention._attend
        )

    def _blockwise_options(self):
        """Extra arguments of `ops.blockwise_attention` (subclasses)."""
        return {}

    def _blockwise_core(self, return_attention_scores, training, key,
                        query_length=None):
        """Whether `ops.blockwise_attention` computes the core (see
        `attention_impl`): the plain core, no weights asked for or needed
        (penalty, dropout in training). "blockwise" that cannot be is an
        error naming what stands in the way."""
        if self.attention_impl == "dense":
            return False
        needs_weights = {
            "return_attention_scores=True": return_attention_scores,
            f"diversity_penalty={self.diversity_penalty}":
                self.diversity_penalty > 0.0,
            f"dropout={self.dropout} in training":
                self.dropout > 0.0 and bool(training),
            f"{type(self).__name__}'s own scores":
                not self._blockwise_supported(),
        }
        blockers = [name for name, stands in needs_weights.items() if stands]
        if self.attention_impl == "blockwise":
            if blockers:
                raise ValueError(
                    "attention_impl='blockwise' computes no attention "
                    f"weights, which {', '.join(blockers)} needs; use "
                    "attention_impl='auto' or 'dense', received: "
                    "attention_impl='blockwise'"
                )
            return True
        if blockers:
            return False
        if keras.backend.backend() in FUSED_CORE_BACKENDS:
            # Their fused kernels take the plain core; a subclass's terms
            # would reach them only as a dense (T, S) bias.
            return not self._blockwise_options()
        if query_length == 1:
            # A decoding step: its (B, N, 1, S) weights are small, and the
            # dense core reads grouped key/value heads without copying them.
            return False
        key_length = key.shape[1]
        if key_length is None:
            return False
        if key_length >= BLOCKWISE_MIN_LENGTH:
            return True
        # Shorter: when the queries fit one block, the kernel is the dense
        # algorithm in fewer passes (its product and softmax fused, the
        # weights kept for the gradient), faster than the dense core
        # (benchmarks/layers.py); more blocks would recompute the weights.
        return query_length is not None and query_length <= (
            default_block_size(key.shape[0], self.num_heads, key_length))

    def call(
        self,
        query,
        value=None,
        key=None,
        padding_mask=None,
        key_padding_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        cache=None,
        cache_update_index=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_bias=None,
    ):
        if value is None:
            if cache is None or cache_update_index is not None:
                raise ValueError(
                    "`value` may be left out only to attend a `cache` of "
                    "projected keys and values (from `compute_key_value`) "
                    "without `cache_update_index`, received: value=None, "
                    f"cache={'None' if cache is None else 'given'}, "
                    f"cache_update_index={cache_update_index!r}"
                )
            if key is not None:
                raise ValueError(
                    "`key` needs `value`, received: value=None and a `key`"
                )
            self._check_inputs(query.shape, None, None)
        else:
            self._check_inputs(
                query.shape, value.shape, (value if key is None else key).shape
            )
        if cache is not None:
            self._check_cache(cache, cache_update_index, query.shape[1])
            positional = {
                name: getattr(self, name)
                for name in ("rope_max_wavelength", "sliding_window",
                             "alibi_bias_max")
                if getattr(self, name) is not None
            }
            if cache_update_index is None and positional:
                name, setting = next(iter(positional.items()))
                raise ValueError(
                    f"`{name}` needs the queries' positions, which a cache "
                    "of precomputed keys (no `cache_update_index`) does not "
                    "give: attend the keys and values themselves, or decode "
                    "self-attention with `cache_update_index`; received: "
                    f"cache_update_index=None and {name}={setting!r}"
                )
        if query_mask is None:
            query_mask = attention_ops.implicit_mask(query)
        padding_mask = attention_ops.merge_checked_masks(
            {"padding_mask": padding_mask, "query_mask": query_mask},
            query.shape[:2], "(batch, query_len)",
        )
        if cache is None:  # with a cache the keys are the cache's
            if value_mask is None:
                value_mask = attention_ops.implicit_mask(value)
            if key is not None and key_mask is None:
                key_mask = attention_ops.implicit_mask(key)
        key_padding_mask = attention_ops.merge_checked_masks(
            {"key_padding_mask": key_padding_mask, "value_mask": value_mask,
             "key_mask": key_mask},
            (query.shape[0],
             (value if cache is None else cache[0]).shape[1]),
            "(batch, key_len)",
        )

        offset = 0 if cache_update_index is None else cache_update_index
        projected_query = self._rotate(
            self.query_dense(query), offset)  # (B, T, N, H)
        if cache is not None and cache_update_index is None:
            projected_key, projected_value = cache  # (B, S, K, H), (B, S, K, V)
        else:
            projected_key, projected_value = self.compute_key_value(
                value, key, start_index=offset)
            if cache is not None:
                key_cache, value_cache = cache
                projected_key = attention_ops.update_cache(
                    key_cache, projected_key, cache_update_index
                )  # (B, L, K, H)
                projected_value = attention_ops.update_cache(
                    value_cache, projected_value, cache_update_index
                )  # (B, L, K, V)
                cache = (projected_key, projected_value)

        if attention_bias is not None:
            attention_bias = attention_ops.check_head_shape(
                "attention_bias", attention_bias, query.shape[0],
                self.num_heads, query.shape[1], projected_key.shape[1],
            )
        if self._blockwise_core(return_attention_scores, training,
                                projected_key, query.shape[1]):
            context = self._blockwise(
                query, projected_query, projected_key, projected_value,
                padding_mask, key_padding_mask, attention_mask,
                use_causal_mask, offset, attention_bias,
            )  # (B, T, N, V)
            output = self._merge_heads(context)  # (B, T, D)
            return output if cache is None else (output, cache)

        mask = attention_ops.resolve_attention_mask(
            query,
            projected_key.shape[1] or ops.shape(projected_key)[1],
            padding_mask=padding_mask,
            key_padding_mask=key_padding_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            query_offset=offset,
            window=self._window(),
        )
        if mask is not None:
            mask = ops.expand_dims(mask, 1)  # (B, 1, T, S) over heads
        scores = self._attention_scores(
            projected_query, projected_key, cache_update_index,
            use_causal_mask,
        )  # (B, N, T, S)
        scores = self._add_biases(scores, attention_bias, offset)
        weights = attention_ops.masked_softmax(scores, mask)
        self._add_penalty(weights, padding_mask)
        weights, dropped = self._drop(weights, training)
        context = self._attend(
            dropped, projected_value, cache_update_index, use_causal_mask
        )  # (B, T, N, V)
        output = self._merge_heads(context)  # (B, T, D)

        results = (output,)
        if return_attention_scores:
            results += (weights,)
        if cache is not None:
            results += (cache,)
        return results[0] if len(results) == 1 else results

    def _add_biases(self, scores, attention_bias, offset):
        """The float32 logits `(B, N, T, S)` plus ALiBi's and the caller's
        bias."""
        slopes = self._alibi_slopes()
        if slopes is not None:
            shape = ops.shape(scores)
            # (N, T, S) -> (1, N, T, S)
            scores = scores + attention_ops.alibi_bias(
                slopes, shape[2], shape[3], offset)[None]
        if attention_bias is not None:
            scores = scores + ops.cast(attention_bias, "float32")
        return scores

    def _blockwise(self, query, projected_query, projected_key,
                   projected_value, padding_mask, key_padding_mask,
                   attention_mask, use_causal_mask, offset, attention_bias):
        """The core by `ops.blockwise_attention`, the masks passed as
        what they are (never expanded to `(T, S)`)."""
        if attention_mask is not None:
            attention_mask = attention_ops.check_mask_shape(
                "attention_mask", attention_mask,
                (query.shape[0], query.shape[1], projected_key.shape[1]),
                "(batch, query_len, key_len)",
            )
            # (B, T, S) -> (B, 1, T, S) over heads
            attention_mask = ops.expand_dims(attention_mask, 1)
        return attention_ops.blockwise_attention(
            projected_query, projected_key, projected_value,
            key_padding_mask=key_padding_mask,
            query_padding_mask=padding_mask,
            mask=attention_mask,
            causal=bool(use_causal_mask),
            window=self._window(),
            query_offset=offset,
            bias=attention_bias,
            alibi_slopes=self._alibi_slopes(),
            **self._blockwise_options(),
        )  # (B, T, N, V)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "attention_impl": self.attention_impl,
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_dim": self.output_dim,
                "head_merge": self.head_merge,
                "diversity_penalty": self.diversity_penalty,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "bias_regularizer": keras.regularizers.serialize(
                    self.bias_regularizer
                ),
                "num_key_value_heads": self.num_key_value_heads,
                "sliding_window": self.sliding_window,
                "rope_max_wavelength": self.rope_max_wavelength,
                "rope_scaling_factor": self.rope_scaling_factor,
                "alibi_bias_max": self.alibi_bias_max,
            }
        )
        return quantized_dtype_config(self, config)
