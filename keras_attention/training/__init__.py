"""Training: the configuration, the one loop every sequence-to-sequence model
trains with (`seq2seq`), strategy from the environment, schedule, losses,
callbacks; the reproductions' loop (`loop`: epochs under a stopping rule,
selection on validation, the test split once, resume); a GAN's hinge-loss
step (`gan`) and the Fréchet distance (`frechet`).

The names load on first use (PEP 562), so `keras_attention.training.config`
(the options the command line is built from) imports without TensorFlow.
"""

from keras_attention._lazy import lazy_exports

_EXPORTS = {
    "AllReduceClippingAdam": "optimizers",
    "average_checkpoints": "averaging",
    "BleuCallback": "bleu",
    "corpus_bleu": "bleu",
    "MaskedAccuracy": "losses",
    "MaskedCrossentropy": "losses",
    "TrainingConfig": "config",
    "SpectralClipSGD": "spectral_clip_sgd",
    "StoppingRule": "loop",
    "TransformerSchedule": "schedule",
    "describe": "strategy",
    "epoch_checkpoints": "averaging",
    "feature_classifier": "frechet",
    "frechet_distance": "frechet",
    "halving_by_epoch": "schedule",
    "hinge_gan_trainer": "gan",
    "sagan_optimizers": "gan",
    "sampled_path_probabilities": "glimpse_paths",
    "strategy_from_environment": "strategy",
    "tf_config_from_environment": "cluster",
    "train_run": "loop",
    "weights_sha256": "loop",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
