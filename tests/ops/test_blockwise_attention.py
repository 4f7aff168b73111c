"""`ops.blockwise_attention`: exact attention without the (T, S) scores.

On TensorFlow it is the block-wise kernel with its recomputing gradient;
on JAX and PyTorch the backend's fused attention with the same masks.
Either way it must equal a float64 NumPy softmax attention, outputs and
gradients, for every kind of mask, at lengths that do not divide the block.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from keras import ops

from keras_attention.ops import blockwise_attention
from keras_attention.ops.blockwise import default_block_size
from keras_attention.ops.blockwise import dense_mask
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import compiled
from tests.backend import gradient
from tests.backend import tensorflow_only

B, T, S, N, H, D = 2, 13, 11, 3, 4, 5


def reference_weights(q, k, allowed, scale, bias=0.0):
    """Softmax weights `(B, N, T, S)` in float64 of the logits plus
    `bias`; a row with nothing allowed is 0."""
    q, k = (np.asarray(x, np.float64) for x in (q, k))
    # (B, T, N, H) x (B, S, N, H) -> (B, N, T, S)
    logits = np.einsum("btnh,bsnh->bnts", q, k) * scale + bias
    allowed = np.broadcast_to(allowed, logits.shape)
    logits = np.where(allowed, logits, -np.inf)
    peak = np.max(logits, axis=-1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    weights = np.exp(logits - peak)
    total = weights.sum(-1, keepdims=True)
    return weights / np.where(total > 0, total, 1.0)


def reference(q, k, v, allowed, scale, bias=0.0):
    """Softmax attention in float64."""
    weights = reference_weights(q, k, allowed, scale, bias)
    # (B, N, T, S) x (B, S, N, D) -> (B, T, N, D)
    return np.einsum("bnts,bsnd->btnd", weights, np.asarray(v, np.float64))


def inputs(seed=0, query_length=T, key_length=S):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(B, query_length, N, H)).astype("float32"),
            rng.normal(size=(B, key_length, N, H)).astype("float32"),
            rng.normal(size=(B, key_length, N, D)).astype("float32"))


def allowed_by(query_length, key_length, key_padding_mask=None,
               query_padding_mask=None, mask=None, causal=False, window=None,
               query_offset=0):
    """The mask written out in NumPy, independently of `dense_mask`."""
    position = np.arange(query_length)[:, None] + query_offset
    distance = position - np.arange(key_length)[None, :]
    allowed = np.ones((1, 1, query_length, key_length), bool)
    if causal:
        allowed &= distance >= 0
    if window is not None:
        allowed &= np.abs(distance) <= window
    if key_padding_mask is not None:
        allowed = allowed & key_padding_mask[:, None, None, :]
    if query_padding_mask is not None:
        allowed = allowed & query_padding_mask[:, None, :, None]
    if mask is not None:
        allowed = allowed & mask
    return allowed


RNG = np.random.default_rng(1)
KEY_PADDING = np.ones((B, S), bool)
KEY_PADDING[1, 7:] = False
QUERY_PADDING = np.ones((B, T), bool)
QUERY_PADDING[1, 10:] = False
EXPLICIT = RNG.random((B, 1, T, S)) > 0.3

MASKS = {
    "none": {},
    "causal": {"causal": True},
    "causal, offset 2": {"causal": True, "query_offset": 2},
    "window 2": {"window": 2},
    "window 2, offset 3": {"window": 2, "query_offset": 3},
    "causal window 3": {"causal": True, "window": 3},
    "padding, causal": {"key_padding_mask": KEY_PADDING,
                        "query_padding_mask": QUERY_PADDING, "causal": True},
    "explicit and key padding": {"mask": EXPLICIT,
                                 "key_padding_mask": KEY_PADDING},
    "explicit per head": {"mask": RNG.random((1, N, T, S)) > 0.5},
}


@pytest.mark.parametrize("block_size", [1, 4, 5, 16])
@pytest.mark.parametrize("name", sorted(MASKS))
def test_equals_softmax_attention_outputs_and_gradients(name, block_size):
    options = MASKS[name]
    q, k, v = inputs()
    allowed = allowed_by(T, S, **options)
    scale = 1.0 / np.sqrt(H)
    out = blockwise_attention(q, k, v, block_size=block_size, **options)
    assert tuple(out.shape) == (B, T, N, D)
    assert_allclose(out, reference(q, k, v, allowed, scale), atol=1e-5)

    # Gradients of a weighted sum of the outputs against the reference's.
    probe = np.sin(np.arange(B * T * N * D)).reshape(B, T, N, D)

    def loss(q, k, v):
        out = blockwise_attention(q, k, v, block_size=block_size, **options)
        return ops.sum(out * ops.convert_to_tensor(probe, out.dtype))

    got = gradient(loss, q, k, v)
    want = _reference_gradients(q, k, v, allowed, scale, probe)
    for name_, g, w in zip("qkv", got, want):
        assert_allclose(g, w, atol=1e-5, err_msg=name_)


def _reference_gradients(q, k, v, allowed, scale, probe, bias=None):
    """Analytic gradients of sum(probe * attention) in float64; with a
    `bias`, its gradient `(B, N, T, S)` too."""
    p = reference_weights(q, k, allowed, scale,
                          0.0 if bias is None else bias)
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    # out[b,t,n,d] = sum_s p[b,n,t,s] v[b,s,n,d]
    dv = np.einsum("bnts,btnd->bsnd", p, probe)
    dp = np.einsum("btnd,bsnd->bnts", probe, v)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    dq = np.einsum("bnts,bsnh->btnh", ds, k) * scale
    dk = np.einsum("bnts,btnh->bsnh", ds, q) * scale
    return (dq, dk, dv) if bias is None else (dq, dk, dv, ds)


def test_dense_mask_is_the_mask_applied():
    for options in MASKS.values():
        want = allowed_by(T, S, **options)
        got = as_numpy(dense_mask(T, S, **options))
        np.testing.assert_array_equal(np.broadcast_to(got, np.broadcast_shapes(
            got.shape, want.shape)), np.broadcast_to(want, np.broadcast_shapes(
                got.shape, want.shape)))


def test_rows_with_nothing_to_attend_are_zero_never_nan():
    q, k, v = inputs()
    key_padding = np.zeros((B, S), bool)
    key_padding[0, 3] = True  # row 1 of the batch has no key at all
    # Causal with a negative reach: query 0..2 see no key before key 3.
    out = as_numpy(blockwise_attention(q, k, v, key_padding_mask=key_padding,
                                       causal=True, block_size=4))
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_array_equal(out[0, :3], 0.0)
    assert np.abs(out[0, 3:]).sum() > 0

    def loss(q, k, v):
        return ops.sum(blockwise_attention(
            q, k, v, key_padding_mask=key_padding, causal=True,
            block_size=4) ** 2)

    for g in gradient(loss, q, k, v):
        assert np.isfinite(g).all()


def test_padding_queries_get_zero_outputs_and_no_gradient():
    q, k, v = inputs()
    out = as_numpy(blockwise_attention(q, k, v,
                                       query_padding_mask=QUERY_PADDING,
                                       block_size=4))
    np.testing.assert_array_equal(out[1, 10:], 0.0)

    def loss(q, k, v):
        return ops.sum(blockwise_attention(
            q, k, v, query_padding_mask=QUERY_PADDING, block_size=4))

    dq, _, _ = gradient(loss, q, k, v)
    np.testing.assert_array_equal(dq[1, 10:], 0.0)


def test_bfloat16_keeps_float32_statistics():
    q, k, v = inputs(query_length=40, key_length=40)
    want = reference(q, k, v, allowed_by(40, 40, causal=True), 0.5)
    out = blockwise_attention(*(ops.cast(x, "bfloat16") for x in (q, k, v)),
                              causal=True, block_size=16)
    assert ops.dtype(out) == "bfloat16"
    out = as_numpy(ops.cast(out, "float32"))
    assert np.isfinite(out).all()
    # bfloat16 inputs and products: about 3 significant digits.
    np.testing.assert_allclose(out, want, atol=5e-2)


def test_float16_is_computed_in_float32():
    q, k, v = inputs()
    big = [x * 60.0 for x in (q, k)]  # float16 logits would overflow
    want = reference(*big, v, allowed_by(T, S), 0.5)
    out = blockwise_attention(*(ops.cast(x, "float16") for x in (*big, v)),
                              block_size=4)
    assert ops.dtype(out) == "float16"
    out = as_numpy(ops.cast(out, "float32"))
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, want, atol=2e-2)


def test_compiled_equals_eager():
    q, k, v = inputs()

    def attend(q, k, v):
        return blockwise_attention(q, k, v, causal=True, block_size=4,
                                   key_padding_mask=KEY_PADDING)

    assert_allclose(compiled(attend)(q, k, v), attend(q, k, v), atol=1e-6)


@tensorflow_only("tracing with unknown lengths through tf.TensorSpec")
def test_traces_with_unknown_lengths():
    import tensorflow as tf

    spec = tf.TensorSpec((None, None, N, H), tf.float32)
    value_spec = tf.TensorSpec((None, None, N, D), tf.float32)
    attend = tf.function(
        lambda q, k, v: blockwise_attention(q, k, v, causal=True,
                                            block_size=4),
        input_signature=[spec, spec, value_spec])
    for length in (3, 9):
        q, k, v = inputs(query_length=length, key_length=length)
        want = reference(q, k, v, allowed_by(length, length, causal=True),
                         1 / np.sqrt(H))
        assert_allclose(attend(q, k, v), want, atol=1e-5)


@tensorflow_only("the block-wise kernel: its gradient needs no (T, S) tensor")
def test_the_gradient_graph_holds_no_score_matrix():
    """Traced with unknown lengths, no tensor of the forward or backward
    graph may have two length axes of the full size: every score tensor is
    a block's. Checked on the shapes TensorFlow infers for T = S = 96,
    block 16: none has both of its last two dims equal to 96."""
    import tensorflow as tf

    q, k, v = (tf.constant(x) for x in inputs(query_length=96, key_length=96))

    @tf.function
    def step(q, k, v):
        with tf.GradientTape() as tape:
            tape.watch([q, k, v])
            out = blockwise_attention(q, k, v, causal=True, block_size=16)
            loss = tf.reduce_sum(out ** 2)
        return tape.gradient(loss, [q, k, v])

    graph = step.get_concrete_function(q, k, v).graph
    functions = [graph] + [f.graph for f in _while_bodies(graph)]
    square = []
    for g in functions:
        for op in g.get_operations():
            for tensor in op.outputs:
                shape = tensor.shape
                if shape.rank and shape.rank >= 2 and \
                        shape[-1] == 96 and shape[-2] == 96:
                    square.append((op.name, shape))
    assert not square, square[:5]


def _while_bodies(graph):
    """The function graphs of the while loops in `graph`, recursively."""
    bodies = []
    for function in graph._functions.values():
        bodies.append(function)
    return bodies


@tensorflow_only("a SavedModel loaded by TensorFlow alone")
def test_a_saved_model_with_it_loads_with_tensorflow_alone(tmp_path):
    import tensorflow as tf

    q, k, v = inputs()

    class Attend(tf.Module):
        @tf.function(input_signature=[
            tf.TensorSpec((None, None, N, H), tf.float32),
            tf.TensorSpec((None, None, N, H), tf.float32),
            tf.TensorSpec((None, None, N, D), tf.float32)])
        def __call__(self, q, k, v):
            return blockwise_attention(q, k, v, causal=True, block_size=4)

    module = Attend()
    want = as_numpy(module(q, k, v))
    tf.saved_model.save(module, str(tmp_path / "model"))
    np.savez(tmp_path / "inputs.npz", q=q, k=k, v=v)
    code = (
        "import sys, numpy as np, tensorflow as tf\n"
        "x = np.load(sys.argv[2])\n"
        "model = tf.saved_model.load(sys.argv[1])\n"
        "np.save(sys.argv[3], model(x['q'], x['k'], x['v']).numpy())\n"
        "assert 'keras_attention' not in sys.modules\n")
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "model"),
         str(tmp_path / "inputs.npz"), str(tmp_path / "out.npy")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want,
                               atol=1e-6)


@pytest.mark.parametrize("options, message", [
    ({"window": -1}, "`window` must be an int >= 0, received: window=-1"),
    ({"block_size": 0}, "`block_size` must be a positive int, received: "
                        "block_size=0"),
    ({"causal": "yes"}, "`causal` must be True or False, received: "
                        "causal='yes'"),
    ({"query_offset": -2}, "`query_offset` must be an int >= 0"),
    ({"key_padding_mask": np.ones((B, S + 1), bool)},
     "`key_padding_mask` must have shape (batch, key_len)"),
    ({"mask": np.ones((B, 2, T, S), bool)},
     r"`mask` must have shape (batch|1, heads|1, query_len, key_len)"),
])
def test_bad_arguments_name_themselves(options, message):
    q, k, v = inputs()
    with pytest.raises(ValueError) as caught:
        blockwise_attention(q, k, v, **options)
    assert message in str(caught.value)


def test_mismatched_heads_are_refused():
    q, k, v = inputs()
    with pytest.raises(ValueError, match="`key` must have a number of heads "
                                         "in axis 2 that divides the query's "
                                         "3"):
        blockwise_attention(q, k[:, :, :2], v)
    with pytest.raises(ValueError, match=r"`alibi_slopes` must hold one "
                                         r"slope per head, shape \(3,\)"):
        blockwise_attention(q, k, v, alibi_slopes=[0.5, 0.25])
    with pytest.raises(ValueError, match=r"`bias` must have shape"):
        blockwise_attention(q, k, v, bias=np.zeros((B, N, T, S + 1)))


# Biases and grouped heads: the reference adds the bias to the logits and
# repeats each key/value head for its group of query heads, in NumPy.
ALIBI = [0.5, 0.25, 0.125]
BIASES = {
    "alibi, causal": {"alibi_slopes": ALIBI, "causal": True},
    "alibi, window 3, offset 2": {"alibi_slopes": ALIBI, "window": 3,
                                  "query_offset": 2},
    "bias per head": {"bias": RNG.normal(size=(1, N, T, S))},
    "bias per sequence, padding": {
        "bias": RNG.normal(size=(B, 1, T, S)),
        "key_padding_mask": KEY_PADDING, "query_padding_mask": QUERY_PADDING},
    "one key head": {"key_heads": 1, "causal": True},
    "one key head, alibi and bias": {
        "key_heads": 1, "alibi_slopes": ALIBI,
        "bias": RNG.normal(size=(B, N, T, S)), "causal": True},
}


def test_grouped_heads_pair_query_head_n_with_key_head_n_over_g():
    """Four query heads, two key/value heads: heads 0 and 1 read key head
    0, heads 2 and 3 key head 1 (as keras.layers.GroupQueryAttention)."""
    rng = np.random.default_rng(8)
    q = rng.normal(size=(B, T, 4, H)).astype("float32")
    k = rng.normal(size=(B, S, 2, H)).astype("float32")
    v = rng.normal(size=(B, S, 2, D)).astype("float32")
    want = reference(q, k[:, :, [0, 0, 1, 1]], v[:, :, [0, 0, 1, 1]],
                     allowed_by(T, S, causal=True), 1.0 / np.sqrt(H))
    got = blockwise_attention(q, k, v, causal=True, block_size=4)
    assert_allclose(got, want, atol=1e-5)


def _alibi(slopes, query_length, key_length, query_offset=0):
    """`-slope |i - j|`, `(1, N, T, S)`, written out in NumPy."""
    position = np.arange(query_length)[:, None] + query_offset
    distance = np.abs(position - np.arange(key_length)[None, :])
    return -np.asarray(slopes)[None, :, None, None] * distance


@pytest.mark.parametrize("block_size", [4, 16])
@pytest.mark.parametrize("name", sorted(BIASES))
def test_biases_and_grouped_heads_equal_the_reference(name, block_size):
    options = dict(BIASES[name])
    key_heads = options.pop("key_heads", N)
    q, k, v = inputs(seed=3)
    k, v = k[:, :, :key_heads], v[:, :, :key_heads]
    bias = options.pop("bias", None)
    masks = {name: value for name, value in options.items()
             if name != "alibi_slopes"}
    allowed = allowed_by(T, S, **masks)
    total = np.zeros((1, 1, T, S)) if bias is None else bias
    if "alibi_slopes" in options:
        total = total + _alibi(options["alibi_slopes"], T, S,
                               options.get("query_offset", 0))
    groups = N // key_heads
    # (B, S, K, .) -> (B, S, N, .): query head n reads head n // groups
    k_full, v_full = (np.repeat(x, groups, axis=2) for x in (k, v))
    scale = 1.0 / np.sqrt(H)
    probe = np.cos(np.arange(B * T * N * D)).reshape(B, T, N, D)

    def loss(q, k, v, *bias):
        out = blockwise_attention(q, k, v, block_size=block_size,
                                  bias=bias[0] if bias else None, **options)
        return ops.sum(out * ops.convert_to_tensor(probe, out.dtype))

    out = blockwise_attention(q, k, v, block_size=block_size, bias=bias,
                              **options)
    assert_allclose(out, reference(q, k_full, v_full, allowed, scale, total),
                    atol=1e-5)
    arguments = (q, k, v) + (() if bias is None else
                             (bias.astype("float32"),))
    got = gradient(loss, *arguments)
    dq, dk, dv, dbias = _reference_gradients(q, k_full, v_full, allowed,
                                             scale, probe, total)
    # a key head's gradient is the sum over its group of query heads
    dk, dv = (x.reshape(B, S, key_heads, groups, -1).sum(3)
              for x in (dk, dv))
    want = (dq, dk, dv)
    if bias is not None:
        axes = tuple(axis for axis in (0, 1) if bias.shape[axis] == 1)
        want += (dbias.sum(axis=axes, keepdims=True),)
    for name_, g, w in zip(("q", "k", "v", "bias"), got, want):
        assert_allclose(g, w, atol=1e-5, err_msg=name_)


def test_default_block_size_keeps_a_block_near_128_mib():
    assert default_block_size(1, 8, 8192) == 512
    assert default_block_size(1, 8, 65536) == 64
    assert default_block_size(16, 8, 128) == 512
    assert default_block_size(128, 8, 128) == 256
    assert default_block_size(1, 64, 2**20) == 16
    assert default_block_size(None, 8, 128) == 128
    assert default_block_size(None, 8, 128, query_length=5) == 5
    assert default_block_size(32, 8, 128, query_length=100) == 100



@tensorflow_only("tf.function(jit_compile=True)")
def test_under_xla_it_takes_the_dense_path():
    import tensorflow as tf

    q, k, v = inputs()
    want = reference(q, k, v, allowed_by(T, S, causal=True), 1 / np.sqrt(H))
    attend = tf.function(lambda q, k, v: blockwise_attention(
        q, k, v, causal=True, block_size=4), jit_compile=True)
    assert_allclose(attend(q, k, v), want, atol=1e-5)
    graph = tf.function(lambda q, k, v: blockwise_attention(
        q, k, v, causal=True, block_size=4), jit_compile=True
    ).get_concrete_function(q, k, v).graph
    assert not [op for op in graph.get_operations()
                if op.type in ("While", "StatelessWhile")]


# Relative-position terms (Shaw et al.): the reference expands each pair's
# table row, (N|1, T, S, .), which only a test this small can afford.
RELATIVE = {
    "keys, shared table, causal": {"delta": 3, "values": False,
                                   "per_head": False, "causal": True},
    "keys and values, per head": {"delta": 2, "values": True,
                                  "per_head": True},
    "keys and values, offset 2, window 4, padding": {
        "delta": 5, "values": True, "per_head": False, "causal": True,
        "query_offset": 2, "window": 4, "key_padding_mask": KEY_PADDING,
        "query_padding_mask": QUERY_PADDING},
    "values only, long distance": {"delta": 20, "values": True,
                                   "keys": False, "per_head": True},
}


def _relative_reference(q, k, v, allowed, scale, key_table, value_table,
                        offset, probe):
    """Output and the gradients of `sum(probe * out)` in float64:
    q, k, v, key table, value table (None for an absent table)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    table = key_table if key_table is not None else value_table
    delta = (table.shape[-2] - 1) // 2
    position = np.arange(q.shape[1])[:, None] + offset
    index = np.clip(np.arange(k.shape[1])[None] - position, -delta,
                    delta) + delta  # (T, S)

    def expand(table):  # (R, .) -> (1, T, S, .); (N, R, .) -> (N, T, S, .)
        table = np.asarray(table, np.float64)
        return table[None][:, index] if table.ndim == 2 else table[:, index]

    logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
    if key_table is not None:
        logits += np.einsum("btnh,ntsh->bnts", q, np.broadcast_to(
            expand(key_table), (N,) + index.shape + (H,))) * scale
    allowed = np.broadcast_to(allowed, logits.shape)
    logits = np.where(allowed, logits, -np.inf)
    peak = np.max(logits, axis=-1, keepdims=True)
    p = np.exp(logits - np.where(np.isfinite(peak), peak, 0.0))
    p = p / np.maximum(p.sum(-1, keepdims=True), 1e-300)
    a_v = (np.zeros((N,) + index.shape + (D,)) if value_table is None else
           np.broadcast_to(expand(value_table), (N,) + index.shape + (D,)))
    out = np.einsum("bnts,bsnd->btnd", p, v) + np.einsum(
        "bnts,ntsd->btnd", p, a_v)
    dp = np.einsum("btnd,bsnd->bnts", probe, v) + np.einsum(
        "btnd,ntsd->bnts", probe, a_v)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    a_k = (np.zeros((N,) + index.shape + (H,)) if key_table is None else
           np.broadcast_to(expand(key_table), (N,) + index.shape + (H,)))
    dq = (np.einsum("bnts,bsnh->btnh", ds, k)
          + np.einsum("bnts,ntsh->btnh", ds, a_k)) * scale
    dk = np.einsum("bnts,btnh->bsnh", ds, q) * scale
    dv = np.einsum("bnts,btnd->bsnd", p, probe)
    grads = [dq, dk, dv]
    for table, pairs, other in ((key_table, ds, q * scale),
                                (value_table, p, probe)):
        if table is None:
            continue
        # (N, T, S, .): each pair's contribution to its row
        per_pair = np.einsum("bnts,btnh->ntsh", pairs, other)
        rows = np.zeros((N,) + table.shape[-2:])
        for head in range(N):
            np.add.at(rows[head], index, per_pair[head])
        grads.append(rows.sum(0) if table.ndim == 2 else rows)
    return out, grads


@pytest.mark.parametrize("block_size", [4, 16])
@pytest.mark.parametrize("name", sorted(RELATIVE))
def test_relative_terms_equal_the_reference(name, block_size):
    options = dict(RELATIVE[name])
    delta, per_head = options.pop("delta"), options.pop("per_head")
    with_values, with_keys = options.pop("values"), options.pop("keys", True)
    rng = np.random.default_rng(5)
    head_axis = (N,) if per_head else ()
    key_table = (rng.normal(size=head_axis + (2 * delta + 1, H))
                 .astype("float32") if with_keys else None)
    value_table = (rng.normal(size=head_axis + (2 * delta + 1, D))
                   .astype("float32") if with_values else None)
    q, k, v = inputs(seed=4)
    scale = 1.0 / np.sqrt(H)
    probe = np.sin(np.arange(B * T * N * D) * 0.3).reshape(B, T, N, D)
    allowed = allowed_by(T, S, **options)
    want, want_grads = _relative_reference(
        q, k, v, allowed, scale, key_table, value_table,
        options.get("query_offset", 0), probe)
    tables = [table for table in (key_table, value_table)
              if table is not None]

    def call(q, k, v, *tables):
        given = iter(tables)
        return blockwise_attention(
            q, k, v, block_size=block_size,
            relative_key_table=next(given) if with_keys else None,
            relative_value_table=next(given) if with_values else None,
            **options)

    assert_allclose(call(q, k, v, *tables), want, atol=1e-5)

    def loss(*arguments):
        out = call(*arguments)
        return ops.sum(out * ops.convert_to_tensor(probe, out.dtype))

    got = gradient(loss, q, k, v, *tables)
    names = ["q", "k", "v"] + [name for name, table in (
        ("key table", key_table), ("value table", value_table))
        if table is not None]
    for name_, g, w in zip(names, got, want_grads):
        assert_allclose(g, w, atol=1e-5, err_msg=name_)


def test_a_table_of_the_wrong_shape_is_refused():
    q, k, v = inputs()
    with pytest.raises(ValueError, match=r"`relative_key_table` must have "
                       r"shape \(2δ\+1, 4\) or \(3, 2δ\+1, 4\), received: "
                       r"relative_key_table.shape=\(4, 4\)"):
        blockwise_attention(q, k, v, relative_key_table=np.zeros((4, 4)))
