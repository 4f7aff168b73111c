"""The reproductions' training loop: epochs until a stopping rule says the
run is finished, the weights chosen on validation, the test split scored
once at the end, and runs longer than one sitting resumed exactly.

`train_run` owns what every reproduction shares; what an epoch is (one
pass over the data, or a fixed number of steps), how a model is validated
and tested, and the learning rate of each epoch are the caller's:

- **The stopping rule** (`StoppingRule`, part of a run's settings) alone
  decides when a run is finished: a budget of epochs, and optionally
  patience on the validation score. A time limit (`seconds`) only ends a
  *piece* of the run; the next call continues it.
- **Selection on validation:** the weights of the best validation epoch
  (ties broken by the score's further entries), or the last epoch's.
- **The test split once:** `test` is called exactly once, on the selected
  weights, when the rule finishes the run; an unfinished run has no test
  result, and a finished one is never tested again.
- **Resume:** with a `directory`, every epoch saves the model with its
  optimizer (its step, so a schedule goes on), the best weights, the data
  order's random generator and the run's state, so a run stopped anywhere
  continues as one uninterrupted run would (the same data order, the same
  schedule).
- **Pieces recorded:** each call appends where and how long it ran (the
  machine, the code version, minutes, epochs, steps).
"""

import dataclasses
import datetime
import hashlib
import json
import os
import pathlib
import platform
import subprocess
import time

import numpy as np

from keras_attention import _validation
from keras_attention.version import __version__

SELECTIONS = ("best", "last")


@dataclasses.dataclass(frozen=True)
class StoppingRule:
    """When a run is finished.

    Args:
        epochs: the budget, the most epochs the run trains (an int >= 1).
        patience: with an int >= 1, the run also finishes after that many
            epochs without a validation score better than the best by more
            than `min_delta`; None (the default) runs the whole budget.
        min_delta: a float >= 0, the least gain that counts as better.
        minutes: with a float > 0, a time budget: the run also finishes at
            the end of the first epoch by which it has trained that many
            minutes in all (over every piece; the time of `train_run`'s
            `epoch` calls, validation not counted), once past any warm-up
            epochs (`select_from`); None (the default) has none.

    Example:

    >>> rule = StoppingRule(epochs=10, patience=2)
    >>> rule.stopped_by([0.5, 0.7, 0.6, 0.65])
    'patience: 2 epochs without a better validation score than epoch 2'
    >>> rule.stopped_by([0.5, 0.7, 0.6]) is None
    True
    >>> StoppingRule(epochs=3).stopped_by([0.1, 0.2, 0.3])
    'budget: 3 epochs'
    >>> StoppingRule(epochs=9, minutes=1.0).stopped_by([0.1], seconds=61.0)
    'budget: 1 minutes of training'
    """

    epochs: int
    patience: int | None = None
    min_delta: float = 0.0
    minutes: float | None = None

    def __post_init__(self):
        _validation.positive_int("epochs", self.epochs)
        if self.patience is not None:
            _validation.positive_int("patience", self.patience)
        _validation.non_negative_float("min_delta", self.min_delta)
        if self.minutes is not None:
            _validation.positive_float("minutes", self.minutes)

    def stopped_by(self, curve, higher_is_better=True, first=0, seconds=0.0):
        """Why a run with validation scores `curve` (one an epoch) and
        `seconds` of training in all is finished, or None while it goes
        on. Epochs before `first` (0-based) are not candidates for the
        best (see `train_run`'s `select_from`): no time budget or patience
        finishes a run before one is."""
        if len(curve) >= self.epochs:
            return f"budget: {self.epochs} epochs"
        if len(curve) <= first:
            return None
        if self.minutes is not None and seconds >= 60.0 * self.minutes:
            return f"budget: {self.minutes:g} minutes of training"
        if self.patience is None:
            return None
        best = best_epoch(curve, higher_is_better, first, self.min_delta)
        if len(curve) - 1 - best >= self.patience:
            return (f"patience: {self.patience} epochs without a better "
                    f"validation score than epoch {best + 1}")
        return None


def best_epoch(curve, higher_is_better=True, first=0, min_delta=0.0):
    """The 0-based index of the best score of `curve[first:]`: the first
    that no later score beats by more than `min_delta`."""
    sign = 1.0 if higher_is_better else -1.0
    best = first
    for index in range(first + 1, len(curve)):
        if sign * (curve[index] - curve[best]) > min_delta:
            best = index
    return best


def code_version():
    """The package's version, and the git commit of its checkout (with
    `+dirty` for uncommitted changes) when it runs from one."""
    root = pathlib.Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty=+dirty",
             "--abbrev=12"], capture_output=True, text=True, timeout=10,
            check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__} ({commit})" if commit else __version__


def machine_name():
    """The CPU's model name (Linux's `/proc/cpuinfo`, else `platform`)
    and its cores, e.g. `Intel(R) Xeon(R) Processor, 2 cores`."""
    name = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def _seed_states(model):
    """The model's random-number states (its dropout layers' and other
    `keras.random.SeedGenerator`s'), which its weights file leaves out."""
    return [variable for variable in model.variables
            if variable.path.endswith("seed_generator_state")]


def weights_sha256(directory):
    """The SHA-256 of the weights (with the optimizer) a run saved in its
    checkpoint `directory` (`last.weights.h5`): the hash a finished run's
    row names its selected weights by (`weights_sha256`).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "last.weights.h5").write_bytes(b"")
    >>> weights_sha256(folder)[:12]
    'e3b0c44298fc'
    """
    digest = hashlib.sha256()
    with open(pathlib.Path(directory) / "last.weights.h5", "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _Checkpoint:
    """A run's saved state in `directory`: `state.json`, `last.weights.h5`
    (the model and its optimizer), `seeds.npz` (the model's seed
    generators' states, so dropout and sampling go on as in one
    uninterrupted run) and `best.npz` (the selected weights).

    A save is all or nothing: the new files are written beside the old
    (`next-*`), then `state.json` is replaced at once naming them as
    pending (the moment the save happens), then they replace the old
    ones. A run killed before that moment resumes from the epoch before
    (its `next-*` files are removed); after it, from this epoch (the
    pending files are moved into place first)."""

    FILES = ("last.weights.h5", "seeds.npz", "best.npz")

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.state_path = self.directory / "state.json"
        self._recover()

    def exists(self):
        return self.state_path.is_file()

    def save(self, model, state, best_weights=None):
        self.directory.mkdir(parents=True, exist_ok=True)
        folder = self.directory
        model.save_weights(folder / "next-last.weights.h5")
        np.savez(folder / "next-seeds.npz",
                 *[np.asarray(v.value) for v in _seed_states(model)])
        pending = ["last.weights.h5", "seeds.npz"]
        if best_weights is not None:
            np.savez(folder / "next-best.npz", *best_weights)
            pending.append("best.npz")
        self.write_state({**state, "pending_files": pending})
        self._recover()

    def _recover(self):
        """Finish a save that happened (its pending files into place) or
        drop one that did not (its `next-*` files)."""
        if self.exists():
            state = json.loads(self.state_path.read_text())
            pending = state.pop("pending_files", None)
            if pending is not None:
                for name in pending:
                    written = self.directory / f"next-{name}"
                    if written.is_file():
                        written.replace(self.directory / name)
                self.write_state(state)
        for name in self.FILES:
            (self.directory / f"next-{name}").unlink(missing_ok=True)

    def write_state(self, state):
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(state, indent=1))
        temporary.replace(self.state_path)

    def state(self):
        return json.loads(self.state_path.read_text())

    def has_weights(self):
        return (self.directory / "last.weights.h5").is_file()

    def weights_sha256(self):
        """The SHA-256 of the saved model's weights (with its optimizer)."""
        return weights_sha256(self.directory)

    def restore(self, model):
        """Restore the built `model` and its optimizer; returns the best
        weights, or None."""
        if model.optimizer is not None and not model.optimizer.built:
            # Built first, the optimizer takes its variables (its step, so
            # the schedule goes on) from the weights file.
            model.optimizer.build(model.trainable_variables)
        model.load_weights(self.directory / "last.weights.h5")
        seeds = self.directory / "seeds.npz"
        if seeds.is_file():  # (checkpoints of before it lack the file)
            stored = np.load(seeds)
            for index, variable in enumerate(_seed_states(model)):
                variable.assign(stored[f"arr_{index}"])
        best = self.directory / "best.npz"
        if not best.is_file():
            return None
        stored = np.load(best)
        return [stored[f"arr_{i}"] for i in range(len(stored.files))]


def _add_counts(totals, counts):
    """Add `counts` into `totals`: numbers summed, lists concatenated (a
    per-epoch figure such as its seconds)."""
    for name, count in counts.items():
        empty = [] if isinstance(count, list) else 0
        totals[name] = totals.get(name, empty) + count


def _score(value):
    """A validation result as a tuple of floats (a float is a 1-tuple)."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    if not values or values[0] is None:
        raise ValueError(f"`validate` must return a float, a tuple of "
                         f"floats or a dict with a `score`, received: "
                         f"{value!r}")
    return tuple(float(v) for v in values)


def train_run(model, *, epoch, validate, rule, test=None, selection="best",
              higher_is_better=True, select_from=0, directory=None,
              seconds=None, seed=0, on_epoch=None, verbose=1):
    """Train `model` epoch by epoch until `rule` finishes the run (or this
    piece's `seconds` are spent); see the module's docstring.

    Args:
        model: a built, compiled `keras.Model`.
        epoch: `epoch(model, index, rng)` trains epoch `index` (0-based),
            drawing its data order from `rng` (a `numpy.random.Generator`
            the loop saves and restores), and returns a dict of counts to
            add up over the run (e.g. `{"steps": 40, "seen": 1000}`; a
            list is concatenated, e.g. `{"seconds": [12.5]}`).
        validate: `validate(model)` returns the validation score (a float)
            or a tuple whose first entry is the score and whose others
            break ties (all compared in the same direction); or a dict of
            that `score` and other validation figures (JSON-serializable),
            which are kept an epoch a line in the state's `figures`.
        rule: a `StoppingRule`.
        test: `test(model)` returns the test split's results (a
            JSON-serializable dict), called once, when the run finishes,
            on the selected weights; or None.
        selection: `"best"` (the best validation epoch's weights) or
            `"last"`.
        higher_is_better: the direction of the validation score.
        select_from: epochs before this (0-based) are not selected nor
            counted for patience (a warm-up phase that trains a different
            model, such as the memory network's linear start).
        directory: where the run is saved every epoch and resumed from, or
            None (no checkpoint, no resume).
        seconds: this piece's time budget (checked after each epoch), or
            None for no limit.
        seed: the data order's seed.
        on_epoch: `on_epoch(state)` after every epoch (its state saved),
            e.g. to write a results file of the run in progress; or None.
        verbose: 1 prints a line an epoch, 0 nothing.

    Returns:
        The run's state, a dict: `epoch` (epochs trained), `curve` (the
        validation scores), `best` (the selected epoch, 1-based, and its
        score), `finished`, `stopped_by` (the rule's reason, or None),
        `seconds` (training and validation time over every piece),
        `train_seconds` (the `epoch` calls' alone: the time budget's
        clock), `pieces`, `figures` (where `validate` returns a dict: its
        other figures, an epoch a line), `test` (the
        test results, None until the run is finished), with a `directory`
        and once finished `weights_sha256` (the hash of the saved selected
        weights, `last.weights.h5`), and the summed counts `epoch`
        returned. `model` holds the selected weights when
        the run is finished, else its last. A run found finished in
        `directory` is returned as saved, with `weights_kept`: False
        where only its `state.json` was kept (then `model` is as given).

    Example:

    >>> import keras, numpy as np
    >>> x = np.linspace(-1, 1, 64, dtype="float32")[:, None]
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    >>> def epoch(model, index, rng):
    ...     order = rng.permutation(len(x))
    ...     model.fit(x[order], 3 * x[order], batch_size=16, verbose=0)
    ...     return {"steps": 4}
    >>> state = train_run(
    ...     model, epoch=epoch, rule=StoppingRule(epochs=20, patience=2),
    ...     validate=lambda m: -m.evaluate(x, 3 * x, verbose=0),
    ...     test=lambda m: {"mse": m.evaluate(x, 3 * x, verbose=0)},
    ...     verbose=0)
    >>> state["finished"], state["test"]["mse"] < 1e-3
    (True, True)
    """
    if not isinstance(rule, StoppingRule):
        raise ValueError(f"`rule` must be a StoppingRule, received: "
                         f"rule={rule!r}")
    _validation.choice("selection", selection, SELECTIONS)
    _validation.non_negative_int("select_from", select_from)
    if select_from >= rule.epochs:
        raise ValueError(
            f"`select_from` must be below the rule's epochs ({rule.epochs}: "
            f"the run could select no epoch), received: "
            f"select_from={select_from}")
    if seconds is not None:
        _validation.positive_float("seconds", seconds)
    checkpoint = None if directory is None else _Checkpoint(directory)
    rng = np.random.default_rng(seed)
    state = {"epoch": 0, "curve": [], "scores": [], "best": None,
             "finished": False, "stopped_by": None, "seconds": 0.0,
             "train_seconds": 0.0,
             "pieces": [], "test": None, "counts": {}}
    best_weights = None
    if checkpoint is not None and checkpoint.exists():
        state = checkpoint.state()
        if state["finished"]:
            state.pop("rng", None)
            # A published run may keep its state alone (its row's
            # figures); its weights are then named by `weights_sha256`.
            state["weights_kept"] = checkpoint.has_weights()
            if state["weights_kept"]:
                best_weights = checkpoint.restore(model)
                if best_weights is not None:
                    model.set_weights(best_weights)
            if verbose:
                print(f"finished earlier ({state['stopped_by']}); "
                      f"{checkpoint.directory}", flush=True)
            return state
        best_weights = checkpoint.restore(model)
        rng.bit_generator.state = state.pop("rng")
        if verbose:
            print(f"resumed from {checkpoint.directory} at epoch "
                  f"{state['epoch']} ({state['seconds'] / 60:.1f} min "
                  f"trained)", flush=True)
    piece = {"started": datetime.datetime.now(datetime.timezone.utc)
             .isoformat(timespec="seconds"), "machine": machine_name(),
             "code": code_version(), "first_epoch": state["epoch"] + 1}
    state["pieces"].append(piece)
    started = time.perf_counter()
    sign = 1.0 if higher_is_better else -1.0

    while not state["finished"]:
        index = state["epoch"]
        epoch_started = time.perf_counter()
        counts = epoch(model, index, rng) or {}
        state["train_seconds"] = state.get("train_seconds", 0.0) + (
            time.perf_counter() - epoch_started)
        _add_counts(state["counts"], counts)
        found = validate(model)
        if isinstance(found, dict):
            figures = {key: value for key, value in found.items()
                       if key != "score"}
            state.setdefault("figures", []).append(
                {"epoch": index + 1, **figures})
            found = found.get("score")
        score = _score(found)
        state["epoch"] = index + 1
        state["curve"].append(score[0])
        state["scores"].append(list(score))
        state["seconds"] += time.perf_counter() - epoch_started
        improved = False
        if index >= select_from:
            best = state["best"]
            if (selection == "last" or best is None
                    or tuple(sign * s for s in score)
                    > tuple(sign * s for s in best["score"])):
                state["best"] = {"epoch": index + 1, "score": list(score)}
                improved = selection == "best"
                best_weights = model.get_weights() if improved else None
        state["stopped_by"] = rule.stopped_by(
            state["curve"], higher_is_better, select_from,
            state["train_seconds"])
        state["finished"] = state["stopped_by"] is not None
        if verbose:
            best = state["best"]
            print(f"epoch {index + 1}: validation {score[0]:.4f}"
                  + (f" (best {best['score'][0]:.4f}, epoch "
                     f"{best['epoch']})" if best else ""), flush=True)
        piece["last_epoch"] = state["epoch"]
        piece["minutes"] = round((time.perf_counter() - started) / 60, 2)
        # The piece's own counts: numbers only (a per-epoch list is the
        # run's, in `counts`).
        _add_counts(piece.setdefault("counts", {}), {
            name: count for name, count in counts.items()
            if not isinstance(count, list)})
        if state["finished"]:
            if best_weights is not None:
                model.set_weights(best_weights)
            if test is not None:
                state["test"] = test(model)
        if checkpoint is not None:
            checkpoint.save(model, {**state, "rng": rng.bit_generator.state},
                            best_weights if improved else None)
            if state["finished"]:
                # The published row names the selected weights by their
                # hash, so the checkpoint itself need not be kept.
                state["weights_sha256"] = checkpoint.weights_sha256()
                checkpoint.write_state({**state,
                                        "rng": rng.bit_generator.state})
        if on_epoch is not None:
            on_epoch(state)
        if seconds is not None and time.perf_counter() - started > seconds:
            break
    return state

