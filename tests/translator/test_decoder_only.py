"""The decoder-only translator (T-D) through the shared path: trained by
`train`, its SavedModel (beam search) translates in a process
without keras_attention as the in-memory translator does, and its
attention pictures come out of `Translator.attention`."""

import numpy as np
import pytest

from keras_attention.translator import Translator
from tests.trained_translators import TEXTS
from tests.trained_translators import recorded_translations
from tests.trained_translators import trained_translator
from tests.translator.test_export import _load_elsewhere


@pytest.fixture(scope="module")
def decoder_only(tmp_path_factory):
    directory = trained_translator(tmp_path_factory, "decoder_only")
    return Translator.load(directory), directory


def test_trained_and_exported_like_the_other_translators(decoder_only,
                                                         tmp_path):
    translator, directory = decoder_only
    assert type(translator.model).__name__ == "DecoderOnlyTranslator"
    greedy = translator.translate(TEXTS)
    recorded = recorded_translations(directory)
    assert greedy == [recorded[text] for text in TEXTS]
    assert len(set(greedy)) > 2  # outputs vary with the input
    # Beam search in the SavedModel (greedy's path is the same cache and
    # steps; the other translators' tests export both).
    beam = translator.with_decoding(beam_size=3)
    beam.module.max_source_length = 32
    (loaded,) = _load_elsewhere(beam.export(tmp_path, "translator"))
    assert loaded["translation"] == beam.translate(TEXTS)
    assert loaded["xla_ops"] == []
    assert loaded["truncated"] == [False, False, False, True, False]
    # Each output token's attention over the source is a distribution;
    # padding outputs, and the empty input's, have none.
    tokens = np.array(loaded["tokens"])
    sums = np.array(loaded["attention"]).sum(-1)
    real = tokens != translator.model.pad_id
    real[TEXTS.index("")] = False
    np.testing.assert_allclose(sums[real], 1.0, atol=1e-4)
    assert np.all(sums[~real] == 0)


def test_attention_pictures(decoder_only):
    translator, _ = decoder_only
    for kind in ("cross", "encoder", "decoder"):
        picture = translator.attention("A woman cooks.", kind=kind)
        weights = picture["attention"]  # (K, N, rows, columns)
        assert weights.shape[:2] == (2, 4)
        assert weights.shape[2:] == (len(picture["row_pieces"]),
                                     len(picture["column_pieces"]))
        assert np.isfinite(weights).all() and weights.min() >= 0
