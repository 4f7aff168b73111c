"""Relative-position terms (Shaw et al., 2018) inside the block-wise
TensorFlow kernel (`_blockwise_tf`), block by block.

For a block of queries `[q_lo, q_hi)` and keys `[k_lo, k_hi)` the
clipped distances `clip(j - i, -δ, δ)` cover a contiguous run of table
rows `[r_lo, r_hi)`, at most `b + k - 1` of them. The key term is the
queries against those rows, `(B, N, b, W)`, gathered into place, `(B, N,
b, k)`; the value term sums each row's weights per distance (the
gather's transpose), `(B, N, b, W)`, and multiplies them by the value
table's rows. Their gradients are the same two moves the other way, so
nothing of size `(T, S)` or `(b, k, H)` is ever built.

Letters as in `_blockwise_tf`: B batch, N heads, b a block's query rows,
k the keys it meets, H key size, D value size, R = 2δ+1 table rows, W
the rows a block uses.
"""

import tensorflow as tf


def _gather(rows, index):
    """`rows[..., i, index[i, j]]`: `(B, N, b, W)` by `(b, k)` int32 to
    `(B, N, b, k)`."""
    # (B, N, b, W) -> (b, W, B, N), gathered per query row -> (b, k, B, N)
    picked = tf.gather(tf.transpose(rows, (2, 3, 0, 1)), index, axis=1,
                       batch_dims=1)
    return tf.transpose(picked, (2, 3, 0, 1))


def _buckets(pairs, index, width):
    """The transpose of `_gather`: `(B, N, b, k)` summed into `(B, N, b,
    width)` by the row `index[i, j]` of each pair."""
    rows = tf.shape(index)[0]
    # (B, N, b, k) -> (b, k, B, N) -> (b k, B, N)
    flat = tf.transpose(pairs, (2, 3, 0, 1))
    shape = tf.shape(flat)
    flat = tf.reshape(flat, tf.concat([[-1], shape[2:]], 0))
    # one segment per (query row, table row)
    segments = tf.reshape(
        index + tf.range(rows)[:, None] * width, [-1])  # (b k,)
    summed = tf.math.unsorted_segment_sum(flat, segments, rows * width)
    summed = tf.reshape(summed, tf.concat([[rows, width], shape[2:]], 0))
    return tf.transpose(summed, (2, 3, 0, 1))  # (B, N, b, width)


def _product(equation_shared, equation_per_head, a, table):
    """An einsum with a table `(R, .)` shared by the heads or `(N, R, .)`
    per head."""
    equation = (equation_shared if len(table.shape) == 2
                else equation_per_head)
    return tf.einsum(equation, a, table)


def _gathered_products(vectors, table, index):
    """`vectors_i · table[index[i, j]]`, `(B, N, b, k)` float32: each query
    row `(B, N, b, C)` against the table rows `(W, C)` (or `(N, W, C)`),
    picked per pair by `index (b, k)`."""
    table = tf.cast(table, vectors.dtype)
    # (B, N, b, C) x (W, C) -> (B, N, b, W)
    per_row = _product("bnqc,rc->bnqr", "bnqc,nrc->bnqr", vectors, table)
    return tf.cast(_gather(per_row, index), tf.float32)


def _bucketed_sums(pairs, table, index, dtype):
    """`Σ_j pairs_ij table[index[i, j]]`, `(B, N, b, C)` float32: the
    pairs `(B, N, b, k)` summed per table row, times the rows `(W, C)`
    (or `(N, W, C)`), in `dtype`."""
    buckets = _buckets(pairs, index, tf.shape(table)[-2])  # (B, N, b, W)
    # (B, N, b, W) x (W, C) -> (B, N, b, C)
    return tf.cast(_product("bnqr,rc->bnqc", "bnqr,nrc->bnqc",
                            tf.cast(buckets, dtype), tf.cast(table, dtype)),
                   tf.float32)


class RelativeTerms:
    """The tables and the distances of one call; `None` tables are
    absent terms."""

    def __init__(self, key_table, value_table, offset):
        table = key_table if key_table is not None else value_table
        self.rows = table.shape[-2]
        self.delta = (self.rows - 1) // 2
        self.key_table = key_table
        self.value_table = value_table
        self.offset = offset

    def rows_met(self, q_lo, q_hi, k_lo, k_hi):
        """`(r_lo, r_hi, index (b, k))`: the table rows `[r_lo, r_hi)`
        that queries `[q_lo, q_hi)` and keys `[k_lo, k_hi)` use, and each
        pair's row among them."""
        first, last = q_lo + self.offset, q_hi - 1 + self.offset
        r_lo = tf.clip_by_value(k_lo - last, -self.delta, self.delta)
        r_hi = tf.clip_by_value(k_hi - 1 - first, -self.delta,
                                self.delta) + 1
        r_hi = tf.maximum(r_hi, r_lo)  # (no keys: no rows)
        queries = tf.range(q_lo, q_hi) + self.offset  # (b,)
        keys = tf.range(k_lo, k_hi)  # (k,)
        # (1, k) - (b, 1) -> (b, k), j - i clipped, counted from r_lo
        index = tf.clip_by_value(keys[None, :] - queries[:, None],
                                 -self.delta, self.delta) - r_lo
        return r_lo + self.delta, r_hi + self.delta, index

    def _rows(self, table, rows):
        r_lo, r_hi, _ = rows
        return table[..., r_lo:r_hi, :]  # (W, .) or (N, W, .)

    def logits(self, q_block, rows):
        """The key term `q_i · a^K_(j-i)`, `(B, N, b, k)` float32, of the
        scaled queries `(B, N, b, H)`."""
        if self.key_table is None:
            return 0.0
        # in float32, as the dense layer computes it
        return _gathered_products(tf.cast(q_block, tf.float32),
                                  self._rows(self.key_table, rows), rows[2])

    def context(self, weights, rows, dtype):
        """The value term `Σ_j w_ij a^V_(j-i)`, `(B, N, b, D)` float32, of
        the weights `(B, N, b, k)` float32."""
        if self.value_table is None:
            return 0.0
        return _bucketed_sums(weights, self._rows(self.value_table, rows),
                              rows[2], dtype)

    def weight_grads(self, grad_block, rows):
        """The value term's share of dP: `dO_i · a^V_(j-i)`, `(B, N, b,
        k)` float32, for the output gradient `(B, N, b, D)`."""
        if self.value_table is None:
            return 0.0
        return _gathered_products(grad_block,
                                  self._rows(self.value_table, rows), rows[2])

    def query_grads(self, dlogits, rows, dtype):
        """The key term's share of dq, `(B, N, b, H)` float32, for the
        logits' gradient `(B, N, b, k)`."""
        if self.key_table is None:
            return 0.0
        return _bucketed_sums(dlogits, self._rows(self.key_table, rows),
                              rows[2], dtype)

    def table_grads(self, weights, dlogits, q_block, grad_block, rows):
        """The tables' gradients from one block, padded to all `R` rows
        (float32): `{"key": (.., R, H), "value": (.., R, D)}` for the
        terms present."""
        r_lo, r_hi, index = rows
        width = r_hi - r_lo
        grads = {}
        for name, pairs, other, table in (
                ("key", dlogits, q_block, self.key_table),
                ("value", weights, grad_block, self.value_table)):
            if table is None:
                continue
            buckets = _buckets(pairs, index, width)  # (B, N, b, W)
            other = tf.cast(other, tf.float32)
            # (B, N, b, W) x (B, N, b, .) -> (W, .) or (N, W, .)
            rows_grad = tf.einsum(
                "bnqr,bnqh->rh" if len(table.shape) == 2
                else "bnqr,bnqh->nrh", buckets, other)
            where = [[0, 0]] * (len(table.shape) - 2) + [
                [r_lo, self.rows - r_hi], [0, 0]]
            grads[name] = tf.pad(rows_grad, where)
        return grads
