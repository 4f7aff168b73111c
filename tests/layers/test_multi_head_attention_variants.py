"""The variants of `MultiHeadAttention`: grouped-query attention, a sliding
window, rotary embeddings (RoPE), ALiBi and an additive `attention_bias`.

Each is pinned to the Keras or KerasHub piece given the same weights
(`keras.layers.GroupQueryAttention`, KerasHub's `LlamaAttention` for GQA
with RoPE and its cache, `keras_hub.layers.AlibiBias`), the dense and the
block-wise cores agree on every one (outputs and gradients), cached
decoding equals the full pass, and the Transformer blocks take them.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import ops as attention_ops
from keras_attention.layers import LocalSelfAttention
from keras_attention.layers import MultiHeadAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import TransformerDecoder
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import gradient
from tests.harness import run_layer_test
from tests.layers.test_multi_head_attention_blockwise import decoded_step_by_step


def _keras_hub():
    """KerasHub (the `dev` extra), or a skip for the tests that need it."""
    return pytest.importorskip("keras_hub")

RNG = np.random.default_rng(11)
BATCH, LENGTH, SOURCE_LENGTH, DIM = 2, 9, 7, 16
TARGET = RNG.normal(size=(BATCH, LENGTH, DIM)).astype("float32")
SOURCE = RNG.normal(size=(BATCH, SOURCE_LENGTH, DIM)).astype("float32")
PADDING = np.array([[1] * LENGTH, [1] * 6 + [0] * 3], bool)
SOURCE_PADDING = np.array([[1] * SOURCE_LENGTH, [1] * 4 + [0] * 3], bool)
HEADS, KEY_HEADS, HEAD_SIZE = 4, 2, 4


def _built(layer, *args):
    layer(*args)
    return layer


# ---------------------------------------------------------------- GQA


@pytest.mark.parametrize("masks", [
    {},
    {"use_causal_mask": True},
    {"query_mask": PADDING, "value_mask": SOURCE_PADDING},
])
@pytest.mark.parametrize("window", [None, 3])
def test_grouped_query_attention_equals_keras(masks, window):
    ours = _built(MultiHeadAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, num_key_value_heads=KEY_HEADS,
        sliding_window=window, attention_impl="dense"), TARGET, SOURCE)
    theirs = keras.layers.GroupQueryAttention(
        head_dim=HEAD_SIZE, num_query_heads=HEADS,
        num_key_value_heads=KEY_HEADS, sliding_window=window)
    theirs(TARGET, SOURCE)
    assert [w.shape for w in ours.get_weights()] == [
        w.shape for w in theirs.get_weights()]
    theirs.set_weights(ours.get_weights())
    causal = masks.get("use_causal_mask", False)
    source = TARGET if causal else SOURCE  # causal: a self-attention
    out, weights = ours(TARGET, source, return_attention_scores=True,
                        **masks)
    want, want_weights = theirs(TARGET, source, return_attention_scores=True,
                                **masks)
    real = PADDING if "query_mask" in masks else np.ones_like(PADDING)
    # Keras attends from padded query rows (uniformly); we zero them.
    assert_allclose(as_numpy(out)[real], as_numpy(want)[real], atol=1e-5)
    assert_allclose(as_numpy(weights).transpose(0, 2, 1, 3)[real],
                    as_numpy(want_weights).transpose(0, 2, 1, 3)[real],
                    atol=1e-6)


def _llama_twin(ours, **options):
    keras_hub = _keras_hub()
    llama = keras_hub.src.models.llama.llama_attention.LlamaAttention(
        num_query_heads=HEADS, num_key_value_heads=KEY_HEADS, **options)
    llama(TARGET)
    llama.set_weights(ours.get_weights())
    return llama


def test_gqa_with_rope_equals_kerashub_llama_attention_and_its_cache():
    """LlamaAttention is KerasHub's GQA with RoPE (no biases); the same
    weights give the same outputs, full and decoded with each cache."""
    ours = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, num_key_value_heads=KEY_HEADS,
        use_bias=False, rope_max_wavelength=500.0), TARGET)
    # (its rotary layer scales positions its own way: the scaling factor
    # is pinned against `keras_hub.layers.RotaryEmbedding` below)
    llama = _llama_twin(ours, rope_max_wavelength=500)
    causal = np.tril(np.ones((LENGTH, LENGTH), bool))[None]
    want = llama(TARGET, attention_mask=np.repeat(causal, BATCH, 0))
    assert_allclose(ours(TARGET, use_causal_mask=True), want, atol=1e-5)

    # Decoding: their cache (B, 2, L, K, H), ours (B, L, K, H) twice.
    cache = (np.zeros((BATCH, LENGTH, KEY_HEADS, HEAD_SIZE), "float32"),) * 2
    their_cache = np.zeros((BATCH, 2, LENGTH, KEY_HEADS, HEAD_SIZE),
                           "float32")
    for index in range(LENGTH):
        step = TARGET[:, index:index + 1]
        got, cache = ours(step, use_causal_mask=True, cache=cache,
                          cache_update_index=index)
        mask = np.repeat(causal[:, index:index + 1], BATCH, 0)
        expected, their_cache = llama(step, attention_mask=mask,
                                      cache=their_cache,
                                      cache_update_index=index)
        assert_allclose(got, expected, atol=1e-5)
        assert_allclose(cache[0], as_numpy(their_cache)[:, 0], atol=1e-5)
        assert_allclose(got, as_numpy(want)[:, index:index + 1], atol=1e-5)


def test_the_decoding_cache_holds_the_key_value_heads_only():
    kwargs = dict(intermediate_dim=32, num_heads=HEADS)
    plain = _built(TransformerDecoder(**kwargs), TARGET, SOURCE)
    grouped = _built(TransformerDecoder(
        **kwargs, self_attention=MultiHeadSelfAttention(
            num_heads=HEADS, key_dim=HEAD_SIZE, num_key_value_heads=1)),
        TARGET, SOURCE)
    sizes = []
    for decoder in (plain, grouped):
        keys, values = decoder.initial_cache(SOURCE, LENGTH)["self_attention"]
        sizes.append(keys.shape[2])
        assert keys.shape == values.shape == (BATCH, LENGTH, keys.shape[2],
                                              HEAD_SIZE)
    assert sizes == [HEADS, 1]  # the multi-query cache is 4x smaller


# ------------------------------------------------------------ RoPE


@pytest.mark.parametrize("start_index", [0, 5])
def test_rotary_embedding_equals_kerashub(start_index):
    keras_hub = _keras_hub()
    x = RNG.normal(size=(BATCH, LENGTH, HEADS, 8)).astype("float32")
    positions = np.arange(LENGTH) + start_index
    got = attention_ops.rotary_embedding(x, positions, 300.0, 3.0)
    want = keras_hub.layers.RotaryEmbedding(
        max_wavelength=300, scaling_factor=3.0)(x, start_index=start_index)
    assert_allclose(got, want, atol=1e-5)


def test_rope_makes_the_scores_depend_on_the_distance_only():
    """q_i . k_j after RoPE is a function of i - j: shifting every
    position (the cache index) leaves the logits unchanged."""
    query = np.tile(RNG.normal(size=(1, 1, 1, 8)), (1, 6, 1, 1))
    key = np.tile(RNG.normal(size=(1, 1, 1, 8)), (1, 6, 1, 1))

    def logits(shift):
        positions = np.arange(6) + shift
        q = attention_ops.rotary_embedding(query.astype("float32"), positions)
        k = attention_ops.rotary_embedding(key.astype("float32"), positions)
        return as_numpy(attention_ops.scaled_dot_product_scores(q, k))[0, 0]

    base = logits(0)
    assert_allclose(logits(37), base, atol=1e-4)
    # ... and on it only: constant along each diagonal, not constant.
    assert_allclose(np.diagonal(base, 1), np.full(5, base[0, 1]), atol=1e-5)
    assert np.ptp(np.diagonal(base)) < 1e-5 < np.ptp(base)


# ------------------------------------------------------------ ALiBi


@pytest.mark.parametrize("heads", [4, 6])
def test_alibi_weights_equal_kerashub_alibi_bias_when_causal(heads):
    """KerasHub adds `slope (j - (S - 1))`, ours `-slope |i - j|`: under a
    causal mask they differ by a constant per row, so the softmax agrees."""
    keras_hub = _keras_hub()
    layer = _built(MultiHeadSelfAttention(
        num_heads=heads, key_dim=HEAD_SIZE, alibi_bias_max=8,
        attention_impl="dense"), TARGET)
    _, weights = layer(TARGET, use_causal_mask=True,
                       return_attention_scores=True)
    query = layer.query_dense(TARGET)
    key = layer.key_dense(TARGET)
    scores = attention_ops.scaled_dot_product_scores(query, key)
    scores = keras_hub.layers.AlibiBias(alibi_bias_max=8)(scores)
    causal = np.tril(np.ones((LENGTH, LENGTH), bool))[None, None]
    want = attention_ops.masked_softmax(scores, causal)
    assert_allclose(weights, want, atol=1e-6)


def test_alibi_golden_values():
    """Two heads, slopes 2^-4 and 2^-8 (alibi_bias_max=8), identical keys:
    the logits are the bias alone, -slope |i - j|."""
    layer = _built(MultiHeadSelfAttention(
        num_heads=2, key_dim=2, alibi_bias_max=8, attention_impl="dense",
        kernel_initializer="zeros"), TARGET[:1, :3])
    _, weights = layer(TARGET[:1, :3], return_attention_scores=True)
    distance = np.abs(np.arange(3)[:, None] - np.arange(3)[None])
    for head, slope in enumerate([2.0 ** -4, 2.0 ** -8]):
        logits = -slope * distance
        want = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        assert_allclose(as_numpy(weights)[0, head], want, atol=1e-6)


def test_alibi_alone_cannot_tell_left_from_right_without_a_causal_mask():
    """`-slope |i - j|` is symmetric: a reversed sequence gives the reversed
    outputs (why the translator's bidirectional encoder does not offer
    ALiBi); causal attention breaks the symmetry."""
    layer = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, alibi_bias_max=8), TARGET)
    reversed_inputs = TARGET[:, ::-1].copy()
    assert_allclose(as_numpy(layer(reversed_inputs))[:, ::-1],
                    layer(TARGET), atol=1e-5)
    causal = as_numpy(layer(reversed_inputs, use_causal_mask=True))
    assert not np.allclose(causal[:, ::-1],
                           as_numpy(layer(TARGET, use_causal_mask=True)),
                           atol=1e-3)


def test_attention_bias_is_added_to_the_logits():
    """An additive bias equal to ALiBi's gives ALiBi's outputs, and a bias
    constant along each row changes nothing."""
    alibi = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, alibi_bias_max=8,
        attention_impl="dense"), TARGET)
    plain = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, attention_impl="dense"), TARGET)
    plain.set_weights(alibi.get_weights())
    bias = attention_ops.alibi_bias(attention_ops.alibi_slopes(HEADS),
                                    LENGTH, LENGTH)[None]
    assert_allclose(plain(TARGET, attention_bias=bias), alibi(TARGET),
                    atol=1e-5)
    rows = np.broadcast_to(RNG.normal(size=(BATCH, HEADS, LENGTH, 1)),
                           (BATCH, HEADS, LENGTH, LENGTH)).astype("float32")
    assert_allclose(plain(TARGET, attention_bias=rows), plain(TARGET),
                    atol=1e-5)


# ---------------------------------------- dense == block-wise, cache


VARIANTS = {
    "gqa": {"num_key_value_heads": KEY_HEADS},
    "multi-query": {"num_key_value_heads": 1},
    "window": {"sliding_window": 3},
    "rope": {"rope_max_wavelength": 10000.0},
    "alibi": {"alibi_bias_max": 8},
    "all": {"num_key_value_heads": KEY_HEADS, "sliding_window": 4,
            "rope_max_wavelength": 100.0, "alibi_bias_max": 4},
}


def _twins(**options):
    dense = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, attention_impl="dense",
        **options), TARGET)
    blockwise = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, attention_impl="blockwise",
        **options), TARGET)
    blockwise.set_weights(dense.get_weights())
    return dense, blockwise


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_blockwise_equals_dense_outputs_and_gradients(name):
    dense, blockwise = _twins(**VARIANTS[name])
    bias = RNG.normal(size=(1, HEADS, LENGTH, LENGTH)).astype("float32")
    call = dict(padding_mask=PADDING, use_causal_mask=True)
    assert_allclose(blockwise(TARGET, **call), dense(TARGET, **call),
                    atol=1e-5)

    def loss(layer):
        def f(inputs, attention_bias):
            out = layer(inputs, attention_bias=attention_bias, **call)
            return ops.sum(out * ops.sin(out))
        return f

    for got, want, what in zip(gradient(loss(blockwise), TARGET, bias),
                               gradient(loss(dense), TARGET, bias),
                               ("inputs", "attention_bias")):
        assert_allclose(got, want, atol=1e-5, err_msg=what)


@pytest.mark.parametrize("name", ["window", "all"])
def test_blockwise_over_several_blocks_equals_dense(name, monkeypatch):
    """With the smallest blocks (16 rows), 40 positions take three: the
    window's key skipping and ALiBi across blocks."""
    from keras_attention.ops import blockwise

    monkeypatch.setattr(blockwise, "_BLOCK_BYTES", 1)
    inputs = RNG.normal(size=(BATCH, 40, DIM)).astype("float32")
    padding = np.ones((BATCH, 40), bool)
    padding[1, 33:] = False
    dense = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, attention_impl="dense",
        **VARIANTS[name]), inputs)
    blockwise_layer = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, attention_impl="blockwise",
        **VARIANTS[name]), inputs)
    blockwise_layer.set_weights(dense.get_weights())
    assert blockwise.default_block_size(BATCH, HEADS, 40, 40) == 16
    for causal in (False, True):
        call = dict(padding_mask=padding, use_causal_mask=causal)
        assert_allclose(blockwise_layer(inputs, **call), dense(inputs, **call),
                        atol=1e-5)


@pytest.mark.parametrize("impl", ["dense", "blockwise"])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_cached_decoding_equals_the_full_pass(name, impl):
    dense, blockwise = _twins(**VARIANTS[name])
    layer = dense if impl == "dense" else blockwise
    full = dense(TARGET, padding_mask=PADDING, use_causal_mask=True)
    key_heads = VARIANTS[name].get("num_key_value_heads", HEADS)
    cache = (np.zeros((BATCH, LENGTH, key_heads, HEAD_SIZE), "float32"),) * 2
    assert_allclose(decoded_step_by_step(layer, TARGET, PADDING, cache),
                    full, atol=1e-5)


def test_harness_with_every_variant():
    """Config, functional model, compiled variants, .keras round trip, a
    fit step and mixed precision, with all the options at once."""
    run_layer_test(
        MultiHeadSelfAttention,
        dict(num_heads=HEADS, key_dim=HEAD_SIZE, **VARIANTS["all"]),
        {"inputs": TARGET, "padding_mask": PADDING},
        call_kwargs={"use_causal_mask": True},
        expected_num_trainable_weights=8,
        expected_output_shape=(BATCH, LENGTH, DIM),
    )


def test_decoder_block_takes_the_variants_and_round_trips(tmp_path):
    decoder = TransformerDecoder(
        intermediate_dim=32, num_heads=HEADS,
        self_attention=MultiHeadSelfAttention(
            num_heads=HEADS, key_dim=HEAD_SIZE, **VARIANTS["all"]))
    target = keras.Input((LENGTH, DIM))
    source = keras.Input((SOURCE_LENGTH, DIM))
    model = keras.Model([target, source], decoder(target, source))
    want = model([TARGET, SOURCE])
    model.save(tmp_path / "decoder.keras")
    restored = keras.saving.load_model(tmp_path / "decoder.keras")
    assert_allclose(restored([TARGET, SOURCE]), want, atol=1e-5)
    layer = restored.layers[-1].self_attention
    assert (layer.num_key_value_heads, layer.sliding_window,
            layer.rope_max_wavelength, layer.alibi_bias_max) == (
        KEY_HEADS, 4, 100.0, 4)


# ---------------------------------------------------------- errors


@pytest.mark.parametrize("options, message", [
    ({"num_key_value_heads": 3},
     "`num_key_value_heads` must divide `num_heads` (4), received: "
     "num_key_value_heads=3"),
    ({"num_key_value_heads": 0}, "num_key_value_heads=0"),
    ({"sliding_window": 0}, "sliding_window=0"),
    ({"rope_max_wavelength": -1.0}, "rope_max_wavelength=-1.0"),
    ({"rope_max_wavelength": 10000.0, "key_dim": 3},
     "`key_dim` must be even with `rope_max_wavelength`, received: "
     "key_dim=3"),
    ({"alibi_bias_max": 0}, "alibi_bias_max=0"),
])
def test_bad_options_name_themselves(options, message):
    options = {"num_heads": HEADS, "key_dim": HEAD_SIZE, **options}
    with pytest.raises(ValueError) as caught:
        MultiHeadSelfAttention(**options)
    assert message in str(caught.value)


def test_the_local_layers_refuse_the_options_they_do_not_apply():
    with pytest.raises(ValueError, match="LocalSelfAttention computes its "
                       "own core and does not take `num_key_value_heads`"):
        LocalSelfAttention(num_heads=2, key_dim=4, window=2,
                           num_key_value_heads=1)


def test_bad_calls_name_the_argument():
    layer = _built(MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_SIZE,
                                      rope_max_wavelength=10000.0),
                   TARGET, SOURCE)
    with pytest.raises(ValueError, match=r"`attention_bias` must have shape "
                       r"\(batch\|1, heads\|1, query_len, key_len\)"):
        layer(TARGET, SOURCE,
              attention_bias=np.zeros((1, HEADS, LENGTH, LENGTH), "float32"))
    keys = layer.compute_key_value(SOURCE)
    with pytest.raises(ValueError, match="`rope_max_wavelength` needs the "
                       "queries' positions, which a cache of precomputed "
                       "keys"):
        layer(TARGET, cache=keys)
    for option in ({"sliding_window": 2}, {"alibi_bias_max": 8}):
        cross = _built(MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_SIZE,
                                          **option), TARGET, SOURCE)
        name = next(iter(option))
        with pytest.raises(ValueError, match=f"`{name}` needs the queries' "
                           "positions"):
            cross(TARGET[:, 5:6], cache=cross.compute_key_value(SOURCE))
    grouped = _built(MultiHeadSelfAttention(
        num_heads=HEADS, key_dim=HEAD_SIZE, num_key_value_heads=KEY_HEADS),
        TARGET)
    full_cache = (np.zeros((BATCH, LENGTH, HEADS, HEAD_SIZE), "float32"),) * 2
    with pytest.raises(ValueError, match=r"\(batch, max_len, 2, 4\)"):
        grouped(TARGET[:, :1], cache=full_cache, cache_update_index=0)
