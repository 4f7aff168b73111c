"""The steps the Universal Transformer's halting takes on bAbI task 2, by
a sentence's role (a supporting fact or another sentence) and its kind
(a move: went, moved, journeyed, travelled; a take: got, grabbed, picked
up, took; a drop: dropped, discarded, left, put down): whether the
halting follows what the question needs or the kind of sentence.

It reads the finished runs of a halting setting from their checkpoint
folders (each finished run's `last.weights.h5` holds its selected
weights, named in its results row by `weights_sha256`: a folder whose
weights no finished row names is refused), answers the validation
stories with each (the accuracy must be the row's `valid_accuracy`, so
the weights are the row's) and counts the steps taken `N` of every
sentence, by role and kind. Validation stories: the test split is the
runs' own, scored once. Writes `benchmarks/results/babi_halting_kinds.json`
(a row per seed, role and kind; the summary, mean and sample spread over
the seeds).

Run: `python benchmarks/babi_halting_kinds.py --checkpoints
DIR[,DIR...] [--setting babi_universal_transformer_10k_task2_halting]`.
"""

import argparse
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(2, str(pathlib.Path(__file__).resolve().parents[1]
                       / "reproductions" / "systems"))  # the systems

import harness  # noqa: E402
import numpy as np  # noqa: E402

NAME = "babi_halting_kinds"
# Task 2's verbs (the second word of every sentence of the release).
KINDS = {"move": ("went", "moved", "journeyed", "travelled"),
         "take": ("got", "grabbed", "picked", "took"),
         "drop": ("dropped", "discarded", "left", "put")}
VERB_KIND = {verb: kind for kind, verbs in KINDS.items() for verb in verbs}
ROLES = ("supporting", "other")


def sentence_kind(text):
    """The kind of a task-2 sentence by its verb (`Mary got the milk.`:
    `take`); a ValueError naming a sentence of no known kind."""
    words = text.split()
    kind = VERB_KIND.get(words[1] if len(words) > 1 else "")
    if kind is None:
        raise ValueError(f"a sentence of no known kind (its verb is none "
                         f"of {', '.join(VERB_KIND)}): {text!r}")
    return kind


def steps_by_kind(samples, steps, memory_size):
    """`{(role, kind): [steps taken, one per sentence]}` over `samples`
    (`steps`: `(N, 1 + M)`, the question's then the story slots'), the
    last `memory_size` sentences of each story as the model read them."""
    found = {(role, kind): [] for role in ROLES for kind in KINDS}
    for sample, row in zip(samples, steps):
        kept = zip(sample.sentence_ids[-memory_size:],
                   sample.sentences[-memory_size:])
        for slot, (line, text) in enumerate(kept):
            role = "supporting" if line in sample.supporting_ids else "other"
            found[role, sentence_kind(text)].append(float(row[1 + slot]))
    return found


def finished_row(record, folder):
    """The finished row of `record` whose `weights_sha256` is that of
    `folder`'s `last.weights.h5`; a ValueError where none is."""
    weights = pathlib.Path(folder) / "last.weights.h5"
    if not weights.is_file():
        raise ValueError(f"--checkpoints: {folder} holds no "
                         "last.weights.h5")
    from keras_attention.training import weights_sha256

    digest = weights_sha256(folder)
    for row in record["rows"]:
        if row.get("finished") and row.get("weights_sha256") == digest:
            return row
    raise ValueError(f"--checkpoints: the weights in {folder} (sha256 "
                     f"{digest[:12]}...) are no finished run's of "
                     f"{record['benchmark']}")


def measure(args, system, setting, record, folders):
    """The rows: per checkpoint folder (seed), role and kind, the
    sentences counted and their mean steps taken."""
    from keras_attention.data import babi
    from reproductions import runner

    options = system.parser()
    run = system.finish_arguments(options, options.parse_args(
        runner.argv(setting) + (["--data", args.data] if args.data else [])))
    if (run.model != "universal_transformer" or run.no_act
            or len(run.tasks) != 1):
        raise ValueError(
            f"--setting: {setting['results']} must train the Universal "
            f"Transformer with halting on one task, received: --model "
            f"{run.model}{' --no-act' if run.no_act else ''} --tasks "
            f"{','.join(map(str, run.tasks))}")
    (task,) = run.tasks
    loaded = babi.load_tasks(run.data, [task], run.size,
                             seed=run.split_seed)
    vocabulary, sentence_size = system.vocabulary_and_sentence_size(
        run, loaded, [task])
    valid = loaded[task].valid
    inputs, answers = system.vectorize(valid, vocabulary, run,
                                       sentence_size)
    rows = []
    for folder, row in zip(folders, (finished_row(record, folder)
                                     for folder in folders)):
        model = system.build_model(run, len(vocabulary), sentence_size,
                                   row["seed"])
        model({key: value[:2] for key, value in inputs.items()})
        model.optimizer.build(model.trainable_variables)  # in the file
        model.load_weights(pathlib.Path(folder) / "last.weights.h5")
        predicted, _, steps = system.predict(
            model, inputs, 256, ponder=True,
            by_length=run.batching == "length")
        accuracy = float(np.mean(predicted == answers))
        if round(accuracy, 4) != round(row["valid_accuracy"], 4):
            raise ValueError(
                f"--checkpoints: {folder} answers {accuracy:.4f} of the "
                f"validation stories, its row {row['valid_accuracy']:.4f}")
        for (role, kind), values in steps_by_kind(
                valid, steps, run.memory_size).items():
            rows.append({"seed": row["seed"], "role": role, "kind": kind,
                         "sentences": len(values),
                         "steps": float(np.mean(values)) if values
                         else None})
        print(f"seed {row['seed']}: validation accuracy {accuracy:.4f}",
              flush=True)
    return rows


def matched(rows, seed):
    """Seed `seed`'s steps of the supporting facts and of the other
    sentences over every kind, and the other sentences' at the
    supporting facts' mix of kinds (each kind's mean weighted by the
    supporting facts of that kind): the two roles compared at equal
    kinds."""
    mine = {(row["role"], row["kind"]): row for row in rows
            if row["seed"] == seed}

    def overall(role):
        counted = [mine[role, kind] for kind in KINDS
                   if mine[role, kind]["sentences"]]
        return (sum(row["steps"] * row["sentences"] for row in counted)
                / sum(row["sentences"] for row in counted))

    supporting = sum(mine["supporting", kind]["sentences"] for kind in KINDS)
    kinds = [kind for kind in KINDS if mine["supporting", kind]["sentences"]]
    found = {"seed": seed, "supporting": overall("supporting"),
             "other": overall("other"), "other_matched": None,
             "matched_difference": None}
    if all(mine["other", kind]["sentences"] for kind in kinds):
        found["other_matched"] = sum(
            mine["supporting", kind]["sentences"] / supporting
            * mine["other", kind]["steps"] for kind in kinds)
        found["matched_difference"] = (found["supporting"]
                                       - found["other_matched"])
    return found


def summary(rows):
    """Per role and kind: the sentences (of one seed: every seed reads
    the same stories), the mean steps over the seeds and their sample
    spread; `matched`: per seed, the roles over every kind and at equal
    kinds (`matched`)."""
    from reproductions.common import mean_and_spread

    out = {"kinds": [], "matched": [matched(rows, seed) for seed in
                                    dict.fromkeys(row["seed"]
                                                  for row in rows)]}
    for role in ROLES:
        for kind in KINDS:
            mine = [row for row in rows if (row["role"], row["kind"]) ==
                    (role, kind) and row["steps"] is not None]
            if not mine:
                continue
            mean, spread = mean_and_spread(row["steps"] for row in mine)
            out["kinds"].append({"role": role, "kind": kind, "seeds": len(mine),
                        "sentences": mine[0]["sentences"],
                        "steps_mean": mean, "steps_std": spread,
                        "by_seed": [round(row["steps"], 2)
                                    for row in mine]})
    return out


def parser():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--checkpoints", required=True,
                   type=lambda text: [part for part in text.split(",")
                                      if part],
                   help="the finished runs' checkpoint folders, "
                        "comma-separated")
    p.add_argument("--setting",
                   default="babi_universal_transformer_10k_task2_halting",
                   help="the runs' setting: a name, or a setting's .json")
    p.add_argument("--data", default=None,
                   help="the bAbI release's root (default: the setting's)")
    p.add_argument("--results-dir", default=None)
    p.add_argument("--results", default=None,
                   help="the setting's results file (default "
                        "benchmarks/results/SETTING'S RESULTS.json)")
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if not args.checkpoints:
        p.error("--checkpoints: name at least one folder, received: ''")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import babi as system

    from reproductions import runner

    try:
        where = pathlib.Path(args.setting)
        setting = (runner.load(where.stem, where.parent)
                   if where.suffix == ".json" else runner.load(args.setting))
    except runner.SettingError as error:
        p.error(f"--setting: {error}")
    path = pathlib.Path(args.results or runner.results_path(setting))
    if not path.is_file():
        p.error(f"--results: no results file {path}")
    record = json.loads(path.read_text())
    try:
        rows = measure(args, system, setting, record, args.checkpoints)
    except (FileNotFoundError, ValueError) as error:
        p.error(str(error).strip("'\""))
    harness.write_results(NAME, rows, args.results_dir,
                          setting_results=record["benchmark"],
                          summary=summary(rows))


if __name__ == "__main__":
    main()
