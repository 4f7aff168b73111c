"""Training: the configuration, the one loop every sequence-to-sequence model
trains with (`seq2seq`), strategy from the environment, schedule, losses,
callbacks.

The names load on first use (PEP 562), so `keras_attention.training.config`
(the options the command line is built from) imports without TensorFlow.
"""

import importlib

_EXPORTS = {
    "AllReduceClippingAdam": "optimizers",
    "average_checkpoints": "averaging",
    "BleuCallback": "bleu",
    "corpus_bleu": "bleu",
    "MaskedAccuracy": "losses",
    "MaskedCrossentropy": "losses",
    "TrainingConfig": "config",
    "TransformerSchedule": "schedule",
    "describe": "strategy",
    "strategy_from_environment": "strategy",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(
            f"module 'keras_attention.training' has no attribute {name!r}"
        )
    module = importlib.import_module(f"keras_attention.training.{_EXPORTS[name]}")
    return getattr(module, name)


def __dir__():
    return __all__
