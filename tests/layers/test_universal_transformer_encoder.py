"""UniversalTransformerEncoder: T steps are T applications of the shared
block; ACT against a NumPy bookkeeping of Graves' rule (weights summing to
1, ponder N + R, the ponder loss); the harness; errors."""

import keras
import numpy as np
import pytest

from keras_attention.layers import UniversalTransformerEncoder
from keras_attention.ops import coordinate_embedding
from keras_attention.ops import sinusoid_table
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.harness import run_layer_test

RNG = np.random.default_rng(2019)
BATCH, LENGTH, DIM = 2, 6, 8


def _inputs():
    return RNG.normal(size=(BATCH, LENGTH, DIM)).astype("float32")


def _padding():
    padding = np.ones((BATCH, LENGTH), bool)
    padding[1, 4:] = False
    return padding


def _encoder(**kwargs):
    options = dict(intermediate_dim=16, num_heads=2, max_steps=4)
    options.update(kwargs)
    encoder = UniversalTransformerEncoder(**options)
    encoder(_inputs())
    return encoder


def test_coordinate_embedding_is_position_plus_step_sinusoids():
    table = as_numpy(sinusoid_table(np.arange(10), DIM))
    for step in (0, 3, 7):
        assert_allclose(coordinate_embedding(LENGTH, step, DIM),
                        table[:LENGTH] + table[step], atol=1e-6)


def _by_hand(encoder, inputs, padding, weights):
    """The step states of the shared block applied by hand, `h_t =
    Block(h_{t-1} + P_t)`, summed with `weights` (one per step)."""
    state, total = inputs, 0.0
    for step, weight in enumerate(weights):
        state = as_numpy(encoder.block(
            state + as_numpy(coordinate_embedding(LENGTH, step, DIM))[None],
            padding_mask=padding))
        total = total + weight * state
    return total


def test_without_act_t_steps_are_t_applications_of_the_block():
    encoder = _encoder(max_steps=3)
    inputs, padding = _inputs(), _padding()
    state = _by_hand(encoder, inputs, padding, [0.0, 0.0, 1.0])
    output, ponder = encoder(inputs, padding_mask=padding,
                             return_ponder=True)
    assert_allclose(output, state, atol=1e-5)
    assert_allclose(ponder, np.full((BATCH, LENGTH), 3.0), atol=0)
    assert not encoder.losses


def test_pre_norm_ends_with_a_layer_normalization():
    """tensor2tensor's pre-norm UT normalizes the residual stream once,
    after the last step; post-norm blocks end normalized already."""
    encoder = _encoder(max_steps=2, normalize_first=True)
    inputs, padding = _inputs(), _padding()
    state = _by_hand(encoder, inputs, padding, [0.0, 1.0])
    mean = state.mean(-1, keepdims=True)
    variance = state.var(-1, keepdims=True)
    normalized = (state - mean) / np.sqrt(variance + 1e-5)
    assert_allclose(encoder(inputs, padding_mask=padding), normalized,
                    atol=1e-4)
    assert not hasattr(_encoder(max_steps=2), "output_layer_norm")


def act_reference(encoder, inputs, padding):
    """ACT's bookkeeping in NumPy over the layer's own halting unit and
    block: `(output, ponder, weights (S, B, T))`."""
    threshold, steps = encoder.act_threshold, encoder.max_steps
    state = inputs
    halted_sum = np.zeros((BATCH, LENGTH))
    running = np.ones((BATCH, LENGTH), bool)
    taken = np.zeros((BATCH, LENGTH))
    remainder = np.zeros((BATCH, LENGTH))
    output = np.zeros_like(inputs, dtype="float64")
    weights = []
    for step in range(steps):
        state = state + as_numpy(coordinate_embedding(LENGTH, step, DIM))[None]
        # The unit reads the state centred and scaled to norm 1, or (as
        # tensor2tensor's) the state itself.
        centred = state - state.mean(-1, keepdims=True)
        unit = centred / np.sqrt((centred ** 2).mean(-1, keepdims=True)
                                 + 1e-5) / np.sqrt(DIM)
        if encoder.halting_input == "state":
            unit = state
        p = as_numpy(encoder.halting(unit.astype("float32")))[..., 0].astype(
            "float64")
        weight = np.zeros((BATCH, LENGTH))
        for b in range(BATCH):
            for t in range(LENGTH):
                if not running[b, t]:
                    continue
                taken[b, t] += 1
                capped = step == steps - 1 and encoder.halt_at_cap
                if capped or halted_sum[b, t] + p[b, t] > threshold:
                    remainder[b, t] = 1.0 - halted_sum[b, t]
                    weight[b, t] = remainder[b, t]
                    running[b, t] = False
                else:
                    halted_sum[b, t] += p[b, t]
                    weight[b, t] = p[b, t]
        state = as_numpy(encoder.block(state, padding_mask=padding))
        if encoder.act_output == "interpolate":  # tensor2tensor's
            output = weight[..., None] * state + (
                1 - weight[..., None]) * output
        else:
            output += weight[..., None] * state
        weights.append(weight)
    return output, taken + remainder, np.stack(weights)


def _act_against_reference(bias, **options):
    """The layer's ACT (a random kernel, so the positions' halting
    probabilities differ; the unit's bias `bias`) against
    `act_reference`: `(encoder, ponder, weights)`."""
    encoder = _encoder(act=True, ponder_weight=0.1,
                       halting_initializer="glorot_uniform", **options)
    encoder.halting.bias.assign(np.full((1,), bias, "float32"))
    inputs, padding = _inputs(), _padding()
    output, ponder = encoder(inputs, padding_mask=padding,
                             return_ponder=True)
    want_output, want_ponder, weights = act_reference(encoder, inputs,
                                                      padding)
    assert_allclose(output, want_output, atol=1e-4)
    assert_allclose(ponder, want_ponder, atol=1e-5)
    return encoder, as_numpy(ponder), weights


@pytest.mark.parametrize("threshold, bias", [(0.99, 1.0), (0.5, 0.0),
                                             (0.99, -6.0), (1e-3, 0.0)],
                         ids=["default", "half", "never_halts", "at_once"])
def test_act_matches_graves_rule_and_weights_sum_to_one(threshold, bias):
    encoder, ponder, weights = _act_against_reference(
        bias, act_threshold=threshold)
    np.testing.assert_allclose(weights.sum(0), 1.0, atol=1e-6)
    assert np.all(weights >= 0)
    assert np.all(ponder >= 1.0) and np.all(ponder <= 4.0 + 1.0)
    if bias == -6.0:  # p ~ 0.0025: every position runs every step
        np.testing.assert_array_equal(np.floor(ponder), 4.0)
    if threshold == 1e-3:  # the first step crosses it: N = 1, R = 1
        assert_allclose(ponder, np.full((BATCH, LENGTH), 2.0), atol=0)
    real = _padding()
    (loss,) = encoder.losses
    assert_allclose(loss, 0.1 * ponder[real].mean(), atol=1e-5)


@pytest.mark.parametrize("probability, ponder, weights", [
    (0.3, 4.1, [0.3, 0.3, 0.3, 0.1]),  # 0.9 + 0.3 > 0.99 at step 4
    (0.6, 2.4, [0.6, 0.4, 0.0, 0.0]),  # 0.6 + 0.6 > 0.99 at step 2
    (0.995, 2.0, [1.0, 0.0, 0.0, 0.0]),  # halts at once: N = 1, R = 1
])
def test_act_golden_values_for_a_constant_halting_probability(
        probability, ponder, weights):
    """Graves' N + R and step weights by hand: the halting unit's kernel
    zeroed, its bias the logit of `probability`, 4 steps at most."""
    encoder = _encoder(act=True, max_steps=4)
    encoder.halting.kernel.assign(np.zeros((DIM, 1), "float32"))
    encoder.halting.bias.assign(
        np.full((1,), np.log(probability / (1 - probability)), "float32"))
    inputs, padding = _inputs(), _padding()
    output, got, steps = encoder(inputs, padding_mask=padding,
                                 return_ponder=True, return_steps=True)
    assert_allclose(got, np.full((BATCH, LENGTH), ponder), atol=1e-5)
    # N, the steps taken: the weights' count
    assert_allclose(steps, np.full((BATCH, LENGTH), float(sum(
        w > 0 for w in weights))), atol=0)
    assert_allclose(output, _by_hand(encoder, inputs, padding, weights),
                    atol=1e-4)


TENSOR2TENSOR = dict(halting_input="state", halt_at_cap=False,
                     act_output="interpolate")


@pytest.mark.parametrize("bias", [1.0, -6.0, 3.0])
def test_tensor2tensor_act_matches_its_bookkeeping(bias):
    """tensor2tensor's ACT: the unit reads the step input itself, a
    position at the cap stops without a remainder (its weights sum to
    less than 1), the output interpolates."""
    _, ponder, weights = _act_against_reference(bias, **TENSOR2TENSOR)
    assert np.all(weights.sum(0) <= 1.0 + 1e-6)
    if bias == -6.0:  # never crosses: every position stops at the cap
        assert_allclose(ponder, np.full((BATCH, LENGTH), 4.0), atol=1e-6)
        assert np.all(weights.sum(0) < 0.5)


def test_tensor2tensor_golden_values_below_the_threshold():
    """p = 0.2 four times never crosses 0.99: Graves' rule halts at the
    cap with R = 0.4 (N + R = 4.4, weights .2 .2 .2 .4, summed);
    tensor2tensor's stops there with none (4.0), interpolating
    o = .2·h_t + .8·o_{t-1}."""
    inputs, padding = _inputs(), _padding()
    found = {}
    for name, options in (("graves", {}), ("t2t", TENSOR2TENSOR)):
        encoder = _encoder(act=True, max_steps=4, **options)
        encoder.halting.kernel.assign(np.zeros((DIM, 1), "float32"))
        encoder.halting.bias.assign(
            np.full((1,), np.log(0.2 / 0.8), "float32"))
        output, ponder, steps = encoder(inputs, padding_mask=padding,
                                        return_ponder=True,
                                        return_steps=True)
        # Both take the 4 steps: N = 4 (Graves' N + R is 4.4).
        assert_allclose(steps, np.full((BATCH, LENGTH), 4.0), atol=0)
        found[name] = (output, ponder, encoder)
    (output, ponder, encoder) = found["graves"]
    assert_allclose(ponder, np.full((BATCH, LENGTH), 4.4), atol=1e-5)
    assert_allclose(output, _by_hand(encoder, inputs, padding,
                                     [0.2, 0.2, 0.2, 0.4]), atol=1e-4)
    (output, ponder, encoder) = found["t2t"]
    assert_allclose(ponder, np.full((BATCH, LENGTH), 4.0), atol=1e-5)
    # o_4 = .2 h4 + .8 (.2 h3 + .8 (.2 h2 + .8 (.2 h1)))
    weights = [0.2 * 0.8 ** 3, 0.2 * 0.8 ** 2, 0.2 * 0.8, 0.2]
    assert_allclose(output, _by_hand(encoder, inputs, padding, weights),
                    atol=1e-4)


def test_every_position_starts_at_the_same_halting_probability():
    """The default zero kernel: p = sigmoid(1) at every position and step,
    so every position halts at step 2 with R = 1 - sigmoid(1), whatever
    its input (a Glorot kernel on real bAbI gave initial ponder times from
    2.0 to 6.7 by seed)."""
    encoder = _encoder(act=True)
    _, ponder = encoder(_inputs() * 30.0, padding_mask=_padding(),
                        return_ponder=True)
    expected = 2.0 + 1.0 - 1.0 / (1.0 + np.exp(-1.0))
    np.testing.assert_allclose(as_numpy(ponder), expected, atol=1e-5)


def test_act_gradient_reaches_the_halting_unit():
    encoder = _encoder(act=True, act_threshold=0.9)
    inputs = _inputs()
    model = keras.Sequential([keras.Input((LENGTH, DIM)), encoder])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = as_numpy(encoder.halting.kernel).copy()
    model.fit(inputs, np.ones_like(inputs), epochs=1, verbose=0)
    assert not np.allclose(before, as_numpy(encoder.halting.kernel))


@pytest.mark.parametrize(
    "init_kwargs",
    [{"max_steps": 2, "normalize_first": True},
     {"max_steps": 3, "act": True, "act_threshold": 0.9,
      "ponder_weight": 0.05, "dropout": 0.1},
     {"max_steps": 3, "act": True, "halting_input": "state",
      "halt_at_cap": False, "act_output": "interpolate"}],
    ids=["recurrent_pre_norm", "act", "act_tensor2tensor"])
def test_harness(init_kwargs):
    act = init_kwargs.get("act", False)
    pre_norm = init_kwargs.get("normalize_first", False)
    run_layer_test(
        UniversalTransformerEncoder,
        {"intermediate_dim": 16, "num_heads": 2, **init_kwargs},
        inputs={"inputs": _inputs(), "padding_mask": _padding()},
        call_kwargs={"return_ponder": True},
        # The block's 16 (attention 8, two layer norms 4, feed-forward 4),
        # the halting unit's kernel and bias, pre-norm's final layer norm.
        expected_num_trainable_weights=16 + (2 if act else 0)
        + (2 if pre_norm else 0),
        expected_num_losses=1 if act else 0,
        expected_output_shape=(BATCH, LENGTH, DIM),
        mask_argument="padding_mask",
        atol=1e-4,
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [({"max_steps": 0}, "max_steps=0"),
     ({"act_threshold": 0.0}, "act_threshold=0.0"),
     ({"act_threshold": 1.5}, "act_threshold=1.5"),
     ({"ponder_weight": -1.0}, "ponder_weight=-1.0"),
     ({"dropout": 1.0}, "dropout=1.0"),
     ({"key_dim": 0}, "key_dim=0"),
     ({"layer_norm_epsilon": -1.0}, "layer_norm_epsilon=-1.0"),
     ({"halting_input": "raw"}, "halting_input='raw'"),
     ({"act_output": "sum"}, "act_output='sum'"),
     ({"halt_at_cap": "False"}, "halt_at_cap='False'")])
def test_argument_errors_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        UniversalTransformerEncoder(intermediate_dim=16, num_heads=2,
                                    **kwargs)


def test_input_errors_name_the_argument():
    encoder = _encoder()
    with pytest.raises(ValueError, match="inputs.shape"):
        encoder(np.zeros((2, 8), "float32"))
    with pytest.raises(ValueError, match="padding_mask.shape"):
        encoder(_inputs(), padding_mask=np.ones((BATCH, 3), bool))
