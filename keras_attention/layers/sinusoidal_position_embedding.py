"""`SinusoidalPositionEmbedding`: the fixed position table of Vaswani et al."""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers.quantization import NothingToQuantize


@keras.saving.register_keras_serializable(package="keras_attention")
class SinusoidalPositionEmbedding(NothingToQuantize, keras.layers.Layer):
    """Sinusoidal position encodings for a sequence of any length.

    `PE(p, 2i) = sin(p / max_wavelength^(2i/d))`,
    `PE(p, 2i+1) = cos(p / max_wavelength^(2i/d))`, with `p` counted from
    `start_index`. The layer has no weights and no maximum length. It returns
    the encodings (to be added to the embeddings), not their sum. The angles
    are computed in float32 and the table is returned in the compute dtype
    (half-precision angles are wrong by whole radians past a few hundred
    positions).

    Args:
        max_wavelength: float > 0, the base (10000 in the paper).

    Call arguments:
        inputs: `(batch, seq_len, dim)`; only its shape is used.
        start_index: int or scalar tensor, the position of the first element
            (the cache index in incremental decoding). Defaults to 0.

    Returns:
        `(batch, seq_len, dim)` encodings in the compute dtype.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import SinusoidalPositionEmbedding
    >>> embeddings = np.zeros((2, 10, 16), "float32")
    >>> positions = SinusoidalPositionEmbedding()(embeddings)
    >>> tuple(positions.shape)
    (2, 10, 16)
    >>> step = SinusoidalPositionEmbedding()(embeddings[:, :1], start_index=9)
    >>> bool(np.allclose(step[:, 0], positions[:, 9], atol=1e-6))
    True

    Reference:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017, 3.5.
    """

    def __init__(self, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = _validation.positive_float(
            "max_wavelength", max_wavelength
        )
        self.supports_masking = True

    def build(self, inputs_shape):
        _validation.rank("inputs", inputs_shape, (3,), "(batch, seq_len, dim)")

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        positions = ops.arange(shape[1], dtype="int32") + ops.cast(
            start_index, "int32"
        )
        table = attention_ops.sinusoid_table(
            positions, inputs.shape[-1], self.max_wavelength,
            dtype=self.compute_dtype,
        )  # (T, D)
        return ops.broadcast_to(ops.expand_dims(table, 0), shape)

    def get_config(self):
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config
