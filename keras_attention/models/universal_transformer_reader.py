"""`UniversalTransformerReader`: a story read by a Universal Transformer
encoder to answer a question (Dehghani et al., 2019, bAbI).

Letters: B batch, M story sentences (memory slots), J words per sentence,
D model size, V vocabulary size.
"""

import keras
import numpy as np
from keras import ops

from keras_attention import _validation
from keras_attention.layers import UniversalTransformerEncoder

READOUTS = ("mean", "question")
# `act_style` -> the encoder's ACT arguments. tensor2tensor's halting unit
# is a dense layer under its "uniform_unit_scaling" initializer (variance
# scaling over the mean of fan-in and fan-out, uniform, gain 1: variance
# 2/(D+1) for the unit's D inputs) reading the step input, its bias 1.0;
# its ACT stops a position at the cap without a remainder and
# interpolates the output.
ACT_STYLES = {
    "graves": {},
    "tensor2tensor": {
        "halting_input": "state", "halt_at_cap": False,
        "act_output": "interpolate",
        "halting_initializer": {"class_name": "VarianceScaling", "config": {
            "scale": 1.0, "mode": "fan_avg", "distribution": "uniform"}}},
}


def newest_first(story):
    """A story's sentences newest first, the empty slots still last.

    `(B, M, J)` word ids, the sentences in slots `0..n-1` oldest first (as
    `keras_attention.data.babi.vectorize_babi` writes them) -> the same
    sentences with the most recent in slot 0, the other slots 0.
    """
    filled = ops.any(ops.not_equal(story, 0), axis=-1)  # (B, M)
    return _reverse_filled(story, filled, ops.zeros_like(story))


def _reverse_filled(values, filled, empty):
    """`values` `(B, M, ...)` with slots `0..n-1` in reverse order (`n`
    the row's count of `filled` `(B, M)`), the other slots from `empty`
    (same shape as `values`)."""
    count = ops.sum(ops.cast(filled, "int32"), axis=1, keepdims=True)
    slots = ops.arange(ops.shape(values)[1], dtype="int32")[None]  # (1, M)
    source = count - 1 - slots  # (B, M): slot k reads slot n-1-k
    index = ops.maximum(source, 0)
    kept = ops.greater_equal(source, 0)
    while len(index.shape) < len(values.shape):
        index, kept = index[..., None], kept[..., None]
    gathered = ops.take_along_axis(values, index, axis=1)
    return ops.where(kept, gathered, empty)


@keras.saving.register_keras_serializable(package="keras_attention")
class UniversalTransformerReader(keras.Model):
    """Question answering over a story with a Universal Transformer.

    Each sentence (and the question) is one vector: its words' embeddings
    weighted by a learned multiplicative position mask (initialised to
    MemN2N's position encoding, as in the paper's bAbI set-up) and summed.
    The word embeddings are drawn `N(0, 1/D)` and multiplied by `√D`, as
    tensor2tensor's `multiply_embedding_mode="sqrt_depth"`: a sentence
    vector is then as large as the coordinate embedding added before every
    step (Keras' default `U(−0.05, 0.05)` makes it some 50 times smaller,
    and the block sees little but positions; a two-hop task is then not
    learnt). The question, then the story's sentences oldest first (newest
    first with `newest_first=True`), form one sequence, which a
    `UniversalTransformerEncoder` (one block, `max_steps` recurrent steps,
    ACT if `act`; pre-norm with a final layer normalization by default,
    as tensor2tensor's UT) reads. The answer is a softmax over the
    vocabulary from the mean of every real position's final state
    (`readout="mean"`, tensor2tensor's class-label head, as the authors'
    bAbI code reads it) or from the question's (`readout="question"`).
    With ACT, the mean gives every position's halting a part in the
    answer's loss; with the question's state alone, the sentences' halting
    sees only the ponder cost and the shared halting unit collapses to one
    step (see `UniversalTransformerEncoder`). Empty story slots are
    padding (after the sentences, so how many there are changes nothing).

    Newest first, a sentence's position is its age counted back from the
    question, as MemN2N's temporal encoding counts it, so "the latest
    sentence about the object" is the nearest one in every story; oldest
    first (the paper's order), the same sentence sits at a position that
    depends on the story's length.

    Args:
        vocabulary_size: V (word id 0 is padding).
        sentence_size: J, the words per sentence the inputs are padded to.
        hidden_dim, num_heads, intermediate_dim: the block's sizes.
        max_steps, act, act_threshold, ponder_weight, dropout: the
            encoder's (`UniversalTransformerEncoder`).
        newest_first: bool; the sentences' order in the sequence.
        normalize_first: bool; pre-norm blocks and a final layer
            normalization (True, tensor2tensor's UT) or post-norm blocks.
            Post-norm with four or more steps did not learn a two-hop task
            that pre-norm learns (docs/models/universal-transformer.md).
        readout: `"mean"` (every real position's final state, averaged)
            or `"question"` (the question's final state).
        act_style: `"graves"` (default: the encoder's defaults, the
            halting unit reading a unit-norm input from a zero kernel) or
            `"tensor2tensor"` (the authors' code: the unit reads the step
            input itself from a kernel of variance 2/(D + 1), a position
            at the cap stops without a remainder, the output
            interpolates; see `UniversalTransformerEncoder`).

    Call arguments:
        inputs: dict `{"story": (B, M, J) int, "question": (B, J) int}`,
            as `keras_attention.data.babi.vectorize_babi` gives them.
        return_ponder: bool; also return the ponder time of the question
            and of each sentence `(B, 1 + M)`, the sentences in the
            inputs' slot order whatever `newest_first` is (`N + R`).
        return_steps: bool; also return (after the ponder times, if
            asked) the steps taken `N`, in the same order.
        training: bool.

    Returns:
        Answer logits `(B, V)`, then the ponder times if asked.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import UniversalTransformerReader
    >>> reader = UniversalTransformerReader(
    ...     vocabulary_size=20, sentence_size=4, hidden_dim=16, num_heads=2,
    ...     intermediate_dim=32, max_steps=3, act=True)
    >>> story = np.random.default_rng(0).integers(0, 20, (2, 5, 4))
    >>> question = np.random.default_rng(1).integers(1, 20, (2, 4))
    >>> logits, ponder = reader({"story": story, "question": question},
    ...                         return_ponder=True)
    >>> tuple(logits.shape), tuple(ponder.shape)
    ((2, 20), (2, 6))

    References:
        Dehghani et al. "Universal Transformers", ICLR 2019, section 3.1.
        Sukhbaatar et al. "End-To-End Memory Networks", NeurIPS 2015.
    """

    def __init__(self, vocabulary_size, sentence_size, hidden_dim=64,
                 num_heads=4, intermediate_dim=128, max_steps=4, act=False,
                 act_threshold=0.99, ponder_weight=0.01, dropout=0.0,
                 newest_first=False, normalize_first=True, readout="mean",
                 act_style="graves", **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = _validation.positive_int("vocabulary_size",
                                                        vocabulary_size)
        self.sentence_size = _validation.positive_int("sentence_size",
                                                      sentence_size)
        self.hidden_dim = _validation.positive_int("hidden_dim", hidden_dim)
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        if hidden_dim % num_heads:
            raise ValueError(
                "`hidden_dim` must be divisible by `num_heads`, received: "
                f"hidden_dim={hidden_dim}, num_heads={num_heads}")
        self.intermediate_dim = _validation.positive_int("intermediate_dim",
                                                         intermediate_dim)
        if not isinstance(newest_first, (bool, np.bool_)):
            raise ValueError(
                "`newest_first` must be a bool, received: "
                f"newest_first={newest_first!r}")
        self.newest_first = bool(newest_first)
        if not isinstance(normalize_first, (bool, np.bool_)):
            raise ValueError(
                "`normalize_first` must be a bool, received: "
                f"normalize_first={normalize_first!r}")
        self.normalize_first = bool(normalize_first)
        self.readout = _validation.choice("readout", readout, READOUTS)
        self.act_style = _validation.choice("act_style", act_style,
                                            tuple(ACT_STYLES))
        policy = self.dtype_policy
        # tensor2tensor's "sqrt_depth": N(0, 1/D), times √D in _sentences.
        self.word_embedding = keras.layers.Embedding(
            self.vocabulary_size, self.hidden_dim,
            embeddings_initializer=keras.initializers.RandomNormal(
                stddev=self.hidden_dim ** -0.5),
            dtype=policy, name="word_embedding")
        self.encoder = UniversalTransformerEncoder(
            intermediate_dim=self.intermediate_dim, num_heads=self.num_heads,
            max_steps=max_steps, act=act, act_threshold=act_threshold,
            ponder_weight=ponder_weight, dropout=dropout,
            normalize_first=self.normalize_first, dtype=policy,
            name="universal_transformer", **ACT_STYLES[self.act_style])
        # The encoder's checked values.
        self.max_steps = self.encoder.max_steps
        self.act = self.encoder.act
        self.act_threshold = self.encoder.act_threshold
        self.ponder_weight = self.encoder.ponder_weight
        self.dropout = self.encoder.dropout
        self.answer = keras.layers.Dense(self.vocabulary_size, dtype=policy,
                                         name="answer")

    def build(self, input_shape=None):
        # The learned position mask (J, D), from MemN2N's encoding of a
        # full sentence, l_kj = (1 - j/J) - (k/D)(1 - 2j/J) (NumPy: the
        # model may be built inside a traced function).
        position = np.arange(1, self.sentence_size + 1)[:, None] / (
            self.sentence_size)
        feature = np.arange(1, self.hidden_dim + 1)[None, :] / self.hidden_dim
        initial = (1.0 - position) - feature * (1.0 - 2.0 * position)
        self.position_mask = self.add_weight(
            name="position_mask", shape=(self.sentence_size, self.hidden_dim),
            initializer=keras.initializers.Constant(initial.astype("float32")))
        self.word_embedding.build((None, None))
        self.encoder.build((None, None, self.hidden_dim))
        self.answer.build((None, self.hidden_dim))
        self.built = True

    def _sentences(self, words):
        """`(..., J)` word ids -> `(..., D)`: masked, position-weighted sum."""
        if words.shape[-1] != self.sentence_size:
            raise ValueError(
                f"Sentences must be padded to sentence_size="
                f"{self.sentence_size} words, received: shape "
                f"{tuple(words.shape)}")
        embedded = self.word_embedding(words) * ops.cast(
            self.hidden_dim ** 0.5, self.compute_dtype)  # (..., J, D)
        present = ops.cast(ops.not_equal(words, 0), embedded.dtype)[..., None]
        weights = ops.cast(self.position_mask, embedded.dtype)
        return ops.sum(embedded * weights * present, axis=-2)  # (..., D)

    def call(self, inputs, return_ponder=False, return_steps=False,
             training=None):
        story = ops.cast(inputs["story"], "int32")  # (B, M, J)
        question = ops.cast(inputs["question"], "int32")  # (B, J)
        if self.newest_first:
            story = newest_first(story)  # the padding is still last
        sentences = self._sentences(story)  # (B, M, D)
        asked = self._sentences(question)[:, None]  # (B, 1, D)
        sequence = ops.concatenate([asked, sentences], axis=1)  # (B, 1+M, D)
        slot_mask = ops.any(ops.not_equal(story, 0), axis=-1)  # (B, M)
        mask = ops.concatenate(
            [ops.ones_like(slot_mask[:, :1]), slot_mask], axis=1)
        states, ponder, steps = self.encoder(
            sequence, padding_mask=mask, return_ponder=True,
            return_steps=True, training=training)
        if self.readout == "mean":
            real = ops.cast(mask, states.dtype)[..., None]  # (B, 1+M, 1)
            pooled = ops.sum(states * real, axis=1) / ops.sum(real, axis=1)
        else:
            pooled = states[:, 0]  # the question's state
        logits = self.answer(pooled)  # (B, V)
        extra = (ponder,) * bool(return_ponder) + (steps,) * bool(return_steps)
        if self.newest_first:  # back to the inputs' slots
            extra = tuple(ops.concatenate([times[:, :1], _reverse_filled(
                times[:, 1:], slot_mask, times[:, 1:])], axis=1)
                for times in extra)
        return (logits, *extra) if extra else logits

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary_size": self.vocabulary_size,
            "sentence_size": self.sentence_size,
            "hidden_dim": self.hidden_dim,
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "max_steps": self.max_steps,
            "act": self.act,
            "act_threshold": self.act_threshold,
            "ponder_weight": self.ponder_weight,
            "dropout": self.dropout,
            "newest_first": self.newest_first,
            "normalize_first": self.normalize_first,
            "readout": self.readout,
            "act_style": self.act_style,
        })
        return config
