"""Mask building and merging: the one mask contract of the package.

A mask is boolean and `True` means "may attend". Letters used in shapes:
B batch, T query length, S key length.

- `padding_mask` `(B, T)`: which query positions are real tokens.
- `key_padding_mask` `(B, S)`: which key positions are real tokens.
- `attention_mask` `(B, T, S)`: which (query, key) pairs may attend.
- causal: a flag; query `i` may attend key `j` when `j <= i + query_offset`.

Everything given is combined with a logical AND by `build_attention_mask`.
"""

from keras import ops


def implicit_mask(tensor):
    """The Keras implicit mask carried by `tensor`, or `None`.

    Keras attaches the mask produced by e.g. `Embedding(mask_zero=True)` to the
    output tensor as `_keras_mask` (see the Keras masking guide). Implicit
    masks do not survive a `tf.function` boundary, which is why every layer of
    this package also takes explicit masks.
    """
    return getattr(tensor, "_keras_mask", None)


def check_mask_shape(name, mask, expected_shape, expected_text):
    """Return `mask` as a tensor; raise a `ValueError` naming `name` if it
    does not match `expected_shape`.

    Only dimensions known on both sides are compared, so symbolic shapes
    with `None` entries pass. Lists and NumPy arrays are converted.

    Args:
        name: the argument name to report, e.g. `"padding_mask"`.
        mask: the mask tensor (or `None`, which passes).
        expected_shape: tuple of ints or `None`.
        expected_text: how the shape reads in words, e.g.
            `"(batch, query_len)"`.
    """
    if mask is None:
        return None
    if not hasattr(mask, "shape"):
        mask = ops.convert_to_tensor(mask)
    shape = tuple(mask.shape)
    expected_shape = tuple(expected_shape)
    mismatch = len(shape) != len(expected_shape) or any(
        got is not None and want is not None and got != want
        for got, want in zip(shape, expected_shape)
    )
    if mismatch:
        raise ValueError(
            f"`{name}` must have shape {expected_text} = {expected_shape}, "
            f"received: {name}.shape={shape}"
        )
    return mask


def causal_mask(query_length, key_length, query_offset=0):
    """A `(T, S)` boolean mask where query `i` sees keys `j <= i + offset`.

    Args:
        query_length: T, an int or scalar tensor.
        key_length: S, an int or scalar tensor.
        query_offset: position of the first query, for incremental decoding
            (the cache index). An int or scalar tensor.

    Example:

    >>> from keras import ops
    >>> from keras_attention.ops import causal_mask
    >>> ops.convert_to_numpy(causal_mask(2, 3, query_offset=1)).astype(int)
    array([[1, 1, 0],
           [1, 1, 1]])
    """
    query_positions = ops.arange(query_length, dtype="int32") + ops.cast(
        query_offset, "int32"
    )
    key_positions = ops.arange(key_length, dtype="int32")
    # (T, 1) >= (1, S) -> (T, S)
    return ops.expand_dims(query_positions, 1) >= ops.expand_dims(
        key_positions, 0
    )


def merge_masks(*masks):
    """Logical AND of the masks that are not `None` (broadcasting), or `None`."""
    merged = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        merged = mask if merged is None else ops.logical_and(merged, mask)
    return merged


def merge_checked_masks(masks, expected_shape, expected_text):
    """Check each mask of `masks` (a dict name -> mask or `None`) against
    `expected_shape`, naming it in the error, and return their logical AND
    (`None` when none is given).

    This is how a layer accepts one mask under several names, e.g. our
    `padding_mask` and Keras's `query_mask`: every one given applies.

    >>> import numpy as np
    >>> mask = merge_checked_masks(
    ...     {"padding_mask": np.array([[True, True, False]]),
    ...      "query_mask": np.array([[False, True, True]])},
    ...     (1, 3), "(batch, query_len)")
    >>> np.asarray(mask).tolist()
    [[False, True, False]]
    """
    return merge_masks(*(
        check_mask_shape(name, mask, expected_shape, expected_text)
        for name, mask in masks.items()
    ))


def build_attention_mask(
    query_length,
    key_length,
    padding_mask=None,
    key_padding_mask=None,
    attention_mask=None,
    use_causal_mask=False,
    query_offset=0,
    window=None,
):
    """Merge every kind of mask into one boolean `(B|1, T|1, S)` mask.

    Args:
        query_length: T.
        key_length: S.
        padding_mask: `(B, T)` or `None`; False rows attend to nothing.
        key_padding_mask: `(B, S)` or `None`; False keys are never attended.
        attention_mask: `(B, T, S)` or `None`.
        use_causal_mask: whether to add the causal constraint.
        query_offset: index of the first query for the causal constraint
            and the window.
        window: an int or `None`; query `i` sees only keys `j` with
            `|i + query_offset - j| <= window` (a sliding window).

    Returns:
        A boolean tensor broadcastable to `(B, T, S)`, or `None` when no mask
        was given.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.ops import build_attention_mask
    >>> mask = build_attention_mask(
    ...     3, 3, key_padding_mask=np.array([[True, True, False]]),
    ...     use_causal_mask=True)
    >>> ops.convert_to_numpy(mask)[0].astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    """
    query_rows = None
    if padding_mask is not None:
        query_rows = ops.expand_dims(ops.cast(padding_mask, "bool"), -1)
    key_columns = None
    if key_padding_mask is not None:
        key_columns = ops.expand_dims(ops.cast(key_padding_mask, "bool"), 1)
    causal = None
    if use_causal_mask:
        causal = ops.expand_dims(
            causal_mask(query_length, key_length, query_offset), 0
        )
    band = None
    if window is not None:
        band = ops.expand_dims(
            band_mask(query_length, key_length, window, query_offset), 0
        )
    return merge_masks(query_rows, key_columns, attention_mask, causal, band)


def band_mask(query_length, key_length, window, query_offset=0):
    """A `(T, S)` boolean mask where query `i` sees the keys `j` with
    `|i + query_offset - j| <= window`.

    >>> from keras import ops
    >>> ops.convert_to_numpy(band_mask(3, 4, 1)).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1]])
    """
    query_positions = ops.arange(query_length, dtype="int32") + ops.cast(
        query_offset, "int32"
    )
    key_positions = ops.arange(key_length, dtype="int32")
    # (T, 1) - (1, S) -> (T, S)
    distance = ops.expand_dims(query_positions, 1) - ops.expand_dims(
        key_positions, 0
    )
    return ops.abs(distance) <= window


def resolve_attention_mask(
    query,
    key_length,
    padding_mask=None,
    key_padding_mask=None,
    attention_mask=None,
    use_causal_mask=False,
    query_offset=0,
    window=None,
):
    """Check every mask a layer was given against its inputs and merge them:
    the one place the layers resolve masks.

    Args:
        query: `(B, T, ...)`, the query sequence (its batch and length are
            checked against the masks).
        key_length: S, an int (checked against the masks when known) or a
            scalar tensor.
        padding_mask, key_padding_mask, attention_mask: as in
            `build_attention_mask`.
        use_causal_mask, query_offset, window: as in
            `build_attention_mask`.

    Returns:
        `build_attention_mask`'s boolean `(B|1, T|1, S)` mask, or `None`.

    Raises:
        ValueError: naming the mask whose shape does not match.
    """
    batch, query_len = query.shape[0], query.shape[1]
    static_key_len = key_length if isinstance(key_length, int) else None
    padding_mask = check_mask_shape(
        "padding_mask", padding_mask, (batch, query_len), "(batch, query_len)"
    )
    key_padding_mask = check_mask_shape(
        "key_padding_mask", key_padding_mask, (batch, static_key_len),
        "(batch, key_len)",
    )
    attention_mask = check_mask_shape(
        "attention_mask", attention_mask, (batch, query_len, static_key_len),
        "(batch, query_len, key_len)",
    )
    return build_attention_mask(
        ops.shape(query)[1],
        key_length,
        padding_mask=padding_mask,
        key_padding_mask=key_padding_mask,
        attention_mask=attention_mask,
        use_causal_mask=use_causal_mask,
        query_offset=query_offset,
        window=window,
    )


def check_head_shape(name, tensor, batch, heads, query_length, key_length):
    """`tensor` (converted) if its shape is `(B|1, N|1, T, S)`, else a
    ValueError naming `name`; a size not known (None) is not checked."""
    if not hasattr(tensor, "shape"):
        tensor = ops.convert_to_tensor(tensor)
    shape = tuple(tensor.shape)

    def fits(got, want, may_broadcast):
        return (got is None or want is None or got == want
                or (may_broadcast and got == 1))

    if len(shape) != 4 or not all(
            fits(got, want, axis < 2) for axis, (got, want) in enumerate(
                zip(shape, (batch, heads, query_length, key_length)))):
        raise ValueError(
            f"`{name}` must have shape (batch|1, heads|1, query_len, "
            f"key_len) = {(batch, heads, query_length, key_length)}, "
            f"received: {name}.shape={shape}")
    return tensor
