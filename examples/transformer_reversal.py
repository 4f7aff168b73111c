"""
Title: A Transformer that reverses digit strings, and its attention
Description: the layers at work on a task small enough for 2 CPU cores.

A one-block Transformer (SinusoidalPositionEmbedding, TransformerEncoder,
TransformerDecoder) learns to reverse digit strings of varying length, with
padding masks on both sides. It is then decoded greedily with the decoder's
key/value cache, checked against the uncached decoder, and one example's
cross-attention is drawn: reversal shows up as an anti-diagonal.

Run: `python examples/transformer_reversal.py [--steps N] [--seed S]`.
"""

import argparse
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np
from keras import ops

from keras_attention.layers import SinusoidalPositionEmbedding
from keras_attention.layers import TransformerDecoder
from keras_attention.layers import TransformerEncoder

PAD, BOS, EOS = 0, 1, 2
DIGITS = 10  # tokens 3..12 are the digits 0..9
VOCAB = 3 + DIGITS
MAX_DIGITS = 8
TARGET_LEN = MAX_DIGITS + 1  # digits + EOS (or BOS + digits)


def make_pairs(rng, count):
    """Random digit strings (length 2..8) and their reversals, padded."""
    lengths = rng.integers(2, MAX_DIGITS + 1, size=count)
    source = np.zeros((count, MAX_DIGITS), "int32")
    decoder_input = np.zeros((count, TARGET_LEN), "int32")
    labels = np.zeros((count, TARGET_LEN), "int32")
    for row, length in enumerate(lengths):
        digits = rng.integers(0, DIGITS, size=length) + 3
        source[row, :length] = digits
        decoder_input[row, : length + 1] = [BOS, *digits[::-1]]
        labels[row, : length + 1] = [*digits[::-1], EOS]
    return source, decoder_input, labels


class Reverser(keras.Model):
    """Embeddings + positions, one encoder block, one decoder block."""

    def __init__(self, dim=64, heads=4, intermediate=128, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
        self.source_embedding = keras.layers.Embedding(VOCAB, dim)
        self.target_embedding = keras.layers.Embedding(VOCAB, dim)
        self.positions = SinusoidalPositionEmbedding()
        self.encoder = TransformerEncoder(intermediate, heads)
        self.decoder = TransformerDecoder(intermediate, heads)
        self.logits = keras.layers.Dense(VOCAB)

    def embed(self, embedding, tokens, start_index=0):
        x = embedding(tokens) * ops.sqrt(ops.cast(self.dim, "float32"))
        return x + self.positions(x, start_index=start_index)

    def encode(self, source):
        source_mask = ops.not_equal(source, PAD)
        encoded = self.encoder(
            self.embed(self.source_embedding, source), padding_mask=source_mask
        )
        return encoded, source_mask

    def call(self, inputs, return_attention_scores=False):
        source, decoder_input = inputs
        encoded, source_mask = self.encode(source)
        outputs = self.decoder(
            self.embed(self.target_embedding, decoder_input),
            encoded,
            decoder_padding_mask=ops.not_equal(decoder_input, PAD),
            encoder_padding_mask=source_mask,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            outputs, scores = outputs
            return self.logits(outputs), scores
        return self.logits(outputs)

    def greedy(self, source):
        """Cached greedy decoding: one position per step."""
        encoded, source_mask = self.encode(source)
        batch = ops.shape(source)[0]
        cache = self.decoder.initial_cache(encoded, max_length=TARGET_LEN)
        token = ops.full((batch, 1), BOS, dtype="int32")
        tokens, scores = [], []
        for index in range(TARGET_LEN):
            step, step_scores, cache = self.decoder(
                self.embed(self.target_embedding, token, start_index=index),
                encoder_padding_mask=source_mask,
                cache=cache,
                cache_update_index=index,
                return_attention_scores=True,
            )
            token = ops.cast(ops.argmax(self.logits(step), -1), "int32")
            tokens.append(token)
            scores.append(step_scores)
        return (
            ops.convert_to_numpy(ops.concatenate(tokens, 1)),
            ops.convert_to_numpy(ops.concatenate(scores, 2)),
        )

    def greedy_uncached(self, source):
        """The same decoding, re-running the whole prefix at every step."""
        batch = source.shape[0]
        decoded = np.zeros((batch, TARGET_LEN + 1), "int32")
        decoded[:, 0] = BOS
        for index in range(TARGET_LEN):
            logits = self((source, decoded[:, : index + 1]))
            decoded[:, index + 1] = np.argmax(logits[:, -1], -1)
        return decoded[:, 1:]


def strip(tokens):
    digits = []
    for token in tokens:
        if token == EOS:
            break
        if token != PAD:
            digits.append(str(token - 3) if token >= 3 else "?")
    return "".join(digits)


def ascii_heatmap(scores, source_text, target_text):
    shades = " .:-=+*#%@"
    lines = ["        " + " ".join(source_text)]
    for row, char in enumerate(target_text):
        cells = [shades[min(int(w * 10), 9)] for w in scores[row]]
        lines.append(f"   {char}    " + " ".join(cells))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500,
                        help="training steps (batch of 64 each)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    source, decoder_input, labels = make_pairs(rng, args.steps * 64)
    model = Reverser()
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=PAD
        ),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    # Pads are ignored by the loss; the padding masks keep them out of
    # attention.
    print(f"Training a 1+1 block Transformer to reverse digit strings "
          f"({args.steps} steps)...")
    started = time.time()
    model.fit((source, decoder_input), labels, batch_size=64, epochs=1)
    print(f"trained in {time.time() - started:.0f} s")

    test_source, _, test_labels = make_pairs(np.random.default_rng(10**6), 256)
    started = time.time()
    cached, scores = model.greedy(test_source)
    cached_seconds = time.time() - started
    started = time.time()
    uncached = model.greedy_uncached(test_source)
    uncached_seconds = time.time() - started
    exact = np.mean([strip(p) == strip(t) for p, t in zip(cached, test_labels)])
    agree = np.mean([strip(a) == strip(b) for a, b in zip(cached, uncached)])
    print(f"\nheld-out exact-match accuracy (256 strings): {exact:.1%}")
    print(f"cached decoding == uncached decoding on {agree:.1%} of strings "
          f"({cached_seconds:.2f} s vs {uncached_seconds:.2f} s)")
    for row in range(3):
        print(f"  {strip(test_source[row]):>8} -> {strip(cached[row]):<8} "
              f"(want {strip(test_labels[row])})")

    row = int(np.argmax((test_source != PAD).sum(-1)))
    source_text = strip(test_source[row])
    target_text = strip(cached[row])
    heads_mean = scores[row].mean(0)  # (T, S), averaged over heads
    print(f"\ncross-attention of '{source_text}' -> '{target_text}' "
          "(rows: output digit, columns: input digit; darker = more weight):")
    print(ascii_heatmap(heads_mean[: len(target_text), : len(source_text)],
                        source_text, target_text))


if __name__ == "__main__":
    main()
