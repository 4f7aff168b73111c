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
     {"cell": "lstm", "attention": "general"},
     {"cell": "gru", "attention": "general", "query": "current"},
     {"cell": "lstm", "attention": None}],
    ids=["gru-additive", "lstm-general", "luong", "no-attention"],
)
def test_shared_harness(options):
    attends = options["attention"] is not None
    run_layer_test(
        AttentionRNNDecoder,
        {"units": UNITS, **options},
        # The cell's kernel, recurrent kernel and bias, the score's
        # weights ((W1, W2, b, v) additive, W general) and Luong's W_c.
        expected_num_trainable_weights=3 + {
            "additive": 4, "general": 1, None: 0}[options["attention"]]
        + (options.get("query") == "current"),
        inputs={"inputs": INPUTS,
                "memory": MEMORY if attends else MEMORY[:, 0],
                "initial_state": STATE,
                **({"memory_mask": MEMORY_MASK} if attends else {})},
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


def _luong_step(decoder, inputs, hidden, cell_state, fed):
    """Luong et al.'s step in NumPy with the decoder's weights (general
    score, input feeding): `(h̃_t, c_t, α_t, h_t, cell state)`."""
    cell_input = np.concatenate([inputs, fed], -1)
    if decoder.cell_type == "lstm":
        hidden, (_, cell_state) = decoder.cell(cell_input,
                                               [hidden, cell_state])
    else:
        hidden, _ = decoder.cell(cell_input, [hidden])
    hidden = as_numpy(hidden)
    w = as_numpy(decoder.attention_layer.kernel)
    scores = np.einsum("bq,qk,bsk->bs", hidden, w, MEMORY)  # h_t^T W h_i
    alpha = _softmax(np.where(MEMORY_MASK, scores, -np.inf))
    context = np.einsum("bs,bsm->bm", alpha, MEMORY)
    w_c = as_numpy(decoder.attentional.kernel)
    attentional = np.tanh(np.concatenate([context, hidden], -1) @ w_c)
    return attentional, context, alpha, hidden, as_numpy(cell_state)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_luong_steps_match_a_numpy_reference(cell):
    """h_t = f(h_{t-1}, [y_{t-1}; h̃_{t-1}]), α from h_t,
    h̃_t = tanh(W_c [c_t; h_t]); h̃_0 = 0, and h̃ is fed back."""
    decoder = AttentionRNNDecoder(UNITS, cell=cell, attention="general",
                                  query="current")
    outputs, contexts, weights = decoder(
        INPUTS, MEMORY, STATE, memory_mask=MEMORY_MASK,
        return_attention_scores=True)
    hidden, cell_state = STATE, np.zeros_like(STATE)
    fed = np.zeros_like(STATE)
    for t in range(TARGET_LEN):
        fed, context, alpha, hidden, cell_state = _luong_step(
            decoder, INPUTS[:, t], hidden, cell_state, fed)
        assert_allclose(outputs[:, t], fed, atol=1e-5)
        assert_allclose(contexts[:, t], context, atol=1e-5)
        assert_allclose(weights[:, t], alpha, atol=1e-6)
    state = decoder.states_from(STATE)
    assert len(state) == {"gru": 2, "lstm": 3}[cell]  # ..., h̃
    assert float(np.abs(as_numpy(state[-1])).max()) == 0.0


def test_luong_without_input_feeding_reads_only_the_input():
    decoder = AttentionRNNDecoder(UNITS, attention="general",
                                  query="current", input_feeding=False)
    outputs, _ = decoder(INPUTS, MEMORY, STATE, memory_mask=MEMORY_MASK)
    assert len(decoder.states_from(STATE)) == 1
    assert decoder.cell.kernel.shape[0] == INPUTS.shape[-1]
    hidden, _ = decoder.cell(INPUTS[:, 0], [STATE])
    attentional, _, _, _ = decoder.step(
        INPUTS[:, 0], [STATE], MEMORY, decoder.prepare_memory(MEMORY),
        MEMORY_MASK)
    w = as_numpy(decoder.attention_layer.kernel)
    hidden = as_numpy(hidden)
    alpha = _softmax(np.where(
        MEMORY_MASK, np.einsum("bq,qk,bsk->bs", hidden, w, MEMORY), -np.inf))
    context = np.einsum("bs,bsm->bm", alpha, MEMORY)
    expected = np.tanh(np.concatenate([context, hidden], -1)
                       @ as_numpy(decoder.attentional.kernel))
    assert_allclose(attentional, expected, atol=1e-5)
    assert_allclose(outputs[:, 0], expected, atol=1e-5)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_without_attention_every_step_reads_the_one_context(cell):
    """Cho et al.: s_t = f(s_{t-1}, [y_{t-1}; c]) with the same c."""
    decoder = AttentionRNNDecoder(UNITS, cell=cell, attention=None)
    context = MEMORY[:, 0]  # (B, M)
    outputs, contexts = decoder(INPUTS, context, STATE)
    states = decoder.states_from(STATE)
    for t in range(TARGET_LEN):
        cell_input = np.concatenate([INPUTS[:, t], context], -1)
        expected, states = decoder.cell(cell_input, states)
        assert_allclose(outputs[:, t], expected, atol=1e-5)
        assert_allclose(contexts[:, t], context, atol=1e-6)
    output, step_context, weights, _ = decoder.step(
        INPUTS[:, 0], decoder.states_from(STATE), context,
        decoder.prepare_memory(context))
    assert weights is None
    assert_allclose(output, outputs[:, 0], atol=1e-6)
    with pytest.raises(ValueError, match="return_attention_scores=True"):
        decoder(INPUTS, context, STATE, return_attention_scores=True)
    with pytest.raises(ValueError, match="memory"):
        AttentionRNNDecoder(UNITS, attention=None)(INPUTS, MEMORY, STATE)


@pytest.mark.parametrize(
    "options", [{"cell": "gru"}, {"cell": "lstm"},
                {"cell": "lstm", "attention": "general", "query": "current"}],
    ids=["gru", "lstm", "luong-lstm"])
def test_steps_equal_the_whole_sequence(options):
    decoder = AttentionRNNDecoder(UNITS, **options)
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
    with pytest.raises(ValueError, match="query='next'"):
        AttentionRNNDecoder(UNITS, query="next")
    with pytest.raises(ValueError, match="attention=None, query='current'"):
        AttentionRNNDecoder(UNITS, attention=None, query="current")
    with pytest.raises(ValueError,
                       match="query='previous', input_feeding=True"):
        AttentionRNNDecoder(UNITS, input_feeding=True)
    with pytest.raises(ValueError, match="input_feeding='yes'"):
        AttentionRNNDecoder(UNITS, query="current", input_feeding="yes")


@pytest.mark.parametrize(
    "options", [{"attention": "general", "query": "current"},
                {"attention": "general", "query": "current",
                 "input_feeding": False},
                {"attention": None}],
    ids=["luong", "luong-no-feeding", "no-attention"])
def test_new_options_round_trip_their_config(options):
    decoder = AttentionRNNDecoder(UNITS, **options)
    clone = AttentionRNNDecoder.from_config(decoder.get_config())
    assert clone.get_config() == decoder.get_config()
    assert (clone.query, clone.input_feeding, clone.attention) == (
        decoder.query, decoder.input_feeding, decoder.attention)


def test_hard_steps_read_the_drawn_location_and_equal_the_sequence():
    """Hard attention: the step draws s from α by the inverse CDF of its
    noise and feeds h_s (not Σ α h) to the cell; rows marked `expectation`
    read Σ α h; the whole sequence equals step by step with the same
    noise."""
    decoder = AttentionRNNDecoder(UNITS, cell="lstm")
    noise = RNG.random((BATCH, TARGET_LEN)).astype("float32")
    expectation = np.array([False, True])
    states, contexts, weights = decoder(
        INPUTS, MEMORY, STATE, memory_mask=MEMORY_MASK,
        return_attention_scores=True, location_noise=noise,
        expectation=expectation,
    )
    state = decoder.states_from(STATE)
    keys = decoder.prepare_memory(MEMORY)
    for t in range(TARGET_LEN):
        alpha = as_numpy(weights[:, t])
        drawn = [int(np.argmax(noise[b, t] < np.cumsum(alpha[b])))
                 for b in range(BATCH)]
        assert drawn[1] < 3  # row 1's masked locations are never drawn
        want = np.stack([MEMORY[0, drawn[0]],
                         np.einsum("s,sm->m", alpha[1], MEMORY[1])])
        assert_allclose(contexts[:, t], want, atol=1e-5)
        cell_input = np.concatenate([INPUTS[:, t], want], -1)
        expected, _ = decoder.cell(cell_input, state)
        output, context, step_alpha, state = decoder.step(
            INPUTS[:, t], state, MEMORY, keys, MEMORY_MASK,
            location_noise=noise[:, t], expectation=expectation)
        assert_allclose(output, expected, atol=1e-5)
        assert_allclose(output, states[:, t], atol=1e-5)
        assert_allclose(step_alpha, alpha, atol=1e-6)
    # argmax_location reads the most likely location.
    _, contexts, weights = decoder(
        INPUTS, MEMORY, STATE, memory_mask=MEMORY_MASK,
        return_attention_scores=True, argmax_location=True)
    best = as_numpy(weights).argmax(-1)  # (B, T)
    assert_allclose(contexts, np.take_along_axis(
        MEMORY[:, None], best[:, :, None, None], 2)[:, :, 0], atol=1e-6)


def test_hard_attention_needs_the_previous_state_query():
    inputs = {"location_noise": np.zeros((BATCH, TARGET_LEN), "float32")}
    for options in ({"attention": "general", "query": "current"},
                    {"attention": None}):
        decoder = AttentionRNNDecoder(UNITS, **options)
        memory = MEMORY if options["attention"] else MEMORY[:, 0]
        with pytest.raises(ValueError, match="query='previous'"):
            decoder(INPUTS, memory, STATE, **inputs)
    with pytest.raises(ValueError, match="location_noise"):
        AttentionRNNDecoder(UNITS)(INPUTS, MEMORY, STATE,
                                   location_noise=np.zeros((BATCH,)))
    with pytest.raises(ValueError, match=r"location_noise.shape=\(2, 3\)"):
        AttentionRNNDecoder(UNITS)(INPUTS, MEMORY, STATE,
                                   location_noise=np.zeros((BATCH, 3)))
    with pytest.raises(ValueError, match="expectation without"):
        AttentionRNNDecoder(UNITS)(INPUTS, MEMORY, STATE,
                                   expectation=np.zeros((BATCH,), bool))
