"""A Keras model held by an exported `tf.Module` without its optimizer.

A `tf.Module` tracks every attribute, and a Keras model tracks its
optimizer: a module holding a compiled model (one just trained, or loaded
from a config that records how it was compiled) would save Adam's two
moments beside the weights, three times the weights in all, and after
`model.quantize` also the float weights the optimizer still points to.
`hold_model` keeps the model untracked and tracks the variables its graph
reads; `track_held_variables` refreshes them just before saving (a model
quantized after the module was made has other variables).
"""


def hold_model(module, name, model):
    """`module.<name> = model`, untracked; its variables tracked."""
    object.__setattr__(module, name, model)
    object.__setattr__(module, "_held_model_name", name)
    track_held_variables(module)


def track_held_variables(module):
    """Track the held model's current variables (no-op for modules that
    hold none)."""
    name = getattr(module, "_held_model_name", None)
    if name is not None:
        module.model_variables = list(getattr(module, name).variables)
