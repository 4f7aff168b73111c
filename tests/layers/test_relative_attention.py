"""RelativeAttention, against NumPy and MultiHeadSelfAttention."""

import numpy as np
import pytest
from keras import ops

from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from tests import relative_reference as reference
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import gradient
from tests.backend import jit_compiled
from tests.harness import assert_all_close
from tests.harness import run_layer_test

RNG = np.random.default_rng(7)
BATCH, LENGTH, DIM = 2, 5, 8
INPUTS = RNG.normal(size=(BATCH, LENGTH, DIM)).astype("float32")
PADDING = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
VARIANTS = {
    "keys": {},
    "values": {"relative_values": True},
    "per_head": {"relative_values": True, "per_head_tables": True,
                 "value_dim": 3},
    "mean": {"relative_values": True, "head_merge": "mean"},
}


def _layer(max_relative_position=2, **kwargs):
    """A built layer whose tables are random (not the initial values)."""
    layer = RelativeAttention(num_heads=2, key_dim=4,
                              max_relative_position=max_relative_position,
                              **kwargs)
    layer(INPUTS)
    for table in _tables(layer):
        table.assign(RNG.normal(size=table.shape).astype("float32"))
    return layer


def _tables(layer):
    return [w for w in layer.weights if "relative_embeddings" in w.path]


def _steps(layer, inputs, sizes, **kwargs):
    """Decode `inputs` in chunks of `sizes` with a cache; concatenated."""
    zeros = np.zeros((BATCH, inputs.shape[1], 2, layer.key_dim), "float32")
    values = np.zeros((BATCH, inputs.shape[1], 2,
                       layer.value_dim or layer.key_dim), "float32")
    cache, start, outputs = (zeros, values), 0, []
    for size in sizes:
        output, cache = layer(inputs[:, start:start + size], cache=cache,
                              cache_update_index=start, use_causal_mask=True,
                              **kwargs)
        outputs.append(as_numpy(output))
        start += size
    return np.concatenate(outputs, axis=1)


@pytest.mark.parametrize(
    "init_kwargs, causal",
    [
        ({"max_relative_position": 2, "dropout": 0.1}, True),
        ({"max_relative_position": 1, "relative_values": True,
          "per_head_tables": True, "value_dim": 3, "output_dim": 6}, False),
        ({"max_relative_position": 7, "relative_values": True,
          "relative_logits": "gather", "head_merge": "mean"}, True),
    ],
    ids=["causal_skew", "per_head_values", "gather"],
)
def test_harness(init_kwargs, causal):
    run_layer_test(
        RelativeAttention,
        {"num_heads": 2, "key_dim": 4, **init_kwargs},
        # The four projections' kernels and biases, and one relative
        # table for the keys (and one for the values).
        expected_num_trainable_weights=9 + int(
            init_kwargs.get("relative_values", False)),
        inputs={"inputs": INPUTS, "padding_mask": PADDING},
        call_kwargs={"use_causal_mask": causal,
                     "return_attention_scores": True},
        expected_output_shape=(BATCH, LENGTH, init_kwargs.get("output_dim",
                                                              DIM)),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize("relative_logits", ["skew", "gather"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_equals_numpy_reference(variant, causal, relative_logits):
    layer = _layer(relative_logits=relative_logits, **VARIANTS[variant])
    output, weights = layer(INPUTS, padding_mask=PADDING,
                            use_causal_mask=causal,
                            return_attention_scores=True)
    want_output, want_weights = reference.relative_attention(
        layer, INPUTS, PADDING, causal)
    assert_allclose(weights, want_weights, atol=1e-5)
    real = PADDING
    assert_allclose(as_numpy(output)[real], want_output[real],
                    atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("distance", [LENGTH - 1, LENGTH + 3])
def test_large_distance_equals_unclipped_attention(distance, causal):
    layer = _layer(distance, relative_values=True)
    output = layer(INPUTS, use_causal_mask=causal)
    want, _ = reference.relative_attention(layer, INPUTS, causal=causal,
                                           clip=False)
    assert_allclose(output, want, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_zero_tables_equal_multi_head_self_attention(variant, causal):
    kwargs = {k: v for k, v in VARIANTS[variant].items()
              if k in ("value_dim", "head_merge")}
    layer = _layer(**VARIANTS[variant])
    plain = MultiHeadSelfAttention(num_heads=2, key_dim=4, **kwargs)
    plain(INPUTS)
    ours = {w.path.split("/", 1)[1]: w for w in layer.weights}
    for weight in plain.weights:
        weight.assign(ours[weight.path.split("/", 1)[1]])
    for table in _tables(layer):
        table.assign(np.zeros(table.shape, "float32"))
    assert_all_close(
        layer(INPUTS, padding_mask=PADDING, use_causal_mask=causal,
              return_attention_scores=True),
        plain(INPUTS, padding_mask=PADDING, use_causal_mask=causal,
              return_attention_scores=True),
    )


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_cached_decoding_equals_full_pass(variant):
    layer = _layer(**VARIANTS[variant])
    full = as_numpy(layer(INPUTS, use_causal_mask=True))
    assert_allclose(_steps(layer, INPUTS, [1] * LENGTH), full,
                    atol=1e-5)
    # A prompt of two, then steps; a whole-cache prompt (gather, offset 0).
    assert_allclose(_steps(layer, INPUTS, [2, 1, 2]), full,
                    atol=1e-5)
    assert_allclose(_steps(layer, INPUTS, [LENGTH]), full,
                    atol=1e-5)


def test_cached_decoding_under_xla():
    layer = _layer(relative_values=True, per_head_tables=True)
    full = as_numpy(layer(INPUTS, use_causal_mask=True))

    @jit_compiled
    def step(token, cache, index):
        return layer(token, cache=cache, cache_update_index=index,
                     use_causal_mask=True)

    zeros = np.zeros((BATCH, LENGTH, 2, 4), "float32")
    cache, outputs = (zeros, zeros), []
    for index in range(LENGTH):
        output, cache = step(INPUTS[:, index:index + 1], cache,
                             ops.convert_to_tensor(index))
        outputs.append(as_numpy(output))
    assert_allclose(np.concatenate(outputs, 1), full, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_padded_tokens_never_change_real_outputs(causal):
    layer = _layer(relative_values=True)
    changed = np.where(PADDING[..., None], INPUTS,
                       RNG.normal(size=INPUTS.shape) * 100).astype("float32")
    before = as_numpy(layer(INPUTS, padding_mask=PADDING,
                            use_causal_mask=causal))
    after = as_numpy(layer(changed, padding_mask=PADDING,
                           use_causal_mask=causal))
    assert_allclose(after[PADDING], before[PADDING], atol=1e-4)


@pytest.mark.parametrize("relative_logits", ["skew", "gather"])
def test_causal_gradient_receptive_field(relative_logits):
    layer = _layer(relative_values=True, relative_logits=relative_logits)
    for time in range(LENGTH):
        (inputs_gradient,) = gradient(
            lambda x, t=time: ops.sum(layer(x, use_causal_mask=True)[:, t] ** 2),
            INPUTS)
        field = np.abs(inputs_gradient).sum(-1)  # (B, T)
        assert np.all(field[:, time + 1:] == 0.0), time
        assert np.all(field[:, :time + 1] > 0.0), time


def test_relative_positions_break_permutation_equivariance():
    """Unlike plain self-attention, the output depends on token order."""
    layer = _layer()
    permutation = np.array([4, 0, 3, 1, 2])
    outputs = as_numpy(layer(INPUTS))
    permuted = as_numpy(layer(INPUTS[:, permutation]))
    assert not np.allclose(permuted, outputs[:, permutation], atol=1e-3)


def test_weights_and_config():
    layer = _layer(3, relative_values=True, per_head_tables=True,
                   value_dim=5)
    shapes = {w.path.split("/")[-1]: tuple(w.shape) for w in layer.weights}
    assert shapes["key_relative_embeddings"] == (2, 7, 4)
    assert shapes["value_relative_embeddings"] == (2, 7, 5)
    shared = _layer(3)
    assert tuple(shared.key_relative_embeddings.shape) == (7, 4)
    assert not any("value_relative" in w.path for w in shared.weights)
    config = layer.get_config()
    assert config["embeddings_initializer"]["class_name"] == "GlorotUniform"
    assert RelativeAttention.from_config(config).get_config() == config


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_relative_position": 0}, "max_relative_position=0"),
        ({"max_relative_position": -2}, "max_relative_position=-2"),
        ({"max_relative_position": 1.5}, "max_relative_position=1.5"),
        ({"max_relative_position": None}, "max_relative_position=None"),
        ({"max_relative_position": True}, "max_relative_position=True"),
        ({"max_relative_position": 2, "relative_logits": "naive"},
         "relative_logits='naive'"),
        ({"max_relative_position": 2, "num_heads": 0}, "num_heads=0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RelativeAttention(**{"num_heads": 2, "key_dim": 4, **kwargs})


def test_forced_skew_refuses_a_cache():
    layer = _layer(relative_logits="skew")
    zeros = np.zeros((BATCH, LENGTH, 2, 4), "float32")
    with pytest.raises(ValueError, match="relative_logits='skew'"):
        layer(INPUTS[:, :1], cache=(zeros, zeros), cache_update_index=0)
    with pytest.raises(ValueError, match="cache_update_index=None"):
        layer(INPUTS[:, :1], cache=(zeros, zeros))
