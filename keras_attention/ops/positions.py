"""Position encodings as pure functions: sinusoid tables (Vaswani et al.,
2017, section 3.5), rotary embeddings (Su et al., 2021), ALiBi biases
(Press et al., 2022) and the Universal Transformer's coordinate embedding
(Dehghani et al., 2019)."""

import math

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


def rotary_embedding(inputs, positions, max_wavelength=10000.0,
                     scaling_factor=1.0):
    """Rotary position embedding (RoPE; Su et al., 2021) of `inputs`.

    Feature `i` of the first half and feature `i` of the second half form
    a pair that is rotated by the angle `p / scaling_factor /
    max_wavelength^(2i / H)` at position `p`: the "rotate half" layout of
    GPT-NeoX, Llama and `keras_hub.layers.RotaryEmbedding`. A query at
    position `p` and a key at `q` rotated so have a dot product that
    depends on `p - q` only. The angles, sines and cosines are computed in
    float32 (as `sinusoid_table`); the result has the dtype of `inputs`.

    Args:
        inputs: `(B, T, N, H)` (or `(B, T, H)`), `H` even.
        positions: `(T,)` or `(B, T)`, the position of each step (any
            numeric dtype), e.g. `cache_update_index + arange(T)`.
        max_wavelength: the base of the wavelengths.
        scaling_factor: positions are divided by it (linear position
            interpolation, for contexts longer than those trained on).

    Returns:
        A tensor of the shape and dtype of `inputs`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import rotary_embedding
    >>> x = np.ones((1, 2, 1, 2), "float32")     # one head of size 2
    >>> rotated = rotary_embedding(x, ops.arange(2))
    >>> ops.convert_to_numpy(rotated)[0, :, 0].round(4)   # 0 and 1 radian
    array([[ 1.    ,  1.    ],
           [-0.3012,  1.3818]], dtype=float32)
    """
    size = inputs.shape[-1]
    if size is None or size % 2:
        raise ValueError(
            "Rotary embeddings rotate pairs of features, so the last axis "
            f"must be even, received: inputs.shape={tuple(inputs.shape)}")
    half = size // 2
    # (H/2,) 1 / max_wavelength^(2i / H)
    frequencies = ops.power(
        ops.cast(max_wavelength, "float32"),
        -ops.arange(0, size, 2, dtype="float32") / float(size))
    positions = ops.cast(positions, "float32") / float(scaling_factor)
    if len(positions.shape) == 1:
        positions = positions[None]  # (1, T)
    # (B|1, T, 1) * (H/2,) -> (B|1, T, H/2)
    angles = positions[..., None] * frequencies
    if len(inputs.shape) == 4:
        angles = angles[:, :, None, :]  # (B|1, T, 1, H/2) over heads
    cos, sin = ops.cos(angles), ops.sin(angles)
    values = ops.cast(inputs, "float32")
    first, second = values[..., :half], values[..., half:]
    rotated = ops.concatenate(
        [first * cos - second * sin, second * cos + first * sin], axis=-1)
    return ops.cast(rotated, inputs.dtype)


def alibi_slopes(num_heads, alibi_bias_max=8):
    """The heads' ALiBi slopes (Press et al., 2022): a geometric sequence
    from `2^(-alibi_bias_max / n)` with that ratio, for `n` the largest
    power of two <= `num_heads`; the rest interleaved from the sequence
    for `2n`, as the paper's code and `keras_hub.layers.AlibiBias` do.

    >>> [round(s, 4) for s in alibi_slopes(4)]
    [0.25, 0.0625, 0.0156, 0.0039]
    >>> len(alibi_slopes(6))
    6
    """
    def powers_of_two(n):
        start = 2.0 ** (-alibi_bias_max / n)
        return [start ** (i + 1) for i in range(n)]

    if num_heads & (num_heads - 1) == 0:
        return powers_of_two(num_heads)
    closest = 2 ** int(math.floor(math.log2(num_heads)))
    return (powers_of_two(closest)
            + alibi_slopes(2 * closest, alibi_bias_max)[0::2][
                :num_heads - closest])


def alibi_bias(slopes, query_length, key_length, query_offset=0):
    """The ALiBi logit bias `-slope_n · |i + query_offset - j|`, `(N, T, S)`
    float32.

    With a causal mask this is the paper's `slope · (j - i)`; KerasHub's
    `AlibiBias` adds `slope · (j - (S - 1))`, which differs from it by a
    constant in each row and so gives the same softmax.

    Args:
        slopes: `(N,)` floats, e.g. `alibi_slopes(N)`.
        query_length: T; key_length: S.
        query_offset: the position of the first query (the cache index
            when decoding).

    >>> from keras import ops
    >>> bias = alibi_bias([0.5], 2, 3)
    >>> ops.convert_to_numpy(bias)[0].tolist()
    [[0.0, -0.5, -1.0], [-0.5, 0.0, -0.5]]
    """
    slopes = ops.cast(ops.convert_to_tensor(slopes), "float32")
    queries = ops.arange(query_length, dtype="int32") + ops.cast(
        query_offset, "int32")
    keys = ops.arange(key_length, dtype="int32")
    # (T, 1) - (1, S) -> (T, S)
    distance = ops.abs(queries[:, None] - keys[None, :])
    # (N, 1, 1) * (1, T, S) -> (N, T, S)
    return slopes[:, None, None] * ops.cast(-distance, "float32")[None]


def coordinate_embedding(length, step, dim, dtype="float32"):
    """The Universal Transformer's coordinate embedding `(T, D)`: the
    sinusoids of the positions plus the sinusoids of the recurrent `step`
    (the same table, read at row `step`), Dehghani et al. (2019), eq. 2.

    >>> import numpy as np
    >>> from keras_attention.ops import coordinate_embedding, sinusoid_table
    >>> table = np.asarray(sinusoid_table(np.arange(5), 8))
    >>> bool(np.allclose(coordinate_embedding(3, 2, 8), table[:3] + table[2]))
    True
    """
    positions = sinusoid_table(
        ops.arange(length, dtype="int32"), dim, dtype=dtype)  # (T, D)
    timestep = sinusoid_table(
        ops.reshape(ops.cast(step, "int32"), (1,)), dim, dtype=dtype)  # (1, D)
    return positions + timestep
