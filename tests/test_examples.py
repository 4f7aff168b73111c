"""The examples run (on tiny settings; their defaults train longer)."""

import importlib.util
import json
import pathlib
import re

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bahdanau_dates_runs(capsys):
    exact = load("bahdanau_dates").main(["--samples", "256", "--epochs", "1"])
    assert 0.0 <= exact <= 1.0
    assert "where each output character looks" in capsys.readouterr().out


def test_transformer_reversal_runs_and_cached_decoding_agrees(capsys):
    load("transformer_reversal").main(["--steps", "40"])
    out = capsys.readouterr().out
    assert "held-out exact-match accuracy" in out
    agree = re.search(r"uncached decoding on ([\d.]+)% of strings", out)
    # Cached and uncached logits differ by float rounding only; an argmax
    # tie in a barely trained model could flip one string, not more.
    assert float(agree.group(1)) >= 99.0, out
    assert "cross-attention of" in out


def test_relative_language_model_runs_and_cached_generation_agrees(capsys):
    results = load("relative_language_model").main(["--steps", "30"])
    assert set(results) == {"absolute", "relative"}
    for scores in results.values():
        assert set(scores) == {32, 96}
        assert all(0.0 <= value <= 1.0 for value in scores.values())
    out = capsys.readouterr().out
    agree = re.findall(r"cached generation equals uncached on ([\d.]+)%", out)
    # Cached and uncached logits differ by float rounding only. A flipped
    # near-tie (unlikely) changes the rest of its row: 99% tolerates one
    # late in a row, no more.
    assert len(agree) == 2 and all(float(a) >= 99.0 for a in agree), out


MULTI30K = EXAMPLES.parents[1] / "shared" / "data" / "multi30k"


@pytest.mark.skipif(not (MULTI30K / "train.en.gz").exists(),
                    reason="the shared Multi30k copy is not beside the clone")
def test_translate_multi30k_runs(tmp_path):
    results = load("translate_multi30k").main([
        "--data-dir", str(MULTI30K), "--output-dir", str(tmp_path / "run"),
        "--epochs", "1", "--train-size", "300", "--test-size", "10",
        "--bleu-sentences", "0",
        "--export-dir", str(tmp_path / "models"),
    ])
    assert set(results) == {1, 4}
    assert (tmp_path / "models" / "multi30k" / "1" / "saved_model.pb").exists()


@pytest.mark.skipif(not (MULTI30K / "train.en.gz").exists(),
                    reason="the shared Multi30k copy is not beside the clone")
def test_self_attentive_retrieval_runs(capsys):
    module = load("self_attentive_retrieval")
    results = module.main([
        "--data-dir", str(MULTI30K), "--train-size", "300",
        "--test-size", "50", "--epochs", "1", "--units", "16",
        "--embedding-dim", "16", "--verbose", "0",
    ])
    assert set(results) == {0.0, 1.0}
    for figures in results.values():
        assert 0.0 <= figures["recall@1"] <= figures["recall@5"] <= 1.0
        assert 0.0 <= figures["overlap"] <= 1.0
    assert "hop 0:" in capsys.readouterr().out
    same = np.array([[[0.5, 0.5], [0.5, 0.5]]])
    disjoint = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    assert module.hop_overlap(np.concatenate([same, disjoint])) == 0.5
    similarity = np.array([[0.9, 0.1], [0.8, 0.2]])
    assert module.recall_at(similarity, (1, 2)) == {1: 0.5, 2: 1.0}


def test_memory_network_babi_runs(tmp_path, capsys):
    from keras_attention.data.babi import write_babi

    train = write_babi(tmp_path / "train.txt", 2, 200, seed=1)
    test = write_babi(tmp_path / "test.txt", 2, 50, seed=2)
    results = load("memory_network_babi").main([
        "--train-file", str(train), "--test-file", str(test),
        "--epochs", "2", "--linear-epochs", "1", "--hops", "2", "--show", "1",
    ])
    assert 0.0 <= results["accuracy"] <= 1.0
    assert len(results["hop_support"]) == 2
    out = capsys.readouterr().out
    assert "test answer accuracy" in out and "hop 2:" in out



def test_pronoun_heads_reads_the_encoder_rows_by_word(tmp_path_factory,
                                                      capsys):
    """The table is `Translator.attention(kind="encoder")` regrouped:
    a word's row is the mean of its pieces' rows, a word's weight the sum
    over its pieces' columns (checked here against the pieces directly)."""
    from keras_attention.translator import Translator
    from tests.trained_translators import trained_translator

    module = load("pronoun_heads")
    directory = trained_translator(tmp_path_factory, "sinusoidal")
    text = "The old man sees a small dog."
    table = module.main([text, "--model-dir", str(directory), "--word",
                         "sees", "--nouns", "man", "dog."])
    result = Translator.load(directory).attention(text, kind="encoder")
    pieces, weights = result["row_pieces"], result["attention"]
    words = module.words_of(pieces)
    assert "".join(word for word, _ in words) == "".join(
        piece.lstrip("▁") for piece in pieces)
    (_, sees), = [w for w in words if w[0] == "sees"]
    (_, man), = [w for w in words if w[0] == "man"]
    layers, heads = weights.shape[:2]
    assert [(row[0], row[1]) for row in table] == [
        (layer, head) for layer in range(layers) for head in range(heads)]
    for layer, head, to_nouns, top, weight in table:
        rows = weights[layer, head][sees].mean(0)  # (S,)
        by_word = {word: rows[idx].sum() for word, idx in words}
        np.testing.assert_allclose(to_nouns["man"], by_word["man"],
                                   atol=1e-6)
        np.testing.assert_allclose(to_nouns["dog."], by_word["dog."],
                                   atol=1e-6)
        assert top == max(by_word, key=by_word.get)
        np.testing.assert_allclose(weight, by_word[top], atol=1e-6)
        np.testing.assert_allclose(sum(by_word.values()), 1.0, atol=1e-5)
    assert "row of 'sees'" in capsys.readouterr().out
    with pytest.raises(ValueError, match="'cat' is not a word"):
        module.head_table(result, "sees", ["cat"])
    # Cross-attention: rows are the translation's words, columns the
    # source's; each row of words still sums to 1.
    cross = Translator.load(directory).attention(text, kind="cross")
    first = module.words_of(cross["row_pieces"])[0][0]
    rows = module.head_table(cross, first, ["man"])
    assert len(rows) == len(table)  # as many decoder as encoder blocks
    _, columns, grouped = module.word_weights(
        cross["attention"], cross["row_pieces"], cross["column_pieces"])
    assert columns == [word for word, _ in module.words_of(pieces)]
    np.testing.assert_allclose(grouped.sum(-1), 1.0, atol=1e-5)


def test_lora_finetune_trains_only_adapters_and_exports(tmp_path_factory,
                                                        capsys):
    """New data the trained translator has not seen (its targets' words
    reversed): the adapters learn it (the loss falls), the weights outside
    the attention projections come back bit-identical, and the merged
    translator saves, loads and exports."""
    from keras_attention.text import load_corpus
    from keras_attention.translator import Translator
    from tests.trained_translators import trained_translator

    directory = trained_translator(tmp_path_factory, "sinusoidal")
    work = tmp_path_factory.mktemp("lora")
    pairs = load_corpus("synthetic")["val"][:200]
    new = work / "new.tsv"
    new.write_text("".join(f"{source}\t{' '.join(target.split()[::-1])}\n"
                           for source, target in pairs), encoding="utf-8")
    check = work / "check.tsv"  # a few pairs for the BLEU lines
    check.write_text("".join(new.read_text(encoding="utf-8").splitlines(
        keepends=True)[:20]), encoding="utf-8")
    result = load("lora_finetune").main([
        "--model-dir", str(directory), "--train-files", str(new),
        "--val-files", str(check), "--epochs", "3", "--learning-rate", "1e-2",
        "--output-dir", str(work / "adapted"), "--export-base",
        str(work / "models")])
    assert result["loss"][-1] < 0.9 * result["loss"][0], result["loss"]
    assert 0 < result["trainable"] < 0.1 * result["total"]
    assert (result["export"] / "saved_model.pb").exists()
    original = Translator.load(directory).model
    adapted = Translator.load(work / "adapted").model
    changed = [w.path for w, v in zip(original.weights, adapted.weights)
               if not np.array_equal(np.asarray(w), np.asarray(v))]
    assert changed and all(
        re.search(r"/(query|value)(_dense)?/kernel$", path)
        for path in changed), changed
    out = capsys.readouterr().out
    assert "trainable:" in out and "validation BLEU:" in out


def test_bleu_by_length_compares_translators_on_the_same_buckets(
        tmp_path_factory, tmp_path, capsys):
    """Each model's buckets are `Translator.evaluate(by_length=...)`'s
    rows; the bootstrap intervals resample the same sentences for every
    model; the figure is written; a malformed model argument is one line."""
    from keras_attention.text import load_corpus
    from keras_attention.training import corpus_bleu
    from keras_attention.translator import Translator
    from tests.trained_translators import trained_translator

    module = load("bleu_by_length")
    directories = {variant: trained_translator(tmp_path_factory, variant)
                   for variant in ("rnn", "sinusoidal")}
    output = tmp_path / "by_length.png"
    results = module.main([
        f"rnn={directories['rnn']}",
        f"transformer={directories['sinusoidal']}",
        "--corpus", "synthetic", "--split", "test", "--limit", "60",
        "--edges", "6,8", "--bootstrap", "20", "--output", str(output)])
    pairs = load_corpus("synthetic")["test"][:60]
    assert output.stat().st_size > 0
    out = capsys.readouterr().out
    assert "source words  sentences" in out and "all" in out
    for label, variant in (("rnn", "rnn"), ("transformer", "sinusoidal")):
        expected = Translator.load(directories[variant]).evaluate(
            pairs, by_length=(6, 8))
        assert results[label]["by_length"] == expected["by_length"]
        assert sum(row["sentences"] for row in expected["by_length"]) == 60
        for row, (low, high) in zip(expected["by_length"],
                                    results[label]["intervals"]):
            if row["sentences"] == 0:
                assert (low, high) == (None, None)
            else:
                assert 0.0 <= low <= high <= 100.0
    # One bucket's interval by hand: the same seeded resamples.
    rng = np.random.default_rng(0)
    hypotheses = results["rnn"]["hypotheses"]
    members = [i for i, (source, _) in enumerate(pairs)
               if len(source.split()) <= 6]
    scores = []
    for _ in range(20):
        chosen = rng.choice(members, size=len(members))
        scores.append(corpus_bleu([hypotheses[i] for i in chosen],
                                  [pairs[i][1] for i in chosen])[0])
    np.testing.assert_allclose(results["rnn"]["intervals"][0],
                               np.percentile(scores, [2.5, 97.5]))
    with pytest.raises(SystemExit):
        module.main(["rnn-without-folder"])
    assert "a model is LABEL=DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        module.main([f"a={directories['rnn']}", "--edges", "8,6"])
    assert "--edges" in capsys.readouterr().err


def test_universal_transformer_babi_runs(tmp_path, capsys):
    module = load("universal_transformer_babi")
    path = tmp_path / "ponder.png"
    accuracy, ponder = module.main([
        "--train-size", "80", "--test-size", "20", "--epochs", "2",
        "--steps", "2", "--hidden", "16", "--heads", "2", "--memory-size",
        "10", "--newest-first", "--plot", str(path)])
    assert 0.0 <= accuracy <= 1.0
    assert ponder.shape == (20, 11)
    assert np.all(ponder >= 1.0) and np.all(ponder <= 3.0)  # N + R <= 2 + 1
    assert path.stat().st_size > 0
    out = capsys.readouterr().out
    assert "test answer accuracy" in out and "mean ponder time" in out


def test_universal_transformer_babi_last_place_rule():
    from keras_attention.data import babi

    module = load("universal_transformer_babi")
    samples = babi.parse_babi(
        "1 Mary went to the office.\n"
        "2 Mary picked up the milk there.\n"
        "3 Where is the milk?\toffice\t2 1\n"
        "4 John went to the garden.\n"
        "5 Where is the milk?\toffice\t2 1\n")
    # Right on the first question, wrong on the second (garden).
    assert module.last_place_rule(samples, 50) == 0.5
    # With one sentence kept, the first story names no place.
    assert module.last_place_rule(samples[:1], 1) == 0.0
    assert module.last_place_rule(samples[:1], 2) == 1.0


def test_sagan_digits_runs(tmp_path, capsys):
    module = load("sagan_digits")
    results = module.main([
        "--steps", "4", "--batch-size", "16", "--samples", "40",
        "--classifier-epochs", "1", "--output-dir", str(tmp_path),
        "--results", str(tmp_path / "r.json")])
    # --results writes the same figures as JSON.
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(
        json.dumps(results, default=float))
    assert results["floor"] > 0 and 0.0 <= results["classifier_accuracy"] <= 1
    for name in ("plain", "attention"):
        (distance,) = results[name]
        assert np.isfinite(distance) and distance > 0
    # One run a GAN, in order, with its seconds; the block's gammas.
    runs = results["runs"]
    assert [(run["seed"], run["attention"]) for run in runs] == [
        (0, False), (0, True)]
    assert [run["distance"] for run in runs] == [*results["plain"],
                                                 *results["attention"]]
    assert all(run["seconds"] > 0 for run in runs)
    assert "gammas" not in runs[0]
    assert set(runs[1]["gammas"]) == {"generator", "discriminator"}
    for picture in ("plain_seed0.png", "attention_seed0.png",
                    "attention_map_seed0.png"):
        assert (tmp_path / picture).stat().st_size > 0
    out = capsys.readouterr().out
    assert "with self-attention" in out and "generator's gamma" in out
    # The Fréchet distance of a set to itself is 0; to a shifted copy, the
    # squared shift.
    rng = np.random.default_rng(0)
    features = rng.normal(size=(200, 5))
    assert abs(module.frechet_distance(features, features)) < 1e-6
    assert module.frechet_distance(features + 2.0, features) == pytest.approx(
        20.0, rel=1e-6)
