"""Exact attention in memory linear in the length, for the TensorFlow backend.

The one backend kernel of `keras_attention.ops` (imported only when Keras
runs on TensorFlow, by `blockwise_attention`). Written in ordinary
TensorFlow ops, with no custom op, so a SavedModel that contains it loads
in a stock TensorFlow or TF Serving.

The queries are taken in blocks of `block_size` rows. A block's scores
against the keys it may see, `(B, N, b, S_i)`, are the largest tensor
alive: a causal block sees only the keys up to its last position, a
windowed block only its band, so causal attention does half the work of
the dense path and windowed attention work linear in the length. The
softmax of a block is exact (its whole row is present) and is made in
few passes over the block's scores, since on a CPU each such pass is
memory traffic, most of what a block costs beyond its products: the
logits are one product with the scale and the mask's bias in the form
oneDNN fuses (`matmul * scale + bias`), the softmax is TensorFlow's
fused one (a disallowed key gets a finite bias far below any logit, so
no row is NaN), and the gradient's `dP - D` is one product too (`[dO,
-D] [V, 1]^T`). Nothing is kept but the output and which rows attend
anything: the gradient recomputes each block's weights with the same
product and softmax (Rabe & Staats 2021; FlashAttention's backward), one
pass over query blocks giving dQ and adding each block's share of dK and
dV, so the gradient needs no (T, S) tensor either. When one block holds
every query (short sequences), its weights are kept instead: the dense
algorithm, in the same few passes.

Letters: B batch, N heads, T query length, S key length, H key size,
D value size, b a block's rows, K the keys (or queries) a block meets.
"""

import tensorflow as tf

from keras_attention.ops._blockwise_relative_tf import RelativeTerms

# The bias of a logit that may not be attended: finite, so that a fused
# softmax of a row with no key at all is not NaN, and so far below any
# logit that its weight is exactly 0 (exp underflows).
_MASKED = -1e30

# Each loop keeps one block in flight (memory; on two cores two blocks at
# once ran no faster, each block's products being threaded already).
_PARALLEL_ITERATIONS = 1


def in_xla_context():
    """Whether the function being traced is compiled with XLA
    (`tf.function(jit_compile=True)`), whose static shapes the blocks'
    loops cannot have; the public op then takes the dense path."""
    from tensorflow.python.ops import control_flow_util

    return bool(control_flow_util.GraphOrParentsInXlaContext(
        tf.compat.v1.get_default_graph()))


def _ceil_div(a, b):
    return -(-a // b)


class _Plan:
    """Which keys each query block meets, and the masks, for padded
    query length `Tq = nq * bq` and key length `Tk = nk * bk`. Key `j`
    stands for positions `j s .. j s + s - 1` (`key_stride` s; 1 for
    plain keys) and is placed at the last, `j s + s - 1`: causality,
    windows and ALiBi measure from there."""

    def __init__(self, *, query_length, key_length, block_size, causal,
                 window, query_offset, key_valid, query_valid, mask,
                 alibi_slopes=None, key_stride=1):
        self.bq = self.bk = block_size
        self.stride = key_stride
        self.nq = _ceil_div(query_length, block_size)
        self.nk = _ceil_div(key_length, block_size)
        self.padded_queries = self.nq * self.bq
        self.padded_keys = self.nk * self.bk
        self.causal = causal
        self.window = window
        self.offset = tf.cast(query_offset, tf.int32)
        # (B, Tk) keys that exist (not padding, nor the block padding)
        self.key_valid = _pad_to(key_valid, 1, self.padded_keys, False)
        # (B, Tq) queries that exist
        self.query_valid = _pad_to(query_valid, 1, self.padded_queries, False)
        # (B|1, N|1, Tq, Tk) or None
        self.mask = None if mask is None else _pad_to(
            _pad_to(mask, 2, self.padded_queries, False), 3,
            self.padded_keys, False)
        # (1, N, 1, 1) ALiBi slopes, or None
        self.slopes = None if alibi_slopes is None else tf.reshape(
            tf.cast(alibi_slopes, tf.float32), (1, -1, 1, 1))
        # (B|1, N|1, Tq, Tk) float32 additive bias, set by the caller
        self.dense_bias = None
        # the relative-position terms (RelativeTerms), set by the caller
        self.relative = None

    def blocks(self, i):
        """Query block `i`: `(q_lo, q_hi, k_lo, k_hi, rows)`, `rows` the
        relative table rows it uses (None without relative terms)."""
        q_lo = i * self.bq
        q_hi = q_lo + self.bq
        k_lo, k_hi = self.key_range(q_lo, q_hi - 1)
        rows = (None if self.relative is None else
                self.relative.rows_met(q_lo, q_hi, k_lo, k_hi))
        return q_lo, q_hi, k_lo, k_hi, rows

    def key_range(self, first_query, last_query):
        """Keys `[lo, hi)` that queries `first..last` (positions plus the
        offset) may see, rounded out to whole key blocks."""
        lo = tf.constant(0, tf.int32)
        hi = tf.cast(self.padded_keys, tf.int32)
        first, last = first_query + self.offset, last_query + self.offset
        stride = self.stride

        def whole_blocks(keys):  # the first `keys` keys, in whole blocks
            return _ceil_div(keys, self.bk) * self.bk

        # Key j is at j s + s - 1: the keys at or before position p are
        # the first (p + 1) // s; those at or after it, from p // s on.
        if self.causal:
            hi = tf.minimum(hi, whole_blocks((last + 1) // stride))
        if self.window is not None:
            lo = tf.maximum(lo, (first - self.window) // stride
                            // self.bk * self.bk)
            if not self.causal:
                hi = tf.minimum(hi, whole_blocks(
                    (last + self.window + 1) // stride))
        lo = tf.minimum(lo, tf.cast(self.padded_keys, tf.int32))
        hi = tf.maximum(hi, lo)
        return lo, hi

    def bias(self, q_lo, q_hi, k_lo, k_hi):
        """The float32 logit bias of queries `[q_lo, q_hi)` and keys
        `[k_lo, k_hi)`, broadcastable to `(B, N, q, k)`: 0 where the query
        may attend the key (plus ALiBi's and a dense bias), `_MASKED`
        where it may not; and whether each row may attend any key,
        `(B|1, N|1, q|1, 1)` bool. Query padding is not in them (its rows
        are zeroed on the output, a small tensor)."""
        # (B, k) -> (B, 1, 1, k)
        allowed = self.key_valid[:, None, None, k_lo:k_hi]
        if self.causal or self.window is not None or self.slopes is not None:
            queries = tf.range(q_lo, q_hi) + self.offset  # (q,)
            keys = tf.range(k_lo, k_hi)  # (k,)
            if self.stride > 1:  # each key at its group's last position
                keys = keys * self.stride + (self.stride - 1)
        if self.window is not None or self.slopes is not None:
            # (q, 1) - (1, k) -> (q, k)
            distance = queries[:, None] - keys[None, :]
        if self.causal and self.window is None and self.slopes is None:
            # (q, 1) >= (1, k): one pass, no distance tensor
            allowed = tf.logical_and(allowed, queries[:, None] >= keys[None, :])
        elif self.causal:
            allowed = tf.logical_and(allowed, distance >= 0)
        if self.window is not None:
            allowed = tf.logical_and(allowed,
                                     tf.abs(distance) <= self.window)
        if self.mask is not None:
            allowed = tf.logical_and(allowed,
                                     self.mask[:, :, q_lo:q_hi, k_lo:k_hi])
        dense = None
        if self.dense_bias is not None:
            dense = self.dense_bias[:, :, q_lo:q_hi, k_lo:k_hi]
            # a logit the caller's bias sends to -inf is not attended
            allowed = tf.logical_and(allowed, dense > _MASKED)
        bias = tf.where(allowed, 0.0, _MASKED)
        if self.slopes is not None:
            # (1, N, 1, 1) * (q, k) -> (1, N, q, k): -slope |i - j|
            bias = bias + self.slopes * tf.cast(-tf.abs(distance),
                                                tf.float32)
        if dense is not None:
            bias = bias + tf.maximum(dense, _MASKED)
        return bias, tf.reduce_any(allowed, axis=-1, keepdims=True)


def _pad_to(tensor, axis, length, value):
    """`tensor` padded with `value` at the end of `axis` to `length`."""
    missing = length - tf.shape(tensor)[axis]
    paddings = [[0, 0]] * len(tensor.shape)
    paddings[axis] = [0, missing]
    return tf.pad(tensor, paddings, constant_values=value)


def _weights(plan, q, k, scale, q_lo, q_hi, k_lo, k_hi, rows):
    """The softmax weights of queries `[q_lo, q_hi)` against keys `[k_lo,
    k_hi)`, `(B, N, q, k)` float32, and whether each row has a key to
    attend, `(B|1, N|1, q|1, 1)` bool. Recomputed the same in the
    gradient, so nothing of the forward's scores is kept."""
    bias, attends = plan.bias(q_lo, q_hi, k_lo, k_hi)
    # (B, N, q, H) x (B, N, k, H)^T -> (B, N, q, k)
    products = tf.matmul(q[:, :, q_lo:q_hi], k[:, :, k_lo:k_hi],
                         transpose_b=True)
    if products.dtype == tf.float32:
        # matmul * scale + bias: the form oneDNN fuses into one kernel
        logits = products * scale + bias
    else:  # the statistics in float32
        logits = tf.cast(products, tf.float32) * scale + bias
    if plan.relative is not None:
        logits = logits + plan.relative.logits(
            q[:, :, q_lo:q_hi] * tf.cast(scale, q.dtype), rows)
    # One fused softmax: a disallowed key's bias is finite but far below
    # any logit, so its weight is exactly 0; a row with no key at all is
    # uniform here and zeroed by `attends` (never NaN).
    return tf.nn.softmax(logits), attends


def _forward(plan, q, k, v, scale, single=False):
    """`(out (B, N, Tq, D), attending (B, N, Tq) bool, weights)` for the
    unscaled queries `q`; a row with no key (or a padding query) gets out
    0 and attending False. `weights` are the block's `(B, N, Tq, k)` when
    `single` (one block holds every query: the gradient takes them instead
    of recomputing them, as a dense core keeps its weights), else None."""
    shape = tf.shape(q)

    def block(i):
        q_lo, q_hi, k_lo, k_hi, rows = plan.blocks(i)
        weights, attends = _weights(plan, q, k, scale, q_lo, q_hi, k_lo,
                                    k_hi, rows)
        # (B, N, q, k) x (B, N, k, D) -> (B, N, q, D)
        out = tf.matmul(tf.cast(weights, v.dtype), v[:, :, k_lo:k_hi])
        if plan.relative is not None:
            out = tf.cast(out, tf.float32) + plan.relative.context(
                weights, rows, v.dtype)
        # (B, N, q, 1): the rows of real queries that meet a key
        attends = tf.broadcast_to(
            tf.logical_and(attends, plan.query_valid[:, None, q_lo:q_hi,
                                                     None]),
            [shape[0], shape[1], q_hi - q_lo, 1])
        out = tf.where(attends, tf.cast(out, v.dtype), tf.zeros((), v.dtype))
        return out, attends[..., 0], weights

    if single:
        return block(0)

    def body(i, outputs, rows_attending):
        out, attends, _ = block(i)
        return (i + 1, outputs.write(i, out), rows_attending.write(i, attends))

    outputs = tf.TensorArray(v.dtype, size=plan.nq, infer_shape=False)
    attending = tf.TensorArray(tf.bool, size=plan.nq, infer_shape=False)
    _, outputs, attending = tf.while_loop(
        lambda i, *_: i < plan.nq, body,
        (tf.constant(0), outputs, attending),
        parallel_iterations=_PARALLEL_ITERATIONS)
    return _join(outputs, 4), _join(attending, 3), None


def _join(array, rank, axis=2):
    """A TensorArray of blocks of rank `rank`, `(B, N, b, ...)`,
    concatenated along `axis` (the blocks were written in order)."""
    stacked = array.stack()  # (n, B, N, b, ...)
    rank += 1
    # (n, B, N, b, ...) -> (B, N, n, b, ...) -> (B, N, n * b, ...)
    order = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
    stacked = tf.transpose(stacked, order)
    shape = tf.shape(stacked)
    return tf.reshape(stacked, tf.concat(
        [shape[:axis], [shape[axis] * shape[axis + 1]], shape[axis + 2:]], 0))


def _backward(plan, q, k, v, scale, out, attending, grad, weights=None):
    """dQ, dK, dV of `sum(grad * out)` for the unscaled queries `q`
    (without the scale, which the caller applies), recomputing the
    weights by query block: one pass, each block writing its rows of dQ
    and adding its share of dK and dV. With the one block's `weights`
    (`_forward`'s, `single`), no pass and no recomputation."""
    # No gradient flows through a row that attends nothing.
    grad = tf.where(attending[..., None], grad, tf.zeros((), grad.dtype))
    # (B, N, Tq): rowsum(dO * O), FlashAttention's D
    dots = tf.reduce_sum(tf.cast(grad, tf.float32) * tf.cast(out, tf.float32),
                         axis=-1)
    fused = grad.dtype == tf.float32 and v.dtype == tf.float32
    if fused:
        # dP - D as one product: [dO, -D] [V, 1]^T, (B, N, Tq, D + 1) and
        # (B, N, Tk, D + 1), so no pass over a block subtracts D.
        grad_plus = tf.concat([grad, -dots[..., None]], axis=-1)
        v_plus = tf.concat([v, tf.ones_like(v[..., :1])], axis=-1)

    def logit_grads(weights, q_lo, q_hi, k_lo, k_hi, rows):
        # dP - D: (B, N, q, D) x (B, N, k, D)^T -> (B, N, q, k)
        if fused:
            dweights = tf.matmul(grad_plus[:, :, q_lo:q_hi],
                                 v_plus[:, :, k_lo:k_hi], transpose_b=True)
        else:
            dweights = tf.cast(tf.matmul(
                grad[:, :, q_lo:q_hi], v[:, :, k_lo:k_hi], transpose_b=True),
                tf.float32) - dots[:, :, q_lo:q_hi, None]
        if plan.relative is not None:  # + dO a^V_(j-i)
            dweights = dweights + plan.relative.weight_grads(
                grad[:, :, q_lo:q_hi], rows)
        # dS = P (dP - D)
        return weights * dweights

    def block(i, weights):
        """Block `i`'s dQ rows, its shares of dK and dV (keys `[k_lo,
        k_hi)`, padded to all keys), of the dense bias and of the
        relative tables."""
        q_lo, q_hi, k_lo, k_hi, rows = plan.blocks(i)
        if weights is None:
            weights, _ = _weights(plan, q, k, scale, q_lo, q_hi, k_lo, k_hi,
                                  rows)
        dlogits = logit_grads(weights, q_lo, q_hi, k_lo, k_hi, rows)
        dbias = None
        if plan.dense_bias is not None:
            # The bias's gradient is the logits': summed over the axes it
            # broadcasts, zero for the keys the block skips.
            axes = [axis for axis in (0, 1)
                    if plan.dense_bias.shape[axis] == 1]
            dbias = tf.pad(tf.reduce_sum(dlogits, axis=axes, keepdims=True),
                           [[0, 0], [0, 0], [0, 0],
                            [k_lo, plan.padded_keys - k_hi]])
        # (B, N, q, k) x (B, N, k, H) -> (B, N, q, H)
        dq = tf.matmul(tf.cast(dlogits, k.dtype), k[:, :, k_lo:k_hi])
        table_grads = {}
        if plan.relative is not None:
            q_block = q[:, :, q_lo:q_hi] * tf.cast(scale, q.dtype)
            dq = dq + tf.cast(plan.relative.query_grads(dlogits, rows,
                                                        q.dtype), dq.dtype)
            table_grads = plan.relative.table_grads(
                weights, dlogits, q_block, grad[:, :, q_lo:q_hi], rows)
        # This block's share of dV and dK, for keys [k_lo, k_hi):
        # (B, N, q, k)^T x (B, N, q, D) -> (B, N, k, D)
        dv = tf.matmul(tf.cast(weights, grad.dtype), grad[:, :, q_lo:q_hi],
                       transpose_a=True)
        # (B, N, q, k)^T x (B, N, q, H) -> (B, N, k, H)
        dk = tf.matmul(tf.cast(dlogits, q.dtype), q[:, :, q_lo:q_hi],
                       transpose_a=True)
        # float32, padded to all keys
        where = [[0, 0], [0, 0], [k_lo, plan.padded_keys - k_hi], [0, 0]]
        dk = tf.pad(tf.cast(dk, tf.float32), where)
        dv = tf.pad(tf.cast(dv, tf.float32), where)
        return dq, dk, dv, dbias, table_grads

    if weights is not None:
        dq, dk, dv, dbias, table_grads = block(0, weights)
        return (dq, tf.cast(dk, k.dtype), tf.cast(dv, v.dtype), dbias,
                table_grads)

    def body(i, dqs, dk_sum, dv_sum, dbiases, table_sums):
        dq, dk, dv, dbias, grads = block(i, None)
        if dbias is not None:
            dbiases = dbiases.write(i, dbias)
        table_sums = {name: table_sums[name] + grads[name]
                      for name in table_sums}
        # Added into the float32 sums over blocks (linear in the length,
        # cheaper than a second pass that recomputes the scores by key
        # block). (ensure_shape: the padding's sizes are not static, the
        # sums' are)
        dk_sum = tf.ensure_shape(dk_sum + dk, dk_sum.shape)
        dv_sum = tf.ensure_shape(dv_sum + dv, dv_sum.shape)
        return i + 1, dqs.write(i, dq), dk_sum, dv_sum, dbiases, table_sums

    dqs = tf.TensorArray(q.dtype, size=plan.nq, infer_shape=False)
    dk_sum = tf.zeros(tf.shape(k), tf.float32)
    dv_sum = tf.zeros(tf.shape(v), tf.float32)
    # (a size-1 array, never written, without a bias)
    dbiases = tf.TensorArray(tf.float32, infer_shape=False,
                             size=1 if plan.dense_bias is None else plan.nq)
    # the relative tables' float32 gradients, summed over blocks
    tables = {} if plan.relative is None else {
        name: table for name, table in (
            ("key", plan.relative.key_table),
            ("value", plan.relative.value_table)) if table is not None}
    table_sums = {name: tf.zeros(tf.shape(table), tf.float32)
                  for name, table in tables.items()}
    _, dqs, dk_sum, dv_sum, dbiases, table_sums = tf.while_loop(
        lambda i, *_: i < plan.nq, body,
        (tf.constant(0), dqs, dk_sum, dv_sum, dbiases, table_sums),
        parallel_iterations=_PARALLEL_ITERATIONS)
    dbias = None if plan.dense_bias is None else _join(dbiases, 4)
    return (_join(dqs, 4), tf.cast(dk_sum, k.dtype),
            tf.cast(dv_sum, v.dtype), dbias, table_sums)


def blockwise_attention(query, key, value, *, key_valid, query_valid,
                        mask, causal, window, query_offset, scale,
                        block_size, bias=None, alibi_slopes=None,
                        relative_key_table=None, relative_value_table=None,
                        key_stride=1):
    """Exact attention over blocks; see `keras_attention.ops.blockwise`.

    Args:
        query: `(B, T, N, H)`; key `(B, S, N, H)`; value `(B, S, N, D)`.
        key_valid: `(B, S)` bool; query_valid: `(B, T)` bool.
        mask: `(B|1, N|1, T, S)` bool or None.
        causal, window, query_offset, scale, block_size: as checked by
            the public op.
        bias: `(B|1, N|1, T, S)` float additive logit bias (with a
            gradient), or None.
        alibi_slopes: `(N,)` constant ALiBi slopes, or None.
        relative_key_table, relative_value_table: `(R, H)` / `(R, D)`
            shared or `(N, R, H)` / `(N, R, D)` per-head tables of the
            relative-position terms (with gradients), or None.
        key_stride: an int >= 1, the positions each key stands for.

    Returns:
        `(B, T, N, D)` in the value's dtype.
    """
    query_length = tf.shape(query)[1]
    key_length = tf.shape(key)[1]
    # One block holds every query: its weights are kept for the gradient.
    single = query.shape[1] is not None and query.shape[1] <= block_size
    if single:  # a block of exactly the queries, nothing padded
        block_size = max(1, query.shape[1])
    plan = _Plan(query_length=query_length, key_length=key_length,
                 block_size=block_size, causal=causal, window=window,
                 query_offset=query_offset, key_valid=key_valid,
                 query_valid=query_valid, mask=mask,
                 alibi_slopes=alibi_slopes, key_stride=key_stride)

    extras = {"bias": bias, "key": relative_key_table,
              "value": relative_value_table}
    names = [name for name, tensor in extras.items() if tensor is not None]

    def attend(q, k, v, *given):
        given = dict(zip(names, given))
        dense_bias = given.get("bias")
        if "key" in given or "value" in given:
            plan.relative = RelativeTerms(given.get("key"),
                                          given.get("value"), plan.offset)
        # (B, T, N, H) -> (B, N, T, H), padded to whole blocks
        q = _pad_to(tf.transpose(q, (0, 2, 1, 3)), 2, plan.padded_queries, 0)
        k = _pad_to(tf.transpose(k, (0, 2, 1, 3)), 2, plan.padded_keys, 0)
        v = _pad_to(tf.transpose(v, (0, 2, 1, 3)), 2, plan.padded_keys, 0)
        if dense_bias is not None:
            # (B|1, N|1, T, S) float32, padded to whole blocks
            plan.dense_bias = _pad_to(_pad_to(
                tf.cast(dense_bias, tf.float32), 2, plan.padded_queries,
                0.0), 3, plan.padded_keys, 0.0)
        out, attending, weights = _forward(plan, q, k, v, scale, single)

        def gradient(grad):
            # (B, T, N, D) -> (B, N, Tq, D)
            grad = _pad_to(tf.transpose(grad, (0, 2, 1, 3)), 2,
                           plan.padded_queries, 0)
            dq, dk, dv, dbias, table_grads = _backward(
                plan, q, k, v, scale, out, attending, grad, weights)
            # d/dq of (scale q) k = scale dS k; d/dk = scale dS^T q
            dq = dq * tf.cast(scale, dq.dtype)
            dk = dk * tf.cast(scale, dk.dtype)
            # (B, N, T, .) -> (B, T, N, .), the block padding removed
            grads = (tf.transpose(dq, (0, 2, 1, 3))[:, :query_length],
                     tf.transpose(dk, (0, 2, 1, 3))[:, :key_length],
                     tf.transpose(dv, (0, 2, 1, 3))[:, :key_length])
            extra_grads = {"bias": None if dbias is None else
                           dbias[:, :, :query_length, :key_length],
                           **table_grads}
            return grads + tuple(tf.cast(extra_grads[name], given[name].dtype)
                                 for name in names)

        return tf.transpose(out, (0, 2, 1, 3))[:, :query_length], gradient

    # (a variable read once, so that the gradient reaches it)
    inputs = (query, key, value) + tuple(tf.identity(extras[name])
                                         for name in names)
    output = tf.custom_gradient(attend)(*inputs)
    # The blocks' loop loses the static sizes: (B, T, N, D) as given.
    output.set_shape(query.shape[:3].concatenate(value.shape[3:]))
    return output
