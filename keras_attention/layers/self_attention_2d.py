"""`SelfAttention2D`: the self-attention block of SAGAN (Zhang et al., 2019).

Letters: B batch, Y height, X width, C channels, Q query positions (Y·X),
K key positions (Y·X / p²), p the pool size, F the query/key channels
(C / key_ratio), G the value channels (C / value_ratio).
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers.quantization import quantized_dtype_config


@keras.saving.register_keras_serializable(package="keras_attention")
class SelfAttention2D(keras.layers.Layer):
    """Self-attention over the positions of a feature map, added back
    through a learnt scale that starts at zero.

    Every position of `x` `(B, Y, X, C)` attends to every (pooled)
    position: 1×1 convolutions give the queries f(x) and keys g(x) with
    `C / key_ratio` channels and the values h(x) with `C / value_ratio`;
    the keys and values are max-pooled `pool_size × pool_size` (stride
    `pool_size`), as in the authors' code, so the map holds `Y·X` queries
    and `Y·X / p²` keys; β = softmax(f gᵀ) over the keys (unscaled, as in
    the paper); the context βh goes through a last 1×1 convolution back to
    C channels, o; and the output is `x + γ·o` with the scalar γ
    initialised to 0, so the block starts as the identity and the network
    learns how much non-local evidence to use (section 4).

    The 1×1 convolutions are dense layers over the channels without bias
    (the authors' `sn_conv1x1`); with `spectral_normalization=True` each is
    wrapped in `keras.layers.SpectralNormalization` (one power iteration),
    as in the authors' generator and discriminator.

    Args:
        key_ratio: int >= 1, channels of the queries and keys are
            `C // key_ratio` (8 in the paper).
        value_ratio: int >= 1, channels of the values are
            `C // value_ratio` (2 in the authors' code).
        pool_size: int >= 1, the max-pooling of keys and values (2 in the
            authors' code; 1 for none). The height and width must be
            multiples of it.
        spectral_normalization: bool, wrap the four 1×1 convolutions in
            `keras.layers.SpectralNormalization`.
        kernel_initializer: initializer of the 1×1 convolutions (the
            authors' Glorot uniform by default).
        gamma_initializer: initializer of γ (zeros).
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(batch, height, width, channels)`.
        return_attention_scores: bool; also return the weights
            `(batch, height·width, height·width / pool_size²)`, rows the
            query positions and columns the pooled key positions, both in
            row-major order.
        training: bool; updates the spectral normalization.

    Returns:
        `(batch, height, width, channels)`, then the weights if asked.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import SelfAttention2D
    >>> block = SelfAttention2D()
    >>> maps = np.random.rand(2, 8, 8, 16).astype("float32")
    >>> output, weights = block(maps, return_attention_scores=True)
    >>> tuple(output.shape), tuple(weights.shape)
    ((2, 8, 8, 16), (2, 64, 16))
    >>> bool(np.allclose(output, maps))  # gamma starts at 0
    True

    References:
        Zhang, Goodfellow, Metaxas, Odena. "Self-Attention Generative
        Adversarial Networks", ICML 2019, section 3.
        Wang et al. "Non-local Neural Networks", CVPR 2018.
    """

    def __init__(self, key_ratio=8, value_ratio=2, pool_size=2,
                 spectral_normalization=False,
                 kernel_initializer="glorot_uniform",
                 gamma_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.key_ratio = _validation.positive_int("key_ratio", key_ratio)
        self.value_ratio = _validation.positive_int("value_ratio",
                                                    value_ratio)
        self.pool_size = _validation.positive_int("pool_size", pool_size)
        self.spectral_normalization = bool(spectral_normalization)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.gamma_initializer = keras.initializers.get(gamma_initializer)

    def _check_shape(self, shape):
        _validation.rank("inputs", shape, (4,),
                         "(batch, height, width, channels)")
        for axis, name in ((1, "height"), (2, "width")):
            if shape[axis] is not None and shape[axis] % self.pool_size:
                raise ValueError(
                    f"The {name} of `inputs` must be a multiple of "
                    f"pool_size={self.pool_size}, received: "
                    f"inputs.shape={tuple(shape)}"
                )

    def _convolution(self, name, channels, input_channels):
        dense = keras.layers.Dense(
            channels, use_bias=False,
            kernel_initializer=keras.initializers.get(
                keras.initializers.serialize(self.kernel_initializer)),
            dtype=self.dtype_policy, name=name)
        dense.build((None, None, None, input_channels))
        if not self.spectral_normalization:
            return dense
        wrapped = keras.layers.SpectralNormalization(
            dense, power_iterations=1, dtype=self.dtype_policy,
            name=f"{name}_spectral")
        wrapped.build((None, None, None, input_channels))
        return wrapped

    def build(self, inputs_shape):
        self._check_shape(inputs_shape)
        channels = inputs_shape[-1]
        if channels is None:
            raise ValueError(
                "The channels of `inputs` must be known, received: "
                f"inputs.shape={tuple(inputs_shape)}")
        key_channels = channels // self.key_ratio
        value_channels = channels // self.value_ratio
        if key_channels < 1 or value_channels < 1:
            raise ValueError(
                f"`inputs` needs at least key_ratio={self.key_ratio} and "
                f"value_ratio={self.value_ratio} channels, received: "
                f"inputs.shape={tuple(inputs_shape)}")
        self.query_conv = self._convolution("query", key_channels, channels)
        self.key_conv = self._convolution("key", key_channels, channels)
        self.value_conv = self._convolution("value", value_channels,
                                            channels)
        self.output_conv = self._convolution("attention_output", channels,
                                             value_channels)
        self.pool = keras.layers.MaxPooling2D(
            self.pool_size, dtype=self.dtype_policy, name="pool")
        self.gamma = self.add_weight(
            name="gamma", shape=(), initializer=self.gamma_initializer)

    def _apply(self, layer, inputs, training):
        if self.spectral_normalization:
            return layer(inputs, training=training)
        return layer(inputs)

    def call(self, inputs, return_attention_scores=False, training=None):
        self._check_shape(inputs.shape)
        shape = ops.shape(inputs)
        batch, height, width = shape[0], shape[1], shape[2]
        query = self._apply(self.query_conv, inputs, training)  # (B,Y,X,F)
        key = self.pool(self._apply(self.key_conv, inputs, training))
        value = self.pool(self._apply(self.value_conv, inputs, training))
        query = ops.reshape(query, (batch, -1, query.shape[-1]))  # (B, Q, F)
        key = ops.reshape(key, (batch, -1, key.shape[-1]))  # (B, K, F)
        value = ops.reshape(value, (batch, -1, value.shape[-1]))  # (B, K, G)
        scores = ops.einsum("bqf,bkf->bqk", ops.cast(query, "float32"),
                            ops.cast(key, "float32"))  # (B, Q, K)
        weights = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        context = ops.einsum("bqk,bkg->bqg", weights, value)  # (B, Q, G)
        context = ops.reshape(context, (batch, height, width,
                                        context.shape[-1]))  # (B, Y, X, G)
        attended = self._apply(self.output_conv, context, training)
        output = inputs + ops.cast(self.gamma, self.compute_dtype) * attended
        if return_attention_scores:
            return output, weights
        return output

    def get_config(self):
        config = super().get_config()
        config.update({
            "key_ratio": self.key_ratio,
            "value_ratio": self.value_ratio,
            "pool_size": self.pool_size,
            "spectral_normalization": self.spectral_normalization,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
            "gamma_initializer": keras.initializers.serialize(
                self.gamma_initializer),
        })
        return quantized_dtype_config(self, config)
