"""TransformerEncoder, with KerasHub's encoder as the reference."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_attention.layers import LocalSelfAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from keras_attention.layers import TransformerEncoder
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.harness import copy_weights_by_path
from tests.harness import run_layer_test

RNG = np.random.default_rng(2)
BATCH, LENGTH, DIM = 2, 5, 8
INPUTS = RNG.normal(size=(BATCH, LENGTH, DIM)).astype("float32")
PADDING = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)


@pytest.mark.parametrize("normalize_first", [False, True])
def test_harness(normalize_first):
    run_layer_test(
        TransformerEncoder,
        {"intermediate_dim": 16, "num_heads": 2, "dropout": 0.1,
         "normalize_first": normalize_first, "activation": "gelu"},
        # Attention 8 (4 kernels, 4 biases), two layer norms 4, the
        # feed-forward network's two dense layers 4.
        expected_num_trainable_weights=16,
        inputs={"inputs": INPUTS, "padding_mask": PADDING},
        expected_output_shape=(BATCH, LENGTH, DIM),
        mask_argument="padding_mask",
    )


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_equals_keras_hub_encoder(normalize_first, activation):
    kwargs = dict(intermediate_dim=16, num_heads=2, activation=activation,
                  normalize_first=normalize_first)
    ours = TransformerEncoder(**kwargs)
    ours(INPUTS)
    hub = keras_hub.layers.TransformerEncoder(**kwargs)
    hub(INPUTS)
    # Random non-trivial layer norms, so the copy is checked everywhere.
    for weight in hub.weights:
        weight.assign(RNG.normal(size=weight.shape).astype("float32") * 0.5)
    copy_weights_by_path(hub, ours, [("self_attention_layer/",
                                      "self_attention/")])
    got, got_scores = ours(INPUTS, padding_mask=PADDING,
                           return_attention_scores=True)
    want, want_scores = hub(INPUTS, padding_mask=PADDING,
                            return_attention_scores=True)
    assert_allclose(
        as_numpy(got)[PADDING], as_numpy(want)[PADDING], atol=1e-4
    )
    assert_allclose(
        as_numpy(got_scores).transpose(0, 2, 1, 3)[PADDING],
        as_numpy(want_scores).transpose(0, 2, 1, 3)[PADDING], atol=1e-5,
    )


def test_post_norm_is_the_paper_order():
    """LayerNorm(x + Sublayer(x)): every output position is normalised."""
    encoder = TransformerEncoder(intermediate_dim=16, num_heads=2)
    outputs = as_numpy(encoder(INPUTS))
    assert_allclose(outputs.mean(-1), 0.0, atol=1e-5)
    assert_allclose(outputs.std(-1), 1.0, atol=1e-2)
    pre = as_numpy(TransformerEncoder(intermediate_dim=16, num_heads=2,
                                      normalize_first=True)(INPUTS))
    assert np.abs(pre.mean(-1)).max() > 1e-3


def test_custom_key_dim_and_causal_mask():
    encoder = TransformerEncoder(intermediate_dim=16, num_heads=3, key_dim=5)
    _, scores = encoder(INPUTS, use_causal_mask=True,
                        return_attention_scores=True)
    scores = as_numpy(scores)
    assert scores.shape == (BATCH, 3, LENGTH, LENGTH)
    assert np.all(scores[..., np.triu_indices(LENGTH, 1)[0],
                         np.triu_indices(LENGTH, 1)[1]] == 0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"intermediate_dim": 0, "num_heads": 2}, "intermediate_dim=0"),
        ({"intermediate_dim": 8, "num_heads": -2}, "num_heads=-2"),
        ({"intermediate_dim": 8, "num_heads": 2, "dropout": 2.0},
         "dropout=2.0"),
        ({"intermediate_dim": 8, "num_heads": 2, "layer_norm_epsilon": 0},
         "layer_norm_epsilon=0"),
    ],
)
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TransformerEncoder(**kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"num_heads=3"):
        TransformerEncoder(intermediate_dim=8, num_heads=3)(INPUTS)
    with pytest.raises(ValueError, match=r"inputs.shape=\(2, 8\)"):
        TransformerEncoder(intermediate_dim=8, num_heads=2)(INPUTS[:, 0])
    with pytest.raises(ValueError, match=r"padding_mask.shape=\(2, 4\)"):
        TransformerEncoder(intermediate_dim=8, num_heads=2)(
            INPUTS, padding_mask=PADDING[:, :4]
        )


def test_residual_dropout_is_applied_in_training():
    """With attention-weight dropout switched off, training still differs:
    the sub-layer outputs are dropped before the residual sum."""
    encoder = TransformerEncoder(intermediate_dim=16, num_heads=2, dropout=0.5)
    encoder(INPUTS)
    encoder.self_attention.dropout_layer.rate = 0.0
    inference = as_numpy(encoder(INPUTS, training=False))
    for dropout in (encoder.self_attention_dropout, encoder.feedforward_dropout):
        others = [encoder.self_attention_dropout, encoder.feedforward_dropout]
        for other in others:
            other.rate = 0.0
        dropout.rate = 0.5
        assert not np.allclose(as_numpy(encoder(INPUTS, training=True)),
                               inference), dropout.name


def _relative(**kwargs):
    return RelativeAttention(num_heads=2, key_dim=4, max_relative_position=2,
                             relative_values=True, **kwargs)


def test_harness_relative():
    """A config dict, so every layer the harness makes gets its own."""
    run_layer_test(
        TransformerEncoder,
        {"intermediate_dim": 16, "num_heads": 2, "dropout": 0.1,
         "self_attention": keras.saving.serialize_keras_object(
             _relative(dropout=0.1))},
        # 16 as above, and the relative key and value tables.
        expected_num_trainable_weights=18,
        inputs={"inputs": INPUTS, "padding_mask": PADDING},
        expected_output_shape=(BATCH, LENGTH, DIM),
        mask_argument="padding_mask",
    )


def test_relative_encoder_with_zero_tables_equals_plain_encoder():
    relative = TransformerEncoder(intermediate_dim=16, num_heads=2,
                                  self_attention=_relative(
                                      name="self_attention"))
    relative(INPUTS)
    assert type(relative.self_attention) is RelativeAttention
    plain = TransformerEncoder(intermediate_dim=16, num_heads=2)
    plain(INPUTS)
    ours = {w.path.split("/", 1)[1]: w for w in relative.weights}
    for weight in plain.weights:
        ours.pop(weight.path.split("/", 1)[1]).assign(weight)
    assert sorted(w.path.split("/")[-1] for w in ours.values()) == [
        "key_relative_embeddings", "value_relative_embeddings"]
    for table in ours.values():
        table.assign(np.zeros(table.shape, "float32"))
    want = as_numpy(plain(INPUTS, padding_mask=PADDING))
    assert_allclose(relative(INPUTS, padding_mask=PADDING), want,
                    atol=1e-5)
    for table in ours.values():
        table.assign(np.ones(table.shape, "float32"))
    assert not np.allclose(as_numpy(relative(INPUTS, padding_mask=PADDING)), want,
                           atol=1e-3)


@pytest.mark.parametrize("form", ["instance", "serialized", "class_name"])
def test_plugged_self_attention_round_trips_through_the_config(form):
    plugged = _relative(per_head_tables=True)
    if form == "serialized":
        plugged = keras.saving.serialize_keras_object(plugged)
    elif form == "class_name":
        plugged = {"class_name": "RelativeAttention",
                   "config": plugged.get_config()}
    encoder = TransformerEncoder(intermediate_dim=16, num_heads=2,
                                 self_attention=plugged)
    want, want_scores = encoder(INPUTS, padding_mask=PADDING,
                                return_attention_scores=True)
    config = encoder.get_config()
    assert config["self_attention"]["config"]["max_relative_position"] == 2
    clone = TransformerEncoder.from_config(config)
    assert type(clone.self_attention) is RelativeAttention
    assert clone.self_attention is not encoder.self_attention
    assert clone.get_config() == config
    clone(INPUTS)
    clone.set_weights(encoder.get_weights())
    got, got_scores = clone(INPUTS, padding_mask=PADDING,
                            return_attention_scores=True)
    assert_array_equal(as_numpy(got), as_numpy(want))
    assert_array_equal(as_numpy(got_scores),
                       as_numpy(want_scores))
    # The default self-attention stays `None` in the config, built or not.
    plain = TransformerEncoder(intermediate_dim=16, num_heads=2)
    assert plain.get_config()["self_attention"] is None
    plain(INPUTS)
    assert plain.get_config()["self_attention"] is None


def test_config_dict_makes_a_new_layer_per_block():
    config = keras.saving.serialize_keras_object(_relative())
    first, second = (
        TransformerEncoder(intermediate_dim=16, num_heads=2,
                           self_attention=config)
        for _ in range(2)
    )
    assert first.self_attention is not second.self_attention
    first(INPUTS)
    second(INPUTS)
    assert not np.allclose(first.self_attention.key_relative_embeddings,
                           second.self_attention.key_relative_embeddings)


def test_an_unbuilt_layer_takes_the_block_dtype_policy():
    encoder = TransformerEncoder(intermediate_dim=16, num_heads=2,
                                 self_attention=_relative(),
                                 dtype="mixed_float16")
    outputs = encoder(INPUTS)
    assert encoder.self_attention.dtype_policy.name == "mixed_float16"
    assert encoder.self_attention.query_dense.dtype_policy.name == (
        "mixed_float16")
    assert keras.backend.standardize_dtype(outputs.dtype) == "float16"
    built = _relative()
    built(INPUTS)
    kept = TransformerEncoder(intermediate_dim=16, num_heads=2,
                              self_attention=built, dtype="mixed_float16")
    kept(INPUTS)
    assert kept.self_attention.dtype_policy.name == "float32"


@pytest.mark.parametrize("window", [1, 2])
def test_local_self_attention_equals_a_band_mask(window):
    """A plugged `LocalSelfAttention` computes the default block with the
    band as `attention_mask`."""
    local = TransformerEncoder(
        intermediate_dim=16, num_heads=2,
        self_attention=LocalSelfAttention(num_heads=2, key_dim=4,
                                          window=window,
                                          name="self_attention"),
    )
    local(INPUTS)
    plain = TransformerEncoder(intermediate_dim=16, num_heads=2)
    plain(INPUTS)
    copy_weights_by_path(plain, local)
    positions = np.arange(LENGTH)
    band = np.abs(positions[:, None] - positions[None, :]) <= window
    band = np.broadcast_to(band, (BATCH, LENGTH, LENGTH))
    want = as_numpy(plain(INPUTS, padding_mask=PADDING, attention_mask=band))
    got = as_numpy(local(INPUTS, padding_mask=PADDING))
    assert_allclose(got[PADDING], want[PADDING], atol=1e-5)
    with pytest.raises(ValueError, match="takes `attention_mask`, received: "
                       "self_attention of type LocalSelfAttention"):
        local(INPUTS, attention_mask=band)


@keras.saving.register_keras_serializable(package="keras_attention_tests")
class ScaledSelfAttention(MultiHeadSelfAttention):
    """A user's layer: the default one with its output scaled."""

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs, padding_mask=None, attention_mask=None,
             use_causal_mask=False, return_attention_scores=False,
             training=None):
        outputs = super().call(
            inputs, padding_mask=padding_mask, attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if isinstance(outputs, tuple):
            return (outputs[0] * self.scale,) + outputs[1:]
        return outputs * self.scale

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


def _scaled_encoder(scale):
    return TransformerEncoder(
        intermediate_dim=16, num_heads=2, normalize_first=True,
        self_attention=ScaledSelfAttention(scale=scale, num_heads=2,
                                           key_dim=4, name="self_attention"),
    )


def test_a_user_layer_plugs_in_and_round_trips():
    plain = TransformerEncoder(intermediate_dim=16, num_heads=2,
                               normalize_first=True)
    want = as_numpy(plain(INPUTS, padding_mask=PADDING))
    same = _scaled_encoder(1.0)
    same(INPUTS)
    copy_weights_by_path(plain, same)
    assert_allclose(same(INPUTS, padding_mask=PADDING), want,
                    atol=1e-6)
    # Pre-norm with a zero self-attention: only the feed-forward remains.
    silent = _scaled_encoder(0.0)
    outputs = as_numpy(silent(INPUTS))
    feedforward = silent._feedforward(keras.ops.convert_to_tensor(INPUTS), False)
    assert_allclose(outputs, feedforward, atol=1e-6)
    clone = TransformerEncoder.from_config(silent.get_config())
    assert type(clone.self_attention) is ScaledSelfAttention
    assert clone.self_attention.scale == 0.0


@pytest.mark.parametrize(
    "self_attention, message",
    [
        (3, "self_attention=3"),
        ("relative", "self_attention='relative'"),
        (RelativeAttention, "self_attention=<class"),
        ({"class_name": "NoSuchAttention", "config": {}},
         r"could not be deserialized .*received: self_attention=\{"),
        (keras.saving.serialize_keras_object(keras.initializers.Zeros()),
         "must describe a Keras layer, but its config gave a Zeros"),
    ],
)
def test_bad_self_attention(self_attention, message):
    with pytest.raises(ValueError, match=message):
        TransformerEncoder(intermediate_dim=16, num_heads=2,
                           self_attention=self_attention)


def test_self_attention_must_return_the_model_size():
    encoder = TransformerEncoder(
        intermediate_dim=16, num_heads=2,
        self_attention=MultiHeadSelfAttention(num_heads=2, key_dim=4,
                                              output_dim=6),
    )
    with pytest.raises(ValueError, match="model size.*8.*output_dim=6"):
        encoder(INPUTS)


def test_a_config_saved_with_the_old_relative_flags_still_loads():
    """Before `self_attention=`, blocks took `max_relative_position` and
    `relative_values`; such configs load as a RelativeAttention block with
    the same weights."""
    from keras_attention.layers import RelativeAttention
    from keras_attention.layers import TransformerEncoder

    rng = np.random.default_rng(3)
    inputs = rng.normal(size=(2, 5, 8)).astype("float32")
    new = TransformerEncoder(
        intermediate_dim=16, num_heads=2,
        self_attention=RelativeAttention(num_heads=2, key_dim=4,
                                         max_relative_position=3,
                                         relative_values=True,
                                         name="self_attention"))
    expected = new(inputs)
    config = {key: value for key, value in new.get_config().items()
              if key != "self_attention"}
    config.update(max_relative_position=3, relative_values=True)
    old = TransformerEncoder.from_config(config)
    assert old.get_config()["max_relative_position"] == 3  # unbuilt
    old(inputs)
    assert isinstance(old.self_attention, RelativeAttention)
    assert [w.path for w in old.weights] == [w.path for w in new.weights]
    old.set_weights(new.get_weights())
    assert_allclose(old(inputs), expected, atol=1e-6)
    assert old.get_config()["self_attention"]["class_name"] == (
        "RelativeAttention")
