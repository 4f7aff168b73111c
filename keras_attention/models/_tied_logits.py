"""The output projection tied to an embedding: logits `x Eᵀ`, also when
`model.quantize("int8")` has quantized the `keras.layers.Embedding`.

Keras's int8 `Embedding` keeps `round(E · s)` as int8 with one scale `s`
per row (token) in `embeddings_scale`, and its `embeddings` property
returns those int8 values unscaled: a tied projection that reads it as `E`
(as ours did) gets every token's logit multiplied by its own scale. Keras
has no reverse (tied) call for `Embedding`; KerasHub's
`ReversibleEmbedding` adds one, computed as `EinsumDense` computes its
int8 product, which is what `tied_logits` does: the inputs quantized per
row, an int8 x int8 matmul accumulated in int32, de-scaled by both scales;
or, when the embedding was quantized weight-only (its quantization config
has no activation quantizer), a float product with the int8 rows, de-scaled
per token.

Letters: B batch, T length, D model size, V vocabulary.
"""

import keras
from keras import ops


def tied_logits(inputs, embedding):
    """`inputs (..., D) @ Eᵀ -> (..., V)` for `embedding`'s matrix
    `E (V, D)`, in float32 when the embedding is int8, else in the inputs'
    dtype."""
    mode = embedding.quantization_mode
    if mode is None:
        # (B, T, D) x (D, V) -> (B, T, V), one 2-D matrix product (an
        # einsum broadcasting the (V, D) matrix over B made its gradient a
        # (B, V, D) product summed over B).
        embeddings = ops.cast(embedding.embeddings, inputs.dtype)
        return ops.matmul(inputs, ops.transpose(embeddings))
    if mode != "int8" or embedding.lora_enabled:
        raise NotImplementedError(
            "The output projection tied to the embeddings supports a float "
            "or an int8 embedding without LoRA, received: an embedding with "
            f"quantization_mode={mode!r}, "
            f"lora_enabled={embedding.lora_enabled}"
        )
    config = embedding.quantization_config
    if config is not None and config.activation_quantizer is None:
        # Weight-only: a float product with the int8 rows, de-scaled per
        # token. (B, T, D) x (D, V) -> (B, T, V)
        embeddings = ops.cast(embedding.embeddings, inputs.dtype)
        logits = ops.matmul(inputs, ops.transpose(embeddings))
        return ops.divide(logits, ops.cast(embedding.embeddings_scale,
                                           logits.dtype))
    leading = ops.shape(inputs)[:-1]
    rows = ops.reshape(inputs, (-1, inputs.shape[-1]))  # (B·T, D)
    # int8 (B·T, D) and the scale of each row (B·T, 1)
    quantized, rows_scale = keras.quantizers.abs_max_quantize(rows, axis=-1)
    # int8 (B·T, D) x int8 (D, V) -> int32 (B·T, V)
    logits = ops.matmul(quantized, ops.transpose(embedding.embeddings))
    scale = ops.multiply(ops.cast(rows_scale, "float32"),
                         embedding.embeddings_scale)  # (B·T, V)
    logits = ops.divide(ops.cast(logits, "float32"), scale)
    return ops.reshape(logits, (*leading, -1))  # (B, T, V)
