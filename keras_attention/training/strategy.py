"""The `tf.distribute` strategy, chosen from the environment."""

import json
import os

import tensorflow as tf


def strategy_from_environment(environ=None):
    """The strategy a training run should use here.

    - `MultiWorkerMirroredStrategy` when `TF_CONFIG` names several workers;
    - `MirroredStrategy` over the local GPUs when there are several;
    - `OneDeviceStrategy` on the GPU when there is one;
    - otherwise the default strategy (one CPU).

    The model must be built and compiled inside `strategy.scope()`; the
    global batch is the per-replica batch times
    `strategy.num_replicas_in_sync`.
    """
    environ = os.environ if environ is None else environ
    raw = environ.get("TF_CONFIG", "")
    if raw:
        try:
            cluster = json.loads(raw).get("cluster", {})
        except (ValueError, AttributeError) as error:
            raise ValueError(
                f"TF_CONFIG must be a JSON object, received: TF_CONFIG={raw!r}"
            ) from error
        if len(cluster.get("worker", [])) + len(cluster.get("chief", [])) > 1:
            return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) > 1:
        return tf.distribute.MirroredStrategy()
    if len(gpus) == 1:
        return tf.distribute.OneDeviceStrategy(gpus[0].name)
    return tf.distribute.get_strategy()


def describe(strategy):
    """One line for logs: the strategy and its replicas."""
    return (f"{type(strategy).__name__} with "
            f"{strategy.num_replicas_in_sync} replica(s)")
