"""reproductions/scoreboard.py renders every paper figure the results files
carry (their `claims`, or a deriver's for a benchmark that stores the
paper's table) as a scoreboard: the verdicts counted by system, one row
per claim grouped by system, a plot of ours against the paper's figures
and each system's details; a malformed claim fails loudly, naming file
and key."""

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
MACHINE = {"cpu": "AMD EPYC", "cpu_flags": ["avx2"], "cores": 2,
           "python": "3.11.7", "keras": "3.15.1", "backend": "tensorflow",
           "device": "cpu", "tensorflow": "2.20.0"}
HEADER = "| system | # | claim | paper | ours | verdict |"
PNG = b"\x89PNG\r\n\x1a\n"


def _load():
    from reproductions import scoreboard

    return scoreboard


reproductions = _load()


def _claim(**changes):
    claim = {"paper": "Dehghani et al. 2019", "table": "Table 1",
             "claim": "UT, bAbI 10k single-task, task 2 error",
             "theirs": "0.0%", "ours": "20.1%", "reproduced": "no",
             "seeds": 3, "data": "bAbI 10k en, test split",
             "command": "babi.py --task 2 --seeds 3"}
    claim.update(changes)
    return claim


def _write(folder, name, **record):
    record = {"benchmark": name.split(".")[0], "when":
              "2026-11-28T10:00:00+00:00", "command": "x.py",
              "machine": MACHINE, "rows": [], **record}
    (folder / name).write_text(json.dumps(record))


def _music(rows, paper=True):
    record = {
        "benchmark": "music_transformer_jsb",
        "when": "2026-11-27T05:34:57+00:00",
        "command": "music_transformer_jsb.py --minutes 8",
        "machine": MACHINE,
        "rows": [{"variant": variant, "weights": 1, "epochs": 7,
                  "steps": steps, "training_minutes": 8.01,
                  "wall_minutes": 8.6, "best_epoch": 7, "best_nll": nll,
                  "last_nll": nll} for variant, steps, nll in rows],
        "curves": {}}
    if paper:
        record["paper"] = [
            ["Coconet (CNN, chronological, 64L)", 0.436],
            ["Transformer baseline (5L, 256hs, 256att, 1024ff, 8h)", 0.417],
            ["baseline + cps + instrument labels (cpsi)", 0.37],
            ["Relative Transformer (Shaw; 5L, 512hs, 512att, 512ff, 256r, "
             "8h)", 0.357],
            ["Relative Transformer + cpsi", 0.347],
            ["Relative Transformer + cpsi + relative pitch and time (best)",
             0.335]]
    return record


def _two_systems(folder):
    _write(folder, "babi_universal_transformer.json", claims=[
        _claim(), _claim(claim="UT, task 1 error", theirs="0.0%",
                         ours="0.2%", reproduced="yes"),
        _claim(claim="UT beats MemN2N on task 2", reproduced="partly")])
    gpu = dict(MACHINE, device="NVIDIA H100 80GB HBM3", backend="jax")
    _write(folder, "memory_network_stored.json", machine=gpu,
           claims=[_claim(paper="Sukhbaatar et al. 2015",
                          claim="MemN2N, task 2 error", theirs="8.3%",
                          ours="7.9%", reproduced="yes",
                          command="babi.py --model memory_network")])


def test_the_verdicts_are_counted_by_system_and_overall(tmp_path):
    _two_systems(tmp_path)
    lines = reproductions.render(tmp_path).splitlines()
    assert lines[:6] == [
        "## Verdicts", "", "**4 claims: 2 yes · 1 partly · 1 no.**", "",
        "- End-to-end memory network: 1 yes · 0 partly · 0 no",
        "- Universal Transformer: 1 yes · 1 partly · 1 no"]


def test_the_scoreboard_has_a_row_per_claim_grouped_by_system(tmp_path):
    _two_systems(tmp_path)
    lines = reproductions.render(tmp_path).splitlines()
    assert lines.count(HEADER) == 1  # one table for every file
    start = lines.index(HEADER) + 2
    table = lines[start:lines.index("", start)]
    assert table == [
        "| **End-to-end memory network** | 1 | MemN2N, task 2 error "
        "| 8.3%<br>*Sukhbaatar et al. 2015, Table 1* | 7.9% | ✓ yes |",
        "| **Universal Transformer** | 2 | UT, bAbI 10k single-task, task 2 "
        "error | 0.0%<br>*Dehghani et al. 2019, Table 1* | 20.1% | ✗ no |",
        "|  | 3 | UT, task 1 error | 0.0%<br>*Dehghani et al. 2019, "
        "Table 1* | 0.2% | ✓ yes |",
        "|  | 4 | UT beats MemN2N on task 2 | 0.0%<br>*Dehghani et al. "
        "2019, Table 1* | 20.1% | ◐ partly |"]


def test_each_system_has_its_details(tmp_path):
    _two_systems(tmp_path)
    text = reproductions.render(tmp_path)
    details = text[text.index("## How each figure was measured"):]
    blocks = details.split("??? info ")[1:]
    assert [block.splitlines()[0] for block in blocks] == [
        '"End-to-end memory network: command, data, machine, seeds, date"',
        '"Universal Transformer: command, data, machine, seeds, date"']
    memory, universal = blocks
    # A device other than the CPU names the device.
    assert ("    `results/memory_network_stored.json`, run 2026-11-28 on "
            "NVIDIA H100 80GB HBM3 (jax):") in memory.splitlines()
    assert "    babi.py --model memory_network" in memory.splitlines()
    assert ("    `results/babi_universal_transformer.json`, run 2026-11-28 "
            "on AMD EPYC, 2 cores (tensorflow):") in universal.splitlines()
    # One command for the file's three claims, then a row each.
    assert universal.count("babi.py --task 2 --seeds 3") == 1
    assert "    | # | seeds | data |" in universal.splitlines()
    for number in (2, 3, 4):
        assert (f"    | {number} | 3 | bAbI 10k en, test split |"
                in universal.splitlines())


def test_a_claim_may_name_its_system(tmp_path):
    _write(tmp_path, "a.json", claims=[
        _claim(paper="Someone et al. 2030", system="A new model")])
    text = reproductions.render(tmp_path)
    assert "- A new model: 0 yes · 0 partly · 1 no" in text
    assert "| **A new model** | 1 |" in text


def test_a_paper_without_a_system_names_its_file(tmp_path):
    _write(tmp_path, "odd.json", claims=[_claim(paper="Someone et al. 2030")])
    with pytest.raises(ValueError, match=r"results/odd\.json: claim 0.*"
                       r"'Someone et al\. 2030' maps to no system"):
        reproductions.render(tmp_path)


def test_the_figures_as_numbers():
    value = reproductions.value_of
    assert value(_claim(theirs="13.90% over 20 (11 failed)"), "theirs") \
        == 13.90
    assert value(_claim(ours="12.60% ± 0.22%"), "ours") == 12.60
    assert value(_claim(ours="-1.5e-3 nats"), "ours") == -1.5e-3
    assert value(_claim(ours="none reached"), "ours") is None
    assert value(_claim(ours="none", ours_value=4), "ours") == 4.0
    rows = [dict(_claim(), number=1, system="s"),
            dict(_claim(ours="no number"), number=2, system="s"),
            dict(_claim(theirs_value=0.5), number=3, system="s")]
    assert [(row["number"], theirs, ours) for row, theirs, ours in
            reproductions.points(rows)] == [(1, 0.0, 20.1), (3, 0.5, 20.1)]


def test_the_plot_of_ours_against_the_papers(tmp_path):
    _two_systems(tmp_path)
    rows = reproductions.scoreboard(tmp_path)
    png = reproductions.plot(rows)
    assert png.startswith(PNG) and len(png) > 10_000
    text = reproductions.render(tmp_path, plot_path="reproductions.png")
    assert ("![ours against the paper's figure, claim by claim]"
            "(reproductions.png)") in text.splitlines()
    # The plot comes after the scoreboard, before the details.
    assert (text.index(HEADER) < text.index("(reproductions.png)")
            < text.index("## How each figure was measured"))
    assert "reproductions.png" not in reproductions.render(tmp_path)
    # No claim with numbers: no plot, and no link to one.
    _write(tmp_path, "babi_universal_transformer.json",
           claims=[_claim(theirs="solved", ours="not solved")])
    _write(tmp_path, "memory_network_stored.json", claims=[])
    assert reproductions.plot(reproductions.scoreboard(tmp_path)) is None
    assert "reproductions.png" not in reproductions.render(
        tmp_path, plot_path="reproductions.png")


def test_a_pipe_in_a_cell_does_not_split_it(tmp_path):
    _write(tmp_path, "a.json", claims=[_claim(data="train | valid")])
    assert "| train \\| valid |" in reproductions.render(tmp_path)


def test_the_music_claims_judged_from_the_rows():
    record = _music([("absolute", 313, 1.44196), ("relative", 178, 0.38),
                     ("relative", 180, 0.36),
                     ("relative_voices", 186, 0.3),
                     ("relative_sinusoid", 197, 2.3)])
    claims = reproductions.judged_claims(record)
    by_claim = {claim["claim"]: claim for claim in claims}
    # relative_sinusoid has no row in the paper; the steps differ, so no
    # ordering claims.
    assert len(claims) == 3
    absolute = by_claim["JSB Chorales note-wise valid NLL, baseline "
                        "Transformer (`absolute`)"]
    assert (absolute["theirs"], absolute["ours"]) == ("0.417 nats",
                                                      "1.442 nats")
    assert absolute["reproduced"] == "no" and absolute["seeds"] == 1
    assert absolute["paper"] == "Huang et al. 2019"
    assert absolute["table"] == "Table 2"
    assert absolute["command"] == "music_transformer_jsb.py --minutes 8"
    assert "313 steps, 8 min of training" in absolute["data"]
    # Two rows of a variant: their mean, within 0.03 nats of 0.357.
    relative = by_claim["JSB Chorales note-wise valid NLL, relative "
                        "attention (`relative`)"]
    assert relative["theirs"] == "0.357 nats"
    assert relative["ours"] == "0.370 ± 0.014 nats"
    assert relative["seeds"] == 2 and relative["reproduced"] == "yes"
    assert "178–180 steps" in relative["data"]
    voices = [claim for claim in claims if "relative_voices" in
              claim["claim"]]
    assert voices[0]["theirs"] == "0.347 nats"  # not "+ cpsi + ... (best)"
    assert voices[0]["reproduced"] == "yes"
    reproductions.validate(claims, "m.json")


def test_the_music_orderings_at_equal_steps_only():
    record = _music([("absolute", 1000, 0.50), ("relative", 1000, 0.52),
                     ("relative_voices", 1000, 0.49)])
    claims = reproductions.judged_claims(record)
    orderings = {claim["claim"]: claim for claim in claims
                 if "ahead" in claim["claim"]}
    assert len(orderings) == 2
    relative = orderings["JSB Chorales, relative attention ahead of the "
                         "baseline Transformer at equal steps (`relative` "
                         "against `absolute`)"]
    assert relative["theirs"] == "0.357 nats against 0.417 nats"
    assert relative["ours"] == "0.520 nats against 0.500 nats"
    assert relative["reproduced"] == "no"
    assert "1000 steps each" in relative["data"]
    voices = [claim for name, claim in orderings.items()
              if name.startswith("JSB Chorales, voice labels")][0]
    assert voices["reproduced"] == "yes"
    assert voices["theirs"] == "0.347 nats against 0.357 nats"
    reproductions.validate(claims, "m.json")
    # Over seeds the rule accounts for the spread: relative ahead by 0.02
    # against a spread of 0.01 is "yes", against 0.03 "partly".
    for spread, verdict in ((0.01, "yes"), (0.03, "partly")):
        record = _music([("absolute", 1000, 0.52 - spread),
                         ("absolute", 1000, 0.52 + spread),
                         ("relative", 1000, 0.50),
                         ("relative", 1000, 0.50)])
        (ordering,) = [claim for claim in reproductions.judged_claims(
            record) if claim["claim"].startswith(
                "JSB Chorales, relative attention ahead")]
        assert ordering["reproduced"] == verdict and ordering["seeds"] == 2
        assert ordering["ours"] == (
            f"0.500 ± 0.000 nats against 0.520 ± {spread * 2 ** 0.5:.3f} "
            "nats")
    unequal = _music([("absolute", 900, 0.50), ("relative", 1000, 0.52)])
    assert not [claim for claim in reproductions.judged_claims(
        unequal) if "ahead" in claim["claim"]]


def test_the_music_claims_at_the_tolerance():
    just = reproductions.judged_claims(
        _music([("absolute", 10, 0.417 + 0.0299)]))
    over = reproductions.judged_claims(
        _music([("absolute", 10, 0.417 + 0.0301)]))
    assert just[0]["reproduced"] == "yes" and over[0]["reproduced"] == "no"


def test_music_results_render_through_the_comparator(tmp_path):
    (tmp_path / "music_transformer_jsb.json").write_text(
        json.dumps(_music([("relative", 178, 1.98245)])))
    text = reproductions.render(tmp_path)
    assert "**1 claims: 0 yes · 0 partly · 1 no.**" in text
    assert "- Music Transformer: 0 yes · 0 partly · 1 no" in text
    assert ("| 0.357 nats<br>*Huang et al. 2019, Table 2* | 1.982 nats "
            "| ✗ no |") in text


def test_a_gpu_music_run_renders_beside_the_cpu_one_naming_its_device(
        tmp_path):
    # benchmarks/gpu/run.py writes music_transformer_jsb_gpu.json.
    (tmp_path / "music_transformer_jsb.json").write_text(
        json.dumps(_music([("relative_sinusoid_voices", 178, 0.40321)])))
    gpu = _music([("relative_sinusoid_voices", 4000, 0.36112)])
    gpu.update(benchmark="music_transformer_jsb_gpu", machine=dict(
        MACHINE, device="NVIDIA H200", backend="jax", cores=16))
    (tmp_path / "music_transformer_jsb_gpu.json").write_text(json.dumps(gpu))
    text = reproductions.render(tmp_path)
    assert "| 0.347 nats<br>*Huang et al. 2019, Table 2* | 0.403 nats" in text
    assert "| 0.347 nats<br>*Huang et al. 2019, Table 2* | 0.361 nats" in text
    assert "`results/music_transformer_jsb_gpu.json`, run 2026-11-27 on " \
        "NVIDIA H200 (jax)" in text


@pytest.mark.parametrize("change, key", [
    ({"ours": None}, "ours"),
    ({"seeds": None}, "seeds"),
    ({"reproduced": "maybe"}, "reproduced"),
    ({"seeds": "3"}, "seeds"),
    ({"theirs": 0.0}, "theirs"),
    ({"system": ""}, "system"),
    ({"ours_value": "4.2"}, "ours_value"),
    ({"theirs_value": float("nan")}, "theirs_value"),
    ({"theirs_value": True}, "theirs_value"),
])
def test_a_bad_claim_names_its_file_and_key(tmp_path, change, key):
    claim = _claim()
    for name, value in change.items():
        if value is None:
            del claim[name]
        else:
            claim[name] = value
    _write(tmp_path, "broken.json", claims=[_claim(), claim])
    with pytest.raises(ValueError, match=rf"results/broken\.json.*'{key}'"):
        reproductions.render(tmp_path)


def test_a_claims_file_without_its_machine_fails(tmp_path):
    _write(tmp_path, "broken.json", claims=[_claim()],
           machine={"cpu": "AMD EPYC", "cores": 2})
    with pytest.raises(ValueError, match=r"broken\.json.*'device'"):
        reproductions.render(tmp_path)


def test_a_claim_spec_naming_no_row_of_its_paper_fails(tmp_path):
    """A paper's claim spec whose row its table lacks raises naming the
    paper, the claim and the row; so does an unknown kind."""
    paper = json.loads((BENCHMARKS.parent / "reproductions" / "papers"
                        / "huang2019.json").read_text())
    paper["tables"]["Table 2"]["rows"] = [
        row for row in paper["tables"]["Table 2"]["rows"]
        if row[0] != "Relative Transformer + cpsi"]
    (tmp_path / "huang2019.json").write_text(json.dumps(paper))
    record = _music([("relative_voices", 186, 1.7)])
    with pytest.raises(ValueError, match=r"Huang et al\. 2019: claim .*"
                       r"relative_voices.*'Relative Transformer \+ cpsi'"):
        reproductions.judged_claims(record, tmp_path)
    paper["claims"][0]["kind"] = "figures"
    (tmp_path / "kind").mkdir()  # (the papers of a folder are read once)
    (tmp_path / "kind" / "huang2019.json").write_text(json.dumps(paper))
    with pytest.raises(ValueError, match="'kind' must be one of"):
        reproductions.judged_claims(_music([("absolute", 1, 0.5)]),
                                    tmp_path / "kind")


def test_files_without_claims_are_skipped(tmp_path):
    _write(tmp_path, "layers.json")
    # A benchmark its paper's specs name, with no row they compare.
    (tmp_path / "music_transformer_jsb.json").write_text(
        json.dumps(_music([("other", 313, 1.44)], paper=False)))
    _write(tmp_path, "empty.json", claims=[])
    _write(tmp_path, "x_quick.json", claims=[_claim()])  # a smoke run
    # An earlier run kept beside the newer one that replaced it.
    _write(tmp_path, "babi_15_epochs.json", claims=[_claim()],
           off_scoreboard="superseded by babi.json")
    # Runs still going: on the scoreboard once they are all finished.
    _write(tmp_path, "babi_going.json", claims=[_claim()],
           in_progress=[{"checkpoint": "benchmarks/checkpoints/x"}])
    assert reproductions.render(tmp_path) == (
        "No results file in `benchmarks/results/` carries a paper's figure "
        "yet.\n")
    _write(tmp_path, "babi.json", claims=[_claim()])
    text = reproductions.render(tmp_path)
    assert "results/babi.json" in text
    for skipped in ("layers.json", "music_transformer_jsb.json",
                    "empty.json", "x_quick.json", "babi_15_epochs.json",
                    "babi_going.json"):
        assert skipped not in text


def test_the_committed_results_render():
    text = reproductions.render(BENCHMARKS / "results",
                                plot_path="reproductions.png")
    assert text.count(HEADER) == 1
    assert "- Music Transformer: " in text
    assert "`results/music_transformer_jsb.json`, run " in text
    record = json.loads(
        (BENCHMARKS / "results" / "music_transformer_jsb.json").read_text())
    paper = dict(record["paper"])
    best = [row["best_nll"] for row in record["rows"]
            if row["variant"] == "relative_sinusoid_voices"]
    assert (f"| {paper['Relative Transformer + cpsi']:.3f} nats<br>*Huang "
            "et al. 2019, Table 2* "
            f"| {statistics.fmean(best):.3f} ± {statistics.stdev(best):.3f} "
            "nats |") in text
    assert f"    {record['command']}\n" in text
    # The variants file's orderings at equal steps.
    assert "relative attention ahead of the baseline Transformer at equal " \
        "steps" in text
    # Every claim of the committed files maps to a system; the plot draws.
    rows = reproductions.scoreboard(BENCHMARKS / "results")
    assert len({row["system"] for row in rows}) >= 5
    assert "(reproductions.png)" in text
    assert reproductions.plot(rows).startswith(PNG)


def test_the_command_line(tmp_path):
    _write(tmp_path, "babi.json", claims=[_claim()])
    result = subprocess.run(
        [sys.executable, "-m", "reproductions.scoreboard",
         "--results-dir", str(tmp_path)], cwd=BENCHMARKS.parent,
        capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout == reproductions.render(tmp_path)
    plot = tmp_path / "plot.png"
    result = subprocess.run(
        [sys.executable, "-m", "reproductions.scoreboard",
         "--results-dir", str(tmp_path), "--plot", str(plot)],
        cwd=BENCHMARKS.parent,
        capture_output=True, text=True, timeout=60, check=True)
    assert plot.read_bytes().startswith(PNG)
    assert f"]({plot})" in result.stdout


@pytest.mark.parametrize("path", sorted(
    (BENCHMARKS.parent / "reproductions" / "papers").glob("*.json")),
    ids=lambda path: path.stem)
def test_every_papers_figures_file_loads(path):
    figures = reproductions.paper_figures(path.stem)
    assert figures["paper"] in reproductions.SYSTEMS and figures["tables"]


def test_the_one_comparator_and_a_bad_figures_file(tmp_path):
    from reproductions import claims

    assert claims.verdict(8.9, 7.78, 2.0) == "yes"
    assert claims.verdict(9.79, 7.78, 2.0) == "no"
    assert claims.verdict(0.34, 0.357, 0.03, "higher") == "yes"
    with pytest.raises(ValueError, match="direction"):
        claims.verdict(1.0, 1.0, 0.0, "up")
    (tmp_path / "p.json").write_text(json.dumps(
        {"paper": "P", "direction": "lower", "tables": {"T": {"rows": {}}},
         "claims": [{"kind": "figure", "table": "T", "claim": "c"}]}))
    with pytest.raises(ValueError, match="table 'T' has no 'tolerance'"):
        reproductions.paper_figures("p", tmp_path)
