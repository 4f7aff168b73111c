"""MultiHeadAttention and MultiHeadSelfAttention."""

import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from keras_attention.layers import MultiHeadSelfAttention
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.harness import assert_all_close
from tests.harness import run_layer_test

RNG = np.random.default_rng(1)
BATCH, TARGET_LEN, SOURCE_LEN, DIM = 2, 4, 6, 8
TARGET = RNG.normal(size=(BATCH, TARGET_LEN, DIM)).astype("float32")
SOURCE = RNG.normal(size=(BATCH, SOURCE_LEN, DIM)).astype("float32")
TARGET_PADDING = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool)
SOURCE_PADDING = np.array([[1] * 6, [1] * 3 + [0] * 3], bool)


def keras_twin(layer, query, value, **kwargs):
    """A `keras.layers.MultiHeadAttention` holding `layer`'s weights."""
    twin = keras.layers.MultiHeadAttention(**kwargs)
    twin(query, value)
    ours, theirs = layer.get_weights(), twin.get_weights()
    assert [w.shape for w in ours] == [w.shape for w in theirs]
    twin.set_weights(ours)
    return twin


@pytest.mark.parametrize(
    "init_kwargs",
    [
        {"num_heads": 2, "key_dim": 3, "dropout": 0.1},
        {"num_heads": 3, "key_dim": 2, "value_dim": 5, "output_dim": 7},
        {"num_heads": 2, "key_dim": 4, "head_merge": "mean"},
        {"num_heads": 2, "key_dim": 4, "diversity_penalty": 0.5,
         "use_bias": False},
    ],
    ids=["concat", "value_dim", "mean", "penalty"],
)
def test_cross_attention_harness(init_kwargs):
    output_dim = init_kwargs.get("output_dim", DIM)
    run_layer_test(
        MultiHeadAttention,
        init_kwargs,
        # Four projections, each a kernel and (with use_bias) a bias.
        expected_num_trainable_weights=8 if init_kwargs.get("use_bias", True)
        else 4,
        expected_num_losses=int("diversity_penalty" in init_kwargs),
        inputs={
            "query": TARGET,
            "value": SOURCE,
            "padding_mask": TARGET_PADDING,
            "key_padding_mask": SOURCE_PADDING,
        },
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=(BATCH, TARGET_LEN, output_dim),
        mask_argument="padding_mask",
    )


def test_self_attention_harness():
    run_layer_test(
        MultiHeadSelfAttention,
        {"num_heads": 2, "key_dim": 4, "dropout": 0.1},
        expected_num_trainable_weights=8,
        inputs={"inputs": TARGET, "padding_mask": TARGET_PADDING},
        call_kwargs={"use_causal_mask": True},
        expected_output_shape=(BATCH, TARGET_LEN, DIM),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_equals_keras(causal):
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    layer(TARGET)
    twin = keras_twin(layer, TARGET, TARGET, num_heads=2, key_dim=4)
    ours, our_scores = layer(
        TARGET, padding_mask=TARGET_PADDING, use_causal_mask=causal,
        return_attention_scores=True,
    )
    theirs, their_scores = twin(
        TARGET, TARGET,
        attention_mask=np.broadcast_to(
            TARGET_PADDING[:, None], (BATCH, TARGET_LEN, TARGET_LEN)
        ),
        use_causal_mask=causal,
        return_attention_scores=True,
    )
    real = TARGET_PADDING  # Keras attends from padded rows; we zero them.
    assert_allclose(
        as_numpy(ours)[real], as_numpy(theirs)[real], atol=1e-5
    )
    assert_allclose(
        as_numpy(our_scores).transpose(0, 2, 1, 3)[real],
        as_numpy(their_scores).transpose(0, 2, 1, 3)[real],
        atol=1e-6,
    )


def test_self_attention_implicit_mask_equals_keras_implicit_mask():
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    layer(TARGET)
    twin = keras_twin(layer, TARGET, TARGET, num_heads=2, key_dim=4)
    masked = keras.layers.Masking()(TARGET * TARGET_PADDING[..., None])
    ours = as_numpy(layer(masked))
    theirs = as_numpy(twin(masked, masked))
    assert_allclose(
        ours[TARGET_PADDING], theirs[TARGET_PADDING], atol=1e-5
    )


def test_cross_attention_equals_keras():
    kwargs = dict(num_heads=3, key_dim=2, value_dim=5, output_shape=7)
    layer = MultiHeadAttention(num_heads=3, key_dim=2, value_dim=5,
                               output_dim=7)
    key = RNG.normal(size=(BATCH, SOURCE_LEN, 3)).astype("float32")
    layer(TARGET, SOURCE, key)
    # With scores asked for, Keras takes its einsum path: its fused
    # ops.dot_product_attention path fails under JAX when value_dim !=
    # key_dim (Keras 3.15: "cannot reshape array of shape (2, 4, 3, 1, 5)").
    twin = keras.layers.MultiHeadAttention(**kwargs)
    twin(TARGET, SOURCE, key, return_attention_scores=True)
    twin.set_weights(layer.get_weights())
    ours = layer(TARGET, SOURCE, key, key_padding_mask=SOURCE_PADDING)
    theirs, _ = twin(
        TARGET, SOURCE, key,
        attention_mask=np.broadcast_to(
            SOURCE_PADDING[:, None], (BATCH, TARGET_LEN, SOURCE_LEN)
        ),
        return_attention_scores=True,
    )
    assert_all_close(ours, theirs, atol=1e-5)


def test_mean_merge_equals_numpy_reference():
    layer = MultiHeadAttention(num_heads=2, key_dim=3, head_merge="mean")
    output, scores = layer(TARGET, SOURCE, return_attention_scores=True)
    (wq, bq, wk, bk, wv, bv, wo, bo) = layer.get_weights()
    query = np.einsum("btd,dnh->btnh", TARGET, wq) + bq
    key = np.einsum("bsd,dnh->bsnh", SOURCE, wk) + bk
    value = np.einsum("bsd,dnh->bsnh", SOURCE, wv) + bv
    logits = np.einsum("btnh,bsnh->bnts", query, key) / np.sqrt(3)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    context = np.einsum("bnts,bsnh->btnh", weights, value).mean(2)
    assert_allclose(scores, weights, atol=1e-6)
    assert_allclose(output, context @ wo + bo, atol=1e-5)
    assert wo.shape == (3, DIM)


def test_diversity_penalty_is_added_to_losses():
    layer = MultiHeadSelfAttention(num_heads=3, key_dim=2,
                                   diversity_penalty=0.25)
    _, scores = layer(TARGET, padding_mask=TARGET_PADDING,
                      return_attention_scores=True)
    assert len(layer.losses) == 1
    weights = as_numpy(scores).transpose(0, 2, 1, 3)  # (B, T, N, S)
    gram = weights @ weights.transpose(0, 1, 3, 2)
    per_position = ((gram - np.eye(3)) ** 2).sum((-2, -1))
    want = 0.25 * per_position[TARGET_PADDING].mean()
    assert_allclose(float(layer.losses[0]), want, rtol=1e-5)
    quiet = MultiHeadSelfAttention(num_heads=3, key_dim=2)
    quiet(TARGET)
    assert quiet.losses == []


def test_diversity_penalty_trains_heads_apart():
    inputs = keras.Input((TARGET_LEN, DIM))
    layer = MultiHeadSelfAttention(num_heads=4, key_dim=4,
                                   diversity_penalty=1.0)
    model = keras.Model(inputs, layer(inputs))
    model.compile(keras.optimizers.Adam(0.05), loss=lambda y, p: 0.0 * p)
    before = float(model.evaluate(TARGET, TARGET, verbose=0))
    model.fit(TARGET, TARGET, epochs=30, verbose=0)
    after = float(model.evaluate(TARGET, TARGET, verbose=0))
    assert after < 0.8 * before, (before, after)


def test_fully_masked_query_rows_are_finite_zeros():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    output, scores = layer(
        TARGET, SOURCE,
        key_padding_mask=np.zeros((BATCH, SOURCE_LEN), bool),
        return_attention_scores=True,
    )
    assert_array_equal(as_numpy(scores), 0.0)
    bias = as_numpy(layer.output_dense.bias)
    assert_allclose(as_numpy(output), np.broadcast_to(
        bias, output.shape))


def test_cached_self_attention_equals_full_pass():
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    full = as_numpy(layer(TARGET, use_causal_mask=True))
    zeros = np.zeros((BATCH, TARGET_LEN, 2, 4), "float32")
    cache = (zeros, zeros)
    steps = []
    for index in range(TARGET_LEN):
        step, cache = layer(
            TARGET[:, index:index + 1], use_causal_mask=True,
            cache=cache, cache_update_index=index,
        )
        steps.append(as_numpy(step))
    assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)
    # Two positions at a time (a prompt, then steps) agree too.
    cache = (zeros, zeros)
    prompt, cache = layer(TARGET[:, :2], use_causal_mask=True, cache=cache,
                          cache_update_index=0)
    assert_allclose(prompt, full[:, :2], atol=1e-5)


def test_precomputed_cross_attention_cache_equals_no_cache():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    want = layer(TARGET, SOURCE, key_padding_mask=SOURCE_PADDING)
    cache = layer.compute_key_value(SOURCE)
    got, returned_cache = layer(
        TARGET, SOURCE, key_padding_mask=SOURCE_PADDING, cache=cache
    )
    assert_all_close(got, want)
    assert_all_close(returned_cache, cache)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0, "key_dim": 2}, "num_heads=0"),
        ({"num_heads": 2, "key_dim": -1}, "key_dim=-1"),
        ({"num_heads": 2, "key_dim": 2, "value_dim": 0}, "value_dim=0"),
        ({"num_heads": 2, "key_dim": 2, "head_merge": "sum"},
         "head_merge='sum'"),
        ({"num_heads": 2, "key_dim": 2, "dropout": 1.5}, "dropout=1.5"),
        ({"num_heads": 2, "key_dim": 2, "diversity_penalty": -1},
         "diversity_penalty=-1"),
        ({"num_heads": True, "key_dim": 2}, "num_heads=True"),
    ],
)
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**kwargs)


def test_bad_inputs_name_what_was_expected_and_received():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    with pytest.raises(ValueError, match=r"query.shape=\(2, 8\)"):
        layer(TARGET[:, 0], SOURCE)
    with pytest.raises(ValueError, match=r"key_padding_mask.shape=\(2, 4\)"):
        layer(TARGET, SOURCE, key_padding_mask=TARGET_PADDING)
    with pytest.raises(ValueError, match=r"padding_mask.shape=\(2, 6\)"):
        layer(TARGET, SOURCE, padding_mask=SOURCE_PADDING)
    with pytest.raises(ValueError, match=r"attention_mask.shape=\(2, 4, 4\)"):
        layer(TARGET, SOURCE, attention_mask=np.ones((2, 4, 4), bool))
    self_attention = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    with pytest.raises(ValueError, match="cache_update_index=None"):
        zeros = np.zeros((BATCH, 4, 2, 4), "float32")
        self_attention(TARGET, cache=(zeros, zeros))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_half_precision_scores_do_not_overflow(policy):
    """q.k of large vectors exceeds float16's 65504: scores are float32."""
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4, dtype=policy)
    layer(TARGET)
    # Weights that make q.k / sqrt(4) reach ~1e6 (inf in float16).
    layer.set_weights([np.full(w.shape, 0.5, "float32")
                       for w in layer.get_weights()])
    output, scores = layer(TARGET * 300, return_attention_scores=True)
    for tensor in (output, scores):
        values = as_numpy(keras.ops.cast(tensor, "float32"))
        assert np.all(np.isfinite(values)), policy


def test_cache_errors_name_the_argument():
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    layer(TARGET)
    zeros = np.zeros((BATCH, 5, 2, 4), "float32")
    with pytest.raises(ValueError, match="cache_update_index=9"):
        layer(TARGET[:, :1], cache=(zeros, zeros), cache_update_index=9)
    with pytest.raises(ValueError, match="cache_update_index=4"):
        layer(TARGET[:, :2], cache=(zeros, zeros), cache_update_index=4)
    with pytest.raises(ValueError, match="cache_update_index=-1"):
        layer(TARGET[:, :1], cache=(zeros, zeros), cache_update_index=-1)
    wrong = np.zeros((BATCH, 5, 2, 3), "float32")
    with pytest.raises(ValueError, match=r"key_cache.shape=\(2, 5, 2, 3\)"):
        layer(TARGET[:, :1], cache=(wrong, zeros), cache_update_index=0)


def test_later_calls_check_shapes_too():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    layer(TARGET, SOURCE)
    with pytest.raises(ValueError, match=r"query.shape=\(2, 4, 5\)"):
        layer(TARGET[..., :5], SOURCE)
    with pytest.raises(ValueError, match="same length"):
        layer(TARGET, SOURCE, SOURCE[:, :4])
    with pytest.raises(ValueError, match="same length"):
        MultiHeadAttention(num_heads=2, key_dim=4)(TARGET, SOURCE,
                                                    SOURCE[:, :4])


def test_masks_may_be_python_lists():
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    from_list = layer(TARGET, padding_mask=TARGET_PADDING.tolist())
    assert_all_close(from_list, layer(TARGET, padding_mask=TARGET_PADDING))

