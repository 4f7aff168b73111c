"""Scoring a recurrent attention model by the glimpse paths its policy
samples, as the public reproductions of Mnih et al. (2014) do, beside the
path of the policy's means that `RecurrentAttentionModel.predict` takes.

Letters: B batch, T glimpses, K classes, P paths.
"""

import keras
import numpy as np
from keras import ops


def sampled_path_probabilities(model, images, paths=10, seed=0,
                               batch_size=500):
    """The class probabilities `(B, K)` averaged over `paths` glimpse
    paths drawn from `model`'s location policy.

    Each path starts where the model's training paths start (the centre,
    or with `first_location="random"` a location drawn uniformly on the
    image), then draws every next location from the Gaussian of standard
    deviation `model.location_std` around the policy's mean (the training
    policy), clipped to the image. The softmax of each path's logits is averaged;
    `argmax` of the result is the prediction. The noise comes from
    `numpy.random.default_rng(seed)`, so a call is repeatable.

    Args:
        model: a built `keras_attention.models.RecurrentAttentionModel`.
        images: `(B, H, W)` or `(B, H, W, C)` numbers.
        paths: int >= 1, P.
        seed: int, the noise's seed.
        batch_size: int >= 1, images per call.

    Returns:
        A NumPy array `(B, K)` of probabilities.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import RecurrentAttentionModel
    >>> model = RecurrentAttentionModel(num_glimpses=3, glimpse_size=4,
    ...                                 num_scales=1, glimpse_units=8,
    ...                                 units=8, num_classes=3)
    >>> images = np.random.default_rng(0).random((5, 16, 16))
    >>> probabilities = sampled_path_probabilities(model, images, paths=4)
    >>> probabilities.shape, bool(np.allclose(probabilities.sum(-1), 1.0))
    ((5, 3), True)
    """
    for name, value in (("paths", paths), ("batch_size", batch_size)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, received: "
                             f"{name}={value!r}")
    images = np.asarray(images)
    rng = np.random.default_rng(seed)
    steps = model.num_glimpses - 1
    total = None
    drawn = getattr(model, "first_location", "centre") == "random"
    for _ in range(paths):
        noise = rng.normal(size=(len(images), steps, 2)).astype("float32")
        first = (rng.uniform(-1.0, 1.0, (len(images), 2)) if drawn else
                 np.zeros((len(images), 2))).astype("float32")  # (B, 2)
        parts = []
        for start in range(0, len(images), batch_size):
            chunk = slice(start, start + batch_size)
            logits = model(images[chunk], training=True, noise=noise[chunk],
                           first=first[chunk])["logits"]  # (b, K)
            parts.append(keras.ops.convert_to_numpy(
                ops.softmax(ops.cast(logits, "float32"), axis=-1)))
        probabilities = np.concatenate(parts)  # (B, K)
        total = probabilities if total is None else total + probabilities
    return total / paths
