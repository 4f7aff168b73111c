"""`ops.blockwise_attention(key_stride=c)`: keys that stand for groups of
`c` positions (the compressed slots of `MemoryCompressedAttention`).

Causal means slot `m`'s last position is at or before the query, `m·c +
c − 1 <= i + query_offset`: the rule of `ops.compressed_causal_mask`,
which the references here take as the truth. Outputs and gradients must
equal a float64 softmax attention under that mask, for block sizes that
do and do not divide the lengths, with a cache offset, with padding, and
the queries that see no slot must get zeros, never NaN.
"""

import numpy as np
import pytest
from keras import ops

from keras_attention.ops import blockwise_attention
from keras_attention.ops import compressed_causal_mask
from keras_attention.ops.blockwise import dense_mask
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import gradient
from tests.ops.test_blockwise_attention import _reference_gradients
from tests.ops.test_blockwise_attention import reference

B, N, H, D = 2, 3, 4, 5


def case(query_length, stride, query_offset=0, seed=0, padded=False):
    """Queries `(B, T, N, H)`, slots `(B, M, N, H|D)` for the positions up
    to the last query (`M = ceil((query_offset + T) / stride)`), and the
    key and query padding vectors (row 1 padded at the end) or None."""
    rng = np.random.default_rng(seed)
    slots = -(-(query_offset + query_length) // stride)
    q = rng.normal(size=(B, query_length, N, H)).astype("float32")
    k = rng.normal(size=(B, slots, N, H)).astype("float32")
    v = rng.normal(size=(B, slots, N, D)).astype("float32")
    if not padded:
        return q, k, v, None, None
    key_padding = np.ones((B, slots), bool)
    key_padding[1, max(1, slots - 2):] = False
    query_padding = np.ones((B, query_length), bool)
    query_padding[1, max(1, query_length - 3):] = False
    return q, k, v, key_padding, query_padding


def allowed_by(query_length, slots, stride, causal, query_offset=0,
               key_padding=None, query_padding=None):
    """`(B|1, 1, T, M)`: `ops.compressed_causal_mask` and the padding."""
    allowed = np.ones((1, 1, query_length, slots), bool)
    if causal:
        allowed = allowed & as_numpy(compressed_causal_mask(
            query_length, slots, stride, query_offset)).astype(bool)
    if key_padding is not None:
        allowed = allowed & key_padding[:, None, None, :]
    if query_padding is not None:
        allowed = allowed & query_padding[:, None, :, None]
    return allowed


CASES = {
    # name: (query length, stride, query offset, padded)
    "c 2, causal": (13, 2, 0, False),
    "c 3, causal, T not a multiple": (13, 3, 0, False),
    "c 4, causal, padding": (14, 4, 0, True),
    "c 3, causal, offset 7 (a cache)": (5, 3, 7, False),
    "c 3, causal, offset 2, padding": (9, 3, 2, True),
    "c 5, causal, one query at 11": (1, 5, 11, False),
}


@pytest.mark.parametrize("block_size", [1, 2, 3, 16])
@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_causal_equals_the_compressed_mask(name, block_size):
    query_length, stride, offset, padded = CASES[name]
    q, k, v, key_padding, query_padding = case(query_length, stride, offset,
                                               padded=padded)
    options = dict(causal=True, key_stride=stride, query_offset=offset,
                   key_padding_mask=key_padding,
                   query_padding_mask=query_padding, block_size=block_size)
    allowed = allowed_by(query_length, k.shape[1], stride, True, offset,
                         key_padding, query_padding)
    scale = 1.0 / np.sqrt(H)
    out = as_numpy(blockwise_attention(q, k, v, **options))
    assert np.isfinite(out).all()
    assert_allclose(out, reference(q, k, v, allowed, scale), atol=1e-5)

    probe = np.cos(np.arange(out.size)).reshape(out.shape)

    def loss(q, k, v):
        out = blockwise_attention(q, k, v, **options)
        return ops.sum(out * ops.convert_to_tensor(probe, out.dtype))

    want = _reference_gradients(q, k, v, allowed, scale, probe)
    for label, got, expected in zip("qkv", gradient(loss, q, k, v), want):
        assert np.isfinite(got).all(), label
        assert_allclose(got, expected, atol=1e-5, err_msg=label)


def test_the_rule_is_not_plain_causality():
    """A slot is seen once all its positions are: the plain causal rule
    on slot indices, `m <= i`, or from a slot's first position, `m·c <=
    i`, would give other outputs, so the test above tells them apart."""
    q, k, v, _, _ = case(12, 3)
    out = as_numpy(blockwise_attention(q, k, v, causal=True, key_stride=3,
                                       block_size=2))
    np.testing.assert_array_equal(out[:, :2], 0.0)  # no complete slot yet
    assert_allclose(out[:, 2:5], np.broadcast_to(v[:, :1], (B, 3, N, D)),
                    atol=1e-6)  # slot 0 alone
    index, first = np.arange(12)[:, None], 3 * np.arange(4)[None]
    for wrong in (np.arange(4)[None] <= index, first <= index):
        other = reference(q, k, v, wrong, 1.0 / np.sqrt(H))
        assert np.abs(out - other).max() > 1e-2


@pytest.mark.parametrize("padded", [False, True])
def test_without_causality_the_stride_changes_nothing(padded):
    q, k, v, key_padding, query_padding = case(10, 3, padded=padded)
    options = dict(key_padding_mask=key_padding,
                   query_padding_mask=query_padding, block_size=4)
    assert_allclose(blockwise_attention(q, k, v, key_stride=3, **options),
                    blockwise_attention(q, k, v, **options), atol=1e-6)


@pytest.mark.parametrize("stride", [1, 2, 3, 4])
@pytest.mark.parametrize("offset", [0, 1, 5])
def test_dense_mask_is_the_compressed_causal_mask(stride, offset):
    length, slots = 10, -(-(10 + offset) // stride)
    got = as_numpy(dense_mask(length, slots, causal=True, key_stride=stride,
                              query_offset=offset))
    want = as_numpy(compressed_causal_mask(length, slots, stride, offset))
    np.testing.assert_array_equal(got[0, 0], want)


@pytest.mark.parametrize("options, message", [
    ({"key_stride": 0}, "`key_stride` must be a positive int, received: "
                        "key_stride=0"),
    ({"key_stride": 2, "window": 3}, "`window` measures distances between "
                                     "positions"),
    ({"key_stride": 3, "alibi_slopes": [0.5, 0.25, 0.125]},
     "received: alibi_slopes with key_stride=3"),
])
def test_bad_arguments_name_themselves(options, message):
    q, k, v, _, _ = case(6, 2)
    with pytest.raises(ValueError, match=message):
        blockwise_attention(q, k, v, causal=True, **options)
