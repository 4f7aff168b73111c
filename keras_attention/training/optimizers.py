"""Adam whose gradient clipping sees the gradient of the whole global batch.

Keras's `clipnorm` clips each replica's partial gradient before the
cross-replica sum (the optimizer clips in `apply`, then all-reduces in its
update step), so under a `tf.distribute` strategy a clipped step differs
from the one-device step on the same global batch. This optimizer sums the
replicas' gradients first, clips the sum, and hands each replica its
`1/replicas` share, which the optimizer's own sum turns back into the
clipped global gradient.
"""

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="keras_attention")
class AllReduceClippingAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` with `clipnorm` / `global_clipnorm` applied
    to the gradient summed over the replicas (equal to the one-device
    gradient), not to each replica's part.

    Takes Adam's arguments. With one replica it behaves exactly as Adam.

    Example:

    >>> optimizer = AllReduceClippingAdam(1e-3, clipnorm=1.0)
    >>> optimizer.get_config()["clipnorm"]
    1.0
    """

    def __init__(self, *args, clipnorm=None, global_clipnorm=None, **kwargs):
        super().__init__(*args, **kwargs)
        if clipnorm is not None and global_clipnorm is not None:
            raise ValueError(
                "give clipnorm or global_clipnorm, not both, received: "
                f"clipnorm={clipnorm}, global_clipnorm={global_clipnorm}")
        for name, value in (("clipnorm", clipnorm),
                            ("global_clipnorm", global_clipnorm)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0, received: "
                                 f"{name}={value}")
        self.replica_sum_clipnorm = clipnorm
        self.replica_sum_global_clipnorm = global_clipnorm

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        clip = self.replica_sum_clipnorm or self.replica_sum_global_clipnorm
        context = tf.distribute.get_replica_context()
        replicas = context.num_replicas_in_sync if context is not None else 1
        if clip is None:
            return super().apply(grads, trainable_variables)
        present = [i for i, g in enumerate(grads) if g is not None]
        values = [tf.convert_to_tensor(grads[i]) for i in present]
        if replicas > 1:
            values = context.all_reduce(tf.distribute.ReduceOp.SUM, values)
        if self.replica_sum_clipnorm is not None:
            values = [tf.clip_by_norm(v, clip) for v in values]
        else:
            values, _ = tf.clip_by_global_norm(values, clip)
        for index, value in zip(present, values):
            grads[index] = value / replicas if replicas > 1 else value
        return super().apply(grads, trainable_variables)

    def get_config(self):
        config = super().get_config()
        config["clipnorm"] = self.replica_sum_clipnorm
        config["global_clipnorm"] = self.replica_sum_global_clipnorm
        return config
