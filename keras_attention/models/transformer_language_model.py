"""`TransformerLanguageModel`: a decoder-only Transformer over token
sequences, each block's self-attention chosen by name.

Letters: B batch, T length, P prompt length, V vocabulary, D model size.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_attention import _validation
from keras_attention import ops as attention_ops
from keras_attention.layers import LocalSelfAttention
from keras_attention.layers import MemoryCompressedAttention
from keras_attention.layers import MultiHeadSelfAttention
from keras_attention.layers import RelativeAttention
from keras_attention.layers import SinusoidalPositionEmbedding
from keras_attention.layers import TransformerDecoder

ATTENTIONS = ("full", "relative", "local", "compressed")
"""The self-attention of a block, by name: causal `MultiHeadSelfAttention`
over every earlier position; `RelativeAttention` (Shaw et al.; the Music
Transformer's, with `max_relative_position` and `relative_values`);
`LocalSelfAttention` (a causal window of `window` positions); and
`MemoryCompressedAttention` (keys and values compressed by `compression`,
Liu et al.)."""
POSITIONS = ("sinusoidal", "none")


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerLanguageModel(keras.Model):
    """A decoder-only Transformer language model (GPT-style blocks).

    Token embeddings (scaled by √D), plus sinusoidal positions
    (`positions="sinusoidal"`; `"none"` leaves position to relative
    attention), plus, with `voices`, a learned label of the voice each
    position belongs to (the Music Transformer's instrument labels), then
    `num_layers` `TransformerDecoder` blocks without cross-attention, each
    with the causal self-attention its entry of `attention` names (see
    `ATTENTIONS`): one name for every block, or one per block, e.g. Liu
    et al.'s T-DMCA stack `["local", "compressed", "local", "compressed",
    "local"]`. Then a final layer normalization
    (the blocks normalize first) and the logits over the vocabulary.

    The model reads the inputs, already shifted: `token_ids[:, 0]` is a
    start token and the logits at `t` predict `token_ids[:, t + 1]` (the
    targets). Positions holding `padding_id` are masked as keys.

    Generation (`generate`) samples with Gumbel noise drawn up front from
    `seed`, so decoding with the blocks' key/value caches and re-running
    the model on the whole prefix at every step draw the same tokens.
    Local attention has no cache: it generates by full passes only.

    Args:
        vocabulary_size: int >= 2, V.
        num_layers, num_heads, hidden_dim, intermediate_dim: the blocks'
            sizes; `hidden_dim` divisible by `num_heads`.
        dropout: float in [0, 1), in the blocks and after the embeddings.
        attention: a name of `ATTENTIONS`, or a list of `num_layers` names.
        positions: `"sinusoidal"` or `"none"`.
        max_relative_position: int >= 1, the clipping distance of
            relative attention.
        relative_values: bool, relative attention's value terms too.
        window: int >= 1, the distance local attention reaches back.
        compression: int >= 1, memory-compressed attention's kernel and
            stride.
        padding_id: int, the token that pads a sequence.
        voices: None, or an int >= 1: the sequence interleaves `voices`
            parts after a start token (a chorale's S, A, T, B of each
            step), so position `p >= 1` belongs to voice `(p - 1) mod
            voices` and position 0 has a label of its own; a learned
            embedding of that label is added to each token (Huang et
            al.'s "instrument labels"). Positions are `position_ids` when
            given, else `0 .. T - 1` (the cache's slots when decoding).
        attention_impl: `"auto"`, `"dense"` or `"blockwise"`: how full and
            relative attention compute their core (see
            `MultiHeadAttention`; `"auto"` goes block-wise, in memory
            linear in the length, from 1,024 keys on TensorFlow).

    Call arguments:
        token_ids: `(B, T)` ints in `[0, vocabulary_size)`.
        padding_mask: `(B, T)` boolean, False at padding; defaults to
            `token_ids != padding_id`.
        position_ids: `(B, T)` ints, the positions the sinusoids encode;
            defaults to `0 .. T - 1` in every row (a sequence packed from
            padded parts counts its real tokens only with these).
        training: bool; enables dropout.

    Returns:
        Logits `(B, T, vocabulary_size)`, causal: those at `t` depend on
        `token_ids[:, :t + 1]` only.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import TransformerLanguageModel
    >>> model = TransformerLanguageModel(
    ...     vocabulary_size=12, num_layers=2, num_heads=2, hidden_dim=8,
    ...     intermediate_dim=16, attention=["relative", "compressed"],
    ...     positions="none", max_relative_position=4)
    >>> tokens = np.random.default_rng(0).integers(1, 12, (2, 9))
    >>> tuple(model(tokens).shape)
    (2, 9, 12)
    >>> prompt = tokens[:, :3]
    >>> sampled = model.generate(prompt, steps=5, seed=1)
    >>> sampled.shape
    (2, 8)
    >>> bool((sampled == model.generate(prompt, 5, seed=1,
    ...                                 use_cache=False)).all())
    True

    References:
        Vaswani et al. "Attention Is All You Need", NeurIPS 2017.
        Liu et al. "Generating Wikipedia by Summarizing Long Sequences",
        ICLR 2018 (the decoder-only Transformer, T-DMCA).
        Huang et al. "Music Transformer", ICLR 2019.
    """

    def __init__(self, vocabulary_size, num_layers=2, num_heads=4,
                 hidden_dim=64, intermediate_dim=256, dropout=0.0,
                 attention="full", positions="sinusoidal",
                 max_relative_position=32, relative_values=False, window=32,
                 compression=3, padding_id=0, attention_impl="auto",
                 voices=None, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = _validation.positive_int("vocabulary_size",
                                                        vocabulary_size)
        if self.vocabulary_size < 2:
            raise ValueError(
                "`vocabulary_size` must be an int >= 2, received: "
                f"vocabulary_size={vocabulary_size!r}")
        self.num_layers = _validation.positive_int("num_layers", num_layers)
        self.num_heads = _validation.positive_int("num_heads", num_heads)
        self.hidden_dim = _validation.positive_int("hidden_dim", hidden_dim)
        if hidden_dim % num_heads:
            raise ValueError(
                "`hidden_dim` must be divisible by `num_heads`, received: "
                f"hidden_dim={hidden_dim}, num_heads={num_heads}")
        self.intermediate_dim = _validation.positive_int("intermediate_dim",
                                                         intermediate_dim)
        self.dropout = _validation.rate("dropout", dropout)
        self.attention = self._attention_list(attention)
        self.positions = _validation.choice("positions", positions, POSITIONS)
        self.max_relative_position = _validation.positive_int(
            "max_relative_position", max_relative_position)
        self.relative_values = bool(relative_values)
        self.window = _validation.positive_int("window", window)
        self.compression = _validation.positive_int("compression",
                                                    compression)
        if (isinstance(padding_id, bool) or not isinstance(padding_id, int)
                or not 0 <= padding_id < self.vocabulary_size):
            raise ValueError(
                "`padding_id` must be an int in [0, vocabulary_size), "
                f"received: padding_id={padding_id!r}")
        self.padding_id = padding_id
        self.attention_impl = _validation.choice(
            "attention_impl", attention_impl, ("auto", "dense", "blockwise"))
        if voices is not None:
            voices = _validation.positive_int("voices", voices)
        self.voices = voices

        policy = self.dtype_policy
        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size, self.hidden_dim, dtype=policy,
            name="token_embedding")
        self.position_embedding = SinusoidalPositionEmbedding(
            dtype=policy, name="position_embedding")
        self.voice_embedding = None
        if self.voices is not None:  # labels 0 .. voices - 1, the start's
            self.voice_embedding = keras.layers.Embedding(
                self.voices + 1, self.hidden_dim, dtype=policy,
                name="voice_embedding")
        self.embedding_dropout = keras.layers.Dropout(
            self.dropout, dtype=policy, name="embedding_dropout")
        self.blocks = [
            TransformerDecoder(
                intermediate_dim=self.intermediate_dim,
                num_heads=self.num_heads, dropout=self.dropout,
                normalize_first=True,
                self_attention=self._self_attention(kind, number),
                dtype=policy, name=f"decoder_{number}")
            for number, kind in enumerate(self.attention)
        ]
        self.final_norm = keras.layers.LayerNormalization(
            epsilon=1e-5, dtype=policy, name="final_norm")
        self.output_dense = keras.layers.Dense(
            self.vocabulary_size, dtype=policy, name="logits")

    def _attention_list(self, attention):
        names = ([attention] * self.num_layers if isinstance(attention, str)
                 else list(attention))
        if len(names) != self.num_layers:
            raise ValueError(
                f"`attention` must be one name of {ATTENTIONS} or a list of "
                f"num_layers={self.num_layers} of them, received: "
                f"attention={attention!r}")
        for name in names:
            _validation.choice("attention", name, ATTENTIONS)
        return names

    def _self_attention(self, kind, number):
        common = dict(num_heads=self.num_heads,
                      key_dim=self.hidden_dim // self.num_heads,
                      dropout=self.dropout, dtype=self.dtype_policy,
                      name=f"{kind}_attention_{number}")
        if kind == "full":
            return MultiHeadSelfAttention(attention_impl=self.attention_impl,
                                          **common)
        if kind == "relative":
            return RelativeAttention(
                max_relative_position=self.max_relative_position,
                relative_values=self.relative_values,
                attention_impl=self.attention_impl, **common)
        if kind == "local":
            return LocalSelfAttention(window=self.window, causal=True,
                                      **common)
        return MemoryCompressedAttention(compression=self.compression,
                                         causal=True, **common)

    def build(self, token_ids_shape=None):
        """Create every weight; they do not depend on the length."""
        shape = (None, None, self.hidden_dim)  # (B, T, D)
        self.token_embedding.build((None, None))
        if self.voice_embedding is not None:
            self.voice_embedding.build((None, None))
        for block in self.blocks:
            block.build(shape)
        self.final_norm.build(shape)
        self.output_dense.build(shape)
        self.built = True

    @property
    def can_cache(self):
        """Whether every block decodes with a key/value cache (all but
        local attention do)."""
        return "local" not in self.attention

    def _embed(self, token_ids, start, training=None, position_ids=None):
        """`(B, t)` ids at positions `start ..` (or at `position_ids`
        `(B, t)`) to `(B, t, D)`."""
        x = self.token_embedding(token_ids) * ops.cast(
            math.sqrt(self.hidden_dim), self.compute_dtype)
        if self.positions == "sinusoidal":
            if position_ids is None:
                x = x + self.position_embedding(x, start_index=start)
            else:
                batch, length = ops.shape(token_ids)[0], ops.shape(token_ids)[1]
                table = attention_ops.sinusoid_table(
                    ops.reshape(position_ids, (-1,)), self.hidden_dim,
                    dtype=self.compute_dtype)  # (B * t, D)
                x = x + ops.reshape(table, (batch, length, self.hidden_dim))
        if self.voice_embedding is not None:
            x = x + self.voice_embedding(
                self._voice_labels(token_ids, start, position_ids))
        return self.embedding_dropout(x, training=training)

    def _voice_labels(self, token_ids, start, position_ids):
        """`(B, t)` voice labels: `(p - 1) mod voices` at position `p >=
        1`, `voices` at position 0 (the start token)."""
        if position_ids is None:
            length = ops.shape(token_ids)[1]
            position_ids = ops.zeros_like(token_ids) + (
                ops.arange(length, dtype="int32")[None] + start)  # (B, t)
        position_ids = ops.cast(position_ids, "int32")
        return ops.where(ops.equal(position_ids, 0), self.voices,
                         ops.mod(position_ids - 1, self.voices))

    def _check_position_ids(self, position_ids, token_ids):
        if position_ids is None:
            return None
        position_ids = attention_ops.check_mask_shape(
            "position_ids", position_ids, tuple(token_ids.shape),
            "(batch, length), as token_ids")
        return ops.cast(position_ids, "int32")

    def call(self, token_ids, padding_mask=None, position_ids=None,
             training=None):
        token_ids = ops.cast(token_ids, "int32")  # (B, T)
        if padding_mask is None:
            padding_mask = ops.not_equal(token_ids, self.padding_id)  # (B, T)
        x, _ = self._forward(token_ids, padding_mask, position_ids, training)
        return self.output_dense(self.final_norm(x))  # (B, T, V)

    def _forward(self, token_ids, padding_mask, position_ids, training=None,
                 scores=False):
        """The blocks' output `(B, T, D)` and, with `scores`, every
        block's self-attention weights (else an empty list)."""
        position_ids = self._check_position_ids(position_ids, token_ids)
        x = self._embed(token_ids, 0, training, position_ids)  # (B, T, D)
        every = []
        for block in self.blocks:
            x = block(x, decoder_padding_mask=padding_mask, training=training,
                      return_self_attention_scores=scores)  # causal
            if scores:
                x, weights = x
                every.append(ops.cast(weights, "float32"))  # (B, N, T, T)
        return x, every

    def self_attention_scores(self, token_ids, padding_mask=None,
                              position_ids=None):
        """Every block's self-attention weights, every head: float32
        `(B, K, N, T, T)` for K blocks (full or relative attention; zero
        above the diagonal and at padded keys)."""
        token_ids = ops.cast(token_ids, "int32")  # (B, T)
        if padding_mask is None:
            padding_mask = ops.not_equal(token_ids, self.padding_id)
        _, every = self._forward(token_ids, padding_mask, position_ids,
                                 scores=True)
        return ops.stack(every, axis=1)

    def initial_cache(self, batch_size, max_length):
        """The blocks' empty key/value caches, for `step`; a
        `ValueError` when a block has local attention (no cache)."""
        if not self.can_cache:
            raise ValueError(
                "Local attention decodes by full passes only (no cache): "
                "generate with use_cache=False, received: "
                f"attention={self.attention!r}")
        if not self.built:
            self(np.ones((1, 1), "int32"))
        return [block.initial_cache(max_length=max_length,
                                    batch_size=batch_size)
                for block in self.blocks]

    def step(self, token_ids, index, cache, position_ids=None,
             key_mask=None, return_attention_scores=False):
        """Tokens `(B, t)` at cache slots `index ..` through the cached
        blocks: `(logits (B, t, V), cache)`.

        `position_ids` `(B, t)` give the positions their sinusoids encode
        (default: the slots); `key_mask` `(B, L)`, False at cache slots no
        query may read (e.g. a prompt's padding), joins the causal mask.
        With `return_attention_scores`, the last block's self-attention
        weights `(B, N, t, L)` come between the logits and the cache."""
        token_ids = ops.cast(token_ids, "int32")  # (B, t)
        position_ids = self._check_position_ids(position_ids, token_ids)
        x = self._embed(token_ids, index, position_ids=position_ids)
        mask = None
        if key_mask is not None:
            length = ops.shape(token_ids)[1]
            mask = ops.repeat(ops.cast(key_mask, "bool")[:, None, :],
                              length, axis=1)  # (B, t, L)
        updated, scores = [], None
        for block, block_cache in zip(self.blocks, cache):
            last = return_attention_scores and block is self.blocks[-1]
            outputs = block(x, cache=block_cache, cache_update_index=index,
                            decoder_attention_mask=mask,
                            return_self_attention_scores=last)
            if last:
                x, scores, block_cache = outputs
            else:
                x, block_cache = outputs
            updated.append(block_cache)
        logits = self.output_dense(self.final_norm(x))
        if return_attention_scores:
            return logits, scores, updated
        return logits, updated

    def _check_tokens(self, name, token_ids):
        token_ids = np.asarray(token_ids)
        if (token_ids.ndim != 2 or token_ids.shape[1] < 1
                or not np.issubdtype(token_ids.dtype, np.integer)
                or token_ids.min() < 0
                or token_ids.max() >= self.vocabulary_size):
            raise ValueError(
                f"`{name}` must be ints in [0, vocabulary_size="
                f"{self.vocabulary_size}) of shape (batch, length >= 1), "
                f"received: {name} of shape {token_ids.shape} and dtype "
                f"{token_ids.dtype}")
        return token_ids.astype("int32")

    def negative_log_likelihood(self, token_ids, batch_size=32,
                                weights=None):
        """The mean negative log-likelihood in nats per target token of
        `token_ids` `(N, T + 1)` (inputs `[:, :-1]`, targets `[:, 1:]`),
        padding targets left out.

        `weights` `(N, T)` (0 or 1 per target; default: 1 at every target
        but padding) chooses which targets count, e.g. only the second
        half of overlapping windows, which have their first half as
        context (`keras_attention.data.chorales.scoring_windows`); padding
        targets never count.

        >>> import numpy as np
        >>> from keras_attention.models import TransformerLanguageModel
        >>> model = TransformerLanguageModel(vocabulary_size=6, num_layers=1,
        ...                                  num_heads=1, hidden_dim=4,
        ...                                  intermediate_dim=8)
        >>> rows = np.array([[1, 2, 3, 4, 5]])
        >>> nll = model.negative_log_likelihood(rows)  # 4 targets
        >>> last = model.negative_log_likelihood(
        ...     rows, weights=np.array([[0, 0, 0, 1]]))  # the last only
        >>> bool(0 < last and 0 < nll < 2 * np.log(6))
        True
        """
        token_ids = self._check_tokens("token_ids", token_ids)
        if weights is None:
            weights = np.ones(token_ids[:, 1:].shape, "float64")
        weights = np.asarray(weights, "float64")
        if weights.shape != token_ids[:, 1:].shape or not np.isin(
                weights, (0.0, 1.0)).all():
            raise ValueError(
                "`weights` must be 0 or 1, one per target, of shape "
                f"{token_ids[:, 1:].shape} (N, T) for token_ids of shape "
                f"{token_ids.shape}, received: weights of shape "
                f"{weights.shape} with values {np.unique(weights)[:4]}")
        total, count = 0.0, 0.0
        for begin in range(0, len(token_ids), batch_size):
            batch = token_ids[begin:begin + batch_size]
            logits = ops.convert_to_numpy(
                ops.cast(self(batch[:, :-1], training=False), "float32"))
            logits = logits.astype("float64")  # (B, T, V)
            targets = batch[:, 1:]
            peak = logits.max(-1, keepdims=True)
            log_norm = peak[..., 0] + np.log(np.exp(logits - peak).sum(-1))
            chosen = np.take_along_axis(logits, targets[..., None], -1)[..., 0]
            counted = (weights[begin:begin + batch_size]
                       * (targets != self.padding_id))  # (B, T)
            total += float(((log_norm - chosen) * counted).sum())
            count += float(counted.sum())
        if not count:
            raise ValueError(
                "No target to score: every target is padding or has weight "
                f"0, received: {token_ids.shape[0]} rows")
        return total / count

    def generate(self, prompt, steps, seed=0, temperature=1.0,
                 use_cache=True):
        """Continue `prompt` `(B, P)` by `steps` sampled tokens.

        Each token is `argmax(logits / temperature + g)` with Gumbel noise
        `g` drawn up front from `seed`, so the cached and uncached paths
        draw the same tokens.

        Args:
            prompt: `(B, P)` ints, P >= 1 (a start token at least), no
                `padding_id` among them.
            steps: int >= 1.
            seed: int, of the noise.
            temperature: float > 0.
            use_cache: bool: each step runs one position through the
                blocks' caches; without it, each step re-runs the model on
                the whole sequence so far.

        Returns:
            `(B, P + steps)` int32 NumPy array, the prompt first.
        """
        prompt = self._check_tokens("prompt", prompt)
        if (prompt == self.padding_id).any():
            raise ValueError(
                "`prompt` must not hold the padding token (generation reads "
                "every prompt position, where `call` masks padding): give "
                "each row its own call, received: a prompt holding "
                f"padding_id={self.padding_id}")
        steps = _validation.positive_int("steps", steps)
        temperature = _validation.positive_float("temperature", temperature)
        batch, length = prompt.shape
        total = length + steps
        rng = np.random.default_rng(seed)
        uniform = rng.uniform(size=(batch, steps, self.vocabulary_size))
        noise = -np.log(-np.log(np.maximum(uniform, 1e-12)))  # (B, S, V)
        tokens = np.zeros((batch, total), "int32")
        tokens[:, :length] = prompt
        if use_cache:
            cache = self.initial_cache(batch, total)
            logits, cache = self.step(prompt, 0, cache)  # the prompt at once
            logits = logits[:, -1]
        for index in range(length, total):
            if not use_cache:  # a sampled padding id is a token here too
                logits = self(tokens[:, :index], padding_mask=np.ones(
                    (batch, index), bool))[:, -1]
            scores = ops.convert_to_numpy(ops.cast(logits, "float32"))
            chosen = np.argmax(scores.astype("float64") / temperature
                               + noise[:, index - length], -1)
            tokens[:, index] = chosen
            if use_cache and index + 1 < total:
                logits, cache = self.step(chosen[:, None], index, cache)
                logits = logits[:, -1]
        return tokens

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "attention": list(self.attention),
            "positions": self.positions,
            "max_relative_position": self.max_relative_position,
            "relative_values": self.relative_values,
            "window": self.window,
            "compression": self.compression,
            "padding_id": self.padding_id,
            "attention_impl": self.attention_impl,
            "voices": self.voices,
        })
        return config
