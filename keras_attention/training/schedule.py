"""Learning-rate schedules: Vaswani et al. (2017), section 5.3, by step;
the memory network's halving by epoch (Sukhbaatar et al. 2015)."""

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


def halving_by_epoch(learning_rate, epoch, *, constant_epochs=0, every=25):
    """The learning rate of `epoch` (1-based) when it is constant for the
    first `constant_epochs` and then halved at the start of every `every`
    epochs after them: the memory network's protocol as its reference code
    (`config_babi.m`, `train.m`) runs it, the linear start's epochs
    constant, then the softmax phase from the same rate halved at its
    epochs 25, 50, 75 and 100 (`mod(ep, 25) == 0`).

    >>> [halving_by_epoch(0.01, e, constant_epochs=20, every=25)
    ...  for e in (1, 20, 44, 45, 70)]
    [0.01, 0.01, 0.01, 0.005, 0.0025]
    """
    _validation.positive_int("epoch", epoch)
    _validation.non_negative_int("constant_epochs", constant_epochs)
    _validation.positive_int("every", every)
    phase_epoch = epoch - constant_epochs
    if phase_epoch <= 0:
        return learning_rate
    return learning_rate * 0.5 ** (phase_epoch // every)
