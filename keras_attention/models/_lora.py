"""LoRA on a model's attention projections (Hu et al. 2021), the
KerasHub way (`Backbone.enable_lora`): every weight of the model stops
training, then each of our `MultiHeadAttention` layers (self- and
cross-attention, relative attention included) adds Keras's
`EinsumDense` adapters to the projections named
(`MultiHeadAttention.enable_lora`). Saving merges the adapters into the
kernels (Keras's own `EinsumDense` saving), so a fine-tuned model saves,
loads and exports as a plain one."""

from keras_attention import _validation
from keras_attention.layers import MultiHeadAttention


def enable_lora(model, rank, lora_alpha=None, projections=("query", "value")):
    """Freeze `model` and add rank-`rank` adapters to the `projections` of
    every attention layer in it; returns those layers."""
    if not model.built:
        raise ValueError(
            f"Build {type(model).__name__} before `enable_lora` (call it "
            "once), received: an unbuilt model"
        )
    attention = [layer for layer in model._flatten_layers(include_self=False)
                 if isinstance(layer, MultiHeadAttention)]
    if not attention:
        raise ValueError(
            f"{type(model).__name__} has no attention layer to adapt "
            "(keras_attention.layers.MultiHeadAttention or a subclass)"
        )
    for variable in model.weights:
        variable.trainable = False
    for layer in attention:
        layer.enable_lora(rank, lora_alpha=lora_alpha,
                          projections=projections)
    return attention


class LoRAMixin:
    """`enable_lora` for a model built of our attention layers."""

    def enable_lora(self, rank, lora_alpha=None,
                    projections=("query", "value")):
        """Fine-tune with LoRA: freeze every weight and add trainable
        rank-`rank` adapters to the `projections` ("query", "key",
        "value", "attention_output") of every attention layer, scaled by
        `lora_alpha / rank` (`MultiHeadAttention.enable_lora`). Build the
        model first. Saving merges the adapters into the kernels.

        Example:

        >>> import numpy as np
        >>> from keras_attention.models import TransformerTranslator
        >>> model = TransformerTranslator.from_preset("tiny", 50, 50)
        >>> _ = model({"encoder_tokens": np.ones((1, 3), "int32"),
        ...            "decoder_tokens": np.ones((1, 2), "int32")})
        >>> model.enable_lora(2)
        >>> all("lora" in w.path for w in model.trainable_weights)
        True
        """
        enable_lora(self, rank, lora_alpha, projections)


def enable_dense_lora(model, rank, lora_alpha, named, projections):
    """Freeze `model` and add Keras's rank-`rank` adapters
    (`keras.layers.Dense.enable_lora`) to the Dense layers `projections`
    names, of `named` (name -> its Dense, or None where the model has
    none); returns those layers. For models whose attention has no
    projections of its own (an RNN decoder's score function)."""
    if not model.built:
        raise ValueError(
            f"Build {type(model).__name__} before `enable_lora` (call it "
            "once), received: an unbuilt model"
        )
    projections = (projections,) if isinstance(projections, str) else (
        tuple(projections))
    if not projections:
        raise ValueError("`projections` must name at least one of "
                         f"{tuple(named)}, received: ()")
    for name in projections:
        _validation.choice("projections", name, named)
        if named[name] is None:
            present = tuple(key for key, layer in named.items() if layer)
            raise ValueError(
                f"{type(model).__name__} has no `{name}` projection "
                f"(its projections: {present}), received: "
                f"projections={projections!r}")
    for variable in model.weights:
        variable.trainable = False
    layers = [named[name] for name in projections]
    for layer in layers:
        layer.enable_lora(rank, lora_alpha=lora_alpha)
    return layers
