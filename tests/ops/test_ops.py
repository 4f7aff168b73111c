"""The pure-function core, tested without weights."""

import numpy as np
import pytest
from keras import ops

from keras_attention.ops import build_attention_mask
from keras_attention.ops import causal_mask
from keras_attention.ops import check_mask_shape
from keras_attention.ops import head_diversity_penalty
from keras_attention.ops import masked_softmax
from keras_attention.ops import merge_masks
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import compiled
from tests.backend import gradient
from tests.backend import tensorflow_only


def test_causal_mask_with_offset():
    mask = as_numpy(causal_mask(3, 5, query_offset=2))
    want = np.arange(5)[None, :] <= (np.arange(3)[:, None] + 2)
    assert_array_equal(mask, want)


def test_build_attention_mask_is_the_and_of_everything():
    rng = np.random.default_rng(0)
    padding = rng.random((2, 4)) > 0.3
    key_padding = rng.random((2, 4)) > 0.3
    attention = rng.random((2, 4, 4)) > 0.3
    mask = as_numpy(build_attention_mask(
        4, 4, padding, key_padding, attention, use_causal_mask=True))
    want = (padding[:, :, None] & key_padding[:, None, :] & attention
            & np.tril(np.ones((4, 4), bool)))
    assert_array_equal(mask, want)
    assert build_attention_mask(4, 4) is None
    assert merge_masks(None, None) is None


def test_masked_softmax_matches_softmax_of_kept_entries():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(3, 6)).astype("float32") * 10
    mask = rng.random((3, 6)) > 0.4
    mask[:, 0] = True
    weights = as_numpy(masked_softmax(scores, mask))
    for row in range(3):
        kept = scores[row][mask[row]]
        want = np.exp(kept - kept.max())
        assert_allclose(weights[row][mask[row]], want / want.sum(),
                        rtol=1e-5)
        assert np.all(weights[row][~mask[row]] == 0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_masked_softmax_fully_masked_rows_have_zero_values_and_gradients(
    dtype,
):
    rng = np.random.default_rng(2)
    scores = ops.cast(rng.normal(size=(2, 4)).astype("float32") * 100, dtype)
    mask = np.array([[True, False, True, False], [False] * 4])
    weights = masked_softmax(scores, mask)
    assert ops.dtype(weights) == "float32"
    assert_array_equal(as_numpy(weights)[1], 0.0)
    (scores_gradient,) = gradient(
        lambda x: ops.sum(masked_softmax(x, mask) * ops.arange(4, dtype="float32")),
        scores)
    scores_gradient = scores_gradient.astype("float32")
    assert np.all(np.isfinite(scores_gradient))
    assert_array_equal(scores_gradient[1], 0.0)


def test_head_diversity_penalty():
    # Two heads, one-hot on different keys: A A^T = I, penalty 0.
    disjoint = np.zeros((1, 2, 1, 3), "float32")
    disjoint[0, 0, 0, 0] = disjoint[0, 1, 0, 2] = 1.0
    assert float(head_diversity_penalty(disjoint)) == 0.0
    # Two heads, one-hot on the same key: A A^T = ones, penalty 2.
    same = np.zeros((1, 2, 1, 3), "float32")
    same[0, :, 0, 1] = 1.0
    assert float(head_diversity_penalty(same)) == pytest.approx(2.0)
    # Padded positions are left out of the mean.
    both = np.concatenate([disjoint, same], axis=2)  # (1, 2, 2, 3)
    assert float(head_diversity_penalty(both)) == pytest.approx(1.0)
    only_first = head_diversity_penalty(both, np.array([[True, False]]))
    assert float(only_first) == 0.0


def test_check_mask_shape_names_the_argument():
    check_mask_shape("padding_mask", None, (2, 3), "(batch, len)")
    check_mask_shape("padding_mask", ops.ones((2, 3)), (None, 3), "x")
    with pytest.raises(ValueError, match=r"padding_mask.shape=\(2, 4\)"):
        check_mask_shape("padding_mask", ops.ones((2, 4)), (2, 3),
                         "(batch, len)")
    with pytest.raises(ValueError, match=r"received: m.shape=\(2,\)"):
        check_mask_shape("m", ops.ones((2,)), (2, 3), "(batch, len)")


@pytest.mark.parametrize("index, count", [(0, 1), (3, 1), (2, 3), (0, 5)])
def test_update_cache_equals_slice_assignment(index, count):
    from keras_attention.ops import update_cache

    rng = np.random.default_rng(index)
    cache = rng.normal(size=(2, 5, 3)).astype("float32")
    update = rng.normal(size=(2, count, 3)).astype("float32")
    want = cache.copy()
    want[:, index:index + count] = update
    assert_array_equal(update_cache(cache, update, index), want)
    traced = compiled(update_cache)(cache, update, ops.convert_to_tensor(index))
    assert_array_equal(traced, want)


@tensorflow_only("the op types of the graph TF Serving runs")
def test_cached_decoding_graph_has_no_xla_only_ops():
    """Stock TF Serving cannot run XLA-only ops such as
    XlaDynamicUpdateSlice: the cached decoder step must not contain any."""
    import tensorflow as tf

    from keras_attention.layers import TransformerDecoder

    decoder = TransformerDecoder(intermediate_dim=8, num_heads=2)
    source = tf.zeros((2, 3, 4))
    decoder(tf.zeros((2, 2, 4)), source)
    cache = decoder.initial_cache(source, max_length=4)
    step = tf.function(
        lambda token, cache, index: decoder(token, cache=cache,
                                            cache_update_index=index)
    )
    graph = step.get_concrete_function(
        tf.TensorSpec((None, 1, 4)), cache, tf.TensorSpec((), tf.int32)
    ).graph
    op_types = {op.type for op in graph.get_operations()}
    assert not [t for t in op_types if t.startswith("Xla")], op_types



def test_fused_attention_equals_the_masked_softmax_path():
    """`fused_attention` (`keras.ops.dot_product_attention`) gives what
    `masked_softmax` and `weighted_sum` give, a fully masked row's zero
    context included."""
    from keras_attention.ops import fused_attention
    from keras_attention.ops import masked_softmax
    from keras_attention.ops import scaled_dot_product_scores
    from keras_attention.ops import weighted_sum

    rng = np.random.default_rng(3)
    query = rng.normal(size=(2, 3, 2, 4)).astype("float32")  # (B, T, N, H)
    key = rng.normal(size=(2, 5, 2, 4)).astype("float32")  # (B, S, N, H)
    value = rng.normal(size=(2, 5, 2, 4)).astype("float32")
    mask = rng.random((2, 1, 3, 5)) > 0.3  # (B, 1, T, S) over heads
    mask[1, 0, 2] = False  # query row 2 of sentence 1 attends nothing
    for row_mask in (mask, None):
        weights = masked_softmax(scaled_dot_product_scores(query, key),
                                 row_mask)
        expected = ops.convert_to_numpy(weighted_sum(weights, value))
        got = ops.convert_to_numpy(fused_attention(query, key, value,
                                                   row_mask))
        assert_allclose(got, expected, atol=1e-5)
        if row_mask is not None:
            assert np.all(got[1, 2] == 0) and np.any(got[1, 1] != 0)
