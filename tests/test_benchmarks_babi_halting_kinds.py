"""benchmarks/babi_halting_kinds.py: the steps taken by role and kind of
sentence, the roles compared at equal kinds, and its refusals (weights
no finished row names); the run end to end is in test_benchmarks_babi.py
(on its finished tiny runs)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from keras_attention.data import babi

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def module():
    spec = importlib.util.spec_from_file_location(
        "benchmarks_babi_halting_kinds", BENCHMARKS / "babi_halting_kinds.py")
    loaded = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS))
    spec.loader.exec_module(loaded)
    return loaded


def test_sentence_kinds_of_task_2(module):
    assert [module.sentence_kind(text) for text in (
        "Mary moved to the bathroom.", "Sandra journeyed to the bedroom.",
        "Mary got the football there.", "John picked up the milk there.",
        "Daniel dropped the apple.", "Sandra put down the milk.",
        "John left the football.")] == [
        "move", "move", "take", "take", "drop", "drop", "drop"]
    with pytest.raises(ValueError, match="no known kind .*'The milk is "
                                         "white.'"):
        module.sentence_kind("The milk is white.")


def test_steps_by_role_and_kind(module):
    """Each story slot's steps under its role and kind; the question's
    (column 0) under none; a story kept to its last `memory_size`
    sentences."""
    samples = babi.parse_babi(
        "1 Mary moved to the bathroom.\n2 Mary got the football there.\n"
        "3 John went to the kitchen.\n4 Mary went to the garden.\n"
        "5 Where is the football?\tgarden\t2 4\n"
        "1 John took the milk there.\n2 John dropped the milk.\n"
        "3 Where is the milk?\tkitchen\t2 1\n")
    steps = [[6.0, 1.0, 2.0, 3.0, 4.0], [5.0, 2.0, 1.0, 0.0, 0.0]]
    found = module.steps_by_kind(samples, steps, 50)
    assert found == {("supporting", "move"): [4.0],
                     ("supporting", "take"): [2.0, 2.0],
                     ("supporting", "drop"): [1.0],
                     ("other", "move"): [1.0, 3.0],
                     ("other", "take"): [], ("other", "drop"): []}
    # Kept to the last 2 sentences, the first story reads lines 3 and 4.
    kept = module.steps_by_kind(samples[:1], [[6.0, 3.0, 4.0]], 2)
    assert kept["other", "move"] == [3.0]
    assert kept["supporting", "move"] == [4.0]
    assert kept["supporting", "take"] == []


def test_the_roles_at_equal_kinds(module):
    """Supporting facts half moves (4 steps) and half drops (1); other
    sentences moves at 3 and drops at 1, 9 moves to 1 drop: over every
    kind they take 2.8 steps, at the supporting facts' kinds 2.0."""
    rows = [
        {"seed": 0, "role": "supporting", "kind": "move", "sentences": 2,
         "steps": 4.0},
        {"seed": 0, "role": "supporting", "kind": "take", "sentences": 0,
         "steps": None},
        {"seed": 0, "role": "supporting", "kind": "drop", "sentences": 2,
         "steps": 1.0},
        {"seed": 0, "role": "other", "kind": "move", "sentences": 9,
         "steps": 3.0},
        {"seed": 0, "role": "other", "kind": "take", "sentences": 5,
         "steps": 2.0},
        {"seed": 0, "role": "other", "kind": "drop", "sentences": 1,
         "steps": 1.0},
    ]
    found = module.matched(rows, 0)
    assert found == pytest.approx({
        "seed": 0, "supporting": 2.5, "other": (27 + 10 + 1) / 15,
        "other_matched": 2.0, "matched_difference": 0.5})
    # Another seed of the same steps: no spread.
    summary = module.summary(rows + [{**row, "seed": 1} for row in rows])
    move = next(item for item in summary["kinds"]
                if (item["role"], item["kind"]) == ("supporting", "move"))
    assert move == {"role": "supporting", "kind": "move", "seeds": 2,
                    "sentences": 2, "steps_mean": 4.0, "steps_std": 0.0,
                    "by_seed": [4.0, 4.0]}
    # A kind with no sentence of a role has no line.
    assert ("supporting", "take") not in {
        (item["role"], item["kind"]) for item in summary["kinds"]}
    assert [item["seed"] for item in summary["matched"]] == [0, 1]


def test_weights_no_finished_row_names_are_refused(module, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    record = {"benchmark": "halting", "rows": []}
    with pytest.raises(ValueError, match="holds no last.weights.h5"):
        module.finished_row(record, folder)
    (folder / "last.weights.h5").write_bytes(b"weights")
    from keras_attention.training import weights_sha256

    digest = weights_sha256(folder)
    record["rows"] = [{"seed": 3, "finished": False,
                       "weights_sha256": None}]
    with pytest.raises(ValueError, match=f"sha256 {digest[:12]}.* are no "
                                         "finished run's of halting"):
        module.finished_row(record, folder)
    record["rows"].append({"seed": 4, "finished": True,
                           "weights_sha256": digest})
    assert module.finished_row(record, folder)["seed"] == 4


def test_argument_errors_are_one_line(module, capsys):
    for argv, message in (
            (["--checkpoints", ","], "--checkpoints: name at least one "
                                     "folder, received: ''"),
            (["--checkpoints", "x", "--setting", "nope"],
             "--setting: no setting 'nope'")):
        with pytest.raises(SystemExit) as raised:
            module.main(argv)
        assert raised.value.code == 2
        assert message in capsys.readouterr().err


def test_the_ut_page_states_what_the_halting_follows():
    """The UT page's sentences on the steps by kind, held to
    `babi_halting_kinds.json`: drops stop after one step and moves take
    the most on seeds 0 and 2, two steps everywhere on seed 1; the share
    of drops among the supporting facts and the other sentences; the
    roles within a tenth of a step at equal kinds."""
    import json

    record = json.loads((BENCHMARKS / "results" /
                         "babi_halting_kinds.json").read_text())
    page = " ".join((BENCHMARKS.parent / "docs" / "models" /
                     "universal-transformer.md").read_text().split())
    assert "<!-- results babi_halting_kinds -->" in page
    assert record["setting_results"] == (
        "babi_universal_transformer_10k_task2_halting")
    rows = {(row["seed"], row["role"], row["kind"]): row
            for row in record["rows"]}
    assert {seed for seed, _, _ in rows} == {0, 1, 2}
    for seed in (0, 2):
        for role in ("supporting", "other"):
            assert rows[seed, role, "drop"]["steps"] == 1.0
            assert (rows[seed, role, "move"]["steps"]
                    > rows[seed, role, "take"]["steps"]
                    > rows[seed, role, "drop"]["steps"])
    seed_1 = [round(row["steps"], 2) for key, row in rows.items()
              if key[0] == 1]
    assert (min(seed_1), max(seed_1)) == (2.0, 2.01)
    assert ("on seeds 0 and 2 every drop stops after one step and the "
            "moves take the most") in page
    assert ("(seed 1 stops nearly everything after two: 2.00 to 2.01 "
            "steps by role and kind)") in page

    def share(role):
        counts = {kind: rows[0, role, kind]["sentences"]
                  for kind in ("move", "take", "drop")}
        return counts["drop"] / sum(counts.values())

    # One supporting move and one supporting take or drop a question.
    questions = rows[0, "supporting", "move"]["sentences"]
    assert round(3 * rows[0, "supporting", "drop"]["sentences"]
                 / questions) == 2  # two thirds
    assert round(3 * share("supporting")) == 1  # a third
    assert round(10 * share("other")) == 1  # a tenth
    assert ("Two thirds of the questions ask for an object last dropped, "
            "so a third of the supporting facts are drops against a tenth "
            "of the other sentences") in page
    assert all(abs(item["matched_difference"]) < 0.1
               for item in record["summary"]["matched"])
    assert "within a tenth of a step of the supporting facts on every seed" \
        in page
