"""Sinusoidal position tables (Vaswani et al., 2017, section 3.5)."""

from keras import ops


def sinusoid_table(positions, dim, max_wavelength=10000.0, dtype="float32"):
    """The sinusoidal encoding of `positions`.

    `PE(p, 2i) = sin(p / max_wavelength^(2i / dim))` and
    `PE(p, 2i + 1) = cos(p / max_wavelength^(2i / dim))`.

    The angles are always computed in float32 and the result is cast to
    `dtype`: a float16 or bfloat16 product `p * frequency` is off by whole
    radians once `p` reaches a few hundred (bfloat16 cannot even represent
    position 257), so computing the table itself in half precision would give
    wrong encodings.

    Args:
        positions: a 1-D tensor of positions (any numeric dtype).
        dim: the encoding size (any positive int, odd allowed).
        max_wavelength: the base of the geometric progression of wavelengths.
        dtype: the dtype of the result.

    Returns:
        `(len(positions), dim)` tensor of `dtype`.

    Example:

    >>> from keras import ops
    >>> from keras_attention.ops import sinusoid_table
    >>> table = sinusoid_table(ops.arange(2), 4)
    >>> ops.convert_to_numpy(table).round(4)
    array([[0.    , 1.    , 0.    , 1.    ],
           [0.8415, 0.5403, 0.01  , 1.    ]], dtype=float32)
    """
    positions = ops.cast(positions, "float32")
    # Dimension pairs (2i, 2i + 1) share the frequency 1 / wavelength^(2i/dim).
    pair_index = ops.cast(ops.arange(dim) // 2 * 2, "float32")
    frequencies = ops.power(
        ops.cast(max_wavelength, "float32"), -pair_index / float(dim)
    )
    # (P, 1) * (1, dim) -> (P, dim)
    angles = ops.expand_dims(positions, 1) * ops.expand_dims(frequencies, 0)
    is_odd = ops.cast(ops.arange(dim) % 2, "float32")
    table = ops.sin(angles) * (1.0 - is_odd) + ops.cos(angles) * is_odd
    return ops.cast(table, dtype)
