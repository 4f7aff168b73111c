"""NumPy references for relative-position attention (Shaw et al., 2018).

They build the explicit `(T, S, H)` embedding of every (query, key) pair,
which the library never does, so they are slow but obviously right.

Letters: B batch, N heads, T query length, S key length, H head size,
R = 2δ+1 table rows.
"""

import numpy as np


def relative_index(query_len, key_len, max_distance, query_offset=0,
                   clip=True):
    """`(T, S)` table row of each pair: clip(j - i, -δ, δ) + δ."""
    query = np.arange(query_len)[:, None] + query_offset
    distance = np.arange(key_len)[None, :] - query
    if clip:
        distance = np.clip(distance, -max_distance, max_distance)
    return distance + max_distance


def pair_embeddings(table, query_len, key_len, query_offset=0, clip=True):
    """`(N|1, T, S, H)`: the table row of every pair, per head or shared."""
    max_distance = (table.shape[-2] - 1) // 2
    index = relative_index(query_len, key_len, max_distance, query_offset,
                           clip)
    table = table if table.ndim == 3 else table[None]  # (N|1, R, H)
    return table[:, index]


def relative_logits(query, table, key_len, query_offset=0, clip=True):
    """`(B, N, T, S)` q_i · a_ij for query `(B, T, N, H)`."""
    pairs = pair_embeddings(table, query.shape[1], key_len, query_offset,
                            clip)
    return np.einsum("btnh,ntsh->bnts", query,
                     np.broadcast_to(pairs, (query.shape[2],) + pairs.shape[1:]))


def relative_values(weights, table, query_offset=0, clip=True):
    """`(B, T, N, H)` Σ_j α_ij a_ij for weights `(B, N, T, S)`."""
    pairs = pair_embeddings(table, weights.shape[2], weights.shape[3],
                            query_offset, clip)
    pairs = np.broadcast_to(pairs, (weights.shape[1],) + pairs.shape[1:])
    return np.einsum("bnts,ntsh->btnh", weights, pairs)


def softmax(logits, mask):
    """Softmax over the last axis; masked entries and fully masked rows 0."""
    logits = np.where(mask, logits, -np.inf)
    top = np.max(logits, -1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    weights = np.exp(logits - top) * mask
    total = weights.sum(-1, keepdims=True)
    return weights / np.where(total > 0, total, 1.0)


def relative_attention(layer, inputs, padding_mask=None, causal=False,
                       clip=True):
    """What a built `RelativeAttention` computes, from its weights.

    Returns `(output (B, T, D), weights (B, N, T, T))`.
    """
    def dense(projection, x, equation):
        out = np.einsum(equation, x, projection.kernel.numpy())
        return out + projection.bias.numpy() if layer.use_bias else out

    query = dense(layer.query_dense, inputs, "btd,dnh->btnh")
    key = dense(layer.key_dense, inputs, "bsd,dnh->bsnh")
    value = dense(layer.value_dense, inputs, "bsd,dnv->bsnv")
    length = inputs.shape[1]
    logits = np.einsum("btnh,bsnh->bnts", query, key) + relative_logits(
        query, layer.key_relative_embeddings.numpy(), length, clip=clip)
    logits /= np.sqrt(layer.key_dim)
    mask = np.ones((inputs.shape[0], 1, length, length), bool)
    if padding_mask is not None:
        mask &= padding_mask[:, None, :, None] & padding_mask[:, None, None, :]
    if causal:
        mask &= np.tril(np.ones((length, length), bool))
    weights = softmax(logits, mask)
    context = np.einsum("bnts,bsnv->btnv", weights, value)
    if layer.relative_values:
        context += relative_values(
            weights, layer.value_relative_embeddings.numpy(), clip=clip)
    if layer.head_merge == "mean":
        output = dense(layer.output_dense, context.mean(2), "btv,vd->btd")
    else:
        output = dense(layer.output_dense, context, "btnv,nvd->btd")
    return output, weights
