"""bAbI: the Universal Transformer and the memory network on the real
bAbI v1.2 tasks, beside the papers' Table 1.

Data: Facebook's bAbI QA tasks v1.2 (`--data`, or `$KERAS_ATTENTION_BABI_DIR`,
or the project's copy `../shared/data/babi`): `en/` (1k questions per task)
and `en-10k/` (10k). Each task's training file loses 10% of its stories to a
validation set (`keras_attention.data.babi.split_validation`, by seed); the
epoch kept is the one with the best validation accuracy (then the lowest
validation loss); the test file is scored once, with that epoch's weights.
Stories keep their most recent `--memory-size` sentences (50, as
Sukhbaatar et al.).

Models (`--model`):
- `universal_transformer`: `keras_attention.models.UniversalTransformerReader`
  (facts embedded with a learned multiplicative position mask, one shared
  pre-norm block applied `--steps` times, ACT unless `--no-act`, the answer
  from the mean of every position, as the authors' bAbI code);
- `memory_network`: `keras_attention.models.MemoryNetwork`, PE LS RN as
  Sukhbaatar et al. (position encoding, linear start, random noise, 3 hops,
  adjacent tying).

Settings: one model per task (default) or `--joint`, one model for every
task given, scored task by task. Every (task, seed) is one row of
`benchmarks/results/babi_<model>.json` (test accuracy and error, the epoch
chosen, validation accuracy, seconds, examples/s, the ponder times with
ACT), beside two rules with no parameters: the most frequent training
answer, and "the last possible answer the story names".

Run: `python reproductions/systems/babi.py --model universal_transformer --tasks 2
--size 10k` (one task), `--tasks all` for the 20 tasks, `--seeds 3`;
`--parallel 2` runs two seeds (or tasks) at a time, one per core;
`--batching length` trains the UT on batches of similar story lengths,
each cut to its longest story (`babi.batches_by_length`). Runs
on any Keras backend (`--backend`; by default the faster here, as
`benchmarks/babi_backends.py` measures it: TensorFlow for the UT, JAX for
the memory network).
"""

import argparse
import collections
import json
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
# benchmarks/ for harness.py; the repository for `reproductions` (and for
# the package, on a machine where it is not installed).
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import harness  # noqa: E402

from keras_attention.data import babi  # noqa: E402
from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402
from reproductions import scoreboard  # noqa: E402

MODELS = ("universal_transformer", "memory_network")
PROJECT_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / (
    "data/babi")
# benchmarks/babi_backends.py on the AMD EPYC's 2 cores (shared with other
# runs): TensorFlow trains the UT 1.45x as fast as JAX, JAX the (small)
# memory network 10x as fast as TensorFlow.
AUTO_BACKEND = {"universal_transformer": "tensorflow",
                "memory_network": "jax"}
# The papers' figures, read from their own text (docs/models/*.md cite
# them), as data: reproductions/papers/dehghani2019.json (Table 1: average
# error and failed tasks; Appendix E: the best of 10 runs of UT with
# dynamic halting per task, and the mean and spread over the 10 runs) and
# sukhbaatar2015.json (Table 1, 1k, MemN2N PE LS RN per task).
UT_PAPER = scoreboard.paper_figures("dehghani2019")
MEMN2N_PAPER = scoreboard.paper_figures("sukhbaatar2015")
FAILED_ERROR = UT_PAPER["failed_above"]  # a "failed task": more than 5%


def paper_task_error(model, task, size, setting):
    """The paper's error (%) on one task, or None where it gives none."""
    if model == "universal_transformer":
        table = UT_PAPER["tables"]["Appendix E"]
        column = table["columns"].index(f"{size} {setting}")
        row = table["rows"].get(str(task))
        return 0.0 if row is None else row[column]
    row = MEMN2N_PAPER["tables"]["Table 1"]["rows"].get(f"{size} {setting}")
    return None if row is None else row["tasks"][task - 1]


"""Rules with no parameters."""


def majority_rule(train, test):
    """The fraction of `test` answered by the most frequent training
    answer."""
    top = collections.Counter(babi.answer_token(s.answer)
                              for s in train).most_common(1)[0][0]
    return float(np.mean([babi.answer_token(s.answer) == top for s in test]))


def last_named_rule(train, test, memory_size):
    """The fraction of `test` answered by the last word of the kept story
    that is some training answer ("the last place the story names" on the
    location tasks); the majority answer when the story names none."""
    answers = collections.Counter(babi.answer_token(s.answer) for s in train)
    top = answers.most_common(1)[0][0]
    right = 0
    for sample in test:
        named = [word for text in sample.sentences[-memory_size:]
                 for word in babi.tokenize(text) if word in answers]
        guess = named[-1] if named else top
        right += guess == babi.answer_token(sample.answer)
    return right / max(len(test), 1)


"""Models."""


def build_model(args, vocabulary_size, sentence_size, seed, slots=None):
    """The compiled model; `slots`: the memory network's memory size
    (default --memory-size)."""
    import keras

    from keras_attention.models import MemoryNetwork
    from keras_attention.models import UniversalTransformerReader

    keras.utils.set_random_seed(seed)
    if args.model == "universal_transformer":
        model = UniversalTransformerReader(
            vocabulary_size=vocabulary_size, sentence_size=sentence_size,
            hidden_dim=args.hidden, num_heads=args.heads,
            intermediate_dim=args.ff, max_steps=args.steps,
            act=not args.no_act, dropout=args.dropout,
            readout=args.readout, act_style=args.act_style)
        clip = "global_clipnorm"
    else:
        model = MemoryNetwork(
            vocabulary_size, embedding_dim=args.embedding_dim,
            hops=args.hops, memory_size=slots or args.memory_size,
            random_noise=args.random_noise, seed=seed,
            attend_to_empty=args.empty_slots == "attended",
            # The reference code's encoding with its protocol (task 16:
            # 51% error on every seed with the paper's formula).
            position_encoding="reference" if args.protocol == "paper"
            else True)
        # The paper rescales each weight's gradient to norm 40 at most.
        clip = "clipnorm"
    paper = args.protocol == "paper"
    if paper and args.clip == "spectral":
        from keras_attention.training import SpectralClipSGD

        optimizer = SpectralClipSGD(args.learning_rate,
                                    clipnorm=args.clipnorm)
    elif paper:
        optimizer = keras.optimizers.SGD(args.learning_rate,
                                         **{clip: args.clipnorm})
    elif args.schedule == "rsqrt":
        from keras_attention.training import TransformerSchedule

        # tensor2tensor's `constant*linear_warmup*rsqrt_decay*
        # rsqrt_hidden_size` with constant 2: about 2e-3 at the end of
        # 8,000 warm-up steps for 128 units, then 1/sqrt(step); its Adam
        # (beta_2 0.997, epsilon 1e-9, transformer_base's).
        optimizer = keras.optimizers.Adam(
            TransformerSchedule(args.hidden, args.warmup_steps,
                                scale=args.lr_scale),
            beta_2=0.997, epsilon=1e-9, **{clip: args.clipnorm})
    else:
        optimizer = keras.optimizers.Adam(args.learning_rate,
                                          **{clip: args.clipnorm})
    if args.label_smoothing > 0:  # one-hot answers (run_group)
        loss = keras.losses.CategoricalCrossentropy(
            from_logits=True, label_smoothing=args.label_smoothing)
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True,
            # The memory network's reference code sums the loss over the
            # batch (`loss.size_average = false`), so a step's gradient is
            # 32 times the mean's and the clip at 40 acts on that.
            reduction="sum" if paper else "sum_over_batch_size")
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    return model


def paper_learning_rate(args, epoch):
    """The learning rate of `epoch` (1-based) under the memory network
    paper's protocol: `--linear-epochs` at the initial rate (the linear
    start's decay step, 21, is never reached in 20 epochs), then halved
    every `--decay-every` (`training.halving_by_epoch`)."""
    from keras_attention.training import halving_by_epoch

    return halving_by_epoch(args.learning_rate, epoch,
                            constant_epochs=args.linear_epochs,
                            every=args.decay_every)


def scoring_batches(inputs, batch_size, by_length=False):
    """The batches a set is scored in, `[(indices, slots)]`: in its order
    at every slot, or `by_length` sorted by story length, each cut to its
    longest story (`babi.batches_by_length` over one pool: the same
    answers, the UT ignoring empty slots)."""
    story = inputs["story"]  # (N, M, J)
    count, slots = story.shape[:2]
    if by_length:
        return babi.batches_by_length(
            story, np.arange(count), batch_size, np.random.default_rng(0),
            pool=max(1, -(-count // batch_size)))
    return [(np.arange(start, min(start + batch_size, count)), slots)
            for start in range(0, count, batch_size)]


def cut(inputs, indices, slots):
    """The questions `indices` of `inputs`, their stories cut to `slots`:
    `{"story": (b, slots, J), "question": (b, J)}`."""
    return {"story": inputs["story"][indices, :slots],
            "question": inputs["question"][indices]}


def predict(model, inputs, batch_size, ponder=False, by_length=False):
    """Answer ids `(N,)`, and with `ponder` the ponder times `N + R` and
    the steps taken `N`, each `(N, 1+M)` (0 in the slots a batch cut by
    length left out, which hold no sentence)."""
    import keras

    count, slots = inputs["story"].shape[:2]
    answers = np.zeros(count, "int64")
    times = np.zeros((count, 1 + slots), "float32")
    taken = np.zeros((count, 1 + slots), "float32")
    for indices, kept in scoring_batches(inputs, batch_size, by_length):
        batch = cut(inputs, indices, kept)
        if ponder:
            logits, pondered, steps = model(batch, return_ponder=True,
                                            return_steps=True)
            times[indices, :1 + kept] = keras.ops.convert_to_numpy(
                keras.ops.cast(pondered, "float32"))
            taken[indices, :1 + kept] = keras.ops.convert_to_numpy(
                keras.ops.cast(steps, "float32"))
        else:
            logits = model(batch)
        answers[indices] = np.argmax(keras.ops.convert_to_numpy(logits), -1)
    if ponder:
        return answers, times, taken
    return answers


def evaluate(model, inputs, answers, batch_size, by_length=False):
    """The loss and accuracy `model.evaluate` gives, in
    `scoring_batches`: each batch's mean (the compiled loss and the
    ponder cost, averaged over the batch's real positions), weighted by
    the batch's size. The accuracy does not depend on the batches; the
    ponder cost's part of the loss does, a little, as it does for
    `model.evaluate` at another batch size."""
    loss = accuracy = 0.0
    for indices, kept in scoring_batches(inputs, batch_size, by_length):
        batch_loss, batch_accuracy = model.test_on_batch(
            cut(inputs, indices, kept), answers[indices])
        loss += float(batch_loss) * len(indices)
        accuracy += float(batch_accuracy) * len(indices)
    return loss / len(answers), accuracy / len(answers)


def train(args, model, data, seconds_left, seed=0, checkpoint=None,
          on_epoch=None, test=None, figures=None):
    """Fit epoch by epoch with the package's loop (`training.train_run`)
    until `--epochs` (the stopping rule) or this invocation's
    `seconds_left`; the weights of the best validation accuracy (ties:
    lower loss), or with `--epoch-selection last` the last epoch's (the
    memory network paper's reference code tests the model it ends with).
    `seed` draws the data order (the paper protocol's batches with
    replacement, else a permutation an epoch). The memory network's linear
    start is a different model: its epochs are not selected.

    With a `checkpoint` folder every epoch is saved there, and a run whose
    checkpoint exists continues from it (`--resume`): the same data order
    and schedule as one uninterrupted run. `on_epoch(state)` is called
    after every epoch; `test(model)`, once, when the run finishes;
    `figures(model)`, a dict of validation figures, after every epoch
    (kept in the state's `figures`).

    Returns the loop's state (`epoch`, `curve`, `best`, `finished`,
    `test`, `seconds`, `pieces`, and the counts `seen` and `steps`)."""
    from keras_attention.training import StoppingRule
    from keras_attention.training import train_run

    (inputs, answers), (valid_inputs, valid_answers) = data
    linear = args.model == "memory_network" and args.linear_epochs > 0
    paper = args.protocol == "paper"
    if checkpoint is not None:
        _upgrade_checkpoint(checkpoint)
        if (checkpoint / "state.json").is_file():  # restored into: built
            model({key: value[:2] for key, value in inputs.items()})

    def epoch(model, index, draws):
        if linear:  # a resumed run may be past its linear start
            model.linear_start = index < args.linear_epochs
        if paper:
            model.optimizer.learning_rate.assign(
                paper_learning_rate(args, index + 1))
            # The reference code draws each batch's questions with
            # replacement, floor(N / batch) batches an epoch.
            count = len(answers) // args.batch_size * args.batch_size
            picked = draws.integers(0, len(answers), count)
        else:
            count = len(answers)
            picked = draws.permutation(count)
        if args.batching == "length":  # the UT's answers ignore empty slots
            import keras

            batches = babi.batches_by_length(
                inputs["story"], picked, args.batch_size, draws,
                multiple=1 if keras.backend.backend() == "tensorflow" else 5)
            for indices, slots in batches:
                model.train_on_batch(cut(inputs, indices, slots),
                                     answers[indices])
            return {"seen": count, "steps": len(batches)}
        model.fit({key: value[picked] for key, value in inputs.items()},
                  answers[picked], batch_size=args.batch_size, epochs=1,
                  verbose=0, shuffle=False)
        return {"seen": count, "steps": -(-count // args.batch_size)}

    def validate(model):
        if args.batching == "length":
            loss, accuracy = evaluate(model, valid_inputs, valid_answers,
                                      256, by_length=True)
        else:
            loss, accuracy = model.evaluate(valid_inputs, valid_answers,
                                            batch_size=256, verbose=0)
        score = round(float(accuracy), 4), -float(loss)
        return {"score": score, **figures(model)} if figures else score

    state = train_run(
        model, epoch=epoch, validate=validate, test=test,
        rule=StoppingRule(args.epochs, patience=args.patience,
                          minutes=args.budget_minutes),
        selection="last" if args.epoch_selection == "last" else "best",
        select_from=args.linear_epochs if linear else 0,
        directory=checkpoint, seconds=seconds_left, seed=seed,
        on_epoch=on_epoch, verbose=args.verbose)
    if args.model == "memory_network":
        model.linear_start = False
    state.update(state.pop("counts"))
    return state


def _upgrade_checkpoint(directory):
    """A checkpoint written before the package's loop (`state.json` with
    `draws` and `best` as `[accuracy, -loss, epoch]`) in the loop's form;
    the weights files are the same."""
    path = directory / "state.json"
    if not path.is_file():
        return
    old = json.loads(path.read_text())
    if "draws" not in old:
        return
    accuracy, loss, best = old["best"]
    state = {"epoch": old["epoch"], "curve": old["curve"],
             "scores": [[value] for value in old["curve"]],
             "best": {"epoch": best, "score": [accuracy, loss]},
             "finished": old["finished"], "stopped_by": None,
             "seconds": old["seconds"], "pieces": [], "test": None,
             "counts": {"seen": old["seen"], "steps": old["steps"]},
             "rng": old["draws"]}
    path.write_text(json.dumps(state, indent=1))


def vectorize(samples, vocabulary, args, sentence_size, slots=None):
    return babi.vectorize_babi(samples, vocabulary,
                               slots or args.memory_size, sentence_size)


def memory_slots(args, samples):
    """The memory network's slots: --memory-size, or with attended empty
    slots the longest training story, --memory-size at most (the
    reference code's `config.sz = min(50, size(story, 2))`)."""
    if args.model != "memory_network" or args.empty_slots != "attended":
        return args.memory_size
    return min(args.memory_size,
               max(len(sample.sentences) for sample in samples))


ROLES = ("question", "supporting", "other", "all")


def ponder_by_role(samples, ponder, steps, memory_size):
    """Mean ponder time `N + R` (the ponder cost's, `ponder`) of the
    question, of the supporting sentences, of the other sentences and of
    every position (question and sentences) over `samples` (the paper's
    bAbI figure), and of the steps taken `N` (`steps`, what tensor2tensor
    reports as ponder time, never above the cap): `ponder_question`, ...,
    `ponder_all`, `steps_question`, ..., `steps_all`."""
    found = {}
    for kind, times in (("ponder", ponder), ("steps", steps)):
        roles = {role: [] for role in ROLES}
        for sample, row in zip(samples, times):
            roles["question"].append(row[0])
            roles["all"].append(row[0])
            for slot, line in enumerate(sample.sentence_ids[-memory_size:]):
                role = ("supporting" if line in sample.supporting_ids
                        else "other")
                roles[role].append(row[1 + slot])
                roles["all"].append(row[1 + slot])
        for role, values in roles.items():
            # None where a task has no sentence of the kind (task 17).
            found[f"{kind}_{role}"] = (float(np.mean(values)) if values
                                       else None)
    return found


def vocabulary_and_sentence_size(args, loaded, tasks):
    """The run's vocabulary and sentence length (in words), over every
    split of `tasks`, as its model was built with."""
    vocabulary = babi.BabiVocabulary.from_samples(
        *[getattr(loaded[t], split) for t in tasks
          for split in ("train", "valid", "test")])
    sentence_size = max(
        len(babi.tokenize(text))
        for t in tasks for split in ("train", "valid", "test")
        for s in getattr(loaded[t], split)
        for text in s.sentences[-args.memory_size:] + (s.question,))
    return vocabulary, sentence_size


def run_group(args, tasks, loaded, seed, started, checkpoint=None,
              on_epoch=None):
    """Train one model on `tasks` (one task, or every task for --joint)
    and return a row per task (`finished`: False where the run stopped at
    its minutes before its epochs; `--resume` continues it from
    `checkpoint`). `on_epoch(state)` after every evaluation."""
    train_samples = [s for t in tasks for s in loaded[t].train]
    valid_samples = [s for t in tasks for s in loaded[t].valid]
    vocabulary, sentence_size = vocabulary_and_sentence_size(
        args, loaded, tasks)
    slots = memory_slots(args, train_samples + valid_samples)
    data = (vectorize(train_samples, vocabulary, args, sentence_size, slots),
            vectorize(valid_samples, vocabulary, args, sentence_size, slots))
    if args.label_smoothing > 0:
        import keras

        data = tuple((inputs, keras.utils.to_categorical(
            answers, len(vocabulary)).astype("float32"))
            for inputs, answers in data)
    model = build_model(args, len(vocabulary), sentence_size, seed, slots)
    act = args.model == "universal_transformer" and not args.no_act
    by_length = args.batching == "length"  # scored in such batches too
    tests = {task: vectorize(loaded[task].test, vocabulary, args,
                             sentence_size, slots) for task in tasks}

    def test(model):
        """The test split's figures, once, on the selected weights; with
        the training error of those weights, without the random noise
        (the memory network paper keeps, of its 10 runs, the one with the
        lowest training error)."""
        train_inputs, train_answers = data[0]
        if train_answers.ndim == 2:  # one-hot
            train_answers = np.argmax(train_answers, -1)
        predicted = predict(model, train_inputs, 256, ponder=act,
                            by_length=by_length)
        figures = {"train_error": 100.0 * (1.0 - float(np.mean(
            (predicted[0] if act else predicted) == train_answers)))}
        for task, (inputs, answers) in tests.items():
            result = predict(model, inputs, 256, ponder=act,
                             by_length=by_length)
            accuracy = float(np.mean((result[0] if act else result)
                                     == answers))
            figures[str(task)] = {"test_accuracy": accuracy,
                                  "test_error": 100.0 * (1.0 - accuracy)}
            if act:
                figures[str(task)].update(ponder_by_role(
                    loaded[task].test, result[1], result[2],
                    args.memory_size))
        return figures

    def validation_steps(model):
        """The steps taken (N) by role, over the validation stories: the
        halting as it trains (the test split's are the row's figures)."""
        _, pondered, steps = predict(model, data[1][0], 256, ponder=True,
                                     by_length=by_length)
        found = ponder_by_role(valid_samples, pondered, steps,
                               args.memory_size)
        steps = {role: round(found[f"steps_{role}"], 3) for role in ROLES
                 if found[f"steps_{role}"] is not None}
        if args.verbose:
            print("validation steps taken: " + ", ".join(
                f"{role} {value:.2f}" for role, value in steps.items()),
                flush=True)
        return steps

    state = train(args, model, data, args.minutes * 60.0, seed=seed,
                  checkpoint=checkpoint, on_epoch=on_epoch, test=test,
                  figures=validation_steps if act else None)
    best_epoch, valid_accuracy = state["best"]["epoch"], \
        state["best"]["score"][0]
    epochs, seen, curve = state["epoch"], state["seen"], state["curve"]
    seconds = state["seconds"]
    figures = state["test"]  # None until the run is finished
    rows = []
    for task in tasks:
        test_split = loaded[task].test
        row = {
            "model": args.model, "task": task, "size": args.size,
            "setting": "joint" if args.joint else "single", "seed": seed,
            "test_accuracy": None, "test_error": None,
            "paper_error": paper_task_error(
                args.model, task, args.size,
                "joint" if args.joint else "single"),
            "best_epoch": best_epoch, "epochs": epochs,
            "valid_accuracy": float(valid_accuracy), "train_error": None,
            "steps": state["steps"], "minutes": seconds / 60.0,
            "finished": state["finished"],
            "stopped_by": state["stopped_by"],
            "valid_curve": curve,
            "train_questions": len(train_samples),
            "seconds": seconds,
            "examples_per_s": seen / max(seconds, 1e-9),
            "majority_rule": majority_rule(loaded[task].train, test_split),
            "last_named_rule": last_named_rule(
                loaded[task].train, test_split, args.memory_size),
            "pieces": state["pieces"],
            "weights_sha256": state.get("weights_sha256"),
        }
        if state.get("figures"):  # ACT: the validation steps an epoch
            row["valid_steps"] = {key: [line.get(key) for line in
                                        state["figures"]]
                                  for key in ("epoch", *ROLES)}
        if figures is not None:
            row.update(figures[str(task)],
                       train_error=figures["train_error"])
        rows.append(row)
        tested = ("unfinished: no test figure" if figures is None else
                  f"test error {row['test_error']:5.1f}%")
        print(f"{args.model} task {task:2d} {args.size} {row['setting']} "
              f"seed {seed}: {tested} (epoch "
              f"{best_epoch}/{epochs}, validation {valid_accuracy:.1%}; "
              f"rules: majority {row['majority_rule']:.1%}, last named "
              f"{row['last_named_rule']:.1%}"
              + ("; ponder q/supporting/other " + " / ".join(
                  "—" if row.get(name) is None else f"{row[name]:.2f}"
                  for name in ("ponder_question", "ponder_supporting",
                               "ponder_other"))
                 if act and figures is not None else "")
              + f"; {seconds:.0f} s, {row['examples_per_s']:.0f} ex/s; "
              f"{(time.perf_counter() - started) / 60:.1f} min in all)",
              flush=True)
    return rows, model, vocabulary, sentence_size


def summary(rows):
    """Per setting: mean test error over tasks (mean over seeds first),
    the failed tasks, the seeds' spread of the mean."""
    out = []
    keys = sorted({(r["model"], r["size"], r["setting"]) for r in rows})
    for model, size, setting in keys:
        group = [r for r in rows if (r["model"], r["size"], r["setting"])
                 == (model, size, setting)]
        tasks = sorted({r["task"] for r in group})
        seeds = sorted({r["seed"] for r in group})
        per_task = {t: float(np.mean([r["test_error"] for r in group
                                      if r["task"] == t])) for t in tasks}
        per_seed = [np.mean([r["test_error"] for r in group
                             if r["seed"] == s]) for s in seeds
                    if all(any(r["seed"] == s and r["task"] == t
                               for r in group) for t in tasks)]
        # The papers report the best of 10 runs per task; ours is the
        # seed with the best validation accuracy, never the test's.
        chosen = {t: max((r for r in group if r["task"] == t),
                         key=lambda r: (r["valid_accuracy"], -r["seed"]))
                  for t in tasks}
        entry = {
            "model": model, "size": size, "setting": setting,
            "tasks": tasks, "seeds": len(seeds),
            "best_of_seeds_error": float(np.mean(
                [chosen[t]["test_error"] for t in tasks])),
            "best_of_seeds_per_task": {t: chosen[t]["test_error"]
                                       for t in tasks},
            "best_of_seeds_failed": [t for t in tasks if
                                     chosen[t]["test_error"] > FAILED_ERROR],
            "mean_error": float(np.mean(list(per_task.values()))),
            "seed_spread": float(np.std(per_seed, ddof=1))
            if len(per_seed) > 1
            else 0.0,
            "failed": [t for t, e in per_task.items() if e > FAILED_ERROR],
            "per_task": per_task,
        }
        if all("train_error" in r for r in group):
            # The memory network paper's selection: of the runs of a
            # task, the one with the lowest training error (ties: the
            # better validation, then the lower seed).
            by_train = {t: min((r for r in group if r["task"] == t),
                               key=lambda r: (r["train_error"],
                                              -r["valid_accuracy"],
                                              r["seed"]))
                        for t in tasks}
            entry.update({
                "best_of_seeds_by_train_error": float(np.mean(
                    [by_train[t]["test_error"] for t in tasks])),
                "best_of_seeds_by_train_error_per_task": {
                    t: by_train[t]["test_error"] for t in tasks},
                "best_of_seeds_by_train_error_failed": [
                    t for t in tasks
                    if by_train[t]["test_error"] > FAILED_ERROR],
            })
        entry["task_table"] = [task_line(
            [r for r in group if r["task"] == t], chosen[t],
            by_train[t] if "best_of_seeds_by_train_error" in entry else None)
            for t in tasks]
        out.append(entry)
    return out


def task_line(runs, chosen, by_train):
    """One task's line of the rendered table: the mean error over seeds
    and its spread (sample s.d.; None for one seed), the seeds chosen by
    validation and by training error, the paper's, the two rules with no
    parameters, the epochs kept, the examples/s and ACT's ponder times
    `N + R` and steps `N` (None where no sentence of that kind was
    pondered)."""
    errors = [r["test_error"] for r in runs]

    def mean(name):
        values = [r.get(name) for r in runs]
        values = [v for v in values if v is not None and v == v]
        return float(np.mean(values)) if values else None

    return {
        "task": runs[0]["task"], "error": float(np.mean(errors)),
        "spread": float(np.std(errors, ddof=1)) if len(errors) > 1 else None,
        "best_by_validation": chosen["test_error"],
        "best_by_train_error": None if by_train is None
        else by_train["test_error"],
        "paper": runs[0]["paper_error"],
        "last_named_rule": 100 * (1 - runs[0]["last_named_rule"]),
        "majority_rule": 100 * (1 - runs[0]["majority_rule"]),
        "epochs_kept": [r["best_epoch"] for r in runs],
        "examples_per_s": mean("examples_per_s"),
        **{f"{kind}_{role}": mean(f"{kind}_{role}")
           for kind in ("ponder", "steps")
           for role in ("question", "supporting", "other")},
    }


def plot_ponder_story(model, loaded, task, vocabulary, sentence_size, args,
                      path):
    """The ponder times of the first test question of `task` with two or
    more supporting facts (else the first), drawn as the paper's figure."""
    from keras_attention import visualize

    test = loaded[task].test
    sample = next((s for s in test if len(s.supporting_ids) > 1), test[0])
    kept = min(len(sample.sentences), args.memory_size)
    sample = sample._replace(sentences=sample.sentences[-kept:],
                             sentence_ids=sample.sentence_ids[-kept:])
    inputs, _ = vectorize([sample], vocabulary, args, sentence_size)
    _, ponder, _ = predict(model, inputs, 1, ponder=True)
    supporting = [i for i, line in enumerate(sample.sentence_ids)
                  if line in sample.supporting_ids]
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    visualize.plot_ponder(sample.question, sample.sentences, ponder[0],
                          supporting, answer=sample.answer, path=path)
    print(f"ponder picture: {path}")


def parse_tasks(text):
    if text == "all":
        return list(range(1, 21))
    try:
        tasks = [int(value) for value in text.split(",") if value]
    except ValueError:
        tasks = []
    if not tasks or any(task not in babi.TASK_NAMES for task in tasks):
        raise argparse.ArgumentTypeError(
            f"must be 'all' or task numbers 1..20 separated by commas, "
            f"received: {text!r}")
    return sorted(set(tasks))


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS, default="universal_transformer")
    p.add_argument("--tasks", type=parse_tasks, default=[2],
                   help="'all' or task numbers, e.g. 1,2,3 (default: 2)")
    p.add_argument("--size", choices=babi.SIZES, default="1k")
    p.add_argument("--joint", action="store_true",
                   help="one model for every task given")
    p.add_argument("--data", default=None,
                   help="the release's root (holding en/ and en-10k/); "
                        "default $KERAS_ATTENTION_BABI_DIR, then "
                        "../shared/data/babi")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--split-seed", type=int, default=0,
                   help="the seed of the validation split (the same for "
                        "every run, so seeds run in pieces share it)")
    p.add_argument("--epochs", type=int, default=None,
                   help="default: 60 (UT); memory network: 120 (the "
                        "paper's 20 linear start + 100; joint 30 + 60), "
                        "90 with --protocol adam")
    p.add_argument("--patience", type=int, default=None,
                   help="the stopping rule's patience: a run also finishes "
                        "after this many epochs without a better validation "
                        "accuracy (default: none, all --epochs)")
    p.add_argument("--budget-minutes", type=float, default=None,
                   help="the stopping rule's time budget: a run also "
                        "finishes after this many minutes of training over "
                        "all its pieces (default: none)")
    p.add_argument("--minutes", type=float, default=30.0,
                   help="the most minutes of training per model in this "
                        "invocation (--resume continues it)")
    p.add_argument("--memory-size", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=None,
                   help="default: 64 (UT), 32 (memory network)")
    p.add_argument("--learning-rate", type=float, default=None,
                   help="default: 1e-3 (UT), 5e-3 (memory network, both "
                        "protocols)")
    p.add_argument("--clipnorm", type=float, default=None,
                   help="default: 5 (UT), 40 (memory network, the paper's)")
    ut = p.add_argument_group("universal_transformer")
    ut.add_argument("--hidden", type=int, default=128)
    ut.add_argument("--heads", type=int, default=4)
    ut.add_argument("--ff", type=int, default=256)
    ut.add_argument("--steps", type=int, default=6,
                    help="the most recurrent steps")
    ut.add_argument("--no-act", action="store_true")
    ut.add_argument("--dropout", type=float, default=0.1)
    ut.add_argument("--readout", choices=("mean", "question"),
                    default="mean")
    ut.add_argument("--act-style", choices=("graves", "tensor2tensor"),
                    default="graves",
                    help="ACT as Graves (default: the halting unit on a "
                         "unit-norm input, a remainder at the cap, the "
                         "weighted sum) or as the authors' tensor2tensor "
                         "code (UniversalTransformerReader's act_style)")
    ut.add_argument("--schedule", choices=("rsqrt", "constant"),
                    default="rsqrt",
                    help="rsqrt (default, the authors' tensor2tensor "
                         "schedule): linear warm-up over --warmup-steps "
                         "to --lr-scale / sqrt(hidden * warmup), then "
                         "1/sqrt(step); constant: --learning-rate")
    ut.add_argument("--warmup-steps", type=int, default=8000)
    ut.add_argument("--lr-scale", type=float, default=2.0)
    ut.add_argument("--batching", choices=("random", "length"),
                    default="random",
                    help="random (default): batches in the epoch's drawn "
                         "order, every story at --memory-size slots; "
                         "length: that order cut into pools of 50 batches, "
                         "each sorted by story length, the batches "
                         "shuffled and each cut to its longest story "
                         "(keras_attention.data.babi.batches_by_length: "
                         "the same model, an epoch of 1k joint in about a "
                         "fifth of the time; tensor2tensor batches by "
                         "length too)")
    ut.add_argument("--label-smoothing", type=float, default=None,
                    help="default: 0.1 (UT, tensor2tensor's), 0 (memory "
                         "network)")
    mn = p.add_argument_group("memory_network")
    mn.add_argument("--protocol", choices=("paper", "adam"),
                    default="paper",
                    help="paper (default): Sukhbaatar et al.'s, as their "
                         "reference code (facebook/MemNN, "
                         "MemN2N-babi-matlab) runs it: its position "
                         "encoding, SGD, the linear "
                         "start, then the rate halved every --decay-every "
                         "epochs, the loss summed over the batch, each "
                         "weight's gradient clipped at norm 40, batches "
                         "drawn with replacement, the last epoch's "
                         "weights; adam: Adam at a constant rate, the "
                         "batch-mean loss, the epoch of best validation "
                         "(this project's earlier protocol)")
    mn.add_argument("--clip", choices=("spectral", "frobenius"),
                    default="spectral",
                    help="--protocol paper: the norm the clip at "
                         "--clipnorm measures a weight matrix's gradient "
                         "by: spectral (default, the reference code's "
                         "MATLAB norm) or frobenius (Keras's clipnorm)")
    mn.add_argument("--embedding-dim", type=int, default=None,
                    help="default: 20 (single, the paper's; 40 with "
                         "--protocol adam), 50 (joint, the paper's)")
    mn.add_argument("--hops", type=int, default=3)
    mn.add_argument("--linear-epochs", type=int, default=None,
                    help="epochs of linear start, within --epochs "
                         "(default: 20, joint 30, adam 30)")
    mn.add_argument("--decay-every", type=int, default=None,
                    help="--protocol paper: halve the rate every this "
                         "many epochs after the linear start (default: "
                         "25, joint 15)")
    mn.add_argument("--epoch-selection", choices=("validation", "last"),
                    default=None,
                    help="the weights tested: the epoch of best "
                         "validation accuracy, or the last (default: last "
                         "with --protocol paper, else validation)")
    mn.add_argument("--random-noise", type=float, default=0.1)
    mn.add_argument("--empty-slots", choices=("attended", "masked"),
                    default=None,
                    help="attended (default with --protocol paper, as its "
                         "reference code): a story's empty memory slots "
                         "take part in the softmax with score 0, and a "
                         "model has as many slots as the longest training "
                         "story (--memory-size at most); masked (default "
                         "with --protocol adam): they get no attention")
    p.add_argument("--backend", choices=("auto", "jax", "tensorflow",
                                          "torch"), default="auto",
                   help="auto: the faster on 2 CPU cores by "
                        "benchmarks/babi_backends.py, TensorFlow for the "
                        "UT, JAX for the memory network")
    p.add_argument("--plot", metavar="FILE",
                   help="UT with ACT: the ponder times of a test story of "
                        "--plot-task (PNG)")
    p.add_argument("--plot-task", type=int, default=None,
                   help="the task of --plot's story (default: the first)")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--resume", action="store_true",
                   help="continue the runs of the results file from their "
                        "checkpoints (the same command, and --minutes for "
                        "this piece): finished runs are kept, a stopped "
                        "one goes on with the same data order and "
                        "schedule")
    p.add_argument("--checkpoint-dir", default=None,
                   help="where each run's checkpoint is kept, saved and "
                        "the results file rewritten after every epoch "
                        "(default: runs/babi for the UT; none for the "
                        "memory network, whose runs take seconds, unless "
                        "--resume)")
    p.add_argument("--checkpoint-name", default=None,
                   help="the checkpoints' folder in --checkpoint-dir "
                        "(default: the results name)")
    p.add_argument("--parallel", type=int, default=1,
                   help="runs at a time, each in a process of its own "
                        "pinned to one core, its output in --logs (one "
                        "run per core trains more per second on 2 cores "
                        "than one run over both); default 1: one after "
                        "another in this process")
    p.add_argument("--logs", default="runs/babi/logs",
                   help="with --parallel: each run's output (NAME.log)")
    harness.add_results_arguments(p, "babi_<model>")
    return p


def finish_arguments(p, args):
    ut = args.model == "universal_transformer"
    if ut:  # the memory network's protocols do not apply
        args.protocol = "adam"
    paper = args.protocol == "paper"
    if paper:  # config_babi.m and config_babi_joint.m
        linear, decay = (30, 15) if args.joint else (20, 25)
        epochs = linear + (60 if args.joint else 100)
    else:
        linear, decay, epochs = 30, 25, 60 if ut else 90
    defaults = dict(epochs=epochs, batch_size=64 if ut else 32,
                    learning_rate=1e-3 if ut else 5e-3,
                    clipnorm=5.0 if ut else 40.0,
                    embedding_dim=50 if args.joint else (
                        20 if paper else 40),
                    linear_epochs=linear, decay_every=decay,
                    epoch_selection="last" if paper else "validation",
                    label_smoothing=0.1 if ut else 0.0,
                    empty_slots="attended" if paper else "masked")
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("seeds", "epochs", "memory_size", "batch_size", "hidden",
                 "heads", "ff", "steps", "embedding_dim", "hops",
                 "decay_every", "parallel") + tuple(
                     name for name in ("patience", "budget_minutes")
                     if getattr(args, name) is not None):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, name)!r}")
    if args.checkpoint_dir is None and (ut or args.resume):
        args.checkpoint_dir = "runs/babi"
    if not 0.0 <= args.label_smoothing < 1.0:
        p.error("--label-smoothing must be in [0, 1), received: "
                f"{args.label_smoothing!r}")
    for name in ("minutes", "learning_rate", "clipnorm", "lr_scale",
                 "warmup_steps"):
        if not getattr(args, name) > 0:
            p.error(f"--{name.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, name)!r}")
    if ut and args.hidden % args.heads:
        p.error(f"--hidden must be divisible by --heads, received: "
                f"--hidden {args.hidden} --heads {args.heads}")
    if args.batching == "length" and not ut:
        p.error("--batching length needs --model universal_transformer "
                "(a memory network's empty slots may take attention), "
                f"received: --model {args.model}")
    if args.plot and (not ut or args.no_act):
        p.error("--plot draws ACT's ponder times: it needs --model "
                "universal_transformer without --no-act")
    if args.plot_task is None:
        args.plot_task = args.tasks[0]
    elif args.plot_task not in args.tasks:
        p.error(f"--plot-task must be one of --tasks {args.tasks}, "
                f"received: {args.plot_task}")
    if args.data is None and not os.environ.get(babi.ENVIRONMENT_VARIABLE):
        if PROJECT_DATA.is_dir():
            args.data = str(PROJECT_DATA)
    return args


SETTINGS_NOT_COMPARED = ("results_dir", "results_name", "verbose", "minutes",
                         "resume", "seeds", "plot", "plot_task",
                         "checkpoint_dir", "checkpoint_name", "parallel",
                         "logs")


def tested_rows(rows):
    """The rows of finished runs, which alone have a test figure."""
    return [row for row in rows if row.get("finished", True)
            and row.get("test_error") is not None]


def write(args, name, rows, command, complete, in_progress=None,
          commands=None):
    # A run of a setting records the setting (harness.SETTING); a command
    # typed by hand records its options.
    settings = {} if harness.SETTING else {"settings": {
        key: value for key, value in vars(args).items()
        if key not in ("results_dir", "results_name", "verbose")}}
    harness.write_results(
        name, rows, directory=args.results_dir, summary=summary(
            tested_rows(rows)), complete=complete,
        in_progress=in_progress or [], commands=commands or [command],
        **settings)


def checkpoint_for(args, name, seed, tasks):
    """The run's checkpoint folder: `--checkpoint-dir` (default
    runs/babi/), then `--checkpoint-name` (default: the results name),
    then the run's size, tasks and seed."""
    return (pathlib.Path(args.checkpoint_dir) / (args.checkpoint_name or name)
            / run_label(args, seed, tasks))


def complete(rows, runs):
    """Whether every run of the command (`runs`, `[(seed, tasks)]`) has
    finished: a finished row for each of its tasks (whatever order the
    pieces finished them in)."""
    finished = {(row["seed"], row["task"]) for row in rows
                if row.get("finished", True)}
    return all((seed, task) in finished for seed, tasks in runs
               for task in tasks)


def run_label(args, seed, tasks):
    """A run's name within its command: size, tasks, seed."""
    label = "joint" if args.joint else "task" + "-".join(map(str, tasks))
    return f"{args.size}-{label}-seed{seed}"


def in_progress(args, name, rows, runs, training=()):
    """The entries of `runs` (seed, tasks) that `rows` do not hold
    finished, begun or not: what the results file lists as in progress,
    so it stays off the scoreboard until every run of its command is
    finished (none without checkpoints, which alone let a run go on).
    `training`: the fuller entries of runs training now (their epoch and
    curve), given first and in place of theirs."""
    if not args.checkpoint_dir:
        return []
    entries = list(training)
    begun = {(entry["seed"], tuple(entry["tasks"])) for entry in training}
    for seed, tasks in runs:
        mine = [row for row in rows if row["seed"] == seed
                and row["task"] in tasks]
        if (seed, tuple(tasks)) not in begun and (not mine or not all(
                row.get("finished", True) for row in mine)):
            entries.append({"seed": seed, "tasks": tasks, "checkpoint": str(
                checkpoint_for(args, name, seed, tasks))})
    return entries


def run_apart(args, argv, name, rows, runs, command, commands):
    """`runs` (seed, tasks), each in a process of its own, --parallel at
    a time, each pinned to a core (`processes.run_pinned`): this script
    with the same options for one seed and task group, its checkpoint
    where this command keeps it. The results file is written as each
    run finishes and, with checkpoints, after each epoch of any (its
    runs in progress as their own processes last wrote them); returns
    all the rows."""
    base = common.strip_options(argv, (
        "--parallel", "--seed", "--seeds", "--tasks", "--results-dir",
        "--results-name", "--plot", "--plot-task", "--logs",
        "--checkpoint-dir", "--checkpoint-name"))
    jobs = []
    for seed, tasks in runs:
        job = base + ["--seed", str(seed), "--seeds", "1", "--tasks",
                      ",".join(map(str, tasks))]
        if args.checkpoint_dir:
            job += ["--checkpoint-dir", str(args.checkpoint_dir),
                    "--checkpoint-name", args.checkpoint_name or name]
        if args.plot and seed == args.seed and args.plot_task in tasks:
            job += ["--plot", args.plot, "--plot-task", str(args.plot_task)]
        jobs.append((f"{name}-{run_label(args, seed, tasks)}", job))
    print(f"{len(jobs)} runs, {args.parallel} at a time, each on a core of "
          f"its own; their output in {args.logs}/", flush=True)
    done = []  # the rows of the runs finished (or stopped) so far

    def on_rows(new, running=()):
        done[:] = new
        write(args, name, rows + done, command, complete=False,
              commands=commands, in_progress=in_progress(
                  args, name, rows + done, runs, training=[
                      entry for record in running
                      for entry in record.get("in_progress", [])]))

    on_rows([])  # the runs of this piece, listed before they begin
    found = processes.run_pinned(
        pathlib.Path(__file__), jobs, args.parallel, args.logs,
        on_rows=on_rows, on_progress=lambda records: on_rows(
            done, records.values()))
    return rows + [row for job_rows in found for row in job_rows]


def results_path(args, name):
    """The results file `benchmarks/results/NAME.json` (or --results-dir)."""
    return pathlib.Path(args.results_dir or harness.RESULTS_DIR) / (
        f"{name}.json")


def resumable(p, args, name):
    """With `--resume`: the earlier file's rows (the runs it finished) and
    commands; an error where its settings differ from these."""
    path = results_path(args, name)
    if not args.resume or not path.is_file():
        return [], []
    record = json.loads(path.read_text())
    earlier = record.get("settings", {})  # none where the runner compared
    now = vars(args)
    differ = [key for key in earlier if key not in SETTINGS_NOT_COMPARED
              and key in now and earlier[key] != now[key]]
    if differ:
        p.error("--resume continues a run with the same settings; "
                f"{path} differs in: " + ", ".join(
                    f"--{key.replace('_', '-')} {earlier[key]!r} there, "
                    f"{now[key]!r} here" for key in differ))
    rows = [r for r in record["rows"] if r.get("finished", True)]
    return rows, record.get("commands", [record["command"]])


def main(argv=None):
    p = parser()
    args = finish_arguments(p, p.parse_args(argv))
    if args.backend == "auto":  # $KERAS_BACKEND, else the faster here
        args.backend = os.environ.get("KERAS_BACKEND",
                                      AUTO_BACKEND[args.model])
    os.environ["KERAS_BACKEND"] = args.backend
    try:
        loaded = babi.load_tasks(args.data, args.tasks, args.size,
                                 seed=args.split_seed)
    except (FileNotFoundError, ValueError) as error:
        p.error(str(error).strip("'\""))
    name = args.results_name or f"babi_{args.model}"
    rows, commands = resumable(p, args, name)
    print(f"machine: {harness.machine()}")
    print(f"{args.model}, bAbI {args.size}, tasks {args.tasks}, "
          f"{'joint' if args.joint else 'single-task'}, {args.seeds} "
          f"seed(s), at most {args.epochs} epochs or {args.minutes:g} "
          "minutes per model" + (" this time" if args.resume else ""),
          flush=True)
    started = time.perf_counter()
    groups = [args.tasks] if args.joint else [[task] for task in args.tasks]
    command = "python reproductions/systems/babi.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    commands = commands + [command]
    runs = [(seed, tasks) for seed in range(args.seed, args.seed + args.seeds)
            for tasks in groups]
    done_before = {(r["seed"], r["task"]) for r in rows}
    todo = [(seed, tasks) for seed, tasks in runs
            if not all((seed, task) in done_before for task in tasks)]
    if not todo:  # resumed after its last run finished: the file says so
        print("every run of the command has finished", flush=True)
        write(args, name, rows, command, commands=commands,
              complete=complete(rows, runs),
              in_progress=in_progress(args, name, rows, runs))
    if args.parallel > 1 and len(todo) > 1:
        rows = run_apart(args, sys.argv[1:] if argv is None else list(argv),
                         name, rows, todo, command, commands)
        todo = []
        write(args, name, rows, command, commands=commands,
              complete=complete(rows, runs),
              in_progress=in_progress(args, name, rows, runs))
    for seed, tasks in runs:
        if (seed, tasks) not in todo:
            continue
        checkpoint = None
        if args.checkpoint_dir:
            checkpoint = checkpoint_for(args, name, seed, tasks)
            if not args.resume and checkpoint.exists():
                import shutil

                shutil.rmtree(checkpoint)  # a new run

        def on_epoch(state, seed=seed, tasks=tasks, rows=rows,
                     checkpoint=checkpoint):
            write(args, name, rows, command, complete=False,
                  commands=commands, in_progress=in_progress(
                      args, name, rows, runs, training=[{
                          "seed": seed, "tasks": tasks,
                          "epoch": state["epoch"], **state["counts"],
                          "curve": state["curve"], "best": state["best"],
                          "minutes": state["seconds"] / 60.0,
                          "checkpoint": str(checkpoint)}]))

        if checkpoint is None:
            on_epoch = None  # short runs: no file per epoch

        new, model, vocabulary, sentence_size = run_group(
            args, tasks, loaded, seed, started, checkpoint=checkpoint,
            on_epoch=on_epoch)
        rows += new
        if args.plot and seed == args.seed and args.plot_task in tasks:
            plot_ponder_story(model, loaded, args.plot_task, vocabulary,
                              sentence_size, args, args.plot)
        # Written after every model, so a stopped sweep keeps its rows; a
        # run stopped at its minutes stays in progress (its checkpoint
        # kept) until a later piece finishes it.
        write(args, name, rows, command, commands=commands,
              complete=complete(rows, runs),
              in_progress=in_progress(args, name, rows, runs))
    tested = [r for r in rows if r.get("test_error") is not None]
    for group in summary(tested):
        print(f"{group['model']} {group['size']} {group['setting']}: mean "
              f"test error {group['mean_error']:.2f}% over "
              f"{len(group['tasks'])} tasks, {group['seeds']} seed(s) "
              f"(spread {group['seed_spread']:.2f}), failed (> 5%): "
              f"{group['failed']}")
    if not all(r.get("finished", True) for r in rows):
        print("stopped at --minutes before --epochs: continue with the "
              "same command and --resume")
    return rows


if __name__ == "__main__":
    main()
