"""What the Transformer encoder and decoder blocks share: arguments, the
pluggable self-attention, the position-wise feed-forward sub-layer and the
residual wiring.

Letters: B batch, T sequence length, D model size, F intermediate size.
"""

import copy
import inspect

import keras

from keras_attention import _validation
from keras_attention.layers.local_self_attention import LocalSelfAttention
from keras_attention.layers.multi_head_self_attention import MultiHeadSelfAttention
from keras_attention.layers.quantization import quantized_dtype_config
from keras_attention.layers.relative_attention import RelativeAttention

# Short class names a `{"class_name": ..., "config": ...}` dict may use;
# any registered layer works with its full serialized form.
SELF_ATTENTION_CLASSES = {
    layer_class.__name__: layer_class
    for layer_class in (
        LocalSelfAttention, MultiHeadSelfAttention, RelativeAttention
    )
}


def serialize_layer(layer):
    """The layer's serialized config, without its build state: the block
    builds the layer itself, in its dtype policy."""
    config = keras.saving.serialize_keras_object(layer)
    config.pop("build_config", None)
    config.pop("compile_config", None)
    return config


def deserialize_layer(name, config):
    """A new layer from `serialize_layer`'s (or Keras') dict form."""
    config = copy.deepcopy(config)
    config.pop("build_config", None)
    config.pop("compile_config", None)
    try:
        layer = keras.saving.deserialize_keras_object(
            config, custom_objects=SELF_ATTENTION_CLASSES
        )
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(
            f"`{name}` could not be deserialized ({error}), received: "
            f"{name}={config!r}"
        ) from error
    if not isinstance(layer, keras.layers.Layer):
        raise ValueError(
            f"`{name}` must describe a Keras layer, but its config gave a "
            f"{type(layer).__name__}, received: {name}={config!r}"
        )
    return layer


def accepts(layer, argument):
    """Whether `layer.call` takes `argument` (by name or `**kwargs`)."""
    parameters = inspect.signature(layer.call).parameters.values()
    return any(
        parameter.name == argument or parameter.kind is parameter.VAR_KEYWORD
        for parameter in parameters
    )


class TransformerBlock(keras.layers.Layer):
    """Base of `TransformerEncoder` and `TransformerDecoder` (not public)."""

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        key_dim=None,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        normalize_first=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        self_attention=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.intermediate_dim = _validation.positive_int(
            "intermediate_dim", intermediate_dim
        )
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        self.key_dim = _validation.optional_positive_int("key_dim", key_dim)
        self.dropout = _validation.rate("dropout", dropout)
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = _validation.positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        self.normalize_first = bool(normalize_first)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        # `None` until `build` makes the default; kept apart so the config
        # says `None` (not the built default's config) before and after.
        self._default_self_attention = self_attention is None
        self.self_attention = self._self_attention_layer(self_attention)
        # The RelativeAttention options of a config saved before
        # `self_attention` existed (see `from_config`); made in `build`.
        self._legacy_relative = None
        self.supports_masking = True

    def _self_attention_layer(self, self_attention):
        """The plugged layer, a fresh one for a config dict."""
        if self_attention is None:
            return None
        if isinstance(self_attention, dict):
            self_attention = deserialize_layer("self_attention", self_attention)
        elif not isinstance(self_attention, keras.layers.Layer):
            raise ValueError(
                "`self_attention` must be None, a Keras layer or its "
                "serialized config dict, received: "
                f"self_attention={self_attention!r}"
            )
        if not self_attention.built and not isinstance(
            self.dtype_policy, keras.dtype_policies.DTypePolicyMap
        ):
            # Like the block's own sublayers; a built layer keeps its
            # weights and policy.
            self_attention.dtype_policy = self.dtype_policy
        return self_attention

    def _initializer(self, which):
        # A fresh initializer per sublayer, so none share a seed.
        return keras.initializers.get(keras.initializers.serialize(which))

    def _head_size(self, hidden_dim):
        if self.key_dim is not None:
            return self.key_dim
        if hidden_dim % self.num_heads:
            raise ValueError(
                "The model size must be divisible by `num_heads` when "
                f"`key_dim` is not given, received: model size={hidden_dim}, "
                f"num_heads={self.num_heads}"
            )
        return hidden_dim // self.num_heads

    def _attention(self, layer_class, name, hidden_dim, **options):
        return layer_class(
            num_heads=self.num_heads,
            key_dim=self._head_size(hidden_dim),
            dropout=self.dropout,
            output_dim=hidden_dim,
            kernel_initializer=self._initializer(self.kernel_initializer),
            bias_initializer=self._initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
            **options,
        )

    @classmethod
    def from_config(cls, config):
        """Also reads a config saved before `self_attention` existed, whose
        `max_relative_position`/`relative_values` asked for a
        `RelativeAttention` (made in `build`, with the same weights)."""
        config = dict(config)
        legacy = {name: config.pop(name) for name in
                  ("max_relative_position", "relative_values")
                  if name in config}
        block = cls(**config)
        if legacy.get("max_relative_position") is not None:
            block._legacy_relative = legacy
            block._default_self_attention = False
        return block

    def _build_self_attention(self, shape):
        """The default `MultiHeadSelfAttention`, or build the plugged one."""
        hidden_dim = shape[-1]
        if self.self_attention is None and self._legacy_relative:
            self.self_attention = self._attention(
                RelativeAttention, "self_attention", hidden_dim,
                **self._legacy_relative,
            )
        if self.self_attention is None:
            self.self_attention = self._attention(
                MultiHeadSelfAttention, "self_attention", hidden_dim
            )
        if not self.self_attention.built:
            self.self_attention.build(shape)
        output_dim = getattr(self.self_attention, "output_dim", None)
        if output_dim is not None and output_dim != hidden_dim:
            raise ValueError(
                "`self_attention` must return the model size for the "
                f"residual connection, {hidden_dim}, received: "
                f"self_attention with output_dim={output_dim}"
            )
        self.self_attention_layer_norm = self._layer_norm(
            "self_attention_layer_norm", shape
        )
        self.self_attention_dropout = self._dropout("self_attention_dropout")

    def _require(self, argument, use):
        if not accepts(self.self_attention, argument):
            raise ValueError(
                f"{use} needs a self-attention layer whose `call` takes "
                f"`{argument}`, received: self_attention of type "
                f"{type(self.self_attention).__name__}"
            )

    def _call_self_attention(self, inputs, padding_mask, attention_mask,
                             use_causal_mask, return_attention_scores,
                             training, cache=None, cache_update_index=None):
        """Call the self-attention with the `MultiHeadSelfAttention`
        contract, passing the optional arguments only when used, so layers
        without them (`LocalSelfAttention` has no `attention_mask` or
        cache) plug in too."""
        arguments = {"padding_mask": padding_mask,
                     "use_causal_mask": use_causal_mask, "training": training}
        if return_attention_scores:
            arguments["return_attention_scores"] = True
        if attention_mask is not None:
            self._require("attention_mask", "An `attention_mask`")
            arguments["attention_mask"] = attention_mask
        if cache is not None:
            self._require("cache", "Decoding with a `cache`")
            arguments.update(cache=cache,
                             cache_update_index=cache_update_index)
        return self.self_attention(inputs, **arguments)

    def _layer_norm(self, name, shape):
        layer = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )
        layer.build(shape)
        return layer

    def _dropout(self, name):
        return keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name=name
        )

    def _build_feedforward(self, shape):
        hidden_dim = shape[-1]
        self.feedforward_intermediate_dense = keras.layers.Dense(
            self.intermediate_dim,
            activation=self.activation,
            kernel_initializer=self._initializer(self.kernel_initializer),
            bias_initializer=self._initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name="feedforward_intermediate_dense",
        )
        self.feedforward_intermediate_dense.build(shape)
        self.feedforward_output_dense = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=self._initializer(self.kernel_initializer),
            bias_initializer=self._initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name="feedforward_output_dense",
        )
        self.feedforward_output_dense.build(
            tuple(shape[:-1]) + (self.intermediate_dim,)
        )
        self.feedforward_layer_norm = self._layer_norm(
            "feedforward_layer_norm", shape
        )
        self.feedforward_dropout = self._dropout("feedforward_dropout")

    def _pre_norm(self, inputs, layer_norm):
        return layer_norm(inputs) if self.normalize_first else inputs

    def _residual(self, inputs, outputs, layer_norm, dropout, training):
        outputs = dropout(outputs, training=training) + inputs
        return outputs if self.normalize_first else layer_norm(outputs)

    def _feedforward(self, inputs, training):
        x = self._pre_norm(inputs, self.feedforward_layer_norm)
        x = self.feedforward_intermediate_dense(x)  # (B, T, F)
        x = self.feedforward_output_dense(x)  # (B, T, D)
        return self._residual(
            inputs, x, self.feedforward_layer_norm, self.feedforward_dropout,
            training,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "normalize_first": self.normalize_first,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "self_attention": (
                    None if self._default_self_attention
                    or self.self_attention is None
                    else serialize_layer(self.self_attention)
                ),
            }
        )
        if self.self_attention is None and self._legacy_relative:
            config.update(self._legacy_relative)  # an old config, unbuilt
        return quantized_dtype_config(self, config)
