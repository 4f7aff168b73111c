"""The `tf.distribute` strategy, chosen from the environment."""

import json
import os

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import tensorflow as tf

from keras_attention import _validation
from keras_attention.training.config import JIT_COMPILE


def _cluster_size(raw):
    """Workers plus chief named by a TF_CONFIG string."""
    def invalid():
        return ValueError(
            "TF_CONFIG must be a JSON object whose \"cluster\" maps task "
            f"types to lists of addresses, received: TF_CONFIG={raw!r}"
        )

    try:
        config = json.loads(raw)
    except ValueError as error:
        raise invalid() from error
    if not isinstance(config, dict):
        raise invalid()
    cluster = config.get("cluster", {})
    if not isinstance(cluster, dict):
        raise invalid()
    size = 0
    for task in ("worker", "chief"):
        addresses = cluster.get(task, [])
        if not isinstance(addresses, list):
            raise invalid()
        size += len(addresses)
    return size


class MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`tf.distribute.MultiWorkerMirroredStrategy` that Keras 3 `fit` can use.

    Keras 3 asks the strategy to reduce a whole `(inputs, labels)` structure
    (when it builds the model) and scalar logs with `axis=0`; the
    collective ops accept neither (tensorflow/tensorflow#72388). This
    subclass reduces leaf by leaf, and scalars without an axis.
    """

    def reduce(self, reduce_op, value, axis=None):
        def rank(leaf):
            if isinstance(leaf, tf.distribute.DistributedValues):
                leaf = leaf.values[0]
            shape = getattr(leaf, "shape", None)
            return 0 if shape is None else shape.rank

        return tf.nest.map_structure(
            lambda leaf: super(MultiWorkerMirroredStrategy, self).reduce(
                reduce_op, leaf, None if rank(leaf) == 0 else axis
            ),
            value,
        )


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
        if _cluster_size(raw) > 1:
            return MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) > 1:
        return tf.distribute.MirroredStrategy()
    if len(gpus) == 1:
        return tf.distribute.OneDeviceStrategy(gpus[0].name)
    return tf.distribute.get_strategy()


def jit_compile_for(setting, strategy, devices=None):
    """Whether the training step is compiled with XLA (`jit_compile`).

    `"on"` and `"off"` say it; `"auto"` picks per device:
    - CPUs only: off. On this project's 2-core AVX512 machine the `small`
      Transformer trained at 0.65x the target tokens per second with XLA
      (`benchmarks/training_step.py`).
    - one accelerator (a single replica on a GPU or TPU): on, as Keras's own
      "auto" does on an accelerator outside `tf.distribute`; XLA fuses the
      elementwise work around each product there (not measured here: the
      project's GPU machine has no TensorFlow).
    - several replicas: off, as Keras's "auto" does under `tf.distribute`.

    Args:
        setting: `"auto"`, `"on"` or `"off"`.
        strategy: the run's `tf.distribute` strategy.
        devices: the logical devices (default: TensorFlow's list); a test
            passes its own.
    """
    _validation.choice("jit_compile", setting, JIT_COMPILE)
    if setting != "auto":
        return setting == "on"
    if devices is None:
        devices = tf.config.list_logical_devices()
    accelerators = [device for device in devices
                    if device.device_type in ("GPU", "TPU")]
    return bool(accelerators) and strategy.num_replicas_in_sync == 1


def describe(strategy):
    """One line for logs: the strategy and its replicas."""
    return (f"{type(strategy).__name__} with "
            f"{strategy.num_replicas_in_sync} replica(s)")
