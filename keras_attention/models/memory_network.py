"""`MemoryNetwork`: the end-to-end memory network of Sukhbaatar et al.
(2015).

Letters: B batch, M memory slots (sentences), J words per sentence,
D embedding size, V vocabulary size, K hops.
"""

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import DotAttention
from keras_attention.models._tied_logits import tied_logits

WEIGHT_TYING = ("adjacent", "layer_wise")


def position_encoding(word_mask, embedding_dim):
    """The paper's position encoding, the weights of the words' embeddings:
    `l_kj = (1 - j/J) - (k/D)(1 - 2j/J)` for word `j = 1..J` of a sentence
    of `J` words and feature `k = 1..D`; 0 for padding words.

    `j` counts the sentence's words (padding skipped) and `J` is its own
    number of words, so a sentence gets the same weights whatever the
    padded width.

    Args:
        word_mask: `(..., J)` boolean, True for words.
        embedding_dim: D.

    Returns:
        float32 `(..., J, D)`.
    """
    mask = ops.cast(word_mask, "float32")  # (..., J)
    length = ops.maximum(ops.sum(mask, axis=-1, keepdims=True), 1.0)
    position = ops.expand_dims(ops.cumsum(mask, axis=-1) / length, -1)
    feature = ops.arange(1, embedding_dim + 1, dtype="float32") / embedding_dim
    weights = (1.0 - position) - feature * (1.0 - 2.0 * position)
    return weights * ops.expand_dims(mask, -1)  # (..., J, D)


def reference_position_encoding(word_mask, embedding_dim):
    """The position encoding of the paper's reference code
    (facebook/MemNN, `MemN2N-babi-matlab/build_model.m`):
    `l_kj = 1 + 4 (k − (D+1)/2)(j − (J+1)/2) / (D J)` for word `j` of the
    padded width `J − 1` (the code's `J` counts one more slot, its time
    word) and feature `k = 1..D`; 0 for padding words. Unlike the paper's
    formula (`position_encoding`) it is centred on 1, not 0.5, and `J` is
    the padded width, the same for every sentence. On bAbI task 16 the
    paper's protocol reached 51% error with the paper's formula on all of
    10 seeds, 0.5–0.7% with this one (reproductions/systems/babi.py, 2 seeds).

    Args:
        word_mask: `(..., J − 1)` boolean, True for words.
        embedding_dim: D.

    Returns:
        float32 `(..., J − 1, D)`.
    """
    mask = ops.cast(word_mask, "float32")  # (..., W)
    width = word_mask.shape[-1] + 1  # J: the words and the time word
    word = ops.arange(1, width, dtype="float32")[:, None]  # (W, 1)
    feature = ops.arange(1, embedding_dim + 1, dtype="float32")[None, :]
    weights = 1.0 + 4.0 * (feature - (embedding_dim + 1) / 2.0) * (
        word - (width + 1) / 2.0) / (embedding_dim * width)  # (W, D)
    return weights * ops.expand_dims(mask, -1)  # (..., W, D)


def memory_ages(slot_mask):
    """The temporal index of each memory slot: the number of sentences
    after it, so the most recent sentence is 0, as in the paper (which
    writes the memory in reverse order). `(B, M)` boolean -> `(B, M)`
    int32."""
    count = ops.cast(slot_mask, "int32")
    later = ops.flip(ops.cumsum(ops.flip(count, 1), axis=1), 1)  # (B, M)
    return later - count


@keras.saving.register_keras_serializable(package="keras_attention")
class MemoryNetwork(keras.Model):
    """An end-to-end memory network (MemN2N) for question answering.

    The story's sentences `x_i` are embedded as memory keys `m_i = Σ_j l_j
    ∘ A x_ij + T_A(i)` and values `c_i = Σ_j l_j ∘ C x_ij + T_C(i)`, the
    question as `u = Σ_j l_j ∘ B q_j` (`l` the position encoding, `T` the
    temporal encoding indexed by the sentence's age). Each hop attends
    with `DotAttention`: `p_i = softmax(uᵀ m_i)`, `o = Σ_i p_i c_i`, then
    `u ← u + o` (adjacent) or `u ← H u + o` (layer-wise). The answer is
    `â = softmax(W u^{K+1})`, `u^{K+1} = o^K + u^K` (adjacent; layer-wise
    `o^K + H u^K`); the model returns its logits.

    Weight tying, as in the paper: `"adjacent"` uses K + 1 embedding
    matrices `E_0..E_K`, hop `k` reading keys with `E_{k-1}` and values
    with `E_k` (so `A^{k+1} = C^k`), the question with `B = E_0 = A^1`,
    and `W = E_Kᵀ = C^Kᵀ` unless `tie_answer=False`; the temporal tables
    are tied the same way. `"layer_wise"` shares `A`, `C` (and `T_A`,
    `T_C`) across hops, embeds the question with its own `B`, maps `u`
    with a linear `H` between hops, and answers with a separate `W`
    unless `tie_answer=True` (then `W = Cᵀ`).

    Args:
        vocabulary_size: V, the ids of words and answers; id 0 pads.
        embedding_dim: D.
        hops: K, a positive int.
        memory_size: the most sentences a story may have (the temporal
            tables' size).
        weight_tying: `"adjacent"` or `"layer_wise"`.
        position_encoding: `True`: weight the words by the paper's
            position encoding (`position_encoding`); `"reference"`: by
            its reference code's (`reference_position_encoding`);
            `False`: a bag of words.
        temporal_encoding: add `T_A`, `T_C` to the memories.
        tie_answer: `W` is the last value embedding's transpose; None
            means the paper's choice (True for adjacent, False for
            layer-wise).
        embeddings_stddev: the standard deviation of the normal
            initializer of every weight (0.1 in the paper).
        random_noise: float in [0, 1), the paper's random noise (0.1
            there): in training, each sentence's age grows by a random gap
            (as if empty memories were inserted after each sentence with
            this probability), which regularizes the temporal tables.
        seed: int or None, for the random noise.
        attend_to_empty: False: a story's empty slots get no attention
            (masked out of the softmax). True: as the paper's reference
            code, they take part in it with key and value zero (no
            temporal encoding either), so their score is 0 and a hop can
            put weight on nothing; then the number of slots, M, matters
            (the reference code uses the longest story's length, 50 at
            most).

    Training in the paper starts linear: set `model.linear_start = True`
    (the hops' weights are the raw scores `uᵀ m_i`, no softmax) for the
    first epochs, then False (see `linear_start`).

    Call arguments:
        inputs: dict with `"story"` `(batch, M, J)` and `"question"`
            `(batch, J)` int word ids, 0 for padding. A slot whose words
            are all padding is an empty memory: it gets zero attention
            (unless `attend_to_empty`).
        return_attention: also return the attention of every hop.
        training: bool.

    Returns:
        float32 answer logits `(batch, V)` and, with `return_attention`,
        the weights `(batch, K, M)` (rows of empty memories are zero unless
        `attend_to_empty`).

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import MemoryNetwork
    >>> model = MemoryNetwork(vocabulary_size=30, hops=3)
    >>> story = np.array([[[4, 5, 6], [7, 8, 0], [0, 0, 0]]])
    >>> logits, attention = model(
    ...     {"story": story, "question": np.array([[9, 4, 0]])},
    ...     return_attention=True)
    >>> tuple(logits.shape), tuple(attention.shape)
    ((1, 30), (1, 3, 3))
    >>> float(attention[0, 0, 2])  # the empty slot
    0.0

    Reference:
        Sukhbaatar, Szlam, Weston, Fergus. "End-To-End Memory Networks",
        NeurIPS 2015.
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim=20,
        hops=3,
        memory_size=50,
        weight_tying="adjacent",
        position_encoding=True,
        temporal_encoding=True,
        tie_answer=None,
        embeddings_stddev=0.1,
        random_noise=0.0,
        seed=None,
        attend_to_empty=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = _validation.positive_int(
            "vocabulary_size", vocabulary_size
        )
        self.embedding_dim = _validation.positive_int(
            "embedding_dim", embedding_dim
        )
        self.hops = _validation.positive_int("hops", hops)
        self.memory_size = _validation.positive_int("memory_size",
                                                    memory_size)
        self.weight_tying = _validation.choice("weight_tying", weight_tying,
                                               WEIGHT_TYING)
        if isinstance(position_encoding, str):
            self.position_encoding = _validation.choice(
                "position_encoding", position_encoding, ("reference",))
        else:
            self.position_encoding = bool(position_encoding)
        self.temporal_encoding = bool(temporal_encoding)
        self.tie_answer = None if tie_answer is None else bool(tie_answer)
        self.embeddings_stddev = _validation.positive_float(
            "embeddings_stddev", embeddings_stddev
        )
        self.random_noise = _validation.rate("random_noise", random_noise)
        self.seed = seed
        self.attend_to_empty = bool(attend_to_empty)
        adjacent = weight_tying == "adjacent"
        tie = adjacent if tie_answer is None else bool(tie_answer)

        def table(size, name):
            return keras.layers.Embedding(
                size, embedding_dim, name=name, dtype=self.dtype_policy,
                embeddings_initializer=self._initializer(),
            )

        # Adjacent: E_0..E_K (hop k: keys E_{k-1}, values E_k); layer-wise:
        # E_0 = B, E_1 = A, E_2 = C.
        count = hops + 1 if adjacent else 3
        self.word_embeddings = [table(vocabulary_size, f"embedding_{i}")
                                for i in range(count)]
        self.temporal_embeddings = []
        if self.temporal_encoding:
            self.temporal_embeddings = [
                table(memory_size, f"temporal_{i}")
                for i in range(1 if not adjacent else 0, count)
            ]
        self.hop_map = None
        if not adjacent:
            self.hop_map = keras.layers.Dense(
                embedding_dim, use_bias=False, name="hop_map",
                kernel_initializer=self._initializer(),
                dtype=self.dtype_policy,
            )
        self.answer = None
        if not tie:
            self.answer = keras.layers.Dense(
                vocabulary_size, use_bias=False, name="answer",
                kernel_initializer=self._initializer(),
                dtype=self.dtype_policy,
            )
        self.attention = DotAttention(dtype=self.dtype_policy,
                                      name="attention")
        self.seed_generator = keras.random.SeedGenerator(seed)
        # 1: softmax on the hops; 0: linear start (see `linear_start`).
        self.softmax_gate = self.add_weight(
            shape=(), initializer="ones", trainable=False,
            name="softmax_gate",
        )

    @property
    def linear_start(self):
        """Whether the hops are linear: `p_i = uᵀ m_i`, no softmax (the
        paper's linear start; the answer keeps its softmax). Set it True
        to train the first epochs linear, then False to re-insert the
        softmax; a variable holds it, so compiled training functions
        follow."""
        return bool(ops.convert_to_numpy(self.softmax_gate) == 0.0)

    @linear_start.setter
    def linear_start(self, value):
        self.softmax_gate.assign(0.0 if value else 1.0)

    def _initializer(self):
        return keras.initializers.RandomNormal(stddev=self.embeddings_stddev)

    def hop_tables(self, hop):
        """The (key, value) word embeddings and, with temporal encoding,
        the (key, value) temporal tables of hop `hop` (0-based)."""
        if self.weight_tying == "adjacent":
            words = self.word_embeddings[hop], self.word_embeddings[hop + 1]
            if self.temporal_encoding:
                temporal = self.temporal_embeddings[hop:hop + 2]
                return words, tuple(temporal)
            return words, None
        words = self.word_embeddings[1], self.word_embeddings[2]
        return words, (tuple(self.temporal_embeddings)
                       if self.temporal_encoding else None)

    def answer_weights(self):
        """W as a `(D, V)` matrix."""
        if self.answer is not None:
            return self.answer.kernel
        return ops.transpose(self.word_embeddings[-1].embeddings)

    def build(self, input_shape):
        for layer in self.word_embeddings + self.temporal_embeddings:
            layer.build(None)
        if self.hop_map is not None:
            self.hop_map.build((None, self.embedding_dim))
        if self.answer is not None:
            self.answer.build((None, self.embedding_dim))
        vector = (None, self.embedding_dim)
        memory = (None, None, self.embedding_dim)
        self.attention.build(vector, memory)

    def _check(self, inputs):
        if not isinstance(inputs, dict) or set(inputs) != {"story",
                                                           "question"}:
            raise ValueError(
                "`inputs` must be a dict with the keys 'story' and "
                "'question', received: "
                f"inputs={sorted(inputs) if isinstance(inputs, dict) else inputs!r}"
            )
        story, question = inputs["story"], inputs["question"]
        _validation.rank("story", story.shape, (3,), "(batch, M, J)")
        _validation.rank("question", question.shape, (2,), "(batch, J)")
        slots = story.shape[1]
        if slots is not None and slots > self.memory_size:
            raise ValueError(
                f"`story` has {slots} slots, more than memory_size="
                f"{self.memory_size}: received story.shape={tuple(story.shape)}"
            )
        return story, question

    def _embed(self, table, words, weights):
        """Σ_j l_j ∘ E x_j: `(..., J)` ids, `(..., J, D)` -> `(..., D)`."""
        embedded = ops.cast(table(words), "float32")  # (..., J, D)
        return ops.sum(embedded * weights, axis=-2)

    def _word_weights(self, words):
        mask = ops.not_equal(words, 0)  # (..., J)
        if self.position_encoding == "reference":
            return reference_position_encoding(mask, self.embedding_dim)
        if self.position_encoding:
            return position_encoding(mask, self.embedding_dim)
        return ops.expand_dims(ops.cast(mask, "float32"), -1)

    def call(self, inputs, return_attention=False, training=None):
        story, question = self._check(inputs)
        story = ops.cast(story, "int32")
        question = ops.cast(question, "int32")
        slot_mask = ops.any(ops.not_equal(story, 0), axis=-1)  # (B, M)
        story_weights = self._word_weights(story)  # (B, M, J, D)
        ages = memory_ages(slot_mask)
        if training and self.temporal_encoding and self.random_noise > 0:
            ages = ages + self._random_gaps(slot_mask)
        ages = ops.minimum(ages, self.memory_size - 1)
        embedded = {}  # embedding layer -> story memories (B, M, D)

        def memories(words, temporal):
            if id(words) not in embedded:
                embedded[id(words)] = self._embed(words, story, story_weights)
            memory = embedded[id(words)]
            if temporal is not None:
                time = ops.cast(temporal(ages), "float32")  # (B, M, D)
                if self.attend_to_empty:  # empty slots stay zero
                    time = time * ops.expand_dims(
                        ops.cast(slot_mask, "float32"), -1)
                memory = memory + time
            return memory

        state = self._embed(self.word_embeddings[0], question,
                            self._word_weights(question))  # u (B, D)
        attention = []
        for hop in range(self.hops):
            words, temporal = self.hop_tables(hop)
            temporal = temporal or (None, None)
            keys = memories(words[0], temporal[0])  # m (B, M, D)
            values = memories(words[1], temporal[1])  # c (B, M, D)
            output, weights = self.attention(
                state, values, key=keys,
                key_padding_mask=None if self.attend_to_empty else slot_mask,
                return_attention_scores=True, training=training,
            )  # o (B, D), p (B, M)
            output, weights = self._maybe_linear(
                state, keys, values, slot_mask, output, weights
            )
            if self.hop_map is not None:
                state = ops.cast(self.hop_map(state), "float32")
            state = state + ops.cast(output, "float32")  # u^{k+1}
            attention.append(ops.cast(weights, "float32"))
        if self.answer is None:  # W = E_Kᵀ, also when E_K is int8
            logits = ops.cast(
                tied_logits(state, self.word_embeddings[-1]), "float32"
            )  # (B, V)
        else:
            logits = ops.matmul(
                state, ops.cast(self.answer_weights(), "float32")
            )  # (B, V)
        if return_attention:
            return logits, ops.stack(attention, axis=1)  # (B, K, M)
        return logits

    def _random_gaps(self, slot_mask):
        """The paper's random noise: as if empty memories were inserted
        after each sentence with probability `random_noise`, the older
        sentences' ages grow by the gaps after them. `(B, M)` int32."""
        count = ops.cast(slot_mask, "int32")
        draws = keras.random.uniform(ops.shape(slot_mask),
                                     seed=self.seed_generator)
        gaps = ops.cast(draws < self.random_noise, "int32") * count
        return ops.flip(ops.cumsum(ops.flip(gaps, 1), axis=1), 1)

    def _maybe_linear(self, state, keys, values, slot_mask, output, weights):
        """The hop's output and weights, blended with the linear ones
        (`p_i = uᵀ m_i`, empty slots 0) by `softmax_gate`."""
        gate = ops.cast(self.softmax_gate, "float32")
        scores = self.attention.score(
            ops.expand_dims(state, 1), keys
        )[:, 0] * ops.cast(slot_mask, "float32")  # (B, M)
        linear = ops.einsum("bm,bmd->bd", scores, values)  # (B, D)
        output = gate * ops.cast(output, "float32") + (1 - gate) * linear
        weights = gate * ops.cast(weights, "float32") + (1 - gate) * scores
        return output, weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "hops": self.hops,
                "memory_size": self.memory_size,
                "weight_tying": self.weight_tying,
                "position_encoding": self.position_encoding,
                "temporal_encoding": self.temporal_encoding,
                "tie_answer": self.tie_answer,
                "embeddings_stddev": self.embeddings_stddev,
                "random_noise": self.random_noise,
                "seed": self.seed,
                "attend_to_empty": self.attend_to_empty,
            }
        )
        return config
