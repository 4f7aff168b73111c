"""
Title: Relative positions: a language model that continues longer patterns
Description: decoder-only Transformers, sinusoidal vs relative (Shaw, 2018).

Each sequence repeats a motif of 2-8 distinct symbols (e.g. `c a f c a f c a
...`), so every token after the first period is the token one period back.
Two small causal language models learn to continue such sequences from
sequences of 32 tokens, and are then tested on sequences of 32 and of 96
tokens:

- *absolute*: token embeddings plus `SinusoidalPositionEmbedding`, then
  `TransformerDecoder` blocks without cross-attention (GPT-style);
- *relative*: the same blocks built with `self_attention=RelativeAttention(
  ..., max_relative_position=δ)`, so their self-attention is over clipped
  distances and there are no absolute positions at all.

The relative model only ever sees distances up to δ, whatever the length;
the absolute model has never seen the sinusoids of positions past 32. The
script prints next-token accuracy on the predictable tokens (those after
the first period) at both lengths. It then continues a prompt with each
model's key/value cache, and checks that the cached generation equals
re-running the model on the whole prefix at every step.

What we measured (defaults, 2 cores, 45 s): both models learn the rule
and both carry it to three times the training length:
- relative: 99.4% at length 32, 99.7% at 96;
- absolute: 100% and 99.7%.

The rule can be found by content (the token after the previous occurrence
of the current one), so on this task absolute positions do no harm. The
example shows a relative-position language model built from the public
blocks, with cached generation, rather than a win for either.

Run: `python examples/relative_language_model.py [--steps N] [--seed S]`
(about 45 seconds on 2 cores with the defaults).
"""

import argparse
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np
from keras import ops

from keras_attention.layers import RelativeAttention
from keras_attention.layers import SinusoidalPositionEmbedding
from keras_attention.layers import TransformerDecoder

SYMBOLS = 16
MIN_PERIOD, MAX_PERIOD = 2, 8
TRAIN_LENGTH = 32


def make_sequences(rng, count, length):
    """`(count, length)` int32 sequences, each a motif of 2-8 distinct
    symbols repeated, and the period of each."""
    periods = rng.integers(MIN_PERIOD, MAX_PERIOD + 1, size=count)
    sequences = np.zeros((count, length), "int32")
    for row, period in enumerate(periods):
        motif = rng.permutation(SYMBOLS)[:period]
        sequences[row] = np.resize(motif, length)
    return sequences, periods


class PatternModel(keras.Model):
    """Embeddings, `num_layers` decoder-only blocks, output logits; with
    absolute sinusoidal positions or with relative self-attention."""

    def __init__(self, relative, dim=64, heads=4, num_layers=2,
                 max_relative_position=16, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
        self.embedding = keras.layers.Embedding(SYMBOLS, dim)
        self.positions = None if relative else SinusoidalPositionEmbedding()
        self.blocks = [
            TransformerDecoder(
                intermediate_dim=2 * dim, num_heads=heads, dropout=0.0,
                self_attention=RelativeAttention(
                    num_heads=heads, key_dim=dim // heads,
                    max_relative_position=max_relative_position,
                ) if relative else None,
            )
            for _ in range(num_layers)
        ]
        self.logits = keras.layers.Dense(SYMBOLS)

    def embed(self, tokens, start_index=0):
        x = self.embedding(tokens) * ops.sqrt(ops.cast(self.dim, "float32"))
        if self.positions is not None:
            x = x + self.positions(x, start_index=start_index)
        return x

    def call(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)  # causal self-attention, no encoder
        return self.logits(x)

    def generate_cached(self, prompt, steps):
        """Greedy continuation, one position per step with the cache."""
        batch, length = prompt.shape
        caches = [block.initial_cache(max_length=length + steps,
                                      batch_size=batch)
                  for block in self.blocks]
        tokens = [prompt[:, i:i + 1] for i in range(length)]
        for index in range(length + steps - 1):
            x = self.embed(tokens[index], start_index=index)
            for number, block in enumerate(self.blocks):
                x, caches[number] = block(x, cache=caches[number],
                                          cache_update_index=index)
            if index + 1 >= length:
                chosen = ops.argmax(self.logits(x)[:, 0], -1)
                tokens.append(ops.cast(chosen, "int32")[:, None])
        return np.concatenate([ops.convert_to_numpy(t) for t in tokens], 1)

    def generate_uncached(self, prompt, steps):
        """The same continuation, re-running the whole prefix every step."""
        tokens = prompt
        for _ in range(steps):
            chosen = np.argmax(ops.convert_to_numpy(self(tokens))[:, -1], -1)
            tokens = np.concatenate([tokens, chosen[:, None].astype("int32")],
                                    1)
        return tokens


def accuracy(model, sequences, periods):
    """Next-token accuracy on the predictable tokens (after one period)."""
    predicted = np.argmax(ops.convert_to_numpy(model(sequences[:, :-1])), -1)
    target = sequences[:, 1:]
    position = np.arange(1, sequences.shape[1])[None]  # of each target
    predictable = position >= periods[:, None]
    return float(np.mean((predicted == target)[predictable]))


def train(model, rng, steps, batch_size=64):
    model.compile(
        optimizer=keras.optimizers.Adam(2e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    sequences, _ = make_sequences(rng, steps * batch_size, TRAIN_LENGTH + 1)
    history = model.fit(sequences[:, :-1], sequences[:, 1:],
                        batch_size=batch_size, epochs=1, verbose=0)
    return history.history["loss"][-1]


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.strip().splitlines()[0]
    )
    parser.add_argument("--steps", type=int, default=600,
                        help="training steps of 64 sequences (default: 600)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    tests = {length: make_sequences(rng, 500, length + 1)
             for length in (TRAIN_LENGTH, 3 * TRAIN_LENGTH)}
    prompt, _ = make_sequences(rng, 16, 12)

    results = {}
    for name, relative in (("absolute", False), ("relative", True)):
        model = PatternModel(relative)
        started = time.perf_counter()
        loss = train(model, rng, args.steps)
        seconds = time.perf_counter() - started
        scores = {length: accuracy(model, *data)
                  for length, data in tests.items()}
        cached = model.generate_cached(prompt, 20)
        uncached = model.generate_uncached(prompt, 20)
        agree = float(np.mean(cached == uncached))
        results[name] = scores
        print(f"{name} positions: trained {args.steps} steps in "
              f"{seconds:.0f} s (last loss {loss:.3f}); next-token accuracy "
              + ", ".join(f"{scores[n]:.1%} at length {n}" for n in scores)
              + f"; cached generation equals uncached on {agree:.1%} of "
              "tokens")
    print("prompt", prompt[0].tolist())
    print("relative continuation", cached[0, 12:].tolist())
    return results


if __name__ == "__main__":
    main()
