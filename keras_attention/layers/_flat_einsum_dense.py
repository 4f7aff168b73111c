"""`FlatEinsumDense`: `keras.layers.EinsumDense` whose product is one 2-D
matrix product where its equation allows (private; the projections of
`MultiHeadAttention` and every layer built on it).

Attention's projections contract the input's trailing axes with the
kernel's leading ones: `btd,dnh->btnh` (query, key, value) and
`btnv,nvd->btd` (output). `ops.einsum` leaves such a product to the
backend, and TensorFlow's einsum broadcasts the kernel over the batch: its
weight gradient becomes a batched `(B, D, N·H)` product summed over B, about
40% of a decoder block's float32 training step on the project's 2-core CPU.
Flattened to `(B·T, D) @ (D, N·H)` the forward pass and both gradients are
single 2-D matrix products. Same weights, same variables, same result up to
float rounding; anything else (other equations) goes through
`EinsumDense` unchanged, and LoRA through its `kernel` property.

Quantization is `EinsumDense`'s own (`quantize`, `_int8_build`,
`_int8_call`, the quantized variables' saving and loading): `EinsumDense.
quantize` refuses subclasses unless called with `type_check=False` (so a
subclass that changes the product is not quantized by mistake), and
`Model.quantize` turns that refusal into a warning and leaves the layer in
float. Ours computes the same product, so `quantize` passes the check on;
once quantized, `Layer.__call__` runs `quantized_call` (the int8 einsum),
not `call`.
"""

import keras
from keras import ops


def _flat_split(equation):
    """How many leading kernel axes `equation` contracts with the input's
    trailing axes, in order, when the output is the input's other axes
    followed by the kernel's others (e.g. 1 for "btd,dnh->btnh", 2 for
    "btnv,nvd->btd"); None for any other equation."""
    try:
        operands, output = equation.split("->")
        inputs, kernel = operands.split(",")
    except ValueError:
        return None
    if ("." in equation or len(set(inputs)) != len(inputs)
            or len(set(kernel)) != len(kernel)):
        return None
    contracted = sum(letter in inputs for letter in kernel)
    if (contracted == 0 or kernel[:contracted] != inputs[-contracted:]
            or output != inputs[:-contracted] + kernel[contracted:]):
        return None
    return contracted


class FlatEinsumDense(keras.layers.EinsumDense):
    """`EinsumDense` computing `X..., K... -> X...` products as one 2-D
    matmul of the flattened input and kernel (see the module docstring)."""

    def __init__(self, equation, *args, **kwargs):
        super().__init__(equation, *args, **kwargs)
        self._flat = _flat_split(equation)

    def call(self, inputs, training=None):
        if self._flat is None or self.quantization_mode is not None:
            # (A quantized layer is called through `quantized_call`.)
            return super().call(inputs, training=training)
        contracted = self._flat
        kernel = self.kernel  # with the LoRA delta where enabled
        kernel_shape = tuple(kernel.shape)
        depth = 1
        for size in kernel_shape[:contracted]:
            depth *= size
        width = 1
        for size in kernel_shape[contracted:]:
            width *= size
        input_shape = ops.shape(inputs)
        leading = input_shape[:len(input_shape) - contracted]
        # (B, T, D) -> (B·T, D) @ (D, N·H) -> (B, T, N, H)
        outputs = ops.matmul(ops.reshape(inputs, (-1, depth)),
                             ops.reshape(kernel, (depth, width)))
        outputs = ops.reshape(outputs, (*leading, *kernel_shape[contracted:]))
        if self.bias is not None:
            outputs = ops.add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def quantize(self, mode=None, type_check=True, config=None):
        # `EinsumDense.quantize` with its subclass check passed: a further
        # subclass must opt in the same way.
        if type_check and type(self) is not FlatEinsumDense:
            raise NotImplementedError(
                f"Layer {type(self).__name__} does not have a `quantize` "
                "method implemented."
            )
        # Older Keras 3 releases take no `config` (and never pass one).
        options = {} if config is None else {"config": config}
        super().quantize(mode, type_check=False, **options)
