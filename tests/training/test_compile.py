"""How a run's model is compiled per device: XLA (`jit_compile_for`, and a
real XLA training step that equals the graph one) and `mixed_float16`
(loss scaling), with nothing CPU-only in the path."""

import keras
import numpy as np
import pytest

from keras_attention.training import seq2seq
from keras_attention.training.config import TrainingConfig
from keras_attention.training.strategy import jit_compile_for


class Device:
    def __init__(self, device_type):
        self.device_type = device_type


class Strategy:
    def __init__(self, replicas):
        self.num_replicas_in_sync = replicas


CPU, GPU, TPU = Device("CPU"), Device("GPU"), Device("TPU")


@pytest.mark.parametrize(
    "devices, replicas, expected",
    [
        ([CPU], 1, False),  # measured slower on CPUs
        ([CPU, GPU], 1, True),  # one accelerator
        ([CPU, TPU], 1, True),
        ([CPU, GPU, GPU], 2, False),  # several replicas, as Keras does
    ],
    ids=["cpu", "one-gpu", "one-tpu", "mirrored-gpus"],
)
def test_auto_picks_xla_per_device(devices, replicas, expected):
    assert jit_compile_for("auto", Strategy(replicas), devices) is expected


@pytest.mark.parametrize("setting, expected", [("on", True), ("off", False)])
def test_on_and_off_are_obeyed_everywhere(setting, expected):
    for devices in ([CPU], [CPU, GPU]):
        assert jit_compile_for(setting, Strategy(1), devices) is expected


def test_bad_setting_names_the_argument():
    with pytest.raises(ValueError, match="`jit_compile`.*received: "
                                         "jit_compile='yes'"):
        jit_compile_for("yes", Strategy(1), [CPU])
    with pytest.raises(ValueError, match="jit_compile='yes'"):
        TrainingConfig(jit_compile="yes")


def _setup(tmp_path, **options):
    config = TrainingConfig(
        output_dir=str(tmp_path), preset="tiny", train_size=300, epochs=1,
        max_length=24, bleu_sentences=0, verbose=0, **options,
    )
    _, data, model = seq2seq.setup(config)
    features, labels = next(iter(data.train_data))
    return model, features, labels


def test_xla_training_step_equals_the_graph_step(tmp_path):
    graph, features, labels = _setup(tmp_path / "graph")
    xla, same_features, _ = _setup(tmp_path / "xla", jit_compile="on")
    assert graph.jit_compile is False  # "auto" on this CPU
    assert xla.jit_compile is True
    np.testing.assert_array_equal(features["encoder_tokens"],
                                  same_features["encoder_tokens"])
    for ours, theirs in zip(graph.get_weights(), xla.get_weights()):
        np.testing.assert_array_equal(ours, theirs)  # the same seed
    # No dropout in evaluation: the compiled losses agree.
    graph_loss = graph.test_on_batch(features, labels, return_dict=True)
    xla_loss = xla.test_on_batch(features, labels, return_dict=True)
    np.testing.assert_allclose(xla_loss["loss"], graph_loss["loss"],
                               rtol=1e-4)
    before = [w.numpy() for w in xla.trainable_weights]
    trained = xla.train_on_batch(features, labels, return_dict=True)
    assert np.isfinite(trained["loss"])
    assert any(not np.allclose(b, a.numpy())
               for b, a in zip(before, xla.trainable_weights))


def test_mixed_float16_trains_with_loss_scaling(tmp_path):
    model, features, labels = _setup(tmp_path, precision="mixed_float16")
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert model.dtype_policy.name == "mixed_float16"
    for weight in model.weights:
        assert keras.backend.standardize_dtype(weight.dtype) in (
            "float32", "int64", "int32"), weight.path
    before = [w.numpy() for w in model.trainable_weights]
    result = model.train_on_batch(features, labels, return_dict=True)
    assert np.isfinite(result["loss"])
    assert any(not np.allclose(b, a.numpy())
               for b, a in zip(before, model.trainable_weights))
