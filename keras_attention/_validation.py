"""Argument checks shared by the layers. Every error names the argument and
the value received."""

import numbers
import os
import pathlib


def non_negative_int(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < 0
    ):
        raise ValueError(
            f"`{name}` must be an int >= 0, received: {name}={value!r}"
        )
    return int(value)


def positive_int(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value <= 0
    ):
        raise ValueError(
            f"`{name}` must be a positive int, received: {name}={value!r}"
        )
    return int(value)


def optional_positive_int(name, value):
    return None if value is None else positive_int(name, value)


def rate(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 <= value < 1.0
    ):
        raise ValueError(
            f"`{name}` must be a float in [0, 1), received: {name}={value!r}"
        )
    return float(value)


def probability(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 <= value <= 1.0
    ):
        raise ValueError(
            f"`{name}` must be a float in [0, 1], received: {name}={value!r}"
        )
    return float(value)


def non_negative_float(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not value >= 0.0
    ):
        raise ValueError(
            f"`{name}` must be a float >= 0, received: {name}={value!r}"
        )
    return float(value)


def positive_float(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not value > 0.0
    ):
        raise ValueError(
            f"`{name}` must be a float > 0, received: {name}={value!r}"
        )
    return float(value)


def choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(
            f"`{name}` must be one of {sorted(allowed)}, received: "
            f"{name}={value!r}"
        )
    return value


def rank(name, shape, expected_ranks, expected_text):
    """Check the rank of an input shape, e.g. `rank("query", s, (3,), ...)`."""
    if len(shape) not in expected_ranks:
        raise ValueError(
            f"`{name}` must have shape {expected_text}, received: "
            f"{name}.shape={tuple(shape)}"
        )


def same_length(key_shape, value_shape):
    """Keys and values pair up: their (known) lengths must agree."""
    if None not in (key_shape[1], value_shape[1]) and (
        key_shape[1] != value_shape[1]
    ):
        raise ValueError(
            "`key` and `value` must have the same length, received: "
            f"key.shape={tuple(key_shape)}, value.shape={tuple(value_shape)}"
        )


def same_dim(name, shape, axis, expected, expected_text):
    """Check that a known dimension equals `expected`."""
    got = shape[axis]
    if got is not None and expected is not None and got != expected:
        raise ValueError(
            f"`{name}` must have {expected_text} = {expected} in its last "
            f"axis, received: {name}.shape={tuple(shape)}"
        )


def positive_int_or_tensor(name, value):
    """A positive int, or a tensor (checked only when it is a Python value)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return value
    return positive_int(name, value)


def pair(name, value, minimum):
    """A pair of ints >= minimum, as a tuple; else a ValueError."""
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or any(
            isinstance(v, bool) or not isinstance(v, numbers.Integral)
            or v < minimum
            for v in value
        )
    ):
        raise ValueError(
            f"`{name}` must be a pair of ints >= {minimum}, received: "
            f"{name}={value!r}"
        )
    return tuple(int(v) for v in value)


def path(name, value):
    """`value` as a `pathlib.Path`; a clear error naming `name` unless it
    is a str or os.PathLike."""
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(
            f"`{name}` must be a str or os.PathLike path, received: "
            f"{name}={value!r}"
        )
    return pathlib.Path(value)
