"""The learning-rate schedule of Vaswani et al. (2017), section 5.3."""

import keras
from keras import ops

from keras_attention import _validation


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """`lr = scale · d^-0.5 · min(step^-0.5, step · warmup^-1.5)`.

    Linear warm-up for `warmup_steps`, then decay with the inverse square
    root of the step. Steps count from 1 (the optimizer's iteration + 1).

    Args:
        hidden_dim: the model size d.
        warmup_steps: int, 4000 in the paper.
        scale: a constant factor (1 in the paper).

    Example:

    >>> from keras_attention.training import TransformerSchedule
    >>> schedule = TransformerSchedule(hidden_dim=512, warmup_steps=4000)
    >>> round(float(schedule(3999)), 7)  # the peak, at step 4000
    0.0006988
    """

    def __init__(self, hidden_dim, warmup_steps=4000, scale=1.0):
        self.hidden_dim = _validation.positive_int("hidden_dim", hidden_dim)
        self.warmup_steps = _validation.positive_int(
            "warmup_steps", warmup_steps
        )
        self.scale = _validation.positive_float("scale", scale)

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        return (
            self.scale
            * self.hidden_dim**-0.5
            * ops.minimum(ops.rsqrt(step), step * self.warmup_steps**-1.5)
        )

    def get_config(self):
        return {"hidden_dim": self.hidden_dim,
                "warmup_steps": self.warmup_steps, "scale": self.scale}
