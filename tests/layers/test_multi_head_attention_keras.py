"""MultiHeadAttention called the Keras way: `query_mask`/`value_mask`/
`key_mask`, which Keras fills from implicit masks, so the layer is a drop-in
replacement for `keras.layers.MultiHeadAttention`."""

import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.layers.test_multi_head_attention import BATCH
from tests.layers.test_multi_head_attention import DIM
from tests.layers.test_multi_head_attention import RNG
from tests.layers.test_multi_head_attention import SOURCE
from tests.layers.test_multi_head_attention import SOURCE_LEN
from tests.layers.test_multi_head_attention import SOURCE_PADDING
from tests.layers.test_multi_head_attention import TARGET
from tests.layers.test_multi_head_attention import TARGET_PADDING


def _cross_pair(**kwargs):
    layer = MultiHeadAttention(num_heads=2, key_dim=4, **kwargs)
    key = RNG.normal(size=(BATCH, SOURCE_LEN, 5)).astype("float32")
    layer(TARGET, SOURCE, key)
    twin = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, **kwargs)
    twin(TARGET, SOURCE, key, return_attention_scores=True)
    twin.set_weights(layer.get_weights())
    return layer, twin, key


@pytest.mark.parametrize("causal", [False, True])
def test_keras_mask_arguments_equal_keras(causal):
    layer, twin, key = _cross_pair()
    key_mask = np.array([[1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1]], bool)
    masks = dict(query_mask=TARGET_PADDING, value_mask=SOURCE_PADDING,
                 key_mask=key_mask)
    ours, our_scores = layer(TARGET, SOURCE, key, use_causal_mask=causal,
                             return_attention_scores=True, **masks)
    theirs, their_scores = twin(TARGET, SOURCE, key, use_causal_mask=causal,
                                return_attention_scores=True, **masks)
    real = TARGET_PADDING  # Keras attends from padded rows; we zero them.
    assert_allclose(as_numpy(ours)[real], as_numpy(theirs)[real],
                    atol=1e-5)
    assert_allclose(
        as_numpy(our_scores).transpose(0, 2, 1, 3)[real],
        as_numpy(their_scores).transpose(0, 2, 1, 3)[real], atol=1e-6)
    # The masked keys (value or key mask) get no weight.
    unseen = ~np.repeat(SOURCE_PADDING & key_mask, real.sum(1), axis=0)
    rows = as_numpy(our_scores).transpose(0, 2, 1, 3)[real]  # (R, N, S)
    assert unseen.any() and np.all(rows[np.broadcast_to(
        unseen[:, None], rows.shape)] == 0.0)


def test_drop_in_replacement_in_a_functional_model_with_implicit_masks():
    """The same functional model with Keras's layer or ours: Keras fills
    `query_mask`/`value_mask` from `Embedding(mask_zero=True)` for both."""
    target_ids = np.array([[3, 4, 5, 6], [7, 8, 0, 0]], "int32")
    source_ids = np.array([[1, 2, 3, 4, 5, 6], [2, 3, 4, 0, 0, 0]], "int32")

    def build(attention_cls):
        target = keras.Input((None,), dtype="int32")
        source = keras.Input((None,), dtype="int32")
        embed = keras.layers.Embedding(10, DIM, mask_zero=True,
                                       embeddings_initializer="ones")
        attention = attention_cls(num_heads=2, key_dim=4)
        output = attention(embed(target), embed(source))
        return keras.Model([target, source], output), embed, attention

    theirs, their_embed, their_attention = build(
        keras.layers.MultiHeadAttention)
    ours, our_embed, our_attention = build(MultiHeadAttention)
    their_embed.set_weights([RNG.normal(size=(10, DIM)).astype("float32")])
    our_embed.set_weights(their_embed.get_weights())
    our_attention.set_weights(their_attention.get_weights())
    real = target_ids != 0
    got = as_numpy(ours([target_ids, source_ids]))
    want = as_numpy(theirs([target_ids, source_ids]))
    assert_allclose(got[real], want[real], atol=1e-5)
    # The masks were applied: source padding changes nothing.
    longer = np.concatenate([source_ids, np.zeros((BATCH, 2), "int32")], 1)
    assert_allclose(as_numpy(ours([target_ids, longer]))[real],
                    got[real], atol=1e-5)


def test_padding_mask_and_query_mask_both_apply():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    first = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    second = np.array([[1, 1, 1, 1], [0, 1, 1, 1]], bool)
    _, both = layer(TARGET, SOURCE, padding_mask=first, query_mask=second,
                    return_attention_scores=True)
    _, merged = layer(TARGET, SOURCE, padding_mask=first & second,
                      return_attention_scores=True)
    assert_array_equal(as_numpy(both), as_numpy(merged))
    assert np.all(as_numpy(both)[:, :, 3].sum(-1)[0] == 0.0)
    assert np.all(as_numpy(both)[1, :, 0] == 0.0)


@pytest.mark.parametrize("name, shape", [("query_mask", (BATCH, 3)),
                                         ("value_mask", (BATCH, 5)),
                                         ("key_mask", (3, SOURCE_LEN))])
def test_keras_mask_errors_name_the_argument(name, shape):
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    with pytest.raises(ValueError, match=rf"`{name}`.*received"):
        layer(TARGET, SOURCE, **{name: np.ones(shape, bool)})
