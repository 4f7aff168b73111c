"""Input checks shared by the heatmaps and the viewer. Every error names the
argument and the value received."""

import numpy as np

from keras_attention.visualize import labels as labels_lib


def weights_array(name, weights, ranks, expected_text):
    """`weights` (NumPy, a TF/JAX/CPU torch tensor, nested lists) as a finite
    float NumPy array whose rank is in `ranks`."""
    if hasattr(weights, "detach"):  # a torch tensor
        weights = weights.detach().cpu()
    try:
        array = np.asarray(weights)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"`{name}` must be an array of numbers, received: "
            f"{name}={weights!r}"
        ) from error
    if not (np.issubdtype(array.dtype, np.number)
            or np.issubdtype(array.dtype, np.bool_)):
        raise ValueError(
            f"`{name}` must be an array of numbers, received: "
            f"{name}.dtype={array.dtype}"
        )
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64)
    if array.ndim not in ranks:
        raise ValueError(
            f"`{name}` must have shape {expected_text}, received: "
            f"{name}.shape={array.shape}"
        )
    if 0 in array.shape:
        raise ValueError(
            f"`{name}` must not be empty, received: {name}.shape={array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(
            f"`{name}` must be finite (no NaN or inf), received: {name} with "
            f"{int(np.sum(~np.isfinite(array)))} non-finite values"
        )
    return array


def axis_labels(name, tokens, length, weights_name, shape, axis_text,
                default_prefix, clean=True):
    """Labels for one axis of `length` entries: the cleaned `tokens`, or
    `default_prefix0, default_prefix1, ...` when `tokens` is None."""
    if tokens is None:
        return [f"{default_prefix}{index}" for index in range(length)]
    strings = (labels_lib.clean_pieces(tokens, name) if clean
               else labels_lib.as_strings(name, tokens))
    if len(strings) != length:
        raise ValueError(
            f"`{name}` must have one label per {axis_text} of "
            f"`{weights_name}` ({length}), received: len({name})="
            f"{len(strings)}, {weights_name}.shape={tuple(shape)}"
        )
    return strings


def names(name, given, count, default_prefix, start=0):
    """`count` panel names (heads, layers, hops): `given`, or numbered from
    `start`."""
    if given is None:
        return [f"{default_prefix} {start + index}" for index in range(count)]
    given = labels_lib.as_strings(name, given)
    if len(given) != count:
        raise ValueError(
            f"`{name}` must have {count} names, received: len({name})="
            f"{len(given)}"
        )
    return given


def max_tokens_check(max_tokens, **lengths):
    """A clear error for sequences too long to draw legibly."""
    for name, length in lengths.items():
        if length > max_tokens:
            raise ValueError(
                f"{name} has {length} tokens, more than max_tokens="
                f"{max_tokens} can show legibly; slice the weights and "
                "labels (e.g. `weights[:, :100]`, `tokens[:100]`) or pass a "
                f"larger max_tokens, received: {name}={length}"
            )
