"""`training.loop`: the stopping rule alone finishes a run, the weights are
chosen on validation, the test split is scored once at the end, and a run
resumed piece by piece is the uninterrupted run (weights, data order,
schedule)."""

import json

import keras
import numpy as np
import pytest

from keras_attention.training.loop import StoppingRule
from keras_attention.training.loop import best_epoch
from keras_attention.training.loop import train_run

X = np.linspace(-1, 1, 48, dtype="float32")[:, None]
Y = np.sin(3 * X)


def model(seed=0):
    keras.utils.set_random_seed(seed)
    # Dropout draws from a seed generator: a resumed run must go on with
    # its state, which the weights file leaves out.
    net = keras.Sequential([keras.Input((1,)), keras.layers.Dense(8, "tanh"),
                            keras.layers.Dropout(0.3, seed=seed),
                            keras.layers.Dense(1)])
    # A schedule on the optimizer's step: a resumed run must go on with it.
    net.compile(optimizer=keras.optimizers.Adam(
        keras.optimizers.schedules.ExponentialDecay(0.05, 5, 0.5)),
        loss="mse")
    return net


class Recorder:
    """The epochs' data orders, validation scores and test calls."""

    def __init__(self, scores=None):
        self.orders, self.tests, self.weights = [], 0, []
        self.scores = scores

    def epoch(self, net, index, rng):
        order = rng.permutation(len(X))
        self.orders.append(order)
        net.fit(X[order], Y[order], batch_size=12, verbose=0, shuffle=False)
        self.weights.append(net.get_weights())
        return {"steps": 4, "seen": len(X)}

    def validate(self, net):
        if self.scores is not None:
            return self.scores[len(self.weights) - 1]
        return -float(net.evaluate(X, Y, verbose=0))

    def test(self, net):
        self.tests += 1
        return {"mse": float(net.evaluate(X, Y, verbose=0))}


def test_the_rule_budget_patience_and_warm_up():
    assert StoppingRule(4).stopped_by([1, 2, 3]) is None
    assert StoppingRule(4).stopped_by([1, 2, 3, 4]) == "budget: 4 epochs"
    rule = StoppingRule(10, patience=2, min_delta=0.05)
    # 0.52 is not better than 0.5 by more than min_delta: epoch 2 is best
    assert rule.stopped_by([0.1, 0.5, 0.52, 0.53]) == (
        "patience: 2 epochs without a better validation score than epoch 2")
    assert rule.stopped_by([0.1, 0.5, 0.6, 0.53]) is None
    assert rule.stopped_by([3.0, 2.0, 2.5, 2.4], higher_is_better=False) \
        .endswith("than epoch 2")
    # Epochs before `first` (a warm-up) neither count as best nor wait.
    assert rule.stopped_by([0.9, 0.1, 0.2], first=1) is None
    assert best_epoch([0.9, 0.1, 0.2, 0.15], first=1) == 2
    # No time budget finishes a run inside its warm-up epochs.
    assert StoppingRule(10, minutes=1.0).stopped_by(
        [0.1, 0.2], first=2, seconds=600.0) is None
    assert StoppingRule(10, minutes=1.0).stopped_by(
        [0.1, 0.2, 0.3], first=2, seconds=600.0).startswith("budget")
    # A time budget counts the training of every piece.
    timed = StoppingRule(10, minutes=2.0)
    assert timed.stopped_by([0.1, 0.2], seconds=119.0) is None
    assert timed.stopped_by([0.1, 0.2], seconds=120.0) == (
        "budget: 2 minutes of training")


@pytest.mark.parametrize("kwargs, message", [
    (dict(epochs=0), "epochs"), (dict(epochs=3, patience=0), "patience"),
    (dict(epochs=3, min_delta=-1.0), "min_delta"),
    (dict(epochs=3, minutes=0.0), "minutes")])
def test_a_bad_rule_names_its_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StoppingRule(**kwargs)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="rule"):
        train_run(model(), epoch=None, validate=None, rule={"epochs": 3})
    with pytest.raises(ValueError, match="selection"):
        train_run(model(), epoch=None, validate=None, rule=StoppingRule(3),
                  selection="first")
    with pytest.raises(ValueError, match="select_from=3"):
        train_run(model(), epoch=None, validate=None, rule=StoppingRule(3),
                  select_from=3)


def test_the_best_validation_epoch_is_selected_and_tested_once():
    recorder = Recorder(scores=[0.1, 0.9, 0.3, 0.5])
    net = model()
    state = train_run(net, epoch=recorder.epoch, validate=recorder.validate,
                      test=recorder.test, rule=StoppingRule(4), verbose=0)
    assert state["finished"] and state["stopped_by"] == "budget: 4 epochs"
    assert state["best"] == {"epoch": 2, "score": [0.9]}
    assert state["curve"] == [0.1, 0.9, 0.3, 0.5]
    for got, expected in zip(net.get_weights(), recorder.weights[1]):
        np.testing.assert_array_equal(got, expected)
    assert recorder.tests == 1 and state["test"]["mse"] > 0
    assert state["counts"] == {"steps": 16, "seen": 4 * len(X)}


def test_validation_figures_are_kept_an_epoch_a_line(tmp_path):
    """`validate` may return a dict: its `score` selects, its other
    figures are kept an epoch a line, across the pieces of a resumed run;
    a dict without a score names what it received."""
    scores = [0.1, 0.9, 0.3]
    recorder = Recorder(scores=scores)

    def validate(net):
        index = len(recorder.weights) - 1
        return {"score": recorder.validate(net), "steps": 2.0 + index}

    for _ in range(3):
        state = train_run(model(), epoch=recorder.epoch, validate=validate,
                          rule=StoppingRule(3), directory=tmp_path / "run",
                          seconds=1e-9, verbose=0)
    assert state["finished"] and state["best"]["epoch"] == 2
    assert state["curve"] == scores
    assert state["figures"] == [{"epoch": 1, "steps": 2.0},
                                {"epoch": 2, "steps": 3.0},
                                {"epoch": 3, "steps": 4.0}]
    with pytest.raises(ValueError, match="a dict with a `score`"):
        train_run(model(), epoch=Recorder().epoch,
                  validate=lambda net: {"steps": 1.0}, rule=StoppingRule(1),
                  verbose=0)


def test_ties_are_broken_by_the_further_scores_and_last_selects_last():
    scores = [(0.5, -2.0), (0.5, -1.0), (0.5, -3.0)]
    recorder = Recorder(scores)
    state = train_run(model(), epoch=recorder.epoch,
                      validate=recorder.validate, rule=StoppingRule(3),
                      verbose=0)
    assert state["best"]["epoch"] == 2
    recorder = Recorder([0.1, 0.9, 0.3])
    net = model()
    state = train_run(net, epoch=recorder.epoch, validate=recorder.validate,
                      rule=StoppingRule(3), selection="last", verbose=0)
    assert state["best"]["epoch"] == 3
    np.testing.assert_array_equal(net.get_weights()[0],
                                  recorder.weights[2][0])


def test_a_time_budget_finishes_the_run_and_tests_it():
    recorder = Recorder(scores=[0.1, 0.4, 0.3])
    state = train_run(model(), epoch=recorder.epoch,
                      validate=recorder.validate, test=recorder.test,
                      rule=StoppingRule(3, minutes=1e-9), verbose=0)
    assert state["epoch"] == 1 and state["finished"]
    assert state["stopped_by"].endswith("minutes of training")
    assert recorder.tests == 1
    assert 0 < state["train_seconds"] <= state["seconds"]


def test_patience_finishes_the_run_early():
    recorder = Recorder(scores=[0.1, 0.4, 0.3, 0.35, 0.2, 0.9])
    state = train_run(model(), epoch=recorder.epoch,
                      validate=recorder.validate, test=recorder.test,
                      rule=StoppingRule(6, patience=2), verbose=0)
    assert state["epoch"] == 4 and state["stopped_by"].startswith("patience")
    assert recorder.tests == 1


def test_a_run_in_pieces_is_the_uninterrupted_run(tmp_path):
    """Each call trains one epoch (its time budget spent at once) and
    resumes from the checkpoint, in a fresh model: the data orders, the
    curve, the selection and the final weights are the uninterrupted
    run's; the test split is scored once, after the last piece."""
    rule = StoppingRule(5)
    whole = Recorder()
    whole_net = model()
    expected = train_run(whole_net, epoch=whole.epoch,
                         validate=whole.validate, test=whole.test, rule=rule,
                         seed=7, verbose=0)

    pieces = Recorder()
    states = []
    for _ in range(5):
        net = model()
        states.append(train_run(
            net, epoch=pieces.epoch, validate=pieces.validate,
            test=pieces.test, rule=rule, directory=tmp_path / "run",
            seconds=1e-9, seed=7, verbose=0))
    assert [s["finished"] for s in states] == [False] * 4 + [True]
    # An unfinished run has no test result: nothing to print or write.
    assert all(s["test"] is None for s in states[:4])
    assert pieces.tests == 1
    np.testing.assert_array_equal(np.array(pieces.orders),
                                  np.array(whole.orders))
    final = states[-1]
    assert final["curve"] == pytest.approx(expected["curve"], abs=1e-6)
    assert final["best"]["epoch"] == expected["best"]["epoch"]
    for got, want in zip(net.get_weights(), whole_net.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert final["test"]["mse"] == pytest.approx(expected["test"]["mse"],
                                                 abs=1e-6)
    assert [(p["first_epoch"], p["last_epoch"]) for p in final["pieces"]] \
        == [(i, i) for i in range(1, 6)]
    assert all(p["counts"] == {"steps": 4, "seen": len(X)} and p["machine"]
               and p["code"] and p["minutes"] >= 0 for p in final["pieces"])

    # The finished run names its selected weights by their hash.
    import hashlib

    saved = (tmp_path / "run" / "last.weights.h5").read_bytes()
    assert final["weights_sha256"] == hashlib.sha256(saved).hexdigest()
    assert all("weights_sha256" not in s for s in states[:4])

    # A finished run is neither trained nor tested again.
    again = model()
    state = train_run(again, epoch=pieces.epoch, validate=pieces.validate,
                      test=pieces.test, rule=rule, directory=tmp_path / "run",
                      verbose=0)
    assert pieces.tests == 1 and len(pieces.orders) == 5
    assert state["test"] == final["test"]
    for got, want in zip(again.get_weights(), whole_net.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert state["weights_kept"] is True

    # A published run may keep its state alone: it gives its figures
    # again (its weights named by their hash), not retrained, not retested,
    # and says its weights are gone; the model is left as given.
    for name in ("last.weights.h5", "best.npz", "seeds.npz"):
        (tmp_path / "run" / name).unlink()
    bare = model(seed=3)
    given = bare.get_weights()
    state = train_run(bare, epoch=pieces.epoch, validate=pieces.validate,
                      test=pieces.test, rule=rule, directory=tmp_path / "run",
                      verbose=0)
    assert pieces.tests == 1 and len(pieces.orders) == 5
    assert state["weights_kept"] is False
    assert state["test"] == final["test"]
    assert state["weights_sha256"] == final["weights_sha256"]
    for got, want in zip(bare.get_weights(), given):
        np.testing.assert_array_equal(got, want)


def test_a_save_is_all_or_nothing(tmp_path):
    """A run killed while saving resumes from one epoch whole: the one
    before where the save had not happened (its `next-*` files dropped),
    else the one saved (its pending files moved into place)."""
    import keras

    from keras_attention.training.loop import _Checkpoint

    def network():
        net = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        net.compile(optimizer="sgd", loss="mse")
        return net

    net = network()
    folder = tmp_path / "ck"
    _Checkpoint(folder).save(net, {"epoch": 1},
                             best_weights=net.get_weights())
    first = net.get_weights()
    later = [w + 1.0 for w in first]

    def restored():
        fresh = network()
        checkpoint = _Checkpoint(folder)
        best = checkpoint.restore(fresh)
        return checkpoint.state(), fresh.get_weights(), best

    # Killed before the save happened: the new files written, not named.
    net.set_weights(later)
    net.save_weights(folder / "next-last.weights.h5")
    np.savez(folder / "next-best.npz", *later)
    state, weights, best = restored()
    assert state == {"epoch": 1}
    for got, want, chosen in zip(weights, first, best):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(chosen, want)
    assert not list(folder.glob("next-*"))
    # Killed after it (state.json names them pending), one moved already.
    net.save_weights(folder / "next-last.weights.h5")
    (folder / "seeds.npz").replace(folder / "next-seeds.npz")
    np.savez(folder / "seeds.npz")
    (folder / "state.json").write_text(json.dumps(
        {"epoch": 2, "pending_files": ["last.weights.h5", "seeds.npz"]}))
    state, weights, best = restored()
    assert state == {"epoch": 2}
    for got, want, chosen in zip(weights, later, best):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(chosen, want - 1.0)  # best: epoch 1
    assert not list(folder.glob("next-*"))
