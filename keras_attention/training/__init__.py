"""Training: strategy from the environment, schedule, losses, callbacks."""

from keras_attention.training.averaging import average_checkpoints
from keras_attention.training.bleu import BleuCallback
from keras_attention.training.bleu import corpus_bleu
from keras_attention.training.losses import MaskedAccuracy
from keras_attention.training.losses import MaskedCrossentropy
from keras_attention.training.optimizers import AllReduceClippingAdam
from keras_attention.training.schedule import TransformerSchedule
from keras_attention.training.strategy import describe
from keras_attention.training.strategy import strategy_from_environment

__all__ = [
    "AllReduceClippingAdam",
    "average_checkpoints",
    "BleuCallback",
    "corpus_bleu",
    "MaskedAccuracy",
    "MaskedCrossentropy",
    "TransformerSchedule",
    "describe",
    "strategy_from_environment",
]
