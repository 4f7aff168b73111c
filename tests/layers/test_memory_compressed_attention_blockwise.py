"""`MemoryCompressedAttention(attention_impl=...)`: the block-wise core
over the slots (`ops.blockwise_attention(key_stride=c)`) equals the dense
one, with the same weights: causal or not, with padding, several
compressions, lengths that are no multiple of them, when decoding with a
cache, in gradients and under mixed precision; and "auto" chooses as
`MultiHeadSelfAttention` does, by the positions."""

import keras
import numpy as np
import pytest

from keras_attention import ops as attention_ops
from keras_attention.layers import MemoryCompressedAttention
from keras_attention.layers import multi_head_attention
from tests.backend import BACKEND
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import gradient
from tests.harness import run_layer_test

RNG = np.random.default_rng(43)
BATCH, DIM, HEADS, KEY = 2, 8, 2, 4


def _inputs(length):
    return RNG.normal(size=(BATCH, length, DIM)).astype("float32")


def _padding(length):
    padding = np.ones((BATCH, length), bool)
    padding[1, max(1, length - 4):] = False
    return padding


def twins(compression, **options):
    """The layer twice, dense and block-wise, with the same weights."""
    options = dict(num_heads=HEADS, key_dim=KEY, compression=compression,
                   bias_initializer="random_normal", **options)
    dense = MemoryCompressedAttention(attention_impl="dense", **options)
    blockwise = MemoryCompressedAttention(attention_impl="blockwise",
                                          **options)
    dense(_inputs(3))
    blockwise(_inputs(3))
    blockwise.set_weights(dense.get_weights())
    return dense, blockwise


CASES = [(2, 1), (9, 3), (10, 3), (11, 4), (13, 2), (16, 5)]


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("length, compression", CASES)
def test_blockwise_equals_dense_outputs_and_gradients(length, compression,
                                                      causal, padded):
    dense, blockwise = twins(compression, causal=causal)
    inputs = _inputs(length)
    padding = _padding(length) if padded else None
    got = as_numpy(blockwise(inputs, padding_mask=padding))
    assert np.isfinite(got).all()
    assert_allclose(got, dense(inputs, padding_mask=padding), atol=1e-5)

    def loss(layer):
        def f(x):
            out = layer(x, padding_mask=padding)
            return keras.ops.sum(out * keras.ops.sin(out))
        return f

    (want,) = gradient(loss(dense), inputs)
    (got,) = gradient(loss(blockwise), inputs)
    assert np.isfinite(got).all()
    assert_allclose(got, want, atol=1e-5)


def test_use_causal_mask_makes_the_call_causal():
    dense, blockwise = twins(3)
    inputs, padding = _inputs(10), _padding(10)
    assert_allclose(
        blockwise(inputs, padding_mask=padding, use_causal_mask=True),
        dense(inputs, padding_mask=padding, use_causal_mask=True), atol=1e-5)


@pytest.mark.parametrize("compression", [2, 3])
def test_cached_decoding_equals_the_dense_full_pass(compression):
    """Block-wise steps (one position, then several) against the dense
    layer's full causal pass: the query offset is the cache index."""
    dense, blockwise = twins(compression, causal=True)
    inputs = _inputs(9)
    want = as_numpy(dense(inputs))
    for chunks in ((1,) * 9, (2, 4, 3)):
        cache = (np.zeros((BATCH, 9, HEADS, KEY), "float32"),) * 2
        outputs, index = [], 0
        for size in chunks:
            step, cache = blockwise(inputs[:, index:index + size],
                                    cache=cache, cache_update_index=index)
            outputs.append(as_numpy(step))
            index += size
        assert_allclose(np.concatenate(outputs, 1), want, atol=1e-5)


def test_mixed_precision_agrees_with_dense():
    dense, blockwise = twins(3, causal=True, dtype="mixed_float16")
    inputs, padding = _inputs(12), _padding(12)
    got = blockwise(inputs, padding_mask=padding)
    assert keras.backend.standardize_dtype(got.dtype) == "float16"
    got = as_numpy(got).astype("float32")
    assert np.isfinite(got).all()
    want = as_numpy(dense(inputs, padding_mask=padding)).astype("float32")
    np.testing.assert_allclose(got, want, atol=1e-2)


def test_auto_goes_blockwise_by_positions_not_slots(monkeypatch):
    """From `BLOCKWISE_MIN_LENGTH` positions (not slots) on TensorFlow, or
    when the queries fit one block; always on JAX and PyTorch; never when
    the weights are needed."""
    calls = []
    blockwise = attention_ops.blockwise_attention

    def counted(*args, **kwargs):
        calls.append(kwargs["key_stride"])
        return blockwise(*args, **kwargs)

    monkeypatch.setattr(attention_ops, "blockwise_attention", counted)
    layer = MemoryCompressedAttention(num_heads=HEADS, key_dim=KEY,
                                      compression=3, causal=True)
    layer(_inputs(11))  # 11 queries: one block
    assert calls == [3]
    calls.clear()
    monkeypatch.setattr(multi_head_attention, "BLOCKWISE_MIN_LENGTH", 12)
    # blocks of 8 rows: 11 queries take two
    monkeypatch.setattr(multi_head_attention, "default_block_size",
                        lambda *sizes: 8)
    fused = BACKEND in multi_head_attention.FUSED_CORE_BACKENDS
    layer = MemoryCompressedAttention(num_heads=HEADS, key_dim=KEY,
                                      compression=3, causal=True,
                                      dropout=0.5)
    layer(_inputs(12))  # 12 positions, 4 slots
    assert calls == [3]
    layer(_inputs(11))
    assert len(calls) == 1 + fused
    layer(_inputs(12), return_attention_scores=True)
    layer(_inputs(12), training=True)  # dropout needs the weights
    assert len(calls) == 1 + fused


def test_blockwise_refuses_what_needs_weights_by_name():
    _, blockwise = twins(3, causal=True)
    with pytest.raises(ValueError, match="return_attention_scores=True"):
        blockwise(_inputs(6), return_attention_scores=True)


def test_attention_impl_is_serialized():
    _, blockwise = twins(3, causal=True)
    config = blockwise.get_config()
    assert config["attention_impl"] == "blockwise"
    restored = MemoryCompressedAttention.from_config(config)
    assert (restored.attention_impl, restored.compression,
            restored.causal) == ("blockwise", 3, True)
    inputs = _inputs(7)
    restored(inputs)
    restored.set_weights(blockwise.get_weights())
    assert_allclose(restored(inputs), blockwise(inputs), atol=1e-6)


def test_harness():
    """Serialization, masks, a `fit()` step and mixed precision with the
    block-wise core."""
    run_layer_test(
        MemoryCompressedAttention,
        {"num_heads": HEADS, "key_dim": KEY, "compression": 3,
         "causal": True, "attention_impl": "blockwise"},
        expected_num_trainable_weights=12,
        inputs={"inputs": _inputs(7), "padding_mask": _padding(7)},
        expected_output_shape=(BATCH, 7, DIM),
        mask_argument="padding_mask",
    )
