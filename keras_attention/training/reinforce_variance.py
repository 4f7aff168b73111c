"""The variance of a hard-attention captioner's REINFORCE gradient, with
and without its baseline: what the baseline buys the estimator.

REINFORCE is unbiased whatever constant `b` it subtracts from the reward,
but its variance is not. For one batch and fixed weights, the gradient of
the REINFORCE term alone on the attention's weights is drawn again for
`draws` location samples, once with `b` = the mean NLL of those draws
(what a well-tracked moving average holds) and once with `b = 0`; the
variance across draws is summed over the weights. TensorFlow only (a
`GradientTape`).

Letters: B batch, T caption length, L locations.
"""

import numpy as np
import tensorflow as tf


def reinforce_gradient_variance(model, images, decoder_tokens, targets,
                                draws=32, seed=1234):
    """The REINFORCE gradient's variance over `draws` location samples.

    Args:
        model: a built `Captioner(attention="hard")`.
        images: `(B, H, W)` floats.
        decoder_tokens: `(B, T)` ints, the teacher-forced inputs.
        targets: `(B, T)` ints, the labels.
        draws: location samples, >= 2.
        seed: the samples' seed.

    Returns:
        dict: `baseline` and `none`, the variance summed over the
        attention's weights with `b` = the draws' mean NLL and with
        `b = 0`; `mean_nll`, that mean (nats per caption).

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import Captioner
    >>> from keras_attention.training.reinforce_variance import (
    ...     reinforce_gradient_variance)
    >>> model = Captioner.from_preset("tiny", vocabulary_size=9,
    ...                               attention="hard", seed=0)
    >>> images = np.random.default_rng(0).random((4, 16, 16)).astype("float32")
    >>> tokens = np.array([[1, 5, 6]] * 4, "int32")
    >>> _ = model({"images": images, "decoder_tokens": tokens})
    >>> figures = reinforce_gradient_variance(
    ...     model, images, tokens, np.array([[5, 6, 2]] * 4), draws=4)
    >>> figures["none"] > figures["baseline"] > 0
    True
    """
    if getattr(model, "attention", None) != "hard":
        raise ValueError(f"`model` must be a hard-attention Captioner, "
                         f"received: attention="
                         f"{getattr(model, 'attention', None)!r}")
    if int(draws) < 2:
        raise ValueError(f"`draws` must be at least 2, received: "
                         f"draws={draws!r}")
    weights = model.decoder.attention_layer.trainable_variables
    expectation = np.zeros((len(decoder_tokens),), bool)  # (B,) all sampled

    def draw(noise, baseline):
        with tf.GradientTape() as tape:
            memory, mask = model.encode(images)
            logits, alpha = model.decode(
                decoder_tokens, memory, mask, training=False,
                return_attention_scores=True, location_noise=noise,
                expectation=expectation)
            terms = model.reinforce_terms(logits, alpha, targets, noise,
                                          expectation, baseline)
        gradients = tape.gradient(terms["reinforce"], weights)
        flat = np.concatenate([g.numpy().ravel() for g in gradients])
        return flat, float(np.mean(terms["nll"]))

    rng = np.random.default_rng(seed)
    noises = [rng.random(np.shape(decoder_tokens)).astype("float32")
              for _ in range(int(draws))]  # each (B, T)
    without = [draw(noise, 0.0) for noise in noises]
    baseline = float(np.mean([nll for _, nll in without]))
    with_baseline = [draw(noise, baseline)[0] for noise in noises]
    return {"baseline": float(np.stack(with_baseline).var(0).sum()),
            "none": float(np.stack([g for g, _ in without]).var(0).sum()),
            "mean_nll": baseline}
