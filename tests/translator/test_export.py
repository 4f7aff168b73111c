"""The exported SavedModel == the in-memory translator, in a process that
imports only tensorflow and tensorflow_text."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.cli import main as cli
from keras_attention.export import next_version
from keras_attention.translator import Translator
from tests.trained_translators import TEXTS
from tests.trained_translators import recorded_translations

LOAD = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
assert "keras_attention" not in sys.modules
texts = json.loads(sys.argv[1])
for path in sys.argv[2:]:
    model = tf.saved_model.load(path)
    default = model.signatures["serving_default"]
    details = model.signatures["translate_with_attention"]
    out = default(text=tf.constant(texts, tf.string))
    more = details(text=tf.constant(texts, tf.string))
    ops = {op.type for f in (default, details)
           for op in f.graph.get_operations()}
    print(json.dumps({
        "signatures": sorted(model.signatures),
        "outputs": sorted(out), "details": sorted(more),
        "translation": [t.decode("utf-8") for t in out["translation"].numpy()],
        "tokens": more["tokens"].numpy().tolist(),
        "attention": more["attention"].numpy().tolist(),
        "truncated": more["truncated"].numpy().tolist(),
        "xla_ops": sorted(o for o in ops if o.startswith("Xla")),
        "input": str(default.structured_input_signature),
    }))
"""
BEAM_SIZES = (1, 3)


def _load_elsewhere(*paths):
    """What one process that imports only tensorflow and tensorflow_text
    reads from each SavedModel."""
    result = subprocess.run(
        [sys.executable, "-c", LOAD, json.dumps(TEXTS), *map(str, paths)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()[-len(paths):]
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    """{beam size: (the translator, base path, its export, what another
    process loads from it)}: the translator exported with greedy decoding
    and with a beam of 3, both loaded by one other process."""
    found = {}
    for beam_size in BEAM_SIZES:
        translator = trained[0].with_decoding(beam_size=beam_size)
        translator.module.max_source_length = 32
        base = tmp_path_factory.mktemp(f"beam_size_{beam_size}_")
        found[beam_size] = (translator, base,
                            translator.export(base, "translator"))
    loaded = _load_elsewhere(*[path for _, _, path in found.values()])
    return {beam_size: (*found[beam_size], elsewhere)
            for beam_size, elsewhere in zip(found, loaded)}


@pytest.mark.parametrize("beam_size", BEAM_SIZES)
def test_exported_model_translates_like_the_in_memory_one(exported,
                                                          beam_size):
    translator, base, path, loaded = exported[beam_size]
    assert path == base / "translator" / "1"
    in_memory = translator.translate(TEXTS)
    assert loaded["translation"] == in_memory
    assert loaded["signatures"] == ["serving_default",
                                    "translate_with_attention"]
    assert loaded["outputs"] == ["translation"]
    assert loaded["details"] == ["attention", "pieces", "source_pieces",
                                 "tokens", "translation", "truncated"]
    assert loaded["xla_ops"] == []
    assert "text" in loaded["input"] and "tf.string" in loaded["input"]
    assert loaded["truncated"] == [False, False, False, True, False]
    details = translator.module.translate_with_attention(tf.constant(TEXTS))
    np.testing.assert_array_equal(details["tokens"].numpy(), loaded["tokens"])
    np.testing.assert_allclose(details["attention"].numpy(),
                               loaded["attention"], atol=1e-6)
    # Each output token's attention is a distribution over the source;
    # PAD positions, and every position of the empty input (a source of
    # padding only), have none.
    sums = details["attention"].numpy().sum(-1)
    real = details["tokens"].numpy() != translator.model.pad_id
    real[TEXTS.index("")] = False
    np.testing.assert_allclose(sums[real], 1.0, atol=1e-4)
    assert np.all(sums[~real] == 0)


def test_batch_of_mixed_lengths_equals_one_by_one(trained):
    translator = trained[0]
    together = translator.translate(TEXTS)
    alone = [translator.translate([text])[0] for text in TEXTS]
    assert together == alone


def test_translate_batches_by_length_and_keeps_the_order(trained):
    """`translate` batches the texts in order of length; the translations
    come back in the order given, as the in-order stream gives them, and
    `on_batch` counts the batches."""
    translator = trained[0]
    texts = TEXTS * 3
    done, batched = [], []
    translate_batch = translator._translate_batch

    def recording(batch):
        batched.append(batch)
        return translate_batch(batch)

    translator._translate_batch = recording
    try:
        sorted_batches = translator.translate(texts, batch_size=4,
                                              on_batch=done.append)
    finally:
        del translator._translate_batch
    lengths = [len(ids) for batch in batched for ids in
               translator.tokenizer.tokenize(tf.constant(batch)).to_list()]
    assert lengths == sorted(lengths) and lengths != [
        len(ids) for ids in translator.tokenizer.tokenize(
            tf.constant(texts)).to_list()]
    in_order = [t for batch in translator.translate_iter(texts, batch_size=4)
                for t in batch]
    assert sorted_batches == in_order
    assert done == list(range(4, len(texts), 4)) + [len(texts)]


def test_load_with_another_dtype_policy(trained):
    translator, directory = trained
    loaded = Translator.load(directory, dtype="mixed_bfloat16")
    assert loaded.model.dtype_policy.name == "mixed_bfloat16"
    assert len(loaded.translate(TEXTS[:2])) == 2


# The version folders are `save_version`'s, whatever the model: one
# model's two exports show them.
@pytest.mark.parametrize("trained", ["sinusoidal"], indirect=True)
def test_versions_count_up_and_never_overwrite(trained, tmp_path):
    translator = trained[0]
    assert next_version(tmp_path / "translator") == 1
    translator.export(tmp_path)
    assert translator.export(tmp_path) == tmp_path / "translator" / "2"
    with pytest.raises(FileExistsError):
        translator.export(tmp_path, version=2)
    with pytest.raises(ValueError, match="version=0"):
        translator.export(tmp_path, version=0)


def test_save_load_and_cli(trained, tmp_path, capsys):
    """The saved run translates as the translator did in memory, when it
    was trained (its recorded translations)."""
    translator, directory = trained
    loaded = Translator.load(directory)
    recorded = recorded_translations(directory)
    translations = loaded.translate(TEXTS)
    assert translations == [recorded[text] for text in TEXTS]
    assert translations == translator.translate(TEXTS)
    cli(["translate", "--model-dir", str(directory), TEXTS[0], TEXTS[4]])
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == translator.translate([TEXTS[0], TEXTS[4]])
    cli(["export", "--model-dir", str(directory), "--base-path",
         str(tmp_path), "--name", "de"])
    assert (tmp_path / "de" / "1" / "saved_model.pb").exists()
    cli(["evaluate", "--model-dir", str(directory), "--limit", "20"])
    assert "BLEU = " in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="translator.json"):
        Translator.load(tmp_path / "nothing")


def test_a_run_saved_before_the_rnn_translator_still_loads(trained, tmp_path):
    """Runs saved before the model class was recorded hold a
    TransformerTranslator's bare config; they load as one."""
    import shutil

    translator, directory = trained
    if type(translator.model).__name__ != "TransformerTranslator":
        pytest.skip("the old format only knew the Transformer")
    old = tmp_path / "old"
    shutil.copytree(directory, old, ignore=shutil.ignore_patterns(
        "backup", "checkpoints", "logs"))
    config = json.loads((old / "translator.json").read_text())
    config["model"] = translator.model.get_config()  # the old, bare form
    (old / "translator.json").write_text(json.dumps(config))
    loaded = Translator.load(old)
    assert loaded.translate(TEXTS) == translator.translate(TEXTS)
