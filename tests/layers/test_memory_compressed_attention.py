"""MemoryCompressedAttention against a NumPy reference, Conv1D, plain
self-attention (compression 1), causality, padding and cached decoding."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import ops as attention_ops
from keras_attention.layers import MemoryCompressedAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import TransformerDecoder
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import gradient
from tests.backend import tensorflow_only
from tests.harness import run_layer_test

RNG = np.random.default_rng(29)
BATCH, DIM, HEADS, KEY = 2, 8, 2, 4


def _inputs(length, batch=BATCH):
    return RNG.normal(size=(batch, length, DIM)).astype("float32")


def _padding(length):
    padding = np.ones((BATCH, length), bool)
    padding[1, max(1, length - 4):] = False
    return padding


def _layer(compression, causal=False, **kwargs):
    kwargs.setdefault("bias_initializer", "random_normal")
    layer = MemoryCompressedAttention(num_heads=HEADS, key_dim=KEY,
                                      compression=compression, causal=causal,
                                      **kwargs)
    layer(_inputs(3))
    return layer


def _numpy_weights(layer):
    return {variable.path.split("/", 1)[1]: as_numpy(variable)
            for variable in layer.weights}


def reference(layer, inputs, padding, causal):
    """The layer's computation in NumPy, from its weights: project, zero
    the padded positions, compress each group of c positions by the dense
    (= strided convolution) kernel, attend the slots a query may see."""
    w = _numpy_weights(layer)
    c = layer.compression
    batch, length, _ = inputs.shape

    def project(name):  # (B, T, D) -> (B, T, N, H)
        return (np.einsum("btd,dnh->btnh", inputs, w[f"{name}/kernel"])
                + w[f"{name}/bias"])

    query, key, value = (project(n) for n in ("query", "key", "value"))
    key = key * padding[:, :, None, None]
    value = value * padding[:, :, None, None]
    slots = -(-length // c)

    def compress(projected, name):  # (B, T, N, H) -> (B, M, N, H)
        flat = projected.reshape(batch, length, -1)
        padded = np.zeros((batch, slots * c, flat.shape[-1]), "float32")
        padded[:, :length] = flat
        grouped = padded.reshape(batch, slots, -1)
        out = grouped @ w[f"{name}/kernel"] + w[f"{name}/bias"]
        return out.reshape(batch, slots, projected.shape[2], -1)

    slot_key = compress(key, "key_compression")
    slot_value = compress(value, "value_compression")
    scores = np.einsum("btnh,bmnh->bntm", query, slot_key) / np.sqrt(KEY)
    valid = np.zeros((batch, slots), bool)
    for m in range(slots):
        valid[:, m] = padding[:, m * c:(m + 1) * c].any(-1)
    allowed = padding[:, :, None] & valid[:, None, :]  # (B, T, M)
    if causal:
        last = np.arange(slots) * c + c - 1
        allowed = allowed & (last[None, None, :] <= np.arange(length)[
            None, :, None])
    allowed = np.broadcast_to(allowed[:, None], scores.shape)
    scores = np.where(allowed, scores, -np.inf)
    top = np.max(scores, -1, keepdims=True)
    exp = np.where(allowed, np.exp(scores - np.where(np.isfinite(top), top,
                                                     0.0)), 0.0)
    total = exp.sum(-1, keepdims=True)
    weights = np.where(total > 0, exp / np.where(total > 0, total, 1.0), 0.0)
    context = np.einsum("bntm,bmnv->btnv", weights, slot_value)
    output = (np.einsum("btnv,nvd->btd", context, w["attention_output/kernel"])
              + w["attention_output/bias"])
    return output, weights


CASES = [(1, 1), (2, 3), (3, 3), (7, 3), (9, 3), (10, 2), (11, 4), (6, 1)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("length, compression", CASES)
def test_matches_numpy_reference(length, compression, causal):
    layer = _layer(compression, causal)
    inputs, padding = _inputs(length), _padding(length)
    output, weights = layer(inputs, padding_mask=padding,
                            return_attention_scores=True)
    want_output, want_weights = reference(layer, inputs, padding, causal)
    assert_allclose(weights, want_weights, atol=1e-6)
    assert_allclose(output, want_output, atol=1e-5)


def test_compression_is_the_strided_convolution():
    """The dense kernel `(c·F, F)` is Conv1D(kernel_size=c, strides=c)'s
    `(c, F, F)` reshaped; the end of a length that is no multiple of c is
    zero-padded."""
    layer = _layer(3)
    features = HEADS * KEY
    projected = RNG.normal(size=(BATCH, 8, HEADS, KEY)).astype("float32")
    conv = keras.layers.Conv1D(features, kernel_size=3, strides=3)
    conv.build((None, None, features))
    kernel = as_numpy(layer.key_compression.kernel)
    conv.kernel.assign(kernel.reshape(3, features, features))
    conv.bias.assign(as_numpy(layer.key_compression.bias))
    padded = np.concatenate(
        [projected.reshape(BATCH, 8, features),
         np.zeros((BATCH, 1, features), "float32")], 1)
    assert_allclose(layer.compress(projected, layer.key_compression),
                    as_numpy(conv(padded)).reshape(BATCH, 3, HEADS, KEY),
                    atol=1e-5)


def test_compression_one_with_identity_kernels_is_self_attention():
    layer = _layer(1, bias_initializer="zeros")
    full = MultiHeadSelfAttention(num_heads=HEADS, key_dim=KEY)
    full(_inputs(3))
    for variable in full.weights:
        variable.assign(_numpy_weights(layer)[variable.path.split("/", 1)[1]])
    for dense in (layer.key_compression, layer.value_compression):
        dense.kernel.assign(np.eye(HEADS * KEY, dtype="float32"))
    inputs, padding = _inputs(6), _padding(6)
    for causal in (False, True):
        assert_allclose(
            layer(inputs, padding_mask=padding, use_causal_mask=causal),
            full(inputs, padding_mask=padding, use_causal_mask=causal),
            atol=1e-5)


@pytest.mark.parametrize("compression", [2, 3])
def test_gradient_receptive_field_is_causal(compression):
    """Output `i` depends on input `j` exactly when `j` lies in a complete
    slot at or before `i` (`j < c·floor((i + 1) / c)`), or `j = i` (its
    query) once it sees two slots (over one, the softmax is 1 whatever the
    query)."""
    layer = _layer(compression, causal=True)
    length = 8
    inputs = _inputs(length, batch=1)
    direction = RNG.normal(size=(DIM,)).astype("float32")
    field = []
    for position in range(length):
        (inputs_gradient,) = gradient(
            lambda x, t=position: ops.sum(ops.multiply(
                layer(x)[0, t], direction)),
            inputs)
        field.append(np.abs(inputs_gradient[0]).sum(-1))
    field = np.stack(field)  # (T outputs, T inputs)
    expected = np.zeros((length, length), bool)
    own_query_one_slot = np.zeros((length, length), bool)
    for i in range(length):
        seen = compression * ((i + 1) // compression)
        expected[i, :seen] = True
        if seen >= 2 * compression:
            expected[i, i] = True
        elif i >= seen:
            own_query_one_slot[i, i] = True
    # Later positions: exactly zero on every backend.
    future = ~expected & ~own_query_one_slot
    assert np.all(field[future] == 0.0), field
    # A query over one slot: zero in exact arithmetic (the softmax is 1);
    # PyTorch's fused kernel leaves rounding (7.5e-8 against entries of
    # about 1), so this one is bounded relative to the row.
    rows = field.max(-1, keepdims=True)
    assert np.all((field / np.maximum(rows, 1e-30))[own_query_one_slot]
                  < 1e-5), field
    assert np.all(field[expected] > 0.0)


@pytest.mark.parametrize("causal", [False, True])
def test_right_padding_changes_nothing_at_real_positions(causal):
    layer = _layer(3, causal)
    inputs = _inputs(7)
    junk = np.concatenate([inputs, 50 * _inputs(5)], 1)
    padding = np.zeros((BATCH, 12), bool)
    padding[:, :7] = True
    assert_allclose(layer(junk, padding_mask=padding)[:, :7], layer(inputs),
                    atol=1e-5)


def test_cached_steps_equal_the_full_pass():
    layer = _layer(3, causal=True)
    inputs = _inputs(8)
    full = layer(inputs)
    cache = (np.zeros((BATCH, 8, HEADS, KEY), "float32"),) * 2
    steps = []
    for index in range(8):
        step, cache = layer(inputs[:, index:index + 1], cache=cache,
                            cache_update_index=index)
        steps.append(as_numpy(step))
    assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)
    # A padded position in the prompt is written into the cache as zeros,
    # as the full pass leaves it out of its slot.
    padding = np.ones((BATCH, 8), bool)
    padding[1, 4] = False
    masked = layer(inputs, padding_mask=padding)
    cache = (np.zeros((BATCH, 8, HEADS, KEY), "float32"),) * 2
    first, cache = layer(inputs[:, :5], padding_mask=padding[:, :5],
                         cache=cache, cache_update_index=0)
    rest, _ = layer(inputs[:, 5:], cache=cache, cache_update_index=5)
    assert_allclose(np.concatenate([as_numpy(first), as_numpy(rest)], 1)[0],
                    as_numpy(masked)[0], atol=1e-5)
    real = np.array([0, 1, 2, 3, 5, 6, 7])  # the padded query's row is 0
    assert_allclose(
        np.concatenate([as_numpy(first), as_numpy(rest)], 1)[1, real],
        as_numpy(masked)[1, real], atol=1e-5)
    # Two positions at once, then the rest.
    cache = (np.zeros((BATCH, 8, HEADS, KEY), "float32"),) * 2
    first, cache = layer(inputs[:, :2], cache=cache, cache_update_index=0)
    rest, _ = layer(inputs[:, 2:], cache=cache, cache_update_index=2)
    assert_allclose(np.concatenate([as_numpy(first), as_numpy(rest)], 1),
                    full, atol=1e-5)


def test_decoder_only_block_decodes_with_its_cache():
    """In a decoder-only `TransformerDecoder`, incremental decoding with
    `initial_cache` equals the full causal pass."""
    block = TransformerDecoder(
        intermediate_dim=16, num_heads=HEADS,
        self_attention=MemoryCompressedAttention(
            num_heads=HEADS, key_dim=KEY, compression=3))
    inputs = _inputs(7)
    full = block(inputs)
    cache = block.initial_cache(batch_size=BATCH, max_length=7)
    steps = []
    for index in range(7):
        step, cache = block(inputs[:, index:index + 1], cache=cache,
                            cache_update_index=index)
        steps.append(as_numpy(step))
    assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


@tensorflow_only("tf.TensorSpec: unknown sequence length")
@pytest.mark.parametrize("causal", [False, True])
def test_unknown_length_in_tf_function(causal):
    import tensorflow as tf

    layer = _layer(3, causal)

    @tf.function(input_signature=[
        tf.TensorSpec((None, None, DIM)), tf.TensorSpec((None, None), "bool")])
    def run(inputs, padding):
        return layer(inputs, padding_mask=padding)

    for length in (1, 4, 8):
        inputs, padding = _inputs(length), _padding(length)
        assert_allclose(run(inputs, padding),
                        reference(layer, inputs, padding, causal)[0],
                        atol=1e-5)


def test_group_helpers():
    valid = np.array([[1, 1, 1, 1, 0, 0, 0, 0]], bool)
    assert as_numpy(attention_ops.group_validity(valid, 3)).tolist() == [
        [True, True, False]]
    mask = as_numpy(attention_ops.compressed_causal_mask(2, 4, 3, 5))
    # positions 5 and 6: slot 0 (0-2) seen by both, slot 1 (3-5) by both
    assert mask.astype(int).tolist() == [[1, 1, 0, 0], [1, 1, 0, 0]]


@pytest.mark.parametrize(
    "init_kwargs, length, causal",
    [
        ({"compression": 3, "dropout": 0.1, "head_merge": "mean"}, 7, True),
        ({"compression": 2, "causal": True, "value_dim": 3, "output_dim": 6,
          "diversity_penalty": 0.1}, 5, False),
    ],
    ids=["dropout_mean_call_causal", "causal_value_dim"],
)
def test_harness(init_kwargs, length, causal):
    run_layer_test(
        MemoryCompressedAttention,
        {"num_heads": HEADS, "key_dim": KEY, **init_kwargs},
        # MultiHeadSelfAttention's 8 and the two compressions' kernels and
        # biases.
        expected_num_trainable_weights=12,
        expected_num_losses=int("diversity_penalty" in init_kwargs),
        inputs={"inputs": _inputs(length), "padding_mask": _padding(length)},
        call_kwargs={"use_causal_mask": causal,
                     "return_attention_scores": True},
        expected_output_shape=(BATCH, length,
                               init_kwargs.get("output_dim", DIM)),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"compression": 0}, "compression=0"),
        ({"compression": 2.5}, "compression=2.5"),
        ({"compression": True}, "compression=True"),
        ({"num_key_value_heads": 1}, "num_key_value_heads=1"),
        ({"rope_max_wavelength": 100}, "rope_max_wavelength=100"),
        ({"attention_impl": "flash"}, "attention_impl='flash'"),
    ],
)
def test_argument_errors_name_the_argument(kwargs, message):
    kwargs = {"num_heads": HEADS, "key_dim": KEY, **kwargs}
    with pytest.raises(ValueError, match=message):
        MemoryCompressedAttention(**kwargs)


def test_input_errors_name_the_argument():
    layer = _layer(3)
    with pytest.raises(ValueError, match="inputs.shape"):
        layer(np.zeros((2, 8), "float32"))
    with pytest.raises(ValueError, match="padding_mask.shape"):
        layer(_inputs(5), padding_mask=np.ones((BATCH, 4), bool))
    cache = (np.zeros((BATCH, 8, HEADS, KEY), "float32"),) * 2
    with pytest.raises(ValueError, match="use_causal_mask=False"):
        layer(_inputs(1), cache=cache, cache_update_index=0)
    with pytest.raises(ValueError, match="cache_update_index=None"):
        layer(_inputs(1), cache=cache, use_causal_mask=True)
