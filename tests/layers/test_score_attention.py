"""The score-function family: dot, scaled dot, general, additive (Keras's
call form and parity with Keras: `test_score_attention_keras.py`)."""

import numpy as np
import pytest

from keras_attention.layers import AdditiveAttention
from keras_attention.layers import DotAttention
from keras_attention.layers import GeneralAttention
from keras_attention.layers import ScaledDotAttention
from keras_attention.layers import ScoreAttention
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.harness import run_layer_test

RNG = np.random.default_rng(0)
BATCH, QUERY_LEN, KEY_LEN, DIM = 2, 3, 5, 4
QUERY = RNG.normal(size=(BATCH, QUERY_LEN, DIM)).astype("float32")
VALUE = RNG.normal(size=(BATCH, KEY_LEN, DIM)).astype("float32")
KEY = RNG.normal(size=(BATCH, KEY_LEN, DIM)).astype("float32")
QUERY_PADDING = np.array([[1, 1, 1], [1, 1, 0]], bool)
KEY_PADDING = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)


def numpy_attention(scores, value, mask):
    """Reference: masked softmax over keys (zeros for empty rows) and sum."""
    scores = np.where(mask, scores, -np.inf)
    peak = np.max(scores, axis=-1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    exp = np.where(mask, np.exp(scores - peak), 0.0)
    total = exp.sum(-1, keepdims=True)
    weights = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    return weights @ value, weights


def reference_scores(layer, query, key):
    if isinstance(layer, AdditiveAttention):
        hidden = (
            (query @ as_numpy(layer.query_kernel))[:, :, None]
            + (key @ as_numpy(layer.key_kernel))[:, None]
            + as_numpy(layer.bias)
        )
        return np.tanh(hidden) @ as_numpy(layer.score_kernel)
    if isinstance(layer, GeneralAttention):
        return query @ as_numpy(layer.kernel) @ key.transpose(0, 2, 1)
    scores = query @ key.transpose(0, 2, 1)
    if isinstance(layer, ScaledDotAttention):
        scores = scores / np.sqrt(query.shape[-1])
    return scores


LAYERS = [
    (DotAttention, {}),
    (ScaledDotAttention, {}),
    (GeneralAttention, {}),
    (AdditiveAttention, {"units": 6}),
]
IDS = [cls.__name__ for cls, _ in LAYERS]
# Weights, counted by hand: none, none, W, (W1, W2, b, v).
TRAINABLE_WEIGHTS = {DotAttention: 0, ScaledDotAttention: 0,
                     GeneralAttention: 1, AdditiveAttention: 4}


@pytest.mark.parametrize("layer_cls, kwargs", LAYERS, ids=IDS)
def test_layer_harness(layer_cls, kwargs):
    run_layer_test(
        layer_cls,
        {**kwargs, "dropout": 0.1},
        expected_num_trainable_weights=TRAINABLE_WEIGHTS[layer_cls],
        inputs={
            "query": QUERY,
            "value": VALUE,
            "key": KEY,
            "padding_mask": QUERY_PADDING,
            "key_padding_mask": KEY_PADDING,
        },
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=(BATCH, QUERY_LEN, DIM),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize("layer_cls, kwargs", LAYERS, ids=IDS)
@pytest.mark.parametrize("causal", [False, True])
def test_equals_numpy_reference(layer_cls, kwargs, causal):
    layer = layer_cls(**kwargs)
    query = RNG.normal(size=(BATCH, KEY_LEN, DIM)).astype("float32")
    context, weights = layer(
        query, VALUE, KEY,
        key_padding_mask=KEY_PADDING,
        use_causal_mask=causal,
        return_attention_scores=True,
    )
    mask = np.broadcast_to(KEY_PADDING[:, None, :], (BATCH, KEY_LEN, KEY_LEN))
    if causal:
        mask = mask & np.tril(np.ones((KEY_LEN, KEY_LEN), bool))
    want_context, want_weights = numpy_attention(
        reference_scores(layer, query, KEY), VALUE, mask
    )
    assert_allclose(weights, want_weights, atol=1e-5)
    assert_allclose(context, want_context, atol=1e-5)


@pytest.mark.parametrize("layer_cls, kwargs", LAYERS, ids=IDS)
def test_vector_query_equals_length_one_sequence(layer_cls, kwargs):
    layer = layer_cls(**kwargs)
    vector = QUERY[:, 0]
    context, weights = layer(
        vector, VALUE, key_padding_mask=KEY_PADDING,
        return_attention_scores=True,
    )
    assert tuple(context.shape) == (BATCH, DIM)
    assert tuple(weights.shape) == (BATCH, KEY_LEN)
    want_context, want_weights = numpy_attention(
        reference_scores(layer, vector[:, None], VALUE),
        VALUE,
        KEY_PADDING[:, None, :],
    )
    assert_allclose(context, want_context[:, 0], atol=1e-5)
    assert_allclose(weights, want_weights[:, 0], atol=1e-5)


def test_additive_attention_with_different_query_size():
    """The Bahdanau case: decoder state and annotations differ in size."""
    layer = AdditiveAttention(units=7, use_bias=False)
    state = RNG.normal(size=(BATCH, 9)).astype("float32")
    context, weights = layer(state, VALUE, return_attention_scores=True)
    hidden = (
        (state @ as_numpy(layer.query_kernel))[:, None]
        + VALUE @ as_numpy(layer.key_kernel)
    )
    scores = np.tanh(hidden) @ as_numpy(layer.score_kernel)
    want_context, want_weights = numpy_attention(
        scores[:, None], VALUE, np.ones((BATCH, 1, KEY_LEN), bool)
    )
    assert_allclose(weights, want_weights[:, 0], atol=1e-5)
    assert_allclose(context, want_context[:, 0], atol=1e-5)
    assert layer.bias is None


def test_fully_masked_rows_are_zero_not_nan():
    layer = ScaledDotAttention()
    context, weights = layer(
        QUERY, VALUE,
        key_padding_mask=np.zeros((BATCH, KEY_LEN), bool),
        return_attention_scores=True,
    )
    assert_array_equal(as_numpy(weights), 0.0)
    assert_array_equal(as_numpy(context), 0.0)


def test_attention_mask_and_padding_mask_combine():
    layer = DotAttention()
    attention_mask = RNG.random((BATCH, QUERY_LEN, KEY_LEN)) > 0.3
    attention_mask[:, :, 0] = True
    _, weights = layer(
        QUERY, VALUE, padding_mask=QUERY_PADDING,
        key_padding_mask=KEY_PADDING, attention_mask=attention_mask,
        return_attention_scores=True,
    )
    allowed = attention_mask & KEY_PADDING[:, None] & QUERY_PADDING[..., None]
    weights = as_numpy(weights)
    assert np.all(weights[~allowed] == 0.0)
    rows = allowed.any(-1)
    assert_allclose(weights.sum(-1)[rows], 1.0, atol=1e-6)


def test_base_class_needs_a_score():
    with pytest.raises(NotImplementedError, match="score"):
        ScoreAttention()(QUERY, VALUE)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: AdditiveAttention(units=0), "units=0"),
        (lambda: AdditiveAttention(units=2.5), "units=2.5"),
        (lambda: DotAttention(dropout=1.0), "dropout=1.0"),
        (lambda: GeneralAttention(dropout=-0.1), "dropout=-0.1"),
    ],
)
def test_bad_constructor_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_inputs_name_what_was_expected_and_received():
    with pytest.raises(ValueError, match=r"key.shape=\(2, 5, 3\)"):
        DotAttention()(QUERY, VALUE, KEY[..., :3])
    with pytest.raises(ValueError, match=r"value.shape=\(2, 5\)"):
        DotAttention()(QUERY, VALUE[..., 0])
    with pytest.raises(ValueError, match="same length"):
        GeneralAttention()(QUERY, VALUE, KEY[:, :4])
    with pytest.raises(
        ValueError, match=r"key_padding_mask.shape=\(2, 4\)"
    ):
        DotAttention()(QUERY, VALUE, key_padding_mask=KEY_PADDING[:, :4])
    with pytest.raises(ValueError, match=r"padding_mask.shape=\(2, 5\)"):
        DotAttention()(QUERY, VALUE, padding_mask=KEY_PADDING)
    with pytest.raises(ValueError, match=r"attention_mask.shape=\(2, 3, 3\)"):
        DotAttention()(
            QUERY, VALUE, attention_mask=np.ones((2, 3, 3), bool)
        )
    with pytest.raises(ValueError, match="use_causal_mask"):
        DotAttention()(QUERY[:, 0], VALUE, use_causal_mask=True)


@pytest.mark.parametrize("layer_cls, kwargs", LAYERS, ids=IDS)
def test_half_precision_scores_do_not_overflow(layer_cls, kwargs):
    layer = layer_cls(**kwargs, dtype="mixed_float16")
    big = np.full((1, 2, 64), 40.0, "float32")  # q.k = 102400 > 65504
    context, weights = layer(big, big, return_attention_scores=True)
    for tensor in (context, weights):
        assert np.all(np.isfinite(as_numpy(tensor).astype("float32")))


def test_later_calls_check_feature_sizes():
    layer = GeneralAttention()
    layer(QUERY, VALUE)
    with pytest.raises(ValueError, match=r"query.shape=\(2, 3, 6\)"):
        layer(np.ones((2, 3, 6), "float32"), VALUE)


@pytest.mark.parametrize("layer_cls, kwargs", LAYERS, ids=IDS)
def test_prepared_keys_give_the_same_attention(layer_cls, kwargs):
    """`prepare_key` once, then `prepared_key=` per call (an RNN decoder's
    steps): the same context and weights as passing `key` each time."""
    layer = layer_cls(**kwargs)
    context, weights = layer(QUERY, VALUE, key=KEY,
                             key_padding_mask=KEY_PADDING,
                             return_attention_scores=True)
    prepared = layer.prepare_key(KEY)
    again, again_weights = layer(QUERY, VALUE, prepared_key=prepared,
                                 key_padding_mask=KEY_PADDING,
                                 return_attention_scores=True)
    assert_allclose(again, context, atol=1e-6)
    assert_allclose(again_weights, weights, atol=1e-6)
    vector, vector_weights = layer(QUERY[:, 0], VALUE, prepared_key=prepared,
                                   return_attention_scores=True)
    assert vector.shape == (BATCH, DIM) and vector_weights.shape == (
        BATCH, KEY_LEN)


def test_prepared_keys_of_the_wrong_shape_are_refused():
    layer = AdditiveAttention(units=3)
    layer(QUERY, VALUE)
    with pytest.raises(ValueError, match="prepared_key"):
        layer(QUERY, VALUE, prepared_key=KEY)  # not prepared: size 4, not 3
    with pytest.raises(ValueError, match="prepared_key"):
        layer(QUERY, VALUE, prepared_key=KEY[:, :, 0])
    with pytest.raises(ValueError, match="same length"):
        layer(QUERY, VALUE, prepared_key=layer.prepare_key(KEY[:, :2]))


def test_the_package_exports_every_layer_lazily():
    import keras_attention
    from keras_attention import layers

    assert sorted(keras_attention._LAYER_NAMES) == sorted(layers.__all__)
    assert keras_attention.AdditiveAttention is AdditiveAttention


def test_importing_the_package_after_keras_registers_the_layers():
    import subprocess
    import sys

    code = ("import keras, keras_attention; "
            "print(keras.saving.get_registered_object("
            "'keras_attention>AdditiveAttention').__name__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, timeout=120)
    assert result.stdout.strip() == "AdditiveAttention", result.stderr[-2000:]
