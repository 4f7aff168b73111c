"""The exported translators (Transformer and RNN) over REST equal the same
SavedModel run in-process, and the translations the trainer wrote."""

import functools
import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

from tests.serving import http
from tests.serving.model_repository import TEXTS
from tests.serving.model_repository import TRANSLATIONS

DETAILS = "translate_with_attention"


@pytest.fixture(scope="module", params=sorted(TRANSLATIONS))
def name(request):
    """The served translator's name: every test runs on both models."""
    return request.param


@pytest.fixture(scope="module")
def translations(repository, name):
    return json.loads((repository / TRANSLATIONS[name]).read_text("utf-8"))


@pytest.fixture(scope="module")
def in_process(repository, name):
    """The signatures' outputs on TEXTS, from tf.saved_model.load."""
    model = tf.saved_model.load(str(repository / name / "1"))
    text = tf.constant(TEXTS)
    return {name: {key: value.numpy() for key, value in
                   model.signatures[name](text=text).items()}
            for name in ("serving_default", DETAILS)}


@pytest.fixture(scope="module")
def translate_one(server_url, name):
    @functools.cache
    def translate(text):
        reply = http.call(server_url, "predict", {"instances": [text]},
                          model=name)
        assert reply.status == 200, reply.raw
        (translation,) = reply.json["predictions"]
        return translation
    return translate


def decoded(strings):
    return [s.decode("utf-8") for s in strings.tolist()]


@pytest.mark.parametrize("index", range(len(TEXTS)),
                         ids=["short", "empty", "longer", "non-ascii",
                              "very long"])
def test_translation_over_rest(index, translate_one, translations,
                               in_process):
    text = TEXTS[index]
    translation = translate_one(text)
    assert translation == translations[text]
    assert translation == decoded(
        in_process["serving_default"]["translation"])[index]


def test_mixed_batch_equals_one_by_one(server_url, translate_one, name):
    reply = http.call(server_url, "predict", {"instances": TEXTS},
                      model=name)
    assert reply.status == 200, reply.raw
    assert reply.json == {"predictions": [translate_one(t) for t in TEXTS]}
    columnar = http.call(server_url, "predict", {"inputs": {"text": TEXTS}},
                         model=name)
    assert columnar.json == {"outputs": reply.json["predictions"]}


def test_translate_with_attention(server_url, in_process, name):
    metadata = http.get(http.model_url(server_url, name)
                        + "/metadata").json
    listed = metadata["metadata"]["signature_def"]["signature_def"][DETAILS]
    reply = http.call(server_url, "predict", {"signature_name": DETAILS,
                                              "instances": TEXTS},
                      model=name)
    assert reply.status == 200, reply.raw
    rows = reply.json["predictions"]
    assert [set(row) for row in rows] == [set(listed["outputs"])] * len(TEXTS)
    expected = in_process[DETAILS]
    assert [row["translation"] for row in rows] == decoded(
        expected["translation"])
    for key in ("pieces", "source_pieces"):
        assert [row[key] for row in rows] == [decoded(r) for r in expected[key]]
    np.testing.assert_array_equal([row["tokens"] for row in rows],
                                  expected["tokens"])
    assert [row["truncated"] for row in rows] == expected["truncated"].tolist()
    np.testing.assert_allclose([row["attention"] for row in rows],
                               expected["attention"], rtol=1e-6, atol=1e-7)


def test_strings_are_written_as_raw_utf8(server_url, name):
    # rapidjson's UTF-8 writer copies non-ASCII bytes; nothing is escaped
    # as \uXXXX. SentencePiece's word marker is U+2581.
    reply = http.call(server_url, "predict", {
        "signature_name": DETAILS, "instances": [TEXTS[3]]},
        model=name)
    assert "▁".encode() in reply.raw
    assert b"\\u2581" not in reply.raw
    (row,) = reply.json["predictions"]
    assert any("▁" in piece for piece in row["source_pieces"])


def test_attention_map_over_rest_draws_the_served_attention(
        server_url, name, in_process, tmp_path, capsys):
    """`keras-attention attention-map --url` draws the attention the served
    `translate_with_attention` returns: the page's matrix is the SavedModel's
    own, run in-process, without padding and EOS."""
    from keras_attention import cli
    from keras_attention.visualize import read_data

    page = tmp_path / "map.html"
    assert cli.main(["attention-map", "--url", server_url, "--model-name",
                     name, TEXTS[0], "-o", str(page)]) == 0
    details = in_process[DETAILS]
    assert capsys.readouterr().out == (
        details["translation"][0].decode("utf-8") + "\n")
    keep = [i for i, p in enumerate(decoded(details["pieces"][0]))
            if p not in ("<pad>", "</s>")]
    source = [j for j, p in enumerate(decoded(details["source_pieces"][0]))
              if p not in ("<pad>", "</s>")]
    want = details["attention"][0][np.ix_(keep, source)]
    data = read_data(page.read_text("utf-8"))
    np.testing.assert_allclose(np.asarray(data["attention"])[0, 0], want,
                               atol=1e-6)

