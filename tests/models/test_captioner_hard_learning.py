"""Learning test: hard attention's REINFORCE estimator alone lowers the
caption loss.

A hard-attention captioner first learns to caption scenes of two glyphs
("a two left of a zero") reading the expected context. Its attention is
then reset to random weights, everything else is frozen, and it trains on
sampled locations only: the attention's weights then learn from nothing
but the REINFORCE term. The caption's NLL under sampled locations must
fall well below where the reset left it. A zero estimator leaves it where
it was (no gradient reaches the attention) and a sign-flipped one raises
it (measured: reset 1.41 nats per word; REINFORCE 0.91; none 1.39;
flipped 2.59), so neither passes.
"""

import keras
import numpy as np

from keras_attention.data import mnist
from keras_attention.models.captioner import Captioner
from keras_attention.text.digit_scenes import CaptionVocabulary
from keras_attention.training.losses import MaskedCrossentropy


def glyphs(count, seed):
    """`count` 28x28 glyphs of three classes in the middle 20x20: two
    horizontal bars (0), two vertical bars (1), a square ring (2)."""
    rng = np.random.default_rng(seed)
    images = np.zeros((count, 28, 28), "uint8")
    labels = rng.integers(0, 3, count)
    for image, label in zip(images, labels):
        ink = image[4:24, 4:24]
        if label == 0:
            ink[4:8] = ink[12:16] = 255
        elif label == 1:
            ink[:, 4:8] = ink[:, 12:16] = 255
        else:
            ink[2:18, 2:18] = 255
            ink[6:14, 6:14] = 0
    return mnist.Digits(images, labels)


def sampled_nll(model, inputs, targets, draws=4):
    """The mean per-word NLL of the captions under sampled locations."""
    loss = MaskedCrossentropy()
    return float(np.mean([float(loss(targets, model(inputs, training=True)))
                          for _ in range(draws)]))


def test_reinforce_alone_teaches_the_attention_where_to_look():
    vocabulary = CaptionVocabulary(max_words=6)
    scenes = mnist.scenes(glyphs(60, 1), 1500, objects=2, height=20,
                          width=44, clutter=0, seed=0)
    tokens, targets = vocabulary.teacher_forcing(scenes.captions)
    inputs = {"images": scenes.images, "decoder_tokens": tokens,
              "targets": targets}
    probe = {key: value[:300] for key, value in inputs.items()}
    keras.utils.set_random_seed(0)
    model = Captioner.from_preset(
        "tiny", vocabulary_size=len(vocabulary), attention="hard",
        doubly_stochastic=0.0, expectation_probability=1.0,
        reinforce_weight=0.1, entropy_weight=0.0, dropout=0.0, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=MaskedCrossentropy())
    model.fit(inputs, targets, batch_size=50, epochs=4, verbose=0)

    model.expectation_probability = 0.0  # from now on, samples only
    attention = model.decoder.attention_layer
    rng = np.random.default_rng(5)
    for weight in attention.weights:
        weight.assign(rng.normal(0.0, 0.1, weight.shape).astype("float32"))
    reset = sampled_nll(model, probe, targets[:300])
    for layer in model._flatten_layers(include_self=False):
        layer.trainable = False
    attention.trainable = True
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=MaskedCrossentropy())
    model.fit(inputs, targets, batch_size=50, epochs=3, verbose=0)
    retrained = sampled_nll(model, probe, targets[:300])
    assert retrained < reset - 0.3, (reset, retrained)
    assert retrained < 1.1, (reset, retrained)
