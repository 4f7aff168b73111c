"""`strategy_from_environment` with fake environments.

A `MultiWorkerMirroredStrategy` can be created only once per process (and
would wait for its peers), so where one would be made, a stand-in replaces
the class; `test_distributed.py` runs the real ones in subprocesses.
"""

import json

import pytest
import tensorflow as tf

from keras_attention.training import describe
from keras_attention.training import strategy as strategy_module
from keras_attention.training import strategy_from_environment


class Made:
    """Stands in for a strategy class; remembers its arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


@pytest.fixture
def fake_multiworker(monkeypatch):
    made = []

    def make(*args, **kwargs):
        made.append(Made(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(strategy_module, "MultiWorkerMirroredStrategy", make)
    return made


def tf_config(cluster, task_type="worker", index=0):
    return json.dumps({"cluster": cluster,
                       "task": {"type": task_type, "index": index}})


def assert_default(strategy):
    assert type(strategy) is type(tf.distribute.get_strategy())
    assert not tf.distribute.has_strategy()  # the default, not a scope's
    assert strategy.num_replicas_in_sync == 1


def test_no_tf_config_gives_the_default_strategy(fake_multiworker):
    assert_default(strategy_from_environment({}))
    assert_default(strategy_from_environment({"TF_CONFIG": ""}))
    assert not fake_multiworker


def test_reads_os_environ_by_default(monkeypatch, fake_multiworker):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert_default(strategy_from_environment())
    monkeypatch.setenv("TF_CONFIG", tf_config(
        {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    ))
    assert isinstance(strategy_from_environment(), Made)


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"worker"', "null",
                                 "3"])
def test_invalid_tf_config_is_a_value_error_naming_it(raw, fake_multiworker):
    with pytest.raises(ValueError, match="TF_CONFIG") as info:
        strategy_from_environment({"TF_CONFIG": raw})
    assert repr(raw) in str(info.value)  # shows what it received
    assert not fake_multiworker


@pytest.mark.parametrize("cluster", [None, ["127.0.0.1:1"],
                                     {"worker": "127.0.0.1:1"}])
def test_malformed_cluster_is_a_value_error_naming_tf_config(
    cluster, fake_multiworker
):
    with pytest.raises(ValueError, match="TF_CONFIG"):
        strategy_from_environment({"TF_CONFIG": tf_config(cluster)})
    assert not fake_multiworker


@pytest.mark.parametrize("cluster", [
    {"worker": ["127.0.0.1:1"]},
    {"chief": ["127.0.0.1:1"]},
    {"worker": []},
    {"ps": ["127.0.0.1:1", "127.0.0.1:2"]},  # only chief/worker count
    {},
])
def test_one_worker_is_not_multiworker(cluster, fake_multiworker):
    assert_default(strategy_from_environment({"TF_CONFIG": tf_config(cluster)}))
    assert not fake_multiworker


def test_tf_config_without_cluster_is_not_multiworker(fake_multiworker):
    raw = json.dumps({"task": {"type": "worker", "index": 0}})
    assert_default(strategy_from_environment({"TF_CONFIG": raw}))
    assert not fake_multiworker


@pytest.mark.parametrize("cluster", [
    {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
    {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
    {"worker": ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]},
])
def test_several_workers_make_a_multiworker_strategy(cluster,
                                                     fake_multiworker):
    strategy = strategy_from_environment({"TF_CONFIG": tf_config(cluster)})
    assert fake_multiworker == [strategy]
    # The strategy reads TF_CONFIG itself (from os.environ).
    assert strategy.args == () and strategy.kwargs == {}


class Device:
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("count", [1, 2, 3])
def test_local_gpus(monkeypatch, fake_multiworker, count):
    gpus = [Device(f"/device:GPU:{i}") for i in range(count)]
    monkeypatch.setattr(
        tf.config, "list_logical_devices",
        lambda kind=None: gpus if kind == "GPU" else [],
    )
    monkeypatch.setattr(tf.distribute, "MirroredStrategy",
                        lambda *a, **k: Made("mirrored", *a, **k))
    monkeypatch.setattr(tf.distribute, "OneDeviceStrategy",
                        lambda *a, **k: Made("one", *a, **k))
    strategy = strategy_from_environment({})
    if count == 1:
        assert strategy.args == ("one", "/device:GPU:0")
    else:
        assert strategy.args == ("mirrored",)  # all local GPUs
    # TF_CONFIG with a single worker does not hide the GPUs.
    single = tf_config({"worker": ["127.0.0.1:1"]})
    assert (strategy_from_environment({"TF_CONFIG": single}).args
            == strategy.args)
    assert not fake_multiworker


def test_describe_names_the_strategy_and_its_replicas():
    assert describe(tf.distribute.get_strategy()) == (
        "_DefaultDistributionStrategy with 1 replica(s)"
    )
