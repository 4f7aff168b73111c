"""Relative-position terms of attention (Shaw et al., 2018) as pure functions.

A table holds one vector per clipped relative distance clip(j - i, -δ, δ):
row `d + δ` for distance `d`, so `(R, H)` with R = 2δ+1 rows, shared by the
heads, or `(N, R, H)` per head. Query `i` meets key `j` through row
`relative_positions(...)[i, j]`. Nothing here builds the `(T, S, H)` tensor
of every pair's vector (let alone `(B, N, T, S, H)`):

- the gather path computes `Q·Eᵀ` once per distance, `(B, N, T, R)`, and
  picks each pair's entry with one `(T, S)` index shared by the batch and
  the heads. It takes any query offset, so it serves cached decoding.
- the skew path (Huang et al., 2018) computes `Q·Eᵀ` against the table
  expanded to every distance of a `T × T` self-attention (`(2T-1, H)`, or
  `(T, H)` when causal: O(T·H) memory) and moves each entry into place with
  a pad, a reshape and a slice, dense operations only.

The relative values Σ_j α_ij a_ij are the transposes of these: the weights
are summed per distance (into `(B, N, T, R)` buckets, or unskewed into
`(B, N, T, 2T-1)`) and then multiplied by the table.

Letters: B batch, N heads, T query length, S key length, H head size,
R table rows, M relative columns (2T-1, or T when causal).
"""

from keras import ops


def _max_distance(table):
    """δ of a `(R, H)` or `(N, R, H)` table, R = 2δ+1."""
    rows = table.shape[-2] if len(table.shape) in (2, 3) else None
    if rows is None or rows % 2 == 0:
        raise ValueError(
            "A relative-position table must have shape (2δ+1, size) or "
            "(num_heads, 2δ+1, size), received: "
            f"table.shape={tuple(table.shape)}"
        )
    return (rows - 1) // 2


def relative_positions(query_len, key_len, max_relative_position,
                       query_offset=0):
    """The table row of every (query, key) pair: clip(j - i, -δ, δ) + δ.

    Args:
        query_len: T, an int or scalar tensor.
        key_len: S, an int or scalar tensor.
        max_relative_position: δ, an int.
        query_offset: the position of the first query among the keys (the
            cache index when decoding), an int or scalar tensor.

    Returns:
        `(T, S)` int32 indices in `[0, 2δ]`.

    Example:

    >>> from keras import ops
    >>> from keras_attention.ops import relative_positions
    >>> ops.convert_to_numpy(relative_positions(3, 4, 1))
    array([[1, 2, 2, 2],
           [0, 1, 2, 2],
           [0, 0, 1, 2]], dtype=int32)
    """
    query = ops.arange(query_len, dtype="int32") + ops.cast(
        query_offset, "int32"
    )  # (T,)
    key = ops.arange(key_len, dtype="int32")  # (S,)
    # (1, S) - (T, 1) -> (T, S)
    distance = ops.expand_dims(key, 0) - ops.expand_dims(query, 1)
    delta = max_relative_position
    return ops.clip(distance, -delta, delta) + delta


def _per_row_logits(query, table):
    """`q · e_r` for every query and table row: `(B, N, T, R|M)`."""
    table = ops.cast(table, query.dtype)
    # Heads first on the (small) query, so the (large) product comes out
    # in place instead of being transposed (forward and backward).
    query = ops.transpose(query, (0, 2, 1, 3))  # (B, N, T, H)
    if len(table.shape) == 2:
        # (B, N, T, H) x (R, H) -> (B, N, T, R)
        return ops.einsum("bnth,rh->bntr", query, table)
    # (B, N, T, H) x (N, R, H) -> (B, N, T, R)
    return ops.einsum("bnth,nrh->bntr", query, table)


def _per_row_values(buckets, table):
    """`Σ_r buckets[..., r] e_r`: `(B, N, T, R|M)` -> `(B, T, N, H)`."""
    table = ops.cast(table, buckets.dtype)
    if len(table.shape) == 2:
        # (B, N, T, R) x (R, H) -> (B, T, N, H)
        return ops.einsum("bntr,rh->btnh", buckets, table)
    # (B, N, T, R) x (N, R, H) -> (B, T, N, H)
    return ops.einsum("bntr,nrh->btnh", buckets, table)


def _flat_pair_index(query_len, key_len, rows, query_offset):
    """`(T, S)` index of each pair into a `(T·R)` row-major flattening."""
    index = relative_positions(query_len, key_len, (rows - 1) // 2,
                               query_offset)  # (T, S)
    starts = ops.arange(query_len, dtype="int32") * rows  # (T,)
    return index + ops.expand_dims(starts, 1)  # (T, S)


def relative_logits_gather(query, table, key_len, query_offset=0):
    """`q_i · a_ij` for every pair, by a gather shared over batch and heads.

    Args:
        query: `(B, T, N, H)`, already scaled as the logits need.
        table: `(R, H)` or `(N, R, H)`, R = 2δ+1.
        key_len: S, an int or scalar tensor.
        query_offset: position of the first query among the keys.

    Returns:
        `(B, N, T, S)` in the dtype of `query`. Extra memory: the
        `(B, N, T, R)` per-distance logits.
    """
    rows = 2 * _max_distance(table) + 1
    query_len = ops.shape(query)[1]
    logits = _per_row_logits(query, table)  # (B, N, T, R)
    # (B, N, T, R) -> (B, N, T·R)
    flat = ops.reshape(logits, (-1, query.shape[2], query_len * rows))
    index = _flat_pair_index(query_len, key_len, rows, query_offset)
    return ops.take(flat, index, axis=2)  # (B, N, T, S)


def _expanded_table(table, query_len, causal):
    """The table row of each distance -(T-1) .. T-1 (.. 0 when causal).

    Distances beyond δ repeat the edge rows, which is how the clipping
    enters the skew. `(M, H)` or `(N, M, H)`: O(T·H) memory.
    """
    delta = _max_distance(table)
    columns = query_len if causal else 2 * query_len - 1
    distance = ops.arange(columns, dtype="int32") - (query_len - 1)  # (M,)
    rows = ops.clip(distance, -delta, delta) + delta
    return ops.take(table, rows, axis=len(table.shape) - 2)


def _slice_last(tensor, start, size):
    """`tensor[..., start:start + size]`. `ops.slice`, not `[]`: on
    TensorFlow the gradient of a strided slice is ~10x slower on CPU."""
    rank = len(tensor.shape)
    # Sizes, not -1 for "the rest": PyTorch's `ops.slice` reads no -1.
    return ops.slice(tensor, (0,) * (rank - 1) + (start,),
                     tuple(ops.shape(tensor)[:-1]) + (size,))


def _skew(logits):
    """`(B, N, T, 2T-1)` with column c at distance c-(T-1) -> `(B, N, T, T)`.

    Entry `(i, j)` is column `j - i + T - 1` of row `i`, which sits at
    offset `T - 1 + i·(2T-1) + j` of the row-major flattening once every
    row is padded to 2T columns.
    """
    query_len = ops.shape(logits)[2]
    heads = logits.shape[1]
    padded = ops.pad(logits, ((0, 0), (0, 0), (0, 0), (0, 1)))  # (B,N,T,2T)
    flat = ops.reshape(padded, (-1, heads, 2 * query_len * query_len))
    flat = _slice_last(flat, query_len - 1, query_len * (2 * query_len - 1))
    skewed = ops.reshape(flat, (-1, heads, query_len, 2 * query_len - 1))
    return _slice_last(skewed, 0, query_len)  # (B, N, T, T)


def _skew_causal(logits):
    """`(B, N, T, T)` with column c at distance c-(T-1) -> `(B, N, T, T)`.

    Huang et al.'s trick: pad one column in front, read the result as
    T+1 rows of T, drop the first row. Entries above the diagonal are not
    relative logits (they are spill-over from the next row); the causal
    mask must hide them.
    """
    query_len = ops.shape(logits)[2]
    heads = logits.shape[1]
    padded = ops.pad(logits, ((0, 0), (0, 0), (0, 0), (1, 0)))  # (B,N,T,T+1)
    flat = ops.reshape(padded, (-1, heads, (query_len + 1) * query_len))
    flat = _slice_last(flat, query_len, query_len * query_len)  # no row 0
    return ops.reshape(flat, (-1, heads, query_len, query_len))  # (B,N,T,T)


def relative_logits_skew(query, table, causal=False):
    """`q_i · a_ij` for self-attention (S = T, no offset), by the skew.

    Args:
        query: `(B, T, N, H)`, already scaled as the logits need.
        table: `(R, H)` or `(N, R, H)`, R = 2δ+1; any δ >= 1 (distances
            beyond δ repeat the edge rows).
        causal: bool; compute only the entries `j <= i`. The entries above
            the diagonal are then arbitrary and must be masked.

    Returns:
        `(B, N, T, T)` in the dtype of `query`. Extra memory: the table
        expanded to `(2T-1, H)` (causal: `(T, H)`) and the per-distance
        logits `(B, N, T, 2T)` (causal: `(B, N, T, T+1)`), about twice
        (causal: once) the size of the attention logits; never O(T²·H).
    """
    query_len = ops.shape(query)[1]
    expanded = _expanded_table(table, query_len, causal)  # (M, H)
    logits = _per_row_logits(query, expanded)  # (B, N, T, M)
    return _skew_causal(logits) if causal else _skew(logits)


def relative_values_gather(weights, table, query_offset=0):
    """`Σ_j α_ij a_ij`, by summing the weights into per-distance buckets.

    The buckets are the transpose of `relative_logits_gather`'s gather: a
    segment sum over the `(T, S)` index shared by the batch and heads.

    Args:
        weights: `(B, N, T, S)` attention weights.
        table: `(R, H)` or `(N, R, H)`, R = 2δ+1.
        query_offset: position of the first query among the keys.

    Returns:
        `(B, T, N, H)` in the dtype of `weights`. Extra memory: a transposed
        copy of the weights and the `(B, N, T, R)` buckets.
    """
    rows = 2 * _max_distance(table) + 1
    shape = ops.shape(weights)
    heads, query_len, key_len = weights.shape[1], shape[2], shape[3]
    index = _flat_pair_index(query_len, key_len, rows, query_offset)
    # (B, N, T, S) -> (T, S, B, N) -> (T·S, B·N)
    pairs = ops.reshape(ops.transpose(weights, (2, 3, 0, 1)),
                        (query_len * key_len, -1))
    buckets = ops.segment_sum(pairs, ops.reshape(index, (-1,)),
                              num_segments=query_len * rows)  # (T·R, B·N)
    # (T·R, B·N) -> (T, R, B, N) -> (B, N, T, R)
    buckets = ops.reshape(buckets, (query_len, rows, -1, heads))
    return _per_row_values(ops.transpose(buckets, (2, 3, 0, 1)), table)


def _unskew(weights):
    """`(B, N, T, T)` -> `(B, N, T, 2T-1)`, column c at distance c-(T-1).

    The inverse of `_skew`: pad every row to 2T-1 columns, flatten, shift
    by T-1 and read rows of 2T. Column c of row i is then `α[i, i+c-(T-1)]`
    or a padding zero.
    """
    query_len = ops.shape(weights)[2]
    heads = weights.shape[1]
    columns = 2 * query_len - 1
    padded = ops.pad(weights, ((0, 0), (0, 0), (0, 0), (0, query_len - 1)))
    flat = ops.reshape(padded, (-1, heads, query_len * columns))
    flat = ops.pad(flat, ((0, 0), (0, 0), (query_len - 1, 1)))  # (B,N,2T²)
    rows = ops.reshape(flat, (-1, heads, query_len, 2 * query_len))
    return _slice_last(rows, 0, columns)  # (B, N, T, 2T-1)


def _unskew_causal(weights):
    """`(B, N, T, T)` lower-triangular -> `(B, N, T, T)` by distance.

    The inverse of `_skew_causal`: pad one row in front, read T rows of
    T+1, drop the first column. Relies on the weights above the diagonal
    being zero (they spill into the leading columns otherwise).
    """
    query_len = ops.shape(weights)[2]
    heads = weights.shape[1]
    padded = ops.pad(weights, ((0, 0), (0, 0), (1, 0), (0, 0)))  # (B,N,T+1,T)
    rows = ops.reshape(padded, (-1, heads, query_len, query_len + 1))
    return _slice_last(rows, 1, query_len)  # (B, N, T, T)


def relative_values_skew(weights, table, causal=False):
    """`Σ_j α_ij a_ij` for self-attention (S = T, no offset), by unskewing.

    Args:
        weights: `(B, N, T, T)` attention weights; with `causal=True` they
            must be zero above the diagonal (as causally masked weights are).
        table: `(R, H)` or `(N, R, H)`, R = 2δ+1.
        causal: bool, see `weights`.

    Returns:
        `(B, T, N, H)` in the dtype of `weights`. Extra memory:
        `(B, N, T, 2T)` (causal: `(B, N, T+1, T)`) and the expanded table.
    """
    query_len = ops.shape(weights)[2]
    expanded = _expanded_table(table, query_len, causal)  # (M, H)
    by_distance = _unskew_causal(weights) if causal else _unskew(weights)
    return _per_row_values(by_distance, expanded)
