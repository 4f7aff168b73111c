"""The relative-position core: skew == gather == the NumPy reference."""

import numpy as np
import pytest
from keras import ops

from keras_attention.ops import relative_logits_gather
from keras_attention.ops import relative_logits_skew
from keras_attention.ops import relative_positions
from keras_attention.ops import relative_values_gather
from keras_attention.ops import relative_values_skew
from tests import relative_reference as reference
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import gradient
from tests.backend import jit_compiled
from tests.backend import tensorflow_only

RNG = np.random.default_rng(5)
BATCH, HEADS, SIZE = 2, 3, 4
LENGTHS = [1, 2, 5]
DISTANCES = ["1", "2", "T-1", "T+3"]


def _distance(name, length):
    return max(1, {"1": 1, "2": 2, "T-1": length - 1, "T+3": length + 3}[name])


def _query(length):
    return RNG.normal(size=(BATCH, length, HEADS, SIZE)).astype("float32")


def _table(max_distance, per_head, size=SIZE):
    shape = (2 * max_distance + 1, size)
    if per_head:
        shape = (HEADS,) + shape
    return RNG.normal(size=shape).astype("float32")


def _weights(length, causal):
    logits = RNG.normal(size=(BATCH, HEADS, length, length))
    mask = np.ones((length, length), bool)
    if causal:
        mask = np.tril(mask)
    return reference.softmax(logits, mask).astype("float32")


def _lower(scores):
    """The causal part (j <= i) of `(..., T, T)` scores, flattened."""
    length = scores.shape[-1]
    return as_numpy(scores)[..., np.tril(np.ones((length, length), bool))]


def test_relative_positions_golden():
    got = ops.convert_to_numpy(relative_positions(3, 4, 1))
    assert_array_equal(
        got, [[1, 2, 2, 2], [0, 1, 2, 2], [0, 0, 1, 2]])
    shifted = ops.convert_to_numpy(relative_positions(1, 5, 2, query_offset=3))
    assert_array_equal(shifted, [[0, 0, 1, 2, 3]])
    assert shifted.dtype == np.int32


@pytest.mark.parametrize("per_head", [False, True], ids=["shared", "per_head"])
@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("length", LENGTHS)
def test_logits_skew_equals_gather_equals_numpy(length, distance, per_head):
    query = _query(length)
    table = _table(_distance(distance, length), per_head)
    want = reference.relative_logits(query, table, length)
    gather = ops.convert_to_numpy(relative_logits_gather(query, table, length))
    assert_allclose(gather, want, atol=1e-5)
    both = ops.convert_to_numpy(relative_logits_skew(query, table))
    assert_allclose(both, want, atol=1e-5)
    causal = ops.convert_to_numpy(relative_logits_skew(query, table, True))
    assert_allclose(_lower(causal), _lower(want), atol=1e-5)


@pytest.mark.parametrize("length", LENGTHS)
def test_large_distance_equals_unclipped(length):
    """With δ >= T - 1 no distance is clipped."""
    query = _query(length)
    table = _table(length + 3, per_head=False)
    want = reference.relative_logits(query, table, length, clip=False)
    for got in (relative_logits_skew(query, table),
                relative_logits_gather(query, table, length)):
        assert_allclose(ops.convert_to_numpy(got), want, atol=1e-5)


@pytest.mark.parametrize("offset", [0, 2, 4])
def test_logits_gather_with_an_offset_are_rows_of_the_full_logits(offset):
    """Cached decoding: queries at positions offset.. see keys 0..S-1."""
    query, table = _query(6), _table(2, per_head=True)
    full = reference.relative_logits(query, table, 6)
    rows = query[:, offset:offset + 2]
    for index in (offset, ops.convert_to_tensor(offset)):
        got = relative_logits_gather(rows, table, 6, query_offset=index)
        assert_allclose(ops.convert_to_numpy(got),
                        full[:, :, offset:offset + 2], atol=1e-5)


@pytest.mark.parametrize("per_head", [False, True], ids=["shared", "per_head"])
@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("length", LENGTHS)
def test_values_skew_equals_gather_equals_numpy(length, distance, per_head):
    table = _table(_distance(distance, length), per_head, size=5)
    for causal in (False, True):
        weights = _weights(length, causal)
        want = reference.relative_values(weights, table)
        for got in (relative_values_gather(weights, table),
                    relative_values_skew(weights, table, causal=causal)):
            assert_allclose(ops.convert_to_numpy(got), want,
                            atol=1e-5)


def test_values_gather_with_an_offset():
    table = _table(1, per_head=False)
    weights = RNG.random((BATCH, HEADS, 2, 7)).astype("float32")
    want = reference.relative_values(weights, table, query_offset=3)
    got = relative_values_gather(weights, table, query_offset=ops.convert_to_tensor(3))
    assert_allclose(ops.convert_to_numpy(got), want, atol=1e-5)


TABLE = _table(2, per_head=False)


def _skew_and_gather(query, weights, causal):
    length = ops.shape(query)[1]
    return (relative_logits_skew(query, TABLE, causal),
            relative_logits_gather(query, TABLE, length),
            relative_values_skew(weights, TABLE, causal),
            relative_values_gather(weights, TABLE))


def _check_against_reference(function, causal):
    for length in (1, 4, 6):
        query, weights = _query(length), _weights(length, causal)
        logits = reference.relative_logits(query, TABLE, length)
        values = reference.relative_values(weights, TABLE)
        skew, gather, values_skew, values_gather = (
            as_numpy(ops.convert_to_numpy(x)) for x in function(query, weights))
        pick = _lower if causal else np.asarray
        assert_allclose(pick(skew), pick(logits), atol=1e-5)
        assert_allclose(gather, logits, atol=1e-5)
        assert_allclose(values_skew, values, atol=1e-5)
        assert_allclose(values_gather, values, atol=1e-5)


@tensorflow_only("tf.TensorSpec: unknown batch and length")
@pytest.mark.parametrize("causal", [False, True])
def test_unknown_lengths_in_tf_function(causal):
    """Traced once with unknown batch and length."""
    import tensorflow as tf

    query_spec = tf.TensorSpec((None, None, HEADS, SIZE), tf.float32)
    weights_spec = tf.TensorSpec((None, HEADS, None, None), tf.float32)
    dynamic = tf.function(
        lambda query, weights: _skew_and_gather(query, weights, causal),
        input_signature=[query_spec, weights_spec])
    _check_against_reference(dynamic, causal)


@pytest.mark.parametrize("causal", [False, True])
def test_xla(causal):
    """Compiled with XLA, once per length."""
    compiled = jit_compiled(
        lambda query, weights: _skew_and_gather(query, weights, causal))
    _check_against_reference(compiled, causal)


def test_gradients_of_skew_and_gather_agree():
    query, table = _query(5), _table(2, per_head=True)
    cotangent = RNG.normal(size=(BATCH, HEADS, 5, 5)).astype("float32")
    gradients = [
        gradient(lambda q, e, f=function: ops.sum(ops.multiply(f(q, e), cotangent)),
                 query, table)
        for function in (lambda q, e: relative_logits_skew(q, e),
                         lambda q, e: relative_logits_gather(q, e, 5))
    ]
    for skew, gather in zip(*gradients):
        assert_allclose(skew, gather, atol=1e-4)


def test_even_table_is_rejected():
    with pytest.raises(ValueError, match=r"table.shape=\(4, 4\)"):
        relative_logits_skew(_query(3), np.zeros((4, 4), "float32"))
