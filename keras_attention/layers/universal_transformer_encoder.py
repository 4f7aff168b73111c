"""`UniversalTransformerEncoder`: one Transformer block applied recurrently
over depth, with Adaptive Computation Time (Dehghani et al., 2019).

Letters: B batch, T length, D model size, S recurrent steps.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers.quantization import quantized_dtype_config
from keras_attention.layers.transformer_encoder import TransformerEncoder


def _unit_norm(state, epsilon=1e-5):
    """The halting unit's input: each position's state centred and scaled
    to norm 1 (a layer normalization without weights, divided by √D).
    `(B, T, D)` -> float32 `(B, T, D)`."""
    state = ops.cast(state, "float32")
    centred = state - ops.mean(state, axis=-1, keepdims=True)
    variance = ops.mean(ops.square(centred), axis=-1, keepdims=True)
    return centred * ops.rsqrt(variance + epsilon) / float(
        state.shape[-1]) ** 0.5


HALTING_INPUTS = ("unit_norm", "state")
ACT_OUTPUTS = ("weighted_sum", "interpolate")


@keras.saving.register_keras_serializable(package="keras_attention")
class UniversalTransformerEncoder(keras.layers.Layer):
    """A Transformer encoder block shared across `max_steps` recurrent
    steps, each step adding the coordinate embedding (positions and the
    step, as sinusoids) before the block: `h_t = Block(h_{t−1} + P_t)`.

    With `act=True`, Adaptive Computation Time (Graves, 2016) decides per
    position how many steps to take: a halting unit gives `p_t = sigmoid(w·ĥ
    + b)` from the step's input `h`, centred and scaled to norm 1 (`ĥ`;
    tensor2tensor reads `h` itself, see below), `b` starting at 1 as in
    tensor2tensor and `w` at 0, so `p = 0.73` and every position starts by
    halting at the second step; a position keeps running while its summed
    halting probability stays at or below `act_threshold` (1 − ε); at the
    step that would cross it, and at the last step for positions still
    running, it halts and spends its remainder `R = 1 − Σ p`. The output is
    the sum of the step states weighted by `p_t` (running steps) and the
    remainder (the halting step), so each position's weights sum to 1. The
    ponder cost `N + R` (steps taken plus remainder, averaged over real
    positions) times `ponder_weight` is added to the layer's losses. As in
    the authors' code, every step computes the block for every position (the
    static loop fits any backend and XLA): a halted position's *output* is
    frozen, but its state keeps being transformed and the running positions
    attend to that state. The output is Graves' weighted sum of the step
    states; the authors' code interpolates instead (`w·h_t + (1 −
    w)·previous`), whose weights do not sum to 1.

    Halting after the first step is absorbing: when `p_1 > 1 − ε`, `N = 1`
    and `R = 1` whatever `p_1` is, so neither the ponder cost nor the task
    loss moves that position's halting unit again. The unit is shared by
    every position, so a model must give every position's output a part
    in its loss (tensor2tensor's bAbI and classification heads average all
    positions), or the positions whose output nothing reads see only the
    ponder cost and drag the shared unit to one step
    (`keras_attention.models.UniversalTransformerReader`, `readout`).
    Why the unit reads a unit-norm input: the ponder cost's gradient has
    one sign, and Adam moves each of the unit's `D` weights by about the
    learning rate a step whatever that gradient's size, so the halting
    logit moves by about `lr · Σ|h_i|` a step. On the raw step input (norm
    about 16 on bAbI at D = 128) that crossed `1 − ε` at most positions
    within the first epoch or two at a constant 1e-3, before the task had
    learnt to use a second step, and the model stayed at one step; read
    at norm 1 the unit moves some 16 times slower, the task learns first,
    and the ponder times rise where a second hop is needed
    (docs/models/universal-transformer.md has the measurements).

    tensor2tensor's ACT (`universal_transformer_util.adaptive_universal_
    transformer`) departs from Graves' in three ways, each an argument
    here: its halting unit reads the step input itself
    (`halting_input="state"`); a position that reaches `max_steps` without
    crossing the threshold stops there without a remainder, its weights
    summing to less than 1 (`halt_at_cap=False`); and its output
    interpolates, `o_t = w_t·h_t + (1 − w_t)·o_{t−1}` from `o_0 = 0`
    (`act_output="interpolate"`), instead of summing `Σ w_t·h_t`. Its
    ponder cost is the same `N + R` (over every position, padding
    included; here over the real positions).

    With `normalize_first=True` (pre-norm, tensor2tensor's UT) a final
    layer normalization is applied to the output, as tensor2tensor's
    encoder does after its last step.

    The arguments `intermediate_dim`, `num_heads`, `key_dim`, `dropout`,
    `activation`, `layer_norm_epsilon`, `normalize_first`,
    `kernel_initializer` and `bias_initializer` are the shared
    `TransformerEncoder`'s.

    Args:
        max_steps: int >= 1, the recurrent steps (the depth).
        act: bool, Adaptive Computation Time.
        act_threshold: float in (0, 1], the halting threshold 1 − ε.
        ponder_weight: float >= 0, the ponder cost's weight in the losses.
        halting_input: `"unit_norm"` (default), the step input centred
            and scaled to norm 1, or `"state"`, the step input itself
            (tensor2tensor's).
        halt_at_cap: bool; True (default) halts every position still
            running at `max_steps` with its remainder (Graves'); False
            lets it stop there without one (tensor2tensor's).
        act_output: `"weighted_sum"` (default, Graves') or
            `"interpolate"` (tensor2tensor's), see above.
        halting_initializer: the halting unit's kernel initializer;
            `"zeros"` (default) starts every position at `p = sigmoid(1)`.
            The unit reads the step input, whose norm is about √D times
            the embeddings' scale, so a Glorot kernel gives halting logits
            spread by several units: on real bAbI (D = 128) the initial
            mean ponder time ranged from 2.0 to 6.7 by seed, on TensorFlow
            and JAX alike, and a model that starts near one step is the
            first to collapse (docs/models/universal-transformer.md).

    Call arguments:
        inputs: `(batch, seq_len, dim)`.
        padding_mask: `(batch, seq_len)` boolean; defaults to the Keras
            implicit mask of `inputs`.
        return_ponder: bool; also return each position's ponder time
            `N + R` `(batch, seq_len)`, in the compute dtype (without ACT,
            `max_steps`).
        return_steps: bool; also return (after the ponder times, if
            asked) each position's steps taken `N` `(batch, seq_len)`,
            what tensor2tensor reports as the ponder time.
        training: bool; enables dropout.

    Returns:
        `(batch, seq_len, dim)`, then the ponder times if asked.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import UniversalTransformerEncoder
    >>> encoder = UniversalTransformerEncoder(
    ...     intermediate_dim=32, num_heads=2, max_steps=4, act=True)
    >>> tokens = np.random.default_rng(0).random((2, 5, 16), "float32")
    >>> output, ponder = encoder(tokens, return_ponder=True)
    >>> tuple(output.shape), tuple(ponder.shape)
    ((2, 5, 16), (2, 5))
    >>> ponder = np.asarray(ponder)  # N + R: 1 <= N <= 4, 0 < R <= 1
    >>> bool((ponder > 1).all() and (ponder <= 5).all())
    True

    References:
        Dehghani et al. "Universal Transformers", ICLR 2019.
        Graves. "Adaptive Computation Time for Recurrent Neural Networks",
        2016.
    """

    def __init__(self, intermediate_dim, num_heads, max_steps=4, act=False,
                 act_threshold=0.99, ponder_weight=0.01, key_dim=None,
                 dropout=0.0, activation="relu", layer_norm_epsilon=1e-5,
                 normalize_first=False, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", halting_initializer="zeros",
                 halting_input="unit_norm", halt_at_cap=True,
                 act_output="weighted_sum", **kwargs):
        super().__init__(**kwargs)
        self.intermediate_dim = _validation.positive_int("intermediate_dim",
                                                         intermediate_dim)
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        self.max_steps = _validation.positive_int("max_steps", max_steps)
        self.act = bool(act)
        threshold = _validation.positive_float("act_threshold", act_threshold)
        if threshold > 1.0:
            raise ValueError(
                "`act_threshold` must be in (0, 1], received: "
                f"act_threshold={act_threshold!r}")
        self.act_threshold = threshold
        if (isinstance(ponder_weight, bool)
                or not isinstance(ponder_weight, (int, float))
                or ponder_weight < 0):
            raise ValueError(
                "`ponder_weight` must be a float >= 0, received: "
                f"ponder_weight={ponder_weight!r}")
        self.ponder_weight = float(ponder_weight)
        self.key_dim = _validation.optional_positive_int("key_dim", key_dim)
        self.dropout = _validation.rate("dropout", dropout)
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = _validation.positive_float(
            "layer_norm_epsilon", layer_norm_epsilon)
        self.normalize_first = bool(normalize_first)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.halting_initializer = keras.initializers.get(
            halting_initializer)
        self.halting_input = _validation.choice(
            "halting_input", halting_input, HALTING_INPUTS)
        if not isinstance(halt_at_cap, bool):
            raise ValueError(
                "`halt_at_cap` must be a bool, received: "
                f"halt_at_cap={halt_at_cap!r}")
        self.halt_at_cap = halt_at_cap
        self.act_output = _validation.choice("act_output", act_output,
                                             ACT_OUTPUTS)
        self.supports_masking = True

    def build(self, inputs_shape):
        _validation.rank("inputs", inputs_shape, (3,), "(batch, seq_len, dim)")
        self.block = TransformerEncoder(
            intermediate_dim=self.intermediate_dim, num_heads=self.num_heads,
            key_dim=self.key_dim, dropout=self.dropout,
            activation=self.activation,
            layer_norm_epsilon=self.layer_norm_epsilon,
            normalize_first=self.normalize_first,
            kernel_initializer=keras.initializers.get(
                keras.initializers.serialize(self.kernel_initializer)),
            bias_initializer=keras.initializers.get(
                keras.initializers.serialize(self.bias_initializer)),
            dtype=self.dtype_policy, name="block")
        self.block.build(inputs_shape)
        if self.act:
            # b = 1 (tensor2tensor's act_halting_bias_init) and a zero
            # kernel: p = 0.73 at every position, so every position starts
            # by halting at the second step, whatever the seed (see
            # `halting_initializer`).
            self.halting = keras.layers.Dense(
                1, activation="sigmoid",
                kernel_initializer=keras.initializers.get(
                    keras.initializers.serialize(self.halting_initializer)),
                bias_initializer=keras.initializers.Constant(1.0),
                dtype=self.dtype_policy, name="halting")
            self.halting.build(inputs_shape)
        if self.normalize_first:  # the residual stream, normalized once
            self.output_layer_norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy,
                name="output_layer_norm")
            self.output_layer_norm.build(inputs_shape)

    def _step_input(self, state, step):
        length = state.shape[1] or ops.shape(state)[1]
        coordinates = attention_ops.coordinate_embedding(
            length, step, state.shape[-1], self.compute_dtype)  # (T, D)
        return state + coordinates[None]

    def call(self, inputs, padding_mask=None, return_ponder=False,
             return_steps=False, training=None):
        _validation.rank("inputs", inputs.shape, (3,), "(batch, seq_len, dim)")
        if padding_mask is None:
            padding_mask = attention_ops.implicit_mask(inputs)
        padding_mask = attention_ops.check_mask_shape(
            "padding_mask", padding_mask, inputs.shape[:2],
            "(batch, seq_len)")
        if padding_mask is None:
            padding_mask = ops.ones(ops.shape(inputs)[:2], "bool")
        inputs = ops.cast(inputs, self.compute_dtype)
        if not self.act:
            state = inputs
            for step in range(self.max_steps):
                state = self.block(self._step_input(state, step),
                                   padding_mask=padding_mask,
                                   training=training)
            ponder = ops.full(ops.shape(inputs)[:2], float(self.max_steps),
                              self.compute_dtype)
            steps = ponder
        else:
            state, ponder, steps = self._adaptive(inputs, padding_mask,
                                                  training)
        if self.normalize_first:
            state = self.output_layer_norm(state)
        extra = (ponder,) * bool(return_ponder) + (steps,) * bool(return_steps)
        return (state, *extra) if extra else state

    def _adaptive(self, inputs, padding_mask, training):
        """ACT's output `(B, T, D)`, ponder times `N + R` and steps `N`
        `(B, T)`."""
        shape = ops.shape(inputs)[:2]
        halted_sum = ops.zeros(shape, "float32")  # Σ p of running steps
        remainders = ops.zeros(shape, "float32")
        updates = ops.zeros(shape, "float32")  # N: steps taken
        running = ops.ones(shape, "float32")
        state = inputs
        output = ops.zeros_like(inputs)
        for step in range(self.max_steps):
            state = self._step_input(state, step)
            unit = (state if self.halting_input == "state"
                    else _unit_norm(state))
            probability = ops.cast(self.halting(unit)[..., 0], "float32")
            last = step == self.max_steps - 1
            crossing = ops.cast(
                halted_sum + probability * running > self.act_threshold,
                "float32")
            newly_halted = (running if last and self.halt_at_cap
                            else crossing * running)
            still = running - newly_halted
            halted_sum = halted_sum + probability * still
            remainders = remainders + newly_halted * (1.0 - halted_sum)
            updates = updates + still + newly_halted
            weight = probability * still + newly_halted * (1.0 - halted_sum)
            state = self.block(state, padding_mask=padding_mask,
                               training=training)
            weight = ops.cast(weight, state.dtype)[..., None]  # (B, T, 1)
            if self.act_output == "interpolate":
                output = weight * state + (1.0 - weight) * output
            else:  # the weighted sum of the step states
                output = output + weight * state
            running = still
        ponder = updates + remainders  # (B, T)
        real = ops.cast(padding_mask, "float32")
        cost = ops.sum(ponder * real) / ops.maximum(ops.sum(real), 1.0)
        if self.ponder_weight > 0:
            self.add_loss(self.ponder_weight * cost)
        return (output, ops.cast(ponder, self.compute_dtype),
                ops.cast(updates, self.compute_dtype))

    def get_config(self):
        config = super().get_config()
        config.update({
            "intermediate_dim": self.intermediate_dim,
            "num_heads": self.num_heads,
            "max_steps": self.max_steps,
            "act": self.act,
            "act_threshold": self.act_threshold,
            "ponder_weight": self.ponder_weight,
            "key_dim": self.key_dim,
            "dropout": self.dropout,
            "activation": keras.activations.serialize(self.activation),
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "normalize_first": self.normalize_first,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(
                self.bias_initializer),
            "halting_initializer": keras.initializers.serialize(
                self.halting_initializer),
            "halting_input": self.halting_input,
            "halt_at_cap": self.halt_at_cap,
            "act_output": self.act_output,
        })
        return quantized_dtype_config(self, config)
