import numpy as np
import pytest

from keras_attention.visualize import plot_translation
from keras_attention.visualize import read_data
from keras_attention.visualize import translation_viewer
from keras_attention.visualize.translation import translation_example


def batch_result():
    """A `translate_with_attention`-shaped batch of two: the first output
    ends at EOS and then pads, the second source is padded."""
    attention = np.random.default_rng(0).random((2, 4, 3)).astype(np.float32)
    return {
        "translation": np.array([b"A dog", b"Snow"]),
        "pieces": np.array([["▁A".encode(), "▁dog".encode(), b"</s>", b"<pad>"],
                            ["▁Sn".encode(), b"ow", b"!", b"</s>"]]),
        "source_pieces": np.array([["▁Ein".encode(), "▁Hund".encode(), b"."],
                                   ["▁Schnee".encode(), b"<pad>", b"<pad>"]]),
        "attention": attention,
    }


def test_batch_result_drops_padding_and_eos():
    result = batch_result()
    weights, target, source = translation_example(result, 0)
    np.testing.assert_array_equal(weights, result["attention"][0, :2, :3])
    assert (target, source) == (["▁A", "▁dog"], ["▁Ein", "▁Hund", "."])
    weights, target, source = translation_example(result, 1)
    np.testing.assert_array_equal(weights, result["attention"][1, :3, :1])
    assert (target, source) == (["▁Sn", "ow", "!"], ["▁Schnee"])

    figure = plot_translation(result, 1)
    ax = figure.axes[0]
    np.testing.assert_array_equal(ax.get_images()[0].get_array(),
                                  result["attention"][1, :3, :1])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Sn", "·ow", "·!"]
    assert ax.get_title() == "Snow"
    data = read_data(translation_viewer(result, 0).to_html())
    np.testing.assert_allclose(data["attention"][0][0],
                               result["attention"][0, :2, :3], atol=1e-6)
    assert data["heads"] == ["heads averaged"]


def test_sentence_result_keeps_layers_and_heads():
    attention = np.random.default_rng(1).random((2, 3, 3, 2))  # (L, N, T, S)
    result = {"translation": "A dog", "attention": attention,
              "target_pieces": ["▁A", "▁dog", "</s>"],
              "source_pieces": ["▁Ein", "▁Hund"]}
    viewer = translation_viewer(result)
    np.testing.assert_array_equal(viewer.attention, attention[:, :, :2])
    assert viewer.title == "A dog"
    figure = plot_translation(result, layer=0)
    for ax, head in zip(figure.axes[:3], attention[0, :, :2]):
        np.testing.assert_array_equal(ax.get_images()[0].get_array(), head)
    assert figure.get_suptitle() == "A dog"


def self_attention_result(kind):
    """A `Translator.attention(..., kind=kind)`-shaped result: two layers of
    two heads over the source pieces (encoder) or the target's positions
    (decoder: rows write the pieces, EOS last; columns read them, BOS
    first)."""
    source, target = ["▁Ein", "▁Hund", "</s>"], ["▁A", "▁dog", "</s>"]
    rows, columns = {"encoder": (source, source),
                     "decoder": (target, ["<s>", "▁A", "▁dog"])}[kind]
    attention = np.random.default_rng(2).random((2, 2, 3, 3))
    return {"translation": "A dog", "source_pieces": source,
            "target_pieces": target, "kind": kind, "row_pieces": rows,
            "column_pieces": columns, "attention": attention}


def test_encoder_self_attention_is_source_by_source():
    result = self_attention_result("encoder")
    weights, rows, columns = translation_example(result)
    np.testing.assert_array_equal(weights, result["attention"][..., :2, :2])
    assert rows == columns == ["▁Ein", "▁Hund"]  # EOS dropped, as ever
    viewer = translation_viewer(result)
    data = read_data(viewer.to_html())
    assert data["target"] == data["source"] == ["Ein", "Hund"]
    assert data["axes"] == ["source (query)", "source (key)"]
    assert "Rows of the table are source (query) tokens" in viewer.to_html()
    figure = plot_translation(result, layer=0)
    ax = figure.axes[0]
    np.testing.assert_array_equal(ax.get_images()[0].get_array(),
                                  result["attention"][0, 0, :2, :2])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Ein", "Hund"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Ein", "Hund"]
    assert (figure.get_supylabel(), figure.get_supxlabel()) == (
        "source (query)", "source (key)")


def test_decoder_self_attention_is_square_and_keeps_bos_and_eos():
    result = self_attention_result("decoder")
    weights, rows, columns = translation_example(result)
    np.testing.assert_array_equal(weights, result["attention"])
    assert rows == ["▁A", "▁dog", "</s>"] and columns == ["<s>", "▁A", "▁dog"]
    data = read_data(translation_viewer(result).to_html())
    assert np.asarray(data["attention"]).shape == (2, 2, 3, 3)
    assert data["axes"] == ["target (query)", "target (key)"]
    assert data["source"] == ["<s>", "A", "dog"]
    figure = plot_translation(result)
    assert (figure.get_supylabel(), figure.get_supxlabel()) == (
        "target (query)", "target (key)")
    # A `drop` given is used as given.
    weights, rows, columns = translation_example(
        result, drop=("<s>", "</s>"))
    np.testing.assert_array_equal(weights, result["attention"][..., :2, 1:])


def test_a_cross_result_keeps_its_labels():
    """The viewer and the picture of the cross-attention name their axes
    target and source, as before."""
    result = {"translation": "A dog", "attention": np.ones((1, 1, 2, 1)),
              "target_pieces": ["▁A", "▁dog"], "source_pieces": ["▁Ein"]}
    page = translation_viewer(result).to_html()
    assert read_data(page)["axes"] == ["target", "source"]
    assert ("Hover a target token to shade the source tokens by its\n"
            "attention") in page
    figure = plot_translation(result)
    assert (figure.get_supylabel(), figure.get_supxlabel()) == (
        "target", "source")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: translation_example({"attention": 1}), "result` must be"),
        (lambda: translation_example(
            dict(self_attention_result("encoder"), kind="sideways")),
         "kind='sideways'"),
        (lambda: translation_example(
            dict(self_attention_result("encoder"), row_pieces=["a"])),
         "1 row pieces"),
        (lambda: plot_translation(self_attention_result("encoder"), layer=2),
         "for 2 encoder layers"),
        (lambda: translation_example(batch_result(), 2), "index=2"),
        (lambda: plot_translation(
            {"attention": np.ones((2, 1, 1, 1)), "target_pieces": ["a"],
             "source_pieces": ["b"]}, layer=2), "layer=2"),
        (lambda: translation_example(
            {"attention": np.ones((1, 1, 2, 2)), "target_pieces": ["a"],
             "source_pieces": ["b", "c"]}), "1 target pieces"),
        (lambda: translation_example(
            {"attention": np.ones((1, 1, 1, 1)), "target_pieces": ["</s>"],
             "source_pieces": ["b"]}), "Nothing is left"),
    ],
)
def test_bad_results_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_real_translator():
    """Both reports of an (untrained) translator draw as they were given."""
    import tensorflow as tf

    from keras_attention.models import TransformerTranslator
    from keras_attention.text import SubwordTokenizer
    from keras_attention.text import synthetic
    from keras_attention.text import train_sentencepiece
    from keras_attention.training.seq2seq import build
    from keras_attention.translator import Translator

    pairs = synthetic.generate_pairs(100, seed=1)
    tokenizer = SubwordTokenizer(
        train_sentencepiece([text for pair in pairs for text in pair], 64))
    model = build(TransformerTranslator(
        tokenizer.vocabulary_size, tokenizer.vocabulary_size, num_layers=2,
        hidden_dim=16, num_heads=2, intermediate_dim=32))
    translator = Translator(model, tokenizer, max_source_length=64)
    texts = sorted((pair[0] for pair in pairs[:2]), key=len)

    found = translator.attention(texts[0])
    viewer = translation_viewer(found)
    assert viewer.attention.shape[:2] == (2, 2)
    keep = [piece != "</s>" for piece in found["target_pieces"]]
    np.testing.assert_array_equal(viewer.attention,
                                  found["attention"][:, :, keep])

    batch = translator.module.translate_with_attention(tf.constant(texts))
    weights, target, source = translation_example(batch, 0)
    pieces = [p.decode() for p in batch["source_pieces"].numpy()[0]]
    assert "<pad>" in pieces  # the shorter sentence is padded
    assert source == [piece for piece in pieces if piece != "<pad>"]
    np.testing.assert_array_equal(
        weights, batch["attention"].numpy()[0][:len(target), :len(source)])

    # The self-attentions draw square: source by source, target by target.
    for kind, pieces in (("encoder", "source"), ("decoder", "target")):
        found = translator.attention(texts[0], kind=kind)
        viewer = translation_viewer(found)
        rows, columns = viewer.attention.shape[2:]
        assert rows == columns
        assert (viewer.row_name, viewer.column_name) == (
            f"{pieces} (query)", f"{pieces} (key)")
