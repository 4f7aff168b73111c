"""The shared layer test: every layer test starts with `run_layer_test`.

It checks, for one layer configuration and one set of inputs:
- `get_config()`/`from_config()` round trip (same config, same outputs with
  the same weights) and a `.keras` save/load round trip in a model;
- eager, symbolic (functional model) and compiled calls agree: under
  TensorFlow `tf.function` and `tf.function(jit_compile=True)`, under JAX
  `jax.jit` (see `tests/backend.py`);
- one `fit()` step runs, gives a finite loss and changes the weights;
- the layer creates the stated number of trainable and non-trainable
  weights, and the stated number of losses (regularization penalties);
- `mixed_float16` and `mixed_bfloat16` give finite outputs of the compute
  dtype, every sub-layer carries the layer's dtype policy and every weight
  is stored in float32;
- with `mask_argument`, a Keras implicit mask on the first input gives the
  same outputs as the explicit mask, and (when the layer keeps the sequence
  length) is propagated to the output.
"""

import os
import tempfile

import keras
import numpy as np
from keras import tree

from tests.backend import as_numpy
from tests.backend import compiled_variants


def _numpy(structure):
    return [
        keras.ops.convert_to_numpy(x).astype("float32")
        for x in tree.flatten(structure)
    ]


def assert_all_close(actual, expected, atol=1e-5, rtol=1e-5, what=""):
    actual, expected = _numpy(actual), _numpy(expected)
    assert len(actual) == len(expected), what
    for got, want in zip(actual, expected):
        assert got.shape == want.shape, (what, got.shape, want.shape)
        np.testing.assert_allclose(got, want, atol=atol, rtol=rtol, err_msg=what)


def _symbolic_inputs(inputs):
    return {
        name: keras.Input(
            shape=value.shape[1:], dtype=str(value.dtype), name=name
        )
        for name, value in inputs.items()
    }


def _model(layer, inputs, call_kwargs):
    symbolic = _symbolic_inputs(inputs)
    outputs = layer(**symbolic, **call_kwargs)
    return keras.Model(symbolic, outputs)


def run_layer_test(
    layer_cls,
    init_kwargs,
    inputs,
    *,
    expected_num_trainable_weights,
    expected_num_non_trainable_weights=0,
    expected_num_losses=0,
    call_kwargs=None,
    expected_output_shape=None,
    mask_argument=None,
    keeps_sequence_length=True,
    atol=1e-5,
):
    """Run the shared checks.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        inputs: dict of call-argument name -> NumPy array (all tensors,
            masks included); the first entry is the layer's first input.
        expected_num_trainable_weights: int, the trainable weights the
            layer (with its sub-layers) creates, counted by hand.
        expected_num_non_trainable_weights: int, likewise.
        expected_num_losses: int, the entries of `layer.losses` after one
            call (e.g. an attention penalty).
        call_kwargs: dict of non-tensor call arguments (flags).
        expected_output_shape: shape of the (first) output, if checked.
        mask_argument: the name of the explicit padding-mask argument that
            the implicit mask of the first input stands for.
        keeps_sequence_length: whether the output mask is the input mask.
        atol: tolerance for the agreement checks.

    Returns:
        The layer (built) and its eager outputs.
    """
    call_kwargs = dict(call_kwargs or {})
    layer = layer_cls(**init_kwargs)
    eager = layer(**inputs, **call_kwargs)
    first = tree.flatten(eager)[0]
    if expected_output_shape is not None:
        assert tuple(first.shape) == tuple(expected_output_shape)
    counts = (len(layer.trainable_weights), len(layer.non_trainable_weights),
              len(layer.losses))
    assert counts == (
        expected_num_trainable_weights,
        expected_num_non_trainable_weights,
        expected_num_losses,
    ), ("(trainable weights, non-trainable weights, losses)", counts)

    # Config round trip: every constructor argument is in the config.
    config = layer.get_config()
    for name, value in init_kwargs.items():
        assert name in config, f"get_config() lacks {name!r}"
        if isinstance(value, (bool, int, float, str, type(None))):
            assert config[name] == value, (name, config[name], value)
    clone = layer_cls.from_config(config)
    assert clone.get_config() == config
    clone(**inputs, **call_kwargs)
    clone.set_weights(layer.get_weights())
    assert_all_close(clone(**inputs, **call_kwargs), eager, atol, what="config")

    # Symbolic, then every way the backend compiles (graph, XLA).
    model = _model(layer, inputs, call_kwargs)
    assert_all_close(model(inputs), eager, atol, what="functional model")
    for name, compile_with, xla in compiled_variants():
        function = compile_with(lambda kw: layer(**kw, **call_kwargs))
        tolerances = (1e-4, 1e-4) if xla else (atol, 1e-5)
        assert_all_close(function(inputs), eager, *tolerances, what=name)

    # .keras round trip.
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    assert_all_close(restored(inputs), eager, atol, what=".keras round trip")

    if init_kwargs.get("dropout", 0.0) > 0.0:
        _check_dropout(layer, inputs, call_kwargs, eager)
    _check_fit(layer_cls, init_kwargs, inputs, call_kwargs)
    for policy in ("mixed_float16", "mixed_bfloat16"):
        _check_mixed_precision(layer_cls, init_kwargs, inputs, call_kwargs,
                               policy)
    if mask_argument is not None:
        _check_implicit_mask(layer, inputs, call_kwargs, mask_argument,
                             keeps_sequence_length)
    return layer, eager


def _check_dropout(layer, inputs, call_kwargs, eager):
    """Dropout acts in training only."""
    inference = layer(**inputs, **call_kwargs, training=False)
    assert_all_close(inference, eager, what="training=False")
    training = _numpy(layer(**inputs, **call_kwargs, training=True))
    assert any(
        not np.allclose(got, want)
        for got, want in zip(training, _numpy(eager))
    ), "training=True gave the inference output: dropout is not applied"


def _check_fit(layer_cls, init_kwargs, inputs, call_kwargs):
    layer = layer_cls(**init_kwargs)
    symbolic = _symbolic_inputs(inputs)
    outputs = tree.flatten(layer(**symbolic, **call_kwargs))[0]
    model = keras.Model(symbolic, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = [as_numpy(w) for w in layer.get_weights()]
    target = np.ones(tuple(outputs.shape[1:]), "float32")
    batch = len(next(iter(inputs.values())))
    target = np.broadcast_to(target, (batch,) + target.shape)
    history = model.fit(inputs, target, batch_size=batch, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = layer.get_weights()
    if before:
        assert any(
            not np.allclose(b, a) for b, a in zip(before, after)
        ), "one fit() step changed no weight"


def _check_mixed_precision(layer_cls, init_kwargs, inputs, call_kwargs,
                           policy):
    layer = layer_cls(**init_kwargs, dtype=policy)
    outputs = layer(**inputs, **call_kwargs)
    compute_dtype = keras.DTypePolicy(policy).compute_dtype
    for sublayer in layer._flatten_layers(include_self=True):
        assert sublayer.dtype_policy.name == policy, (
            "sub-layer dtype policy", sublayer.name, sublayer.dtype_policy.name,
        )
    for weight in layer.weights:
        assert keras.backend.standardize_dtype(weight.dtype) == "float32", (
            "weight dtype", weight.path, weight.dtype,
        )
    for output in tree.flatten(outputs):
        if isinstance(output, tuple):
            continue
        assert keras.backend.standardize_dtype(output.dtype) == compute_dtype, (
            policy, output.dtype,
        )
        values = keras.ops.convert_to_numpy(
            keras.ops.cast(output, "float32")
        )
        assert np.all(np.isfinite(values)), policy


def _check_implicit_mask(layer, inputs, call_kwargs, mask_argument,
                         keeps_sequence_length):
    names = list(inputs)
    first = names[0]
    explicit_mask = inputs[mask_argument]
    others = {k: v for k, v in inputs.items() if k not in (first, mask_argument)}
    masked = keras.layers.Masking(mask_value=0.0)(
        inputs[first] * explicit_mask[..., None].astype("float32")
    )
    # Masking makes its mask from all-zero vectors; it must equal ours.
    implicit = keras.ops.convert_to_numpy(masked._keras_mask)
    np.testing.assert_array_equal(implicit, explicit_mask.astype(bool))
    with_implicit = layer(masked, **others, **call_kwargs)
    with_explicit = layer(
        masked, **others, **{mask_argument: explicit_mask}, **call_kwargs
    )
    assert_all_close(with_implicit, with_explicit, what="implicit mask")
    if keeps_sequence_length:
        out = tree.flatten(with_implicit)[0]
        propagated = getattr(out, "_keras_mask", None)
        assert propagated is not None, "mask not propagated"
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(propagated), implicit
        )


def copy_weights_by_path(source, target, renames=()):
    """Copy `source`'s weights into `target`, matching weight paths.

    Paths are compared without the top layer's own name, after applying
    `renames` (pairs of substrings) to the source paths. Every weight of
    `target` must be matched.
    """

    def key(path, pairs):
        path = path.split("/", 1)[1]
        for old, new in pairs:
            path = path.replace(old, new)
        return path

    by_path = {key(w.path, renames): w for w in source.weights}
    assert len(by_path) == len(source.weights) == len(target.weights)
    for weight in target.weights:
        match = by_path[key(weight.path, ())]
        assert tuple(match.shape) == tuple(weight.shape), weight.path
        weight.assign(match)
