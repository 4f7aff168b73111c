"""
Title: Bahdanau attention: reading dates written by humans
Description: A GRU encoder-decoder with additive attention learns to turn
"Tuesday, 3 May 1979" into "1979-05-03", and shows where it looks.

Bahdanau, Cho and Bengio (2015) let an RNN decoder look back at every
encoder state at every step: the previous decoder state is the query, the
encoder states are keys and values, and the score is a small network,
`vᵀ tanh(W s + U h)`. This script builds that model from
`keras_attention.AdditiveAttention` (a single query vector per example, the
RNN decoder case) and trains it on generated dates: no download, about a
minute on two CPU cores.

Run: `python examples/bahdanau_dates.py [--samples N] [--epochs E]`.
"""

import argparse
import datetime
import random

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np
from keras import ops

from keras_attention import AdditiveAttention

"""
## Data: the same date, written many ways

Inputs are dates in one of several human formats; targets are ISO dates.
Characters are the tokens. Index 0 pads the inputs.
"""

FORMATS = [
    "%d %B %Y", "%A, %d %B %Y", "%B %d, %Y", "%d/%m/%Y", "%a %d %b %Y",
    "%d.%m.%y", "%b %d %Y", "%A %B %d %Y", "%d %b %Y", "%Y %B %d",
]
INPUT_CHARS = sorted(set(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,./"
))
INPUT_INDEX = {c: i + 1 for i, c in enumerate(INPUT_CHARS)}  # 0 = padding
OUTPUT_CHARS = list("0123456789-")
START = len(OUTPUT_CHARS)  # the decoder's first input
INPUT_LEN, OUTPUT_LEN = 30, 10


def make_dates(count, seed):
    rng = random.Random(seed)
    first = datetime.date(1950, 1, 1).toordinal()
    last = datetime.date(2049, 12, 31).toordinal()
    pairs = []
    for _ in range(count):
        date = datetime.date.fromordinal(rng.randint(first, last))
        text = date.strftime(rng.choice(FORMATS))
        pairs.append((text.lower() if rng.random() < 0.3 else text,
                      date.isoformat()))
    return pairs


def encode(pairs):
    inputs = np.zeros((len(pairs), INPUT_LEN), "int32")
    targets = np.zeros((len(pairs), OUTPUT_LEN), "int32")
    for row, (text, iso) in enumerate(pairs):
        inputs[row, : len(text)] = [INPUT_INDEX[c] for c in text]
        targets[row] = [OUTPUT_CHARS.index(c) for c in iso]
    return inputs, targets


"""
## The model

A bidirectional GRU reads the input. At each output step, the decoder state
`s` queries the encoder states through `AdditiveAttention`; the context
vector and the previous output character feed a GRU cell. Teacher forcing
in training: the previous *true* character is fed.
"""


class DateReader(keras.Model):
    def __init__(self, units=64, **kwargs):
        super().__init__(**kwargs)
        self.embedding = keras.layers.Embedding(len(INPUT_CHARS) + 1, 32)
        self.encoder = keras.layers.Bidirectional(
            keras.layers.GRU(units, return_sequences=True)
        )
        self.attention = AdditiveAttention(units=units)
        self.output_embedding = keras.layers.Embedding(len(OUTPUT_CHARS) + 1,
                                                       16)
        self.cell = keras.layers.GRUCell(units)
        self.classifier = keras.layers.Dense(len(OUTPUT_CHARS))

    def call(self, inputs, return_attention=False):
        source, previous = inputs  # (B, S) chars, (B, T) previous outputs
        padding = ops.not_equal(source, 0)
        states = self.encoder(self.embedding(source))  # (B, S, 2U)
        state = ops.zeros((ops.shape(source)[0], self.cell.units))
        logits, alignments = [], []
        for step in range(OUTPUT_LEN):
            context, weights = self.attention(
                state, states, key_padding_mask=padding,
                return_attention_scores=True,
            )  # (B, 2U), (B, S)
            token = self.output_embedding(previous[:, step])  # (B, 16)
            output, [state] = self.cell(
                ops.concatenate([token, context], -1), [state]
            )
            logits.append(self.classifier(output))
            alignments.append(weights)
        logits = ops.stack(logits, 1)  # (B, T, classes)
        if return_attention:
            return logits, ops.stack(alignments, 1)  # (B, T, S)
        return logits

    def read(self, source):
        """Greedy decoding: feed back the model's own previous character."""
        previous = np.full((len(source), OUTPUT_LEN), START, "int32")
        for step in range(OUTPUT_LEN):
            logits, weights = self((source, previous), return_attention=True)
            choice = np.argmax(logits[:, step], -1)
            if step + 1 < OUTPUT_LEN:
                previous[:, step + 1] = choice
        return np.argmax(logits, -1), np.array(weights)


def shift_right(targets):
    return np.concatenate(
        [np.full((len(targets), 1), START, "int32"), targets[:, :-1]], 1
    )


"""
## Train, read, and look at the alignment
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(0)

    inputs, targets = encode(make_dates(args.samples, seed=0))
    model = DateReader()
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit((inputs, shift_right(targets)), targets, batch_size=128,
              epochs=args.epochs, validation_split=0.1)

    test_pairs = make_dates(500, seed=1)
    test_inputs, test_targets = encode(test_pairs)
    predicted, weights = model.read(test_inputs)
    exact = np.mean(np.all(predicted == test_targets, axis=1))
    print(f"\nexact dates on 500 unseen inputs: {exact:.1%}")
    for row in range(4):
        text = "".join(OUTPUT_CHARS[i] for i in predicted[row])
        print(f"  {test_pairs[row][0]:<28} -> {text}")

    text = test_pairs[0][0]
    print(f"\nwhere each output character looks in '{text}':")
    for step, char in enumerate(predicted[0]):
        focus = int(np.argmax(weights[0, step, : len(text)]))
        print(f"  {OUTPUT_CHARS[char]} <- '{text[focus]}' at {focus:2d}  "
              f"(weight {weights[0, step, focus]:.2f})")
    return exact


if __name__ == "__main__":
    main()
