"""SGD whose gradient clip bounds each matrix's largest singular value, as
the memory network's reference code clips (Sukhbaatar et al. 2015)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_attention")
class SpectralClipSGD(keras.optimizers.SGD):
    """`keras.optimizers.SGD` whose `clipnorm` rescales each 2-D gradient
    to a largest singular value of `clipnorm` at most.

    The memory network's reference code (`Weight.m`) clips with MATLAB's
    `norm(grad)`, which for a matrix is its 2-norm, the largest singular
    value. Keras's `clipnorm` takes the Frobenius norm, larger by up to
    the square root of the rank, so it clips more often and harder. Other
    gradients (vectors) keep Keras's clip. Takes SGD's arguments.

    Example:

    >>> import numpy as np
    >>> from keras_attention.training import SpectralClipSGD
    >>> optimizer = SpectralClipSGD(1.0, clipnorm=1.0)
    >>> grad = np.diag([3.0, 4.0]).astype("float32")  # Frobenius norm 5
    >>> clipped = optimizer._clip_by_norm(grad)
    >>> np.round(np.asarray(clipped), 2).tolist()  # largest value 1
    [[0.75, 0.0], [0.0, 1.0]]
    """

    def _clip_by_norm(self, values, axes=None):
        if len(values.shape) != 2:
            return super()._clip_by_norm(values, axes)
        if type(values).__name__ == "IndexedSlices":
            # TensorFlow's gradient of an embedding: made dense.
            import tensorflow as tf

            values = tf.convert_to_tensor(values)
        norm = ops.max(ops.svd(values, compute_uv=False))
        scale = ops.minimum(1.0, self.clipnorm / ops.maximum(norm, 1e-12))
        return values * ops.cast(scale, values.dtype)
