"""TransformerDecoder, with KerasHub's decoder as the reference."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_attention.layers import LocalSelfAttention
from keras_attention.layers import MultiHeadAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from keras_attention.layers import TransformerDecoder
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import jit_compiled
from tests.harness import copy_weights_by_path
from tests.harness import run_layer_test

RNG = np.random.default_rng(3)
BATCH, TARGET_LEN, SOURCE_LEN, DIM = 2, 5, 6, 8
TARGET = RNG.normal(size=(BATCH, TARGET_LEN, DIM)).astype("float32")
SOURCE = RNG.normal(size=(BATCH, SOURCE_LEN, DIM)).astype("float32")
TARGET_PADDING = np.array([[1] * 5, [1] * 3 + [0] * 2], bool)
SOURCE_PADDING = np.array([[1] * 6, [1] * 2 + [0] * 4], bool)


def test_harness_with_cross_attention():
    run_layer_test(
        TransformerDecoder,
        {"intermediate_dim": 16, "num_heads": 2, "dropout": 0.1},
        # Self- and cross-attention 8 each, three layer norms 6, the
        # feed-forward network 4.
        expected_num_trainable_weights=26,
        inputs={
            "decoder_sequence": TARGET,
            "encoder_sequence": SOURCE,
            "decoder_padding_mask": TARGET_PADDING,
            "encoder_padding_mask": SOURCE_PADDING,
        },
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=(BATCH, TARGET_LEN, DIM),
        mask_argument="decoder_padding_mask",
    )


def test_harness_decoder_only_pre_norm():
    run_layer_test(
        TransformerDecoder,
        {"intermediate_dim": 16, "num_heads": 2, "normalize_first": True},
        # No encoder sequence: no cross-attention and its layer norm.
        expected_num_trainable_weights=16,
        inputs={"decoder_sequence": TARGET,
                "decoder_padding_mask": TARGET_PADDING},
        expected_output_shape=(BATCH, TARGET_LEN, DIM),
        mask_argument="decoder_padding_mask",
    )


def _twins(normalize_first, cross):
    kwargs = dict(intermediate_dim=16, num_heads=2,
                  normalize_first=normalize_first)
    sources = (SOURCE,) if cross else ()
    ours = TransformerDecoder(**kwargs)
    ours(TARGET, *sources)
    hub = keras_hub.layers.TransformerDecoder(**kwargs)
    hub(TARGET, *sources)
    for weight in hub.weights:
        weight.assign(RNG.normal(size=weight.shape).astype("float32") * 0.5)
    copy_weights_by_path(hub, ours)
    return ours, hub


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("cross", [True, False], ids=["cross", "self_only"])
def test_equals_keras_hub_decoder(normalize_first, cross):
    ours, hub = _twins(normalize_first, cross)
    masks = dict(decoder_padding_mask=TARGET_PADDING)
    sources = ()
    if cross:
        masks["encoder_padding_mask"] = SOURCE_PADDING
        sources = (SOURCE,)
    got = as_numpy(ours(TARGET, *sources, **masks))
    want = as_numpy(hub(TARGET, *sources, **masks))
    real = TARGET_PADDING
    assert_allclose(got[real], want[real], atol=1e-4)


def test_cross_attention_scores_respect_the_source_padding():
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2)
    _, scores = decoder(TARGET, SOURCE, encoder_padding_mask=SOURCE_PADDING,
                        decoder_padding_mask=TARGET_PADDING,
                        return_attention_scores=True)
    scores = as_numpy(scores)  # (B, N, T, S)
    assert scores.shape == (BATCH, 2, TARGET_LEN, SOURCE_LEN)
    assert np.all(scores.transpose(0, 2, 1, 3)[~SOURCE_PADDING[:, None, None]
                  .repeat(TARGET_LEN, 1).repeat(2, 2)] == 0)
    rows = scores.sum(-1).transpose(0, 2, 1)  # (B, T, N)
    assert_allclose(rows[TARGET_PADDING], 1.0, atol=1e-6)
    assert_array_equal(rows[~TARGET_PADDING], 0.0)


@pytest.mark.parametrize("cross", [True, False], ids=["cross", "self_only"])
@pytest.mark.parametrize("normalize_first", [False, True])
def test_cached_decoding_equals_full_pass(cross, normalize_first):
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2,
                                 normalize_first=normalize_first)
    sources = (SOURCE,) if cross else ()
    masks = {"encoder_padding_mask": SOURCE_PADDING} if cross else {}
    full = decoder(TARGET, *sources, return_attention_scores=cross, **masks)
    if cross:
        cache = decoder.initial_cache(SOURCE, max_length=TARGET_LEN)
    else:
        cache = decoder.initial_cache(batch_size=BATCH, max_length=TARGET_LEN)
    steps = []
    for index in range(TARGET_LEN):
        step = decoder(
            TARGET[:, index:index + 1], cache=cache, cache_update_index=index,
            return_attention_scores=cross, **masks,
        )
        cache = step[-1]
        steps.append(step[:-1])
    outputs = np.concatenate([as_numpy(s[0]) for s in steps], axis=1)
    want = full[0] if cross else full
    assert_allclose(outputs, want, atol=1e-5)
    if cross:
        scores = np.concatenate([as_numpy(s[1]) for s in steps], axis=2)
        assert_allclose(scores, full[1], atol=1e-6)


def test_outputs_do_not_depend_on_asking_for_the_scores():
    # Without `return_attention_scores` the cross-attention is not asked
    # for its weights (a fused core may then compute it); same outputs.
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2)
    masks = {"encoder_padding_mask": SOURCE_PADDING,
             "decoder_padding_mask": TARGET_PADDING}
    outputs, _ = decoder(TARGET, SOURCE, return_attention_scores=True, **masks)
    assert_allclose(decoder(TARGET, SOURCE, **masks), outputs, atol=1e-6)
    cache = decoder.initial_cache(SOURCE, max_length=TARGET_LEN)
    source_mask = {"encoder_padding_mask": SOURCE_PADDING}
    step, _, _ = decoder(TARGET[:, :1], cache=cache, cache_update_index=0,
                         return_attention_scores=True, **source_mask)
    plain, new_cache = decoder(TARGET[:, :1], cache=cache,
                               cache_update_index=0, **source_mask)
    assert_allclose(plain, step, atol=1e-6)
    assert sorted(new_cache) == ["cross_attention", "self_attention"]


def test_cached_decoding_under_xla():
    """The step function of a decoding loop compiles and matches eager."""
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2)
    full = as_numpy(decoder(TARGET, SOURCE))
    cache = decoder.initial_cache(SOURCE, max_length=TARGET_LEN)

    @jit_compiled
    def step(token, cache, index):
        return decoder(token, cache=cache, cache_update_index=index)

    outputs = []
    for index in range(TARGET_LEN):
        output, cache = step(TARGET[:, index:index + 1], cache,
                             keras.ops.convert_to_tensor(index))
        outputs.append(as_numpy(output))
    assert_allclose(np.concatenate(outputs, 1), full, atol=1e-5)


def test_bad_calls_say_what_is_wrong():
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2)
    decoder(TARGET, SOURCE)
    with pytest.raises(ValueError, match="encoder_sequence=None"):
        decoder(TARGET)
    with pytest.raises(ValueError, match="cache_update_index=None"):
        decoder(TARGET, cache=decoder.initial_cache(SOURCE, max_length=5))
    with pytest.raises(ValueError, match="max_length=0"):
        decoder.initial_cache(SOURCE, max_length=0)
    with pytest.raises(ValueError,
                       match=r"encoder_padding_mask.shape=\(2, 5\)"):
        decoder(TARGET, SOURCE, encoder_padding_mask=TARGET_PADDING)
    decoder_only = TransformerDecoder(intermediate_dim=16, num_heads=2)
    decoder_only(TARGET)
    with pytest.raises(ValueError, match="without an encoder"):
        decoder_only(TARGET, SOURCE)
    with pytest.raises(ValueError, match="no cross-attention"):
        decoder_only(TARGET, return_attention_scores=True)
    with pytest.raises(ValueError, match="batch_size=None"):
        decoder_only.initial_cache(max_length=3)
    with pytest.raises(ValueError, match=r"decoder_sequence.shape=\(2, 8\)"):
        TransformerDecoder(intermediate_dim=16, num_heads=2)(TARGET[:, 0])


def test_residual_dropout_is_applied_in_training():
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2, dropout=0.5)
    decoder(TARGET, SOURCE)
    decoder.self_attention.dropout_layer.rate = 0.0
    decoder.cross_attention.dropout_layer.rate = 0.0
    residual = [decoder.self_attention_dropout, decoder.cross_attention_dropout,
                decoder.feedforward_dropout]
    inference = as_numpy(decoder(TARGET, SOURCE, training=False))
    for dropout in residual:
        for other in residual:
            other.rate = 0.0
        dropout.rate = 0.5
        assert not np.allclose(as_numpy(decoder(TARGET, SOURCE, training=True)),
                               inference), dropout.name


def test_decoder_mask_errors_name_the_decoder_argument():
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2)
    decoder(TARGET, SOURCE)
    with pytest.raises(ValueError,
                       match=r"encoder_attention_mask.shape=\(2, 5, 5\)"):
        decoder(TARGET, SOURCE, encoder_attention_mask=np.ones((2, 5, 5), bool))
    with pytest.raises(ValueError,
                       match=r"decoder_attention_mask.shape=\(2, 5, 6\)"):
        decoder(TARGET, SOURCE, decoder_attention_mask=np.ones((2, 5, 6), bool))
    cache = decoder.initial_cache(SOURCE, max_length=TARGET_LEN)
    with pytest.raises(ValueError,
                       match=r"encoder_padding_mask.shape=\(2, 5\)"):
        decoder(TARGET[:, :1], cache=cache, cache_update_index=0,
                encoder_padding_mask=TARGET_PADDING)
    decoder_only = TransformerDecoder(intermediate_dim=16, num_heads=2)
    decoder_only(TARGET)
    with pytest.raises(ValueError, match="batch_size=0"):
        decoder_only.initial_cache(batch_size=0, max_length=3)


def _relative(**kwargs):
    return RelativeAttention(num_heads=2, key_dim=4, max_relative_position=2,
                             relative_values=True, **kwargs)


def test_harness_relative_with_cross_attention():
    run_layer_test(
        TransformerDecoder,
        {"intermediate_dim": 16, "num_heads": 2,
         "self_attention": keras.saving.serialize_keras_object(_relative())},
        # 26 as above, and the relative key and value tables.
        expected_num_trainable_weights=28,
        inputs={
            "decoder_sequence": TARGET,
            "encoder_sequence": SOURCE,
            "decoder_padding_mask": TARGET_PADDING,
            "encoder_padding_mask": SOURCE_PADDING,
        },
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=(BATCH, TARGET_LEN, DIM),
        mask_argument="decoder_padding_mask",
    )


def _step_by_step(decoder, target, cache, jit=False, **kwargs):
    """Decode `target` one position at a time; the outputs (and weights,
    when asked) concatenated over the positions."""
    def step(token, cache, index):
        return decoder(token, cache=cache, cache_update_index=index, **kwargs)

    if jit:
        step = jit_compiled(step)
    outputs, scores = [], []
    for index in range(target.shape[1]):
        results = step(target[:, index:index + 1], cache,
                       keras.ops.convert_to_tensor(index))
        cache = results[-1]
        outputs.append(as_numpy(results[0]))
        if len(results) == 3:
            scores.append(as_numpy(results[1]))
    scores = np.concatenate(scores, axis=2) if scores else None
    return np.concatenate(outputs, axis=1), scores


@pytest.mark.parametrize("cross", [True, False], ids=["cross", "self_only"])
def test_relative_cached_decoding_equals_full_pass(cross):
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2,
                                 self_attention=_relative())
    sources = (SOURCE,) if cross else ()
    full = as_numpy(decoder(TARGET, *sources))
    assert type(decoder.self_attention) is RelativeAttention
    if cross:
        assert type(decoder.cross_attention) is MultiHeadAttention
        cache = decoder.initial_cache(SOURCE, max_length=TARGET_LEN)
    else:
        cache = decoder.initial_cache(batch_size=BATCH, max_length=TARGET_LEN)
    outputs, _ = _step_by_step(decoder, TARGET, cache, jit=True)
    assert_allclose(outputs, full, atol=1e-5)


WIDE_SOURCE = RNG.normal(size=(BATCH, SOURCE_LEN, 12)).astype("float32")


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("relative", [False, True], ids=["plain", "relative"])
def test_cached_decoding_with_an_encoder_of_another_size(relative,
                                                         normalize_first):
    """Encoder size 12, decoder size 8: the cached cross-attention attends
    the projected encoder keys/values; nothing stands in for the value."""
    decoder = TransformerDecoder(
        intermediate_dim=16, num_heads=2, normalize_first=normalize_first,
        self_attention=_relative() if relative else None,
    )
    masks = {"encoder_padding_mask": SOURCE_PADDING}
    full, full_scores = decoder(TARGET, WIDE_SOURCE,
                                return_attention_scores=True, **masks)
    assert tuple(decoder.cross_attention.key_dense.kernel.shape) == (12, 2, 4)
    cache = decoder.initial_cache(WIDE_SOURCE, max_length=TARGET_LEN)
    outputs, scores = _step_by_step(decoder, TARGET, cache,
                                    return_attention_scores=True, **masks)
    assert_allclose(outputs, full, atol=1e-5)
    assert_allclose(scores, full_scores, atol=1e-6)
    # The encoder sequence may come along; it is the cache that is used.
    outputs, _ = _step_by_step(decoder, TARGET, cache,
                               encoder_sequence=WIDE_SOURCE, **masks)
    assert_allclose(outputs, full, atol=1e-5)


def test_an_encoder_of_the_wrong_size_is_still_an_error():
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2)
    decoder(TARGET, WIDE_SOURCE)
    with pytest.raises(ValueError, match=r"value.shape=\(2, 6, 8\)"):
        decoder(TARGET, SOURCE)
    with pytest.raises(ValueError, match=r"`encoder_dim` the decoder was "
                       r"built with = 12.*encoder_sequence.shape=\(2, 6, 8\)"):
        decoder.initial_cache(SOURCE, max_length=TARGET_LEN)
    with pytest.raises(ValueError, match=r"value.shape=\(2, 6, 8\)"):
        decoder.cross_attention.compute_key_value(SOURCE)


def test_cache_holds_the_self_attention_sizes():
    """`initial_cache` reads `num_heads`, `key_dim` and `value_dim` from
    the plugged layer (here key size 4, value size 6, 3 heads)."""
    decoder = TransformerDecoder(
        intermediate_dim=16, num_heads=2,
        self_attention=MultiHeadSelfAttention(num_heads=3, key_dim=4,
                                              value_dim=6),
    )
    full = as_numpy(decoder(TARGET, SOURCE))
    cache = decoder.initial_cache(SOURCE, max_length=TARGET_LEN)
    keys, values = cache["self_attention"]
    assert tuple(keys.shape) == (BATCH, TARGET_LEN, 3, 4)
    assert tuple(values.shape) == (BATCH, TARGET_LEN, 3, 6)
    outputs, _ = _step_by_step(decoder, TARGET, cache)
    assert_allclose(outputs, full, atol=1e-5)


def test_plugged_self_attention_round_trips_through_the_config():
    decoder = TransformerDecoder(intermediate_dim=16, num_heads=2,
                                 self_attention=_relative())
    want = as_numpy(decoder(TARGET, SOURCE, decoder_padding_mask=TARGET_PADDING))
    clone = TransformerDecoder.from_config(decoder.get_config())
    assert type(clone.self_attention) is RelativeAttention
    assert clone.self_attention is not decoder.self_attention
    clone(TARGET, SOURCE)
    clone.set_weights(decoder.get_weights())
    got = clone(TARGET, SOURCE, decoder_padding_mask=TARGET_PADDING)
    assert_array_equal(as_numpy(got), want)


def test_a_self_attention_without_a_cache_decodes_full_passes_only():
    decoder = TransformerDecoder(
        intermediate_dim=16, num_heads=2,
        self_attention=LocalSelfAttention(num_heads=2, key_dim=4, window=2,
                                          name="self_attention"),
    )
    decoder(TARGET, SOURCE)
    plain = TransformerDecoder(intermediate_dim=16, num_heads=2)
    plain(TARGET, SOURCE)
    copy_weights_by_path(plain, decoder)
    positions = np.arange(TARGET_LEN)
    band = (positions[None, :] <= positions[:, None]) & (
        positions[:, None] - positions[None, :] <= 2)
    band = np.broadcast_to(band, (BATCH, TARGET_LEN, TARGET_LEN))
    assert_allclose(
        decoder(TARGET, SOURCE),
        plain(TARGET, SOURCE, decoder_attention_mask=band), atol=1e-5,
    )
    message = ("takes `cache`, received: self_attention of type "
               "LocalSelfAttention")
    with pytest.raises(ValueError, match=message):
        decoder.initial_cache(SOURCE, max_length=TARGET_LEN)
    cache = plain.initial_cache(SOURCE, max_length=TARGET_LEN)
    with pytest.raises(ValueError, match=message):
        decoder(TARGET[:, :1], cache=cache, cache_update_index=0)
    with pytest.raises(ValueError, match="takes `attention_mask`"):
        decoder(TARGET, SOURCE, decoder_attention_mask=band)


def test_bad_self_attention():
    with pytest.raises(ValueError, match=r"self_attention=\[\]"):
        TransformerDecoder(intermediate_dim=16, num_heads=2,
                           self_attention=[])
