"""reproductions/render.py: tables and sentences from specs (data): fields
by dotted path, a missing one as —, columns with no value left out,
conditions, lists, words; and every committed results file with a spec
renders by it."""

import json
import pathlib

import pytest

from reproductions import render

ROOT = pathlib.Path(__file__).resolve().parents[1]
RECORD = {
    "benchmark": "toy_run",
    "commands": ["a.py --seeds 0", "a.py --seeds 1 --append"],
    "rows": [{"variant": "big", "seed": 0, "error": 0.125,
              "curve": [0.5, 0.25], "timing": {"seconds": 90.0}},
             {"variant": "small", "seed": 0, "error": None,
              "curve": [0.75], "timing": {"seconds": 30.0}}],
    "summary": {"big": {"label": "Big", "seeds": 2, "mean": 0.1,
                        "std": 0.02, "helps": True},
                "small": {"label": "Small", "seeds": 1, "mean": 0.3,
                          "std": 0.0, "helps": False},
                "verdict": {"gain": 0.2}},
    "rule": 0.9,
    "paper": [["Theirs", 0.05]],
}
WORDS = {"helps": {"True": "it helps", "False": "it does not"}}


def lines(spec, record=RECORD):
    return render.blocks(spec, record)


def test_a_rows_table_fills_dotted_fields_and_shows_missing_as_a_dash():
    out = lines([{"table": [
        ["model", "`{variant}`"], ["error", "{error:.1%}"],
        ["minutes", "{timing.seconds:min}"], ["first", "{curve.0}"],
        ["never", "{nowhere}"], ["curve", "{curve:each .2f}"]]}])
    assert out == [
        "| model | error | minutes | first | curve |", "|---|---|---|---|---|",
        "| `big` | 12.5% | 1.5 | 0.5 | 0.50, 0.25 |",
        "| `small` | — | 0.5 | 0.75 | 0.75 |"]


def test_a_dict_gives_its_keys_conditions_require_and_append(monkeypatch):
    monkeypatch.setattr(render, "words", lambda path=None: WORDS)
    out = lines([{"from": "summary", "require": "label", "table": [
        ["model", "{label} (`{key}`)"], ["mean", "**{mean:.2f}**"],
        ["spread", "±{std:.2f}", "seeds > 1"],
        ["alone", "{mean:.1f}", "seeds == 1", "{seeds} seeds"],
        ["verdict", "{helps:words.helps}"]],
        "append": [{"if": "rule", "cells": {"model": "no weights",
                                            "mean": "{rule:.2f}"}},
                   {"if": "absent", "cells": {"model": "never"}}]}])
    assert out == [
        "| model | mean | spread | alone | verdict |", "|---|---|---|---|---|",
        "| Big (`big`) | **0.10** | ±0.02 | 2 seeds | it helps |",
        "| Small (`small`) | **0.30** | — | 0.3 | it does not |",
        "| no weights | 0.90 | — | — | — |"]


def test_text_commands_and_each():
    out = lines([{"commands": True},
                 {"text": "Paper: {paper:pairs}; ours {summary.big.mean}."},
                 {"text": "Left out: {summary.nothing}."},
                 {"text": "Not shown.", "if": "rule > 1"},
                 {"text": "Not shown either.", "unless": "rule"},
                 {"each": "rows", "blocks": [
                     {"text": "{variant} took {timing.seconds:g} s."}]}])
    assert out == [
        "The rows come from `a.py --seeds 0`, then "
        "`a.py --seeds 1 --append`.", "", "Paper: Theirs 0.05; ours 0.1.",
        "", "big took 90 s.", "", "small took 30 s."]


def test_the_longest_prefix_chooses_the_spec_and_mistakes_name_themselves():
    found = {"toy": [{"text": "short"}], "toy_run": [{"text": "long"}],
             "toy_runner": None}
    assert render.render(RECORD, found) == ["long"]
    assert render.render({**RECORD, "benchmark": "toy_runner"}, found) is None
    assert render.render({**RECORD, "benchmark": "other"}, found) is None
    with pytest.raises(ValueError, match="a condition is"):
        lines([{"table": [["a", "{seed}", "seed >> 1"]]}])
    with pytest.raises(ValueError, match="a block is"):
        lines([{"tabel": []}])
    with pytest.raises(ValueError, match="template '{curve:.2f}'"):
        lines([{"table": [["a", "{curve:.2f}"]]}])
    with pytest.raises(ValueError, match="`curve` is not a number"):
        lines([{"table": [["a", "{seed}", "curve > 1"]]}])
    assert render.fill("{x:each .1f}", {"x": [1, None]}) == "1.0, —"


def test_every_committed_results_file_with_a_spec_renders():
    specs = render.specs()
    assert "_words" not in specs and set(render.words()) >= {"outcome"}
    rendered = 0
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        record = json.loads(path.read_text())
        if render.spec_for(record["benchmark"], specs) is None:
            continue
        out = render.render(record, specs)
        assert out and all("{" not in line for line in out), path.name
        rendered += 1
    assert rendered >= 10


def test_join_unnest_and_a_dicts_items_as_themselves():
    """A table's rows joined with the summary's entry of their variant; a
    row per entry of a nested list; a dict's entry as `item`."""
    record = {"rows": [{"variant": "big", "served": [
        {"clients": 1, "ms": 5.0}, {"clients": 8, "ms": 9.0}]}],
              "summary": {"big": {"size": 0.25, "met": {"fast": True,
                                                        "small": False}}}}
    out = lines([{"table": [["variant", "{variant}"],
                            ["size", "{size:.2f}×"]],
                  "join": {"on": "variant", "with": "summary"}},
                 {"table": [["clients", "{clients}"], ["ms", "{ms:.0f}"]],
                  "unnest": "served"},
                 {"each": "summary", "blocks": [
                     {"text": "{key}: {met.fast}, {item.size}"}]}], record)
    assert out == ["| variant | size |", "|---|---|", "| big | 0.25× |", "",
                   "| clients | ms |", "|---|---|", "| 1 | 5 |", "| 8 | 9 |",
                   "", "big: True, 0.25"]


def test_a_tables_paragraph_conditions_as_lists_and_units():
    """`above` is said only with the table; a bare field that is empty
    does not hold; `if` and `unless` take lists; `/1e9`, `inverse` and
    `range_mib` format."""
    record = {"rows": [{"flops": 3.2e9, "memory": {
        "median_mib": 10.2, "min_mib": 9.8, "max_mib": 30.0}},
        {"flops": 1e9, "memory": {"median_mib": 10.2, "min_mib": 9.8,
                                  "max_mib": 10.4}}],
              "note": "", "values": 16, "targets": []}
    out = lines([{"above": "Chance {values:inverse}.",
                  "table": [["GFLOP", "{flops:/1e9 .1f}"],
                            ["MiB", "{memory:range_mib}"]]},
                 {"above": "Never said.", "table": [["x", "{x}"]],
                  "where": {"x": 1}},
                 {"text": "noted", "if": "note"},
                 {"text": "targets", "if": "targets"},
                 {"text": "both", "if": ["values", "rows"]},
                 {"text": "neither", "unless": ["note", "targets"]}],
                record)
    assert out == ["Chance 0.062.", "", "| GFLOP | MiB |", "|---|---|",
                   "| 3.2 | 10 (10–30) |", "| 1.0 | 10 |", "", "both", "",
                   "neither"]
