"""`AttentionRNNDecoder`: a recurrent decoder that attends a memory at every
step (Bahdanau, Cho, Bengio 2015; Luong, Pham, Manning 2015; hard, one
sampled location, Xu et al. 2015), or, without attention, reads one fixed
context vector (Cho et al. 2014).

Letters: B batch, T target length, S source (memory) length, E input size,
U recurrent units, M memory size, K prepared key size.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers.additive_attention import AdditiveAttention
from keras_attention.layers.dot_attention import DotAttention
from keras_attention.layers.general_attention import GeneralAttention
from keras_attention.layers.quantization import quantized_dtype_config
from keras_attention.layers.scaled_dot_attention import ScaledDotAttention
from keras_attention.layers.score_attention import ScoreAttention
from keras_attention.ops import stochastic

ATTENTIONS = {
    "additive": AdditiveAttention,
    "dot": DotAttention,
    "general": GeneralAttention,
    "scaled_dot": ScaledDotAttention,
}
CELLS = {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell}
# Where the query comes from: the state before the step (Bahdanau) or the
# state the step computes (Luong).
QUERIES = ("previous", "current")


def serialize_attention(attention):
    """The `attention` argument for a config: a name or None as it is, a
    layer as its serialized config without build state (it is rebuilt with
    the decoder)."""
    if attention is None or isinstance(attention, str):
        return attention
    config = keras.saving.serialize_keras_object(attention)
    config.pop("build_config", None)
    return config


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionRNNDecoder(keras.layers.Layer):
    """A GRU or LSTM decoder with attention over a memory at every step.

    With `query="previous"` (Bahdanau et al.; the default), at step t the
    previous state `s_{t-1}` is the query: a `ScoreAttention` layer weighs
    the memory (the encoder's annotations `h_i`),
    `α_ti = softmax_i(score(s_{t-1}, h_i))`, `c_t = Σ_i α_ti h_i`, and the
    recurrence is fed the input and the context,
    `s_t = f(s_{t-1}, [y_{t-1}; c_t])`. The layer returns `s_t` and `c_t`.

    With `query="current"` (Luong et al.'s global attention), the
    recurrence runs first, `h_t = f(h_{t-1}, [y_{t-1}; h̃_{t-1}])`, its
    state is the query, `c_t = Σ_i softmax_i(score(h_t, h_i)) h_i`, and
    the step's output is the attentional hidden state
    `h̃_t = tanh(W_c [c_t; h_t])`. Feeding `h̃_{t-1}` back into the
    recurrence is Luong's input feeding (`input_feeding`, on by default
    with this query; `h̃_0 = 0`); without it the recurrence sees `y_{t-1}`
    only. The layer returns `h̃_t` and `c_t`, and the recurrent state list
    ends with `h̃_t` when input feeding is on.

    With `attention=None` there is no attention (the encoder-decoder of Cho
    et al. and Sutskever et al.): `memory` is one vector per sequence
    `(B, M)`, the context of every step, `s_t = f(s_{t-1}, [y_{t-1}; c])`.

    Hard attention (Xu et al.'s stochastic attention; `query="previous"`):
    given `location_noise`, each step draws one location from its weights,
    `s_t ~ Multinoulli(α_t)`, and feeds that annotation `h_{s_t}` to the
    recurrence instead of `c_t`; `argmax_location=True` reads the most
    likely one. The weights returned are `α_t` either way, which is what
    the REINFORCE estimator needs (`keras_attention.ops.stochastic`).

    The key-side part of the score (`U h_i` for the additive score) is
    computed once per memory (`prepare_memory`), not at every step. `step`
    runs one position (incremental decoding: the recurrent state is the
    cache) and `call` runs a whole target sequence (teacher forcing) with the
    same step, so both compute the same numbers.

    Args:
        units: int, the recurrent state size U.
        cell: `"gru"` or `"lstm"`.
        attention: the score function: `"additive"` (Bahdanau; default),
            `"dot"`, `"general"`, `"scaled_dot"` (Luong et al.), a
            `ScoreAttention` layer, such a layer's serialized config, or
            `None` (no attention). Dot scores need `units` equal to the
            memory size.
        attention_units: the additive score's hidden size (default `units`).
        query: `"previous"` (Bahdanau) or `"current"` (Luong).
        input_feeding: feed `h̃_{t-1}` to the recurrence; only with
            `query="current"`, where `None` (the default) means True.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(batch, target_len, input_dim)`, the embedded previous
            tokens `y_{t-1}`.
        memory: `(batch, source_len, memory_dim)`, or `(batch, memory_dim)`
            with `attention=None`.
        initial_state: the starting state: a list of `(batch, units)`
            tensors (as `states_from` makes them), or one `(batch, units)`
            tensor `s_0` (see `states_from`).
        memory_mask: `(batch, source_len)` boolean; False positions get no
            weight.
        prepared_memory: `prepare_memory(memory)`, when the caller has it.
        return_attention_scores: bool; also return the weights (not with
            `attention=None`).
        training: bool.
        location_noise: `(batch, target_len)` uniforms: hard attention,
            one location drawn per step (see `step`).
        argmax_location: hard attention at the most likely location.
        expectation: `(batch,)` boolean, with `location_noise`: rows that
            read the expected context (soft attention) instead.

    Returns:
        `(outputs (batch, target_len, units), contexts (batch, target_len,
        memory_dim))`, then the weights `(batch, target_len, source_len)` if
        `return_attention_scores`. The outputs are the states `s_t`, or
        `h̃_t` with `query="current"`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import AttentionRNNDecoder
    >>> decoder = AttentionRNNDecoder(units=8)
    >>> inputs = np.ones((2, 4, 3), "float32")      # (B, T, E)
    >>> memory = np.random.rand(2, 5, 6).astype("float32")  # (B, S, M)
    >>> state = decoder.states_from(np.zeros((2, 8), "float32"))
    >>> states, contexts, weights = decoder(
    ...     inputs, memory, state, return_attention_scores=True)
    >>> tuple(states.shape), tuple(contexts.shape), tuple(weights.shape)
    ((2, 4, 8), (2, 4, 6), (2, 4, 5))
    >>> keys = decoder.prepare_memory(memory)
    >>> first, context, alpha, state = decoder.step(
    ...     inputs[:, 0], state, memory, keys)
    >>> bool(np.allclose(first, states[:, 0], atol=1e-6))
    True
    >>> luong = AttentionRNNDecoder(units=8, attention="general",
    ...                             query="current")
    >>> attentional, contexts = luong(
    ...     inputs, memory, luong.states_from(np.zeros((2, 8), "float32")))
    >>> tuple(attentional.shape), len(luong.states_from(np.zeros((2, 8))))
    ((2, 4, 8), 2)

    Reference:
        Bahdanau, Cho, Bengio. "Neural Machine Translation by Jointly Learning
        to Align and Translate", ICLR 2015, section 3.1 and appendix A.
        Luong, Pham, Manning. "Effective Approaches to Attention-based Neural
        Machine Translation", EMNLP 2015, sections 3 and 3.3 (the scores,
        the attentional hidden state, input feeding).
        Cho et al. "Learning Phrase Representations using RNN
        Encoder-Decoder for Statistical Machine Translation", EMNLP 2014.
        Xu et al. "Show, Attend and Tell: Neural Image Caption Generation
        with Visual Attention", ICML 2015, section 4.1 (hard attention).
    """

    def __init__(self, units, cell="gru", attention="additive",
                 attention_units=None, query="previous", input_feeding=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.units = _validation.positive_int("units", units)
        self.cell_type = _validation.choice("cell", cell, CELLS)
        self.attention_units = _validation.optional_positive_int(
            "attention_units", attention_units
        )
        if isinstance(attention, str):
            _validation.choice("attention", attention, ATTENTIONS)
        elif isinstance(attention, dict):
            attention = keras.saving.deserialize_keras_object(attention)
        if attention is not None and not isinstance(
                attention, (str, ScoreAttention)):
            raise ValueError(
                "`attention` must be one of "
                f"{sorted(ATTENTIONS)}, a ScoreAttention layer or its config, "
                f"or None, received: attention={attention!r}"
            )
        self.attention = attention
        self.query = _validation.choice("query", query, QUERIES)
        if attention is None and query != "previous":
            raise ValueError(
                "`query` chooses the attention's query, and there is no "
                f"attention, received: attention=None, query={query!r}"
            )
        if input_feeding is None:
            input_feeding = query == "current"
        if not isinstance(input_feeding, bool):
            raise ValueError(
                "`input_feeding` must be None or a bool, received: "
                f"input_feeding={input_feeding!r}"
            )
        if input_feeding and query != "current":
            raise ValueError(
                "`input_feeding` feeds back Luong's attentional state, which "
                "only `query='current'` computes, received: "
                f"query={query!r}, input_feeding={input_feeding!r}"
            )
        self.input_feeding = input_feeding

    def _make_attention(self):
        if not isinstance(self.attention, str):
            return self.attention
        if self.attention == "additive":
            return AdditiveAttention(self.attention_units or self.units,
                                     dtype=self.dtype_policy, name="attention")
        return ATTENTIONS[self.attention](dtype=self.dtype_policy,
                                          name="attention")

    def build(self, inputs_shape, memory_shape, initial_state_shape=None):
        _validation.rank("inputs", inputs_shape, (2, 3),
                         "(batch, target_len, input_dim)")
        if self.attention is None:
            _validation.rank("memory", memory_shape, (2,),
                             "(batch, memory_dim): the one context vector "
                             "of a decoder without attention")
        else:
            _validation.rank("memory", memory_shape, (3,),
                             "(batch, source_len, memory_dim)")
        memory_dim = memory_shape[-1]
        if self.attention in ("dot", "scaled_dot") and memory_dim != self.units:
            raise ValueError(
                f"The {self.attention!r} score needs `units` equal to the "
                f"memory size, received: units={self.units}, memory size "
                f"{memory_dim}"
            )
        self.attention_layer = None
        if self.attention is not None:
            self.attention_layer = self._make_attention()
            if not self.attention_layer.built:  # given built: keeps weights
                self.attention_layer.build((inputs_shape[0], self.units),
                                           memory_shape)
        self.cell = CELLS[self.cell_type](
            self.units, dtype=self.dtype_policy, name="cell"
        )
        fed = {"previous": memory_dim, "current": 0}[self.query]
        if self.input_feeding:
            fed = self.units  # h̃_{t-1}
        self.cell.build((inputs_shape[0], inputs_shape[-1] + fed))
        self.attentional = None
        if self.query == "current":
            # W_c of h̃_t = tanh(W_c [c_t; h_t]) (no bias, as in the paper).
            self.attentional = keras.layers.Dense(
                self.units, activation="tanh", use_bias=False,
                dtype=self.dtype_policy, name="attentional",
            )
            self.attentional.build((inputs_shape[0], memory_dim + self.units))

    def states_from(self, hidden):
        """The recurrent state list whose output state is `hidden (B, U)`:
        `[hidden]` for a GRU, `[hidden, zeros]` for an LSTM, followed by
        `h̃_0 = zeros` with input feeding."""
        states = [hidden]
        if self.cell_type == "lstm":
            states.append(ops.zeros_like(hidden))
        if self.input_feeding:
            states.append(ops.zeros_like(hidden))
        return states

    def prepare_memory(self, memory):
        """The key-side part of the score `(B, S, K)`, once per memory
        (without attention, the memory itself: nothing to prepare)."""
        if self.attention_layer is None:
            return memory
        return self.attention_layer.prepare_key(memory)

    def _attend(self, query, memory, prepared_memory, memory_mask, training):
        return self.attention_layer(
            query, memory, key_padding_mask=memory_mask,
            prepared_key=prepared_memory, return_attention_scores=True,
            training=training,
        )  # (B, M), (B, S)

    def _recur(self, parts, states, training):
        """The cell on the concatenated `parts`; `(output, new states)`."""
        cell_input = ops.concatenate(
            [ops.cast(part, self.compute_dtype) for part in parts], axis=-1
        )
        output, new_states = self.cell(cell_input, list(states),
                                       training=training)
        if not isinstance(new_states, (list, tuple)):
            new_states = [new_states]
        return output, list(new_states)

    def _check_hard(self, hard):
        if hard and (self.attention_layer is None or self.query != "previous"):
            raise ValueError(
                "Hard attention (`location_noise` or `argmax_location`) reads "
                "one location chosen from the weights before the recurrence: "
                "it needs attention with query='previous', received: "
                f"attention={self.attention!r}, query={self.query!r}"
            )

    def step(self, inputs, states, memory, prepared_memory,
             memory_mask=None, training=None, location_noise=None,
             argmax_location=False, expectation=None):
        """One decoding position.

        Args:
            inputs: `(B, E)`, the embedded previous token.
            states: the recurrent state list (each `(B, U)`).
            memory: `(B, S, M)`, or `(B, M)` without attention.
            prepared_memory: `prepare_memory(memory)`.
            memory_mask: `(B, S)` boolean.
            location_noise: hard attention (Xu et al.'s stochastic
                attention; `query="previous"` only): `(B,)` uniforms in
                `[0, 1)` that draw one location `s ~ α`
                (`ops.stochastic.sample_locations`); the context is its
                memory row `h_s`.
            argmax_location: hard attention at its most likely location.
            expectation: `(B,)` boolean, with `location_noise`: rows that
                read the expected context `Σ_i α_i h_i` instead.

        Returns:
            `(output (B, U), context (B, M), weights (B, S) or None without
            attention, new states)`. The weights are `α`, whichever
            location was read.
        """
        states = list(states)
        hard = location_noise is not None or argmax_location
        self._check_hard(hard)
        if self.attention_layer is None:
            output, new_states = self._recur([inputs, memory], states,
                                             training)
            return output, memory, None, new_states
        if self.query == "previous":
            query = states[0]  # s_{t-1} (B, U)
            context, weights = self._attend(query, memory, prepared_memory,
                                            memory_mask, training)
            if hard:
                read = stochastic.hard_weights(
                    weights, location_noise, argmax_location, expectation)
                context = ops.einsum(
                    "bs,bsm->bm", ops.cast(read, memory.dtype), memory
                )  # (B, M)
            output, new_states = self._recur([inputs, context], states,
                                             training)
            return output, context, weights, new_states
        # Luong: h_t from [y_{t-1}; h̃_{t-1}], then h_t is the query.
        if self.input_feeding:
            hidden, cell_states = self._recur(
                [inputs, states[-1]], states[:-1], training)
        else:
            hidden, cell_states = self._recur([inputs], states, training)
        context, weights = self._attend(hidden, memory, prepared_memory,
                                        memory_mask, training)
        attentional = self.attentional(ops.concatenate(
            [ops.cast(context, self.compute_dtype),
             ops.cast(hidden, self.compute_dtype)], axis=-1))  # h̃_t (B, U)
        if self.input_feeding:
            cell_states = cell_states + [attentional]
        return attentional, context, weights, cell_states

    def call(self, inputs, memory, initial_state, memory_mask=None,
             prepared_memory=None, return_attention_scores=False,
             training=None, location_noise=None, argmax_location=False,
             expectation=None):
        _validation.rank("inputs", inputs.shape, (3,),
                         "(batch, target_len, input_dim)")
        self._check_hard(location_noise is not None or argmax_location)
        if location_noise is not None:
            _validation.rank("location_noise", location_noise.shape, (2,),
                             "(batch, target_len): one uniform per step")
            known = [(a, b) for a, b in zip(location_noise.shape,
                                            inputs.shape[:2])
                     if a is not None and b is not None]
            if any(a != b for a, b in known):
                raise ValueError(
                    "`location_noise` needs one uniform per step, shaped "
                    "(batch, target_len) = "
                    f"{tuple(inputs.shape[:2])}, received: "
                    f"location_noise.shape={tuple(location_noise.shape)}")
        if expectation is not None and location_noise is None:
            raise ValueError(
                "`expectation` marks rows that read the expected context "
                "instead of a drawn location; it needs `location_noise`, "
                "received: expectation without location_noise")
        if return_attention_scores and self.attention is None:
            raise ValueError(
                "A decoder without attention has no attention weights, "
                "received: return_attention_scores=True with attention=None"
            )
        if not isinstance(initial_state, (list, tuple)):
            initial_state = self.states_from(initial_state)
        prepared = prepared_memory
        if prepared is None:
            prepared = self.prepare_memory(memory)  # (B, S, K)
        batch = ops.shape(memory)[0]
        attends = self.attention_layer is not None

        # `ops.scan` wants each step's output to have the carry's structure,
        # so the carry holds the last step's output, context and weights.
        def body(carry, sequences):
            # (inputs_t,) or (inputs_t, noise_t): None is no scan input.
            inputs_t, noise_t = (tuple(sequences) + (None,))[:2]
            output, context, weights, states = self.step(
                inputs_t, carry["states"], memory, prepared, memory_mask,
                training, location_noise=noise_t,
                argmax_location=argmax_location, expectation=expectation,
            )
            carry = {
                "states": states,
                "output": ops.cast(output, self.compute_dtype),
                "context": ops.cast(context, self.compute_dtype),
            }
            if attends:
                carry["weights"] = ops.cast(weights, "float32")
            return carry, carry

        initial = {
            "states": list(initial_state),
            "output": ops.zeros((batch, self.units), self.compute_dtype),
            "context": ops.zeros((batch, memory.shape[-1]), self.compute_dtype),
        }
        if attends:
            initial["weights"] = ops.zeros((batch, ops.shape(memory)[1]),
                                           "float32")
        # Scan over time: (B, T, E) -> (T, B, E).
        sequences = (ops.moveaxis(inputs, 1, 0),)  # (T, B, E)
        if location_noise is not None:
            sequences += (ops.moveaxis(ops.cast(location_noise, "float32"),
                                       1, 0),)  # (T, B)
        _, steps = ops.scan(body, initial, sequences)
        outputs = ops.moveaxis(steps["output"], 0, 1)  # (B, T, U)
        contexts = ops.moveaxis(steps["context"], 0, 1)  # (B, T, M)
        if return_attention_scores:
            weights = ops.moveaxis(steps["weights"], 0, 1)  # (B, T, S)
            return outputs, contexts, weights
        return outputs, contexts

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "cell": self.cell_type,
                "attention": serialize_attention(self.attention),
                "attention_units": self.attention_units,
                "query": self.query,
                "input_feeding": self.input_feeding,
            }
        )
        return quantized_dtype_config(self, config)
