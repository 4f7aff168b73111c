"""What the layers share for Keras's quantization (`model.quantize(mode)`).

`Model.quantize` quantizes the leaf layers (`Dense`, `EinsumDense`, our
`FlatEinsumDense`, `Embedding`) by giving each a quantized dtype policy
(`int8_from_float32`, ...) and quantized variables. A layer of ours that
builds such sublayers must then say so in its config, or a saved model
rebuilds them in float and cannot load their int8 variables. Keras's way
(the `keras.dtype_policies.DTypePolicyMap` docstring; KerasHub's
`Backbone.get_config`): the config's `dtype` becomes a `DTypePolicyMap`
from each quantized sublayer's path to its policy, with the layer's own
policy as the default; the layer passes it on as every sublayer's `dtype`,
and each sublayer looks its own path up in it.
"""

import keras


def quantized_dtype_config(layer, config):
    """`config` (`layer.get_config()`'s) with `dtype` a `DTypePolicyMap` of
    `layer`'s quantized sublayers, if it has any; returned for chaining.

    A layer made from such a config already holds the map (shared with its
    sublayers, so quantizing more of them updates it): its own `dtype` entry
    stands.
    """
    policy = layer.dtype_policy
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap):
        return config
    # `_flatten_layers` is what `Model.quantize` walks (and what the
    # `DTypePolicyMap` docstring's example uses).
    quantized = {
        sublayer.path: sublayer.dtype_policy
        for sublayer in layer._flatten_layers(include_self=False)
        if sublayer.quantization_mode is not None
    }
    if quantized:
        policy_map = keras.dtype_policies.DTypePolicyMap(
            default_policy=policy, policy_map=quantized
        )
        config["dtype"] = keras.dtype_policies.serialize(policy_map)
    return config


class NothingToQuantize:
    """Mixin for a layer without weights (put it before `keras.layers.
    Layer`): `quantize` has nothing to do, so `Model.quantize` passes over
    the layer without a warning that it "does not have a `quantize` method"
    (which would read as weights left in float). The layer keeps its dtype
    policy: a quantized one would route its calls to `quantized_call`."""

    def quantize(self, mode=None, type_check=True, config=None):
        del mode, type_check, config  # no weights
