"""What layers built of sublayers need for Keras's quantization
(`model.quantize(mode)`): for the layers and models of this package, and
for a user's own composite layer.

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

import re

import keras


def _suffix_pattern(layer, sublayer):
    """A key matching `sublayer`'s path under any prefix: its path below
    `layer` (`self_attention/query`) as `(?:.*/)?self_attention/query`.

    A layer's path depends on how it was built: a model called once has
    `transformer_translator/encoder_block_0/...`, the same model built by
    `build_from_config` (as `load_model` does) `encoder_block_0/...`; the
    part below `layer` is the same in both."""
    path = sublayer.path
    if layer.path and path.startswith(layer.path + "/"):
        path = path[len(layer.path) + 1:]
    return "(?:.*/)?" + re.escape(path)


def _matches(keys, path):
    return [key for key in keys if re.fullmatch(key, path)]


def quantized_dtype_config(layer, config):
    """`config` (`layer.get_config()`'s) with `dtype` a `DTypePolicyMap` of
    `layer`'s quantized sublayers, if it has any; returned for chaining.

    The keys match each quantized sublayer's path below `layer` under any
    prefix (see `_suffix_pattern`), or, should one of them also match
    another sublayer, the exact paths. A layer made from such a config
    already holds the map (shared with its sublayers, so quantizing more of
    them updates it): its own `dtype` entry stands.
    """
    policy = layer.dtype_policy
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap):
        return config
    # `_flatten_layers` is what `Model.quantize` walks (and what the
    # `DTypePolicyMap` docstring's example uses).
    sublayers = [sublayer for sublayer in layer._flatten_layers(
        include_self=False) if sublayer.path]  # unbuilt: no path yet
    quantized = [sublayer for sublayer in sublayers
                 if sublayer.quantization_mode is not None]
    if not quantized:
        return config
    patterns = {_suffix_pattern(layer, sublayer): sublayer.dtype_policy
                for sublayer in quantized}
    own = {id(sublayer): _suffix_pattern(layer, sublayer)
           for sublayer in quantized}
    if any(_matches(patterns, sublayer.path)
           != ([own[id(sublayer)]] if id(sublayer) in own else [])
           for sublayer in sublayers):
        patterns = {sublayer.path: sublayer.dtype_policy
                    for sublayer in quantized}
    policy_map = keras.dtype_policies.DTypePolicyMap(
        default_policy=policy, policy_map=patterns
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
