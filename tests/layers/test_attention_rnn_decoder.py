"""AttentionRNNDecoder: the shared harness, a NumPy reference for one step,
step-by-step == whole-sequence, masks, and argument errors."""

import keras
import numpy as np
import pytest

from keras_attention.layers import AdditiveAttention
from keras_attention.layers import AttentionRNNDecoder
from keras_attention.layers import GeneralAttention
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.harness import run_layer_test

RNG = np.random.default_rng(0)
BATCH, TARGET_LEN, SOURCE_LEN, INPUT_DIM, MEMORY_DIM, UNITS = 2, 4, 5, 3, 6, 8
INPUTS = RNG.normal(size=(BATCH, TARGET_LEN, INPUT_DIM)).astype("float32")
MEMORY = RNG.normal(size=(BATCH, SOURCE_LEN, MEMORY_DIM)).astype("float32")
STATE = RNG.normal(size=(BATCH, UNITS)).astype("float32")
MEMORY_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)


@pytest.mark.parametrize(
    "options",
    [{"cell": "gru", "attention": "additive", "attention_units": 5},
     {"cell": "lstm", "attention": "general"}],
    ids=["gru-additive", "lstm-general"],
)
def test_shared_harness(options):
    run_layer_test(
        AttentionRNNDecoder,
        {"units": UNITS, **options},
        # The cell's kernel, recurrent kernel and bias, and the score's
        # weights: (W1, W2, b, v) additive, W general.
        expected_num_trainable_weights=3 + {"additive": 4, "general": 1}[
            options["attention"]],
        inputs={"inputs": INPUTS, "memory": MEMORY, "initial_state": STATE,
         "memory_mask": MEMORY_MASK},
        expected_output_shape=(BATCH, TARGET_LEN, UNITS),
        atol=1e-5,
    )


def _softmax(x):
    x = x - x.max(-1, keepdims=True)
    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)


def test_one_step_matches_a_numpy_reference():
    """α from the previous state, c = Σ α h, then the cell on [y; c]."""
    decoder = AttentionRNNDecoder(UNITS, attention_units=7)
    decoder(INPUTS, MEMORY, STATE, memory_mask=MEMORY_MASK)
    attention = decoder.attention_layer
    w, u, b, v = (as_numpy(attention.query_kernel),
                  as_numpy(attention.key_kernel), as_numpy(attention.bias),
                  as_numpy(attention.score_kernel))
    # e_i = v^T tanh(W s + U h_i + b)
    scores = np.tanh((STATE @ w)[:, None] + MEMORY @ u + b) @ v  # (B, S)
    scores = np.where(MEMORY_MASK, scores, -np.inf)
    alpha = _softmax(scores)
    context = np.einsum("bs,bsm->bm", alpha, MEMORY)
    cell_input = np.concatenate([INPUTS[:, 0], context], -1)
    expected, _ = decoder.cell(cell_input, [STATE])

    state, got_context, got_alpha, states = decoder.step(
        INPUTS[:, 0], [STATE], MEMORY, decoder.prepare_memory(MEMORY),
        MEMORY_MASK,
    )
    assert_allclose(got_alpha, alpha, atol=1e-6)
    assert_allclose(got_context, context, atol=1e-5)
    assert_allclose(state, expected, atol=1e-5)
    assert_allclose(states[0], state)
    assert float(np.abs(as_numpy(got_alpha)[1, 3:]).max()) == 0.0


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_steps_equal_the_whole_sequence(cell):
    decoder = AttentionRNNDecoder(UNITS, cell=cell)
    states, contexts, weights = decoder(
        INPUTS, MEMORY, STATE, memory_mask=MEMORY_MASK,
        return_attention_scores=True,
    )
    state = decoder.states_from(STATE)
    keys = decoder.prepare_memory(MEMORY)
    for t in range(TARGET_LEN):
        output, context, alpha, state = decoder.step(
            INPUTS[:, t], state, MEMORY, keys, MEMORY_MASK
        )
        assert_allclose(output, states[:, t], atol=1e-5)
        assert_allclose(context, contexts[:, t], atol=1e-5)
        assert_allclose(alpha, weights[:, t], atol=1e-6)
    assert_allclose(as_numpy(weights).sum(-1), 1.0, atol=1e-5)


def test_masked_memory_is_never_read():
    decoder = AttentionRNNDecoder(UNITS)
    outputs = decoder(INPUTS, MEMORY, STATE, memory_mask=MEMORY_MASK)
    changed = MEMORY.copy()
    changed[1, 3:] = 100.0  # only masked positions change
    again = decoder(INPUTS, changed, STATE, memory_mask=MEMORY_MASK)
    for a, b in zip(outputs, again):
        assert_allclose(a, b, atol=1e-6)


def test_a_score_layer_or_its_config_plugs_in():
    layer = GeneralAttention(name="bilinear")
    decoder = AttentionRNNDecoder(UNITS, attention=layer)
    first = decoder(INPUTS, MEMORY, STATE)
    assert decoder.attention_layer is layer
    config = decoder.get_config()
    assert config["attention"]["class_name"] == "GeneralAttention"
    clone = AttentionRNNDecoder.from_config(config)
    clone(INPUTS, MEMORY, STATE)
    clone.set_weights(decoder.get_weights())
    for a, b in zip(first, clone(INPUTS, MEMORY, STATE)):
        assert_allclose(a, b, atol=1e-6)
    from_dict = AttentionRNNDecoder(
        UNITS, attention=keras.saving.serialize_keras_object(
            AdditiveAttention(4)))
    assert isinstance(from_dict.attention, AdditiveAttention)


def test_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match="cell='rnn'"):
        AttentionRNNDecoder(UNITS, cell="rnn")
    with pytest.raises(ValueError, match="attention='cosine'"):
        AttentionRNNDecoder(UNITS, attention="cosine")
    with pytest.raises(ValueError, match="attention=3"):
        AttentionRNNDecoder(UNITS, attention=3)
    with pytest.raises(ValueError, match="units=0"):
        AttentionRNNDecoder(0)
    with pytest.raises(ValueError, match="units=8, memory size 6"):
        AttentionRNNDecoder(UNITS, attention="dot")(INPUTS, MEMORY, STATE)
