"""Checkpoint averaging (Vaswani et al., 2017, section 6.1: the base models
average the last 5 checkpoints)."""

import numpy as np


def average_checkpoints(model, paths):
    """Set `model`'s weights to the mean of the weight files in `paths`.

    Args:
        model: a built Keras model.
        paths: `.weights.h5` files written by `model.save_weights` (or
            `ModelCheckpoint(save_weights_only=True)`) for this model.

    Returns:
        `model`, whose weights are now the element-wise means. Integer
        weights (e.g. counters) keep the value of the last file.

    Example:

    >>> import tempfile, numpy as np, keras
    >>> from keras_attention.training import average_checkpoints
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> folder = tempfile.mkdtemp()
    >>> for value in (1.0, 3.0):
    ...     model.set_weights([np.full((2, 1), value), np.zeros(1)])
    ...     model.save_weights(f"{folder}/{value}.weights.h5")
    >>> paths = [f"{folder}/1.0.weights.h5", f"{folder}/3.0.weights.h5"]
    >>> average_checkpoints(model, paths).get_weights()[0].ravel().tolist()
    [2.0, 2.0]
    """
    paths = list(paths)
    if not paths:
        raise ValueError("`paths` must name at least one weights file, "
                         "received: paths=[]")
    total = None
    for path in paths:
        model.load_weights(path)
        weights = model.get_weights()
        if total is None:
            total = [np.zeros(weight.shape, "float64") for weight in weights]
        for index, weight in enumerate(weights):
            total[index] += weight
    last = model.get_weights()
    model.set_weights([
        (summed / len(paths)).astype(weight.dtype)
        if np.issubdtype(weight.dtype, np.floating) else weight
        for summed, weight in zip(total, last)
    ])
    return model
