"""`attention_impl`: MultiHeadAttention's core by blocks equals the dense
core (the same weights), for every mask the layer takes, in outputs and
gradients, when decoding with a cache, and in the Transformer blocks; and
"auto" chooses as documented."""

import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from keras_attention.layers import TransformerDecoder
from keras_attention.layers import TransformerEncoder
from keras_attention.layers import multi_head_attention
from tests.backend import BACKEND
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import gradient

RNG = np.random.default_rng(7)
TARGET = RNG.normal(size=(3, 9, 8)).astype("float32")
SOURCE = RNG.normal(size=(3, 7, 8)).astype("float32")
PADDING = np.array([[1] * 9, [1] * 5 + [0] * 4, [0] * 9], bool)
KEY_PADDING = np.array([[1] * 7, [1, 1, 1, 0, 0, 0, 0], [0] * 7], bool)
ATTENTION_MASK = RNG.random((3, 9, 7)) > 0.4
SELF_MASK = RNG.random((3, 9, 9)) > 0.4


def twins(cls, **options):
    """The same layer twice, dense and blockwise, with the same weights."""
    dense = cls(num_heads=2, key_dim=4, attention_impl="dense", **options)
    blockwise = cls(num_heads=2, key_dim=4, attention_impl="blockwise",
                    **options)
    return dense, blockwise


CALLS = {
    "self, causal and padding": (MultiHeadSelfAttention, dict(
        inputs=TARGET, padding_mask=PADDING, use_causal_mask=True)),
    "self, explicit mask": (MultiHeadSelfAttention, dict(
        inputs=TARGET, attention_mask=SELF_MASK)),
    "cross, key padding": (MultiHeadAttention, dict(
        query=TARGET, value=SOURCE, key_padding_mask=KEY_PADDING)),
    "cross, every mask": (MultiHeadAttention, dict(
        query=TARGET, value=SOURCE, padding_mask=PADDING,
        key_padding_mask=KEY_PADDING, attention_mask=ATTENTION_MASK)),
    "cross, Keras's names": (MultiHeadAttention, dict(
        query=TARGET, value=SOURCE, query_mask=PADDING,
        value_mask=KEY_PADDING)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_blockwise_equals_dense(name):
    cls, call = CALLS[name]
    dense, blockwise = twins(cls)
    want = dense(**call)
    blockwise(**call)
    blockwise.set_weights(dense.get_weights())
    assert_allclose(blockwise(**call), want, atol=1e-5)

    inputs = [call[key] for key in ("inputs", "query", "value")
              if key in call]
    rest = {key: value for key, value in call.items()
            if key not in ("inputs", "query", "value")}
    names = [key for key in ("inputs", "query", "value") if key in call]

    def loss(layer):
        def f(*tensors):
            out = layer(**dict(zip(names, tensors)), **rest)
            return keras.ops.sum(out * keras.ops.sin(out))
        return f

    for got, expected in zip(gradient(loss(blockwise), *inputs),
                             gradient(loss(dense), *inputs)):
        assert_allclose(got, expected, atol=1e-5)


RELATIVE_OPTIONS = {
    "keys, shared table": dict(max_relative_position=3),
    "keys and values, per head": dict(max_relative_position=2,
                                      relative_values=True,
                                      per_head_tables=True),
    "keys and values, far": dict(max_relative_position=12,
                                 relative_values=True),
}


def decoded_step_by_step(layer, inputs, padding, cache):
    """The causal self-attention `layer` run one position at a time from
    the empty `cache`: `(batch, len, dim)` outputs."""
    steps = []
    for index in range(inputs.shape[1]):
        step, cache = layer(
            inputs[:, index:index + 1],
            padding_mask=padding[:, index:index + 1], use_causal_mask=True,
            cache=cache, cache_update_index=index)
        steps.append(as_numpy(step))
    return np.concatenate(steps, axis=1)


@pytest.mark.parametrize("cls, options", [
    (MultiHeadSelfAttention, {}),
    *((RelativeAttention, options) for options in RELATIVE_OPTIONS.values()),
], ids=["plain"] + list(RELATIVE_OPTIONS))
def test_cached_decoding_equals_the_full_pass(cls, options):
    """Self-attention decoding one position at a time, the cache attended
    by blocks (relative terms included), equals the full causal pass."""
    dense, blockwise = twins(cls, **options)
    full = dense(TARGET, padding_mask=PADDING, use_causal_mask=True)
    blockwise(TARGET)
    blockwise.set_weights(dense.get_weights())
    cache = (np.zeros((3, 9, 2, 4), "float32"),) * 2
    assert_allclose(decoded_step_by_step(blockwise, TARGET, PADDING, cache),
                    full, atol=1e-5)


@pytest.mark.parametrize("block", [TransformerEncoder, TransformerDecoder])
def test_transformer_blocks_equal_with_blockwise_self_attention(block):
    kwargs = dict(intermediate_dim=16, num_heads=2)
    dense = block(**kwargs, self_attention=MultiHeadSelfAttention(
        num_heads=2, key_dim=4, attention_impl="dense"))
    blockwise = block(**kwargs, self_attention=MultiHeadSelfAttention(
        num_heads=2, key_dim=4, attention_impl="blockwise"))
    args = (TARGET,) if block is TransformerEncoder else (TARGET, SOURCE)
    masks = ({"padding_mask": PADDING} if block is TransformerEncoder else
             {"decoder_padding_mask": PADDING,
              "encoder_padding_mask": KEY_PADDING})
    want = dense(*args, **masks)
    blockwise(*args, **masks)
    blockwise.set_weights(dense.get_weights())
    assert_allclose(blockwise(*args, **masks), want, atol=1e-5)


def test_auto_chooses_by_backend_length_and_what_is_asked():
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4)
    assert layer.attention_impl == "auto"
    long_key = np.zeros((1, multi_head_attention.BLOCKWISE_MIN_LENGTH, 2, 4))
    short_key = long_key[:, :-1]
    fused = BACKEND in multi_head_attention.FUSED_CORE_BACKENDS
    assert layer._blockwise_core(False, None, long_key)
    assert layer._blockwise_core(False, None, short_key) == fused
    # One decoding step over a long cache: dense on TensorFlow.
    assert layer._blockwise_core(False, None, long_key, 1) == fused
    assert layer._blockwise_core(False, None, long_key, 2)
    # Weights asked for or needed: the dense core.
    assert not layer._blockwise_core(True, None, long_key)
    dropping = MultiHeadSelfAttention(num_heads=2, key_dim=4, dropout=0.1)
    assert not dropping._blockwise_core(False, True, long_key)
    assert dropping._blockwise_core(False, False, long_key)
    penalised = MultiHeadSelfAttention(num_heads=2, key_dim=4,
                                       diversity_penalty=0.1)
    assert not penalised._blockwise_core(False, None, long_key)
    # RelativeAttention's terms: in blocks on TensorFlow; on JAX and
    # PyTorch the fused kernels would take them only as a dense bias.
    relative = RelativeAttention(num_heads=2, key_dim=4,
                                 max_relative_position=3)
    relative.build((1, 8, 8))
    assert relative._blockwise_core(False, None, long_key) == (not fused)
    assert not relative._blockwise_core(False, None, short_key)
    dense = MultiHeadSelfAttention(num_heads=2, key_dim=4,
                                   attention_impl="dense")
    assert not dense._blockwise_core(False, None, long_key)


def test_blockwise_refuses_what_needs_weights_by_name():
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4, dropout=0.2,
                                   attention_impl="blockwise")
    layer(TARGET)  # inference: no dropout, fine
    with pytest.raises(ValueError, match=(
            r"attention_impl='blockwise' computes no attention weights, "
            r"which return_attention_scores=True needs")):
        layer(TARGET, return_attention_scores=True)
    with pytest.raises(ValueError, match=r"which dropout=0.2 in training "
                                         r"needs"):
        layer(TARGET, training=True)


def test_attention_impl_is_checked_and_serialized():
    with pytest.raises(ValueError, match=(
            r"`attention_impl` must be one of \['auto', 'blockwise', "
            r"'dense'\], received: attention_impl='flash'")):
        MultiHeadAttention(num_heads=2, key_dim=4, attention_impl="flash")
    layer = MultiHeadSelfAttention(num_heads=2, key_dim=4,
                                   attention_impl="blockwise")
    clone = MultiHeadSelfAttention.from_config(layer.get_config())
    assert clone.attention_impl == "blockwise"


def test_a_functional_model_with_it_trains():
    """Keras infers a functional model's shapes with a symbolic batch (on
    JAX, a shape-polymorphic dimension that is neither None nor an int)."""
    inputs = keras.Input((8, 16))
    outputs = MultiHeadSelfAttention(num_heads=2, key_dim=8)(
        inputs, use_causal_mask=True)
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling1D()(outputs))
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(RNG.normal(size=(4, 8, 16)).astype("float32"),
                        np.zeros((4, 16), "float32"), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()




@pytest.mark.parametrize("name", sorted(RELATIVE_OPTIONS))
def test_relative_attention_in_blocks_equals_dense(name):
    """RelativeAttention's terms computed block by block: the outputs and
    the gradients of the inputs and of every weight, tables included."""
    options = RELATIVE_OPTIONS[name]
    dense, blockwise = twins(RelativeAttention, **options)
    call = dict(padding_mask=PADDING, use_causal_mask=True)
    want = dense(TARGET, **call)
    blockwise(TARGET, **call)
    blockwise.set_weights(dense.get_weights())
    assert_allclose(blockwise(TARGET, **call), want, atol=1e-5)

    def grads(layer):
        import tensorflow as tf
        x = tf.constant(TARGET)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = layer(x, **call)
            loss = tf.reduce_sum(out * tf.sin(out))
        return tape.gradient(loss, [x] + layer.trainable_weights)

    if BACKEND != "tensorflow":
        pytest.skip("the weights' gradients by tf.GradientTape")
    names = ["inputs"] + [w.path for w in dense.trainable_weights]
    for what, got, expected in zip(names, grads(blockwise), grads(dense)):
        assert_allclose(got, expected, atol=1e-5, err_msg=what)
