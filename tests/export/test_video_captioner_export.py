"""A `VideoCaptioner` exports through the captioner's module unchanged
(videos in as `(B, T, H, W)`, caption strings out): the SavedModel computes
what the in-memory module computes."""

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.data.digit_clips import ClipVocabulary
from keras_attention.export.captioner_module import CaptionerModule
from keras_attention.export.captioner_module import export_captioner
from keras_attention.models.video_captioner import VideoCaptioner

VOCABULARY = ClipVocabulary()
VIDEOS = np.random.default_rng(0).random((3, 8, 16, 16)).astype("float32")


@pytest.mark.parametrize("beam_size", [1, 3], ids=["greedy", "beam"])
def test_exported_equals_in_memory(tmp_path, beam_size):
    model = VideoCaptioner.from_preset("tiny", len(VOCABULARY), local=True)
    model({"videos": VIDEOS, "decoder_tokens": np.ones((3, 2), "int32")})
    module = CaptionerModule(
        model, VOCABULARY.words, VIDEOS.shape[1:], bos_id=VOCABULARY.bos_id,
        eos_id=VOCABULARY.eos_id, max_words=VOCABULARY.max_words,
        beam_size=beam_size)
    expected = module.caption(tf.constant(VIDEOS))
    path = export_captioner(module, tmp_path, name="video_captioner")
    serving = tf.saved_model.load(str(path)).signatures["serving_default"]
    exported = serving(images=tf.constant(VIDEOS))  # the module's name
    np.testing.assert_array_equal(exported["tokens"], expected["tokens"])
    assert (exported["caption"].numpy().tolist()
            == expected["caption"].numpy().tolist())
    captions = [VOCABULARY.decode(row) for row in expected["tokens"].numpy()]
    assert [c.encode() for c in captions] == expected["caption"].numpy().tolist()
    if beam_size == 1:
        np.testing.assert_allclose(exported["attention"],
                                   expected["attention"], atol=1e-6)
        assert exported["attention"].shape[2] == 8  # the frames
