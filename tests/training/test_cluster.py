"""The TF_CONFIG an Indexed Job's pods build (`training/cluster.py`) is
the one `strategy_from_environment` and TensorFlow's own resolver read.

A `MultiWorkerMirroredStrategy` can be created only once per process and
waits for its peers, so a stand-in replaces the class here (as in
`test_strategy.py`); `test_distributed.py` trains with real ones.
"""

import json

import pytest
import tensorflow as tf

from keras_attention.training import strategy as strategy_module
from keras_attention.training import strategy_from_environment
from keras_attention.training.cluster import DEFAULT_PORT
from keras_attention.training.cluster import indexed_job_tf_config
from keras_attention.training.cluster import tf_config
from keras_attention.training.cluster import tf_config_from_environment
from keras_attention.training.cluster import worker_addresses

JOB, SERVICE = "translator-job", "translator-job-workers"


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """These tests build no Keras model: no per-test Keras reset."""
    yield


def environment(index, workers, **extra):
    return {"JOB_COMPLETION_INDEX": str(index),
            "KERAS_ATTENTION_WORKERS": str(workers),
            "KERAS_ATTENTION_JOB_NAME": JOB,
            "KERAS_ATTENTION_SERVICE": SERVICE, **extra}


@pytest.fixture
def made(monkeypatch):
    """The MultiWorkerMirroredStrategy stand-ins made."""
    made = []
    monkeypatch.setattr(strategy_module, "MultiWorkerMirroredStrategy",
                        lambda *args, **kwargs: made.append(args) or made)
    return made


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_every_worker_gets_the_same_cluster_and_its_own_index(workers, made):
    expected = [f"{JOB}-{index}.{SERVICE}:2222" for index in range(workers)]
    for index in range(workers):
        raw = json.dumps(tf_config_from_environment(environment(index,
                                                                workers)))
        config = json.loads(raw)
        assert config == {"cluster": {"worker": expected},
                          "task": {"type": "worker", "index": index}}
        assert strategy_module._cluster_size(raw) == workers
        made.clear()
        strategy = strategy_from_environment({"TF_CONFIG": raw})
        if workers == 1:  # one worker: the default strategy, no cluster
            assert made == []
            assert strategy is tf.distribute.get_strategy()
        else:
            assert made == [()] and strategy is made


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_tensorflow_reads_the_cluster_and_task(workers, monkeypatch):
    """What MultiWorkerMirroredStrategy itself reads from TF_CONFIG."""
    for index in range(workers):
        raw = json.dumps(tf_config_from_environment(environment(index,
                                                                workers)))
        monkeypatch.setenv("TF_CONFIG", raw)
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        assert resolver.cluster_spec().as_dict() == {
            "worker": [f"{JOB}-{i}.{SERVICE}:2222" for i in range(workers)]}
        assert (resolver.task_type, resolver.task_id) == ("worker", index)


def test_port_and_functions_agree():
    assert DEFAULT_PORT == 2222
    config = tf_config_from_environment(
        environment(1, 3, KERAS_ATTENTION_PORT="23456"))
    assert config == tf_config(1, 3, JOB, SERVICE, 23456)
    assert config["cluster"]["worker"] == worker_addresses(JOB, SERVICE, 3,
                                                           23456)
    assert config["cluster"]["worker"][2] == f"{JOB}-2.{SERVICE}:23456"


def test_train_sets_tf_config_only_for_the_indexed_job():
    assert indexed_job_tf_config({}) is None
    # A TFJob (or the user) set TF_CONFIG: it is kept.
    assert indexed_job_tf_config(
        {**environment(0, 2), "TF_CONFIG": '{"cluster": {}}'}) is None
    # JOB_COMPLETION_INDEX alone is any Indexed Job, not ours.
    assert indexed_job_tf_config({"JOB_COMPLETION_INDEX": "0"}) is None
    raw = indexed_job_tf_config({**environment(1, 2), "TF_CONFIG": ""})
    assert json.loads(raw) == tf_config(1, 2, JOB, SERVICE)


@pytest.mark.parametrize("missing", [
    "JOB_COMPLETION_INDEX", "KERAS_ATTENTION_WORKERS",
    "KERAS_ATTENTION_JOB_NAME", "KERAS_ATTENTION_SERVICE"])
def test_a_missing_variable_is_named(missing):
    environ = environment(0, 2)
    del environ[missing]
    with pytest.raises(ValueError, match=f"^{missing} is not set"):
        tf_config_from_environment(environ)
    if missing == "KERAS_ATTENTION_WORKERS":  # not ours: train ignores it
        assert indexed_job_tf_config(environ) is None
    else:  # ours, incomplete: train stops with the same error
        with pytest.raises(ValueError, match=f"^{missing} is not set"):
            indexed_job_tf_config(environ)


@pytest.mark.parametrize("variable, value, bounds", [
    ("JOB_COMPLETION_INDEX", "2", "an integer from 0 to 1"),
    ("JOB_COMPLETION_INDEX", "-1", "an integer from 0 to 1"),
    ("JOB_COMPLETION_INDEX", "one", "an integer from 0 to 1"),
    ("KERAS_ATTENTION_WORKERS", "0", "an integer >= 1"),
    ("KERAS_ATTENTION_WORKERS", "2.0", "an integer >= 1"),
    ("KERAS_ATTENTION_WORKERS", "", "an integer >= 1"),
    ("KERAS_ATTENTION_PORT", "0", "an integer from 1 to 65535"),
    ("KERAS_ATTENTION_PORT", "65536", "an integer from 1 to 65535"),
    ("KERAS_ATTENTION_PORT", "http", "an integer from 1 to 65535"),
    ("KERAS_ATTENTION_JOB_NAME", "Translator", "a DNS label"),
    ("KERAS_ATTENTION_JOB_NAME", "translator_job", "a DNS label"),
    ("KERAS_ATTENTION_JOB_NAME", "-job", "a DNS label"),
    ("KERAS_ATTENTION_SERVICE", "workers.default", "a DNS label"),
    ("KERAS_ATTENTION_SERVICE", "", "a DNS label"),
])
def test_a_wrong_value_is_named_with_the_value(variable, value, bounds):
    environ = {**environment(0, 2), variable: value}
    with pytest.raises(ValueError) as info:
        tf_config_from_environment(environ)
    assert str(info.value) == (
        f"{variable} must be {bounds}" + (
            ", received: " if "DNS" not in bounds else
            " (lowercase letters, digits and '-', starting and ending with "
            "a letter or digit, at most 63 characters), received: ")
        + f"{variable}={value!r}")


def test_a_hostname_over_63_characters_is_refused():
    name = "j" * 61
    assert worker_addresses(name, SERVICE, 10)[-1].startswith(name + "-9.")
    with pytest.raises(ValueError, match=r"KERAS_ATTENTION_JOB_NAME is too "
                       r"long: the hostname of the last of 11 workers, "
                       rf"'{name}-10', has 64 characters"):
        tf_config_from_environment({**environment(0, 11),
                                    "KERAS_ATTENTION_JOB_NAME": name})


def test_arguments_are_named_when_called_directly():
    with pytest.raises(ValueError, match=r"index must be an integer from 0 "
                       r"to 1, received: index=2$"):
        tf_config(2, 2, JOB, SERVICE)
    with pytest.raises(ValueError, match="num_workers=True"):
        tf_config(0, True, JOB, SERVICE)
    with pytest.raises(ValueError, match="port=2222.0"):
        worker_addresses(JOB, SERVICE, 2, 2222.0)
