"""The captioner's SavedModel (images in, caption strings out) computes
what the in-memory module computes, soft or hard attention (read at its
most likely location); in-graph detokenizing is exact."""

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.export.captioner_module import CaptionerModule
from keras_attention.export.captioner_module import export_captioner
from keras_attention.models.captioner import Captioner
from keras_attention.text.digit_scenes import CaptionVocabulary

VOCABULARY = CaptionVocabulary()
IMAGES = np.random.default_rng(0).random((4, 16, 16)).astype("float32")


def module(model_options=None, **options):
    model = Captioner(len(VOCABULARY), filters=(4, 8), feature_dim=6,
                      embedding_dim=5, units=7, dropout=0.0,
                      **(model_options or {}))
    model({"images": IMAGES, "decoder_tokens": np.ones((4, 3), "int32")})
    return CaptionerModule(model, VOCABULARY.words, (16, 16),
                           bos_id=VOCABULARY.bos_id, eos_id=VOCABULARY.eos_id,
                           max_words=5, **options)


def test_detokenize_stops_at_the_end_token():
    ids = [VOCABULARY.encode("a two above an eight") + [2, 0],
           [1] + VOCABULARY.encode("a small one") + [2, 3, 3]]
    strings = module().detokenize(tf.constant(ids)).numpy().tolist()
    assert strings == [b"a two above an eight", b"a small one"]
    for row, text in zip(ids, strings):
        assert VOCABULARY.decode(row) == text.decode()


@pytest.mark.parametrize(
    "beam_size, model_options",
    [(1, None), (3, None),
     (1, {"attention": "hard", "hard_decoding": "argmax"})],
    ids=["greedy", "beam", "hard-argmax"])
def test_exported_equals_in_memory(tmp_path, beam_size, model_options):
    captioner = module(model_options, beam_size=beam_size)
    expected = captioner.caption(tf.constant(IMAGES))
    path = export_captioner(captioner, tmp_path)
    assert path == tmp_path / "captioner" / "1"
    serving = tf.saved_model.load(str(path)).signatures[
        "serving_default"]
    exported = serving(images=tf.constant(IMAGES))
    np.testing.assert_array_equal(exported["tokens"], expected["tokens"])
    assert (exported["caption"].numpy().tolist()
            == expected["caption"].numpy().tolist())
    assert exported["tokens"].shape[1] <= 6  # max_words + the end token
    captions = [VOCABULARY.decode(row) for row in expected["tokens"].numpy()]
    assert [c.encode() for c in captions] == expected["caption"].numpy().tolist()
    if beam_size == 1:
        np.testing.assert_allclose(exported["attention"],
                                   expected["attention"], atol=1e-6)
        assert exported["attention"].shape[2] == 16  # 4x4 locations


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="len\\(words\\)=3"):
        CaptionerModule(module().model, ["a", "b", "c"], (16, 16), bos_id=1,
                        eos_id=2)
    with pytest.raises(ValueError, match="beam_size=0"):
        module(beam_size=0)


def test_export_names_what_it_was_given(tmp_path):
    with pytest.raises(ValueError, match="CaptionerModule, received: str"):
        export_captioner("captioner", tmp_path)
    with pytest.raises(ValueError, match="version=0"):
        export_captioner(module(), tmp_path, version=0)
