"""Properties that must hold for any input (hypothesis).

Layers are built once per module: hypothesis varies inputs, masks and
positions, not weights.
"""

import numpy as np
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention.layers import MultiHeadAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from keras_attention.layers import TransformerDecoder
from keras_attention.layers import TransformerEncoder
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import gradient

BATCH, LENGTH, DIM = 2, 7, 8
PROPERTY = settings(max_examples=15, deadline=None)

SELF_ATTENTION = MultiHeadSelfAttention(num_heads=2, key_dim=4)
RELATIVE = RelativeAttention(num_heads=2, key_dim=4, max_relative_position=3,
                             relative_values=True)
ENCODER = TransformerEncoder(intermediate_dim=16, num_heads=2)
DECODER = TransformerDecoder(intermediate_dim=16, num_heads=2)
CROSS = MultiHeadAttention(num_heads=3, key_dim=4)
SOURCE = np.random.default_rng(0).normal(size=(BATCH, 5, DIM)).astype(
    "float32")
for layer in (SELF_ATTENTION, RELATIVE, ENCODER):
    layer(np.zeros((BATCH, LENGTH, DIM), "float32"))
DECODER(np.zeros((BATCH, LENGTH, DIM), "float32"), SOURCE)


def _sequence(seed):
    rng = np.random.default_rng(seed)
    return rng, rng.normal(size=(BATCH, LENGTH, DIM)).astype("float32")


def _padding(lengths):
    return np.arange(LENGTH)[None, :] < as_numpy(lengths)[:, None]


LENGTHS = st.lists(st.integers(1, LENGTH), min_size=BATCH, max_size=BATCH)
SEEDS = st.integers(0, 2**31 - 1)
TIMES = st.integers(0, LENGTH - 1)


def _run(name, inputs, padding, causal=False):
    if name == "self_attention":
        return SELF_ATTENTION(inputs, padding_mask=padding,
                              use_causal_mask=causal)
    if name == "relative":
        return RELATIVE(inputs, padding_mask=padding, use_causal_mask=causal)
    if name == "encoder":
        return ENCODER(inputs, padding_mask=padding, use_causal_mask=causal)
    return DECODER(inputs, SOURCE, decoder_padding_mask=padding,
                   use_causal_mask=True)


@PROPERTY
@given(seed=SEEDS, lengths=LENGTHS,
       name=st.sampled_from(["self_attention", "relative", "encoder",
                             "decoder"]))
def test_padded_tokens_never_change_real_outputs(seed, lengths, name):
    rng, inputs = _sequence(seed)
    padding = _padding(lengths)
    changed = np.where(padding[..., None], inputs,
                       rng.normal(size=inputs.shape) * 100).astype("float32")
    before = as_numpy(_run(name, inputs, padding))
    after = as_numpy(_run(name, changed, padding))
    assert_allclose(after[padding], before[padding], atol=1e-4)


@PROPERTY
@given(seed=SEEDS, time=TIMES,
       name=st.sampled_from(["self_attention", "relative", "encoder",
                             "decoder"]))
def test_causal_outputs_ignore_the_future(seed, time, name):
    rng, inputs = _sequence(seed)
    changed = inputs.copy()
    changed[:, time + 1:] = rng.normal(size=changed[:, time + 1:].shape) * 10
    before = as_numpy(_run(name, inputs, None, causal=True))
    after = as_numpy(_run(name, changed, None, causal=True))
    assert_allclose(after[:, :time + 1], before[:, :time + 1],
                    atol=1e-4)


@PROPERTY
@given(seed=SEEDS, time=TIMES,
       name=st.sampled_from(["relative", "encoder", "decoder"]))
def test_causal_gradient_receptive_field(seed, time, name):
    rng, inputs = _sequence(seed)
    # A random read-out: a plain sum of a layer-normed vector is constant.
    readout = rng.normal(size=(DIM,)).astype("float32")
    (inputs_gradient,) = gradient(
        lambda x: ops.sum(
            ops.multiply(_run(name, x, None, causal=True)[:, time], readout)),
        inputs)
    field = np.abs(inputs_gradient).sum(-1)  # (B, T)
    assert np.all(field[:, time + 1:] == 0.0)
    assert np.all(field[:, :time + 1].sum(-1) > 0.0)


@PROPERTY
@given(seed=SEEDS, query_lengths=LENGTHS,
       key_lengths=st.lists(st.integers(1, 5), min_size=BATCH,
                            max_size=BATCH))
def test_attention_rows_sum_to_one_over_unmasked_keys(seed, query_lengths,
                                                      key_lengths):
    rng, inputs = _sequence(seed)
    query_padding = _padding(query_lengths)
    key_padding = np.arange(5)[None, :] < as_numpy(key_lengths)[:, None]
    extra = rng.random((BATCH, LENGTH, 5)) > 0.5
    extra[:, :, 0] = True  # keep at least one key per row
    _, scores = CROSS(inputs, SOURCE, padding_mask=query_padding,
                      key_padding_mask=key_padding, attention_mask=extra,
                      return_attention_scores=True)
    scores = as_numpy(scores).transpose(0, 2, 1, 3)  # (B, T, N, S)
    allowed = (key_padding[:, None, :] & extra)[:, :, None, :]
    allowed = np.broadcast_to(allowed, scores.shape)
    assert np.all(scores[~allowed] == 0.0)
    sums = scores.sum(-1)
    assert_allclose(sums[query_padding], 1.0, atol=1e-5)
    assert_array_equal(sums[~query_padding], 0.0)


@PROPERTY
@given(seed=SEEDS, name=st.sampled_from(["self_attention", "encoder"]))
def test_self_attention_is_permutation_equivariant(seed, name):
    rng, inputs = _sequence(seed)
    permutation = rng.permutation(LENGTH)
    outputs = as_numpy(_run(name, inputs, None))
    permuted = as_numpy(_run(name, inputs[:, permutation], None))
    assert_allclose(permuted, outputs[:, permutation], atol=1e-4)
