"""Checkpoint averaging (Vaswani et al., 2017, section 6.1: the base models
average the last 5 checkpoints)."""

import pathlib
import re

import numpy as np

# The epoch checkpoints of a run: seq2seq's ModelCheckpoint writes
# OUTPUT_DIR/checkpoints/epoch-001.weights.h5, epoch-002...
_EPOCH_FILE = re.compile(r"epoch-(\d+)\.weights\.h5")


def epoch_checkpoints(folder, count, last_epoch=None):
    """The epoch checkpoints to average: the files of epochs
    `last_epoch - count + 1 .. last_epoch` that exist in `folder`.

    Args:
        folder: a run's `checkpoints` folder.
        count: how many epochs, the last one included.
        last_epoch: the run's final epoch (1-based); `None` takes the
            highest-numbered file.

    Returns:
        A list of paths, oldest epoch first.

    Example:

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for epoch in (1, 2, 3, 4):
    ...     (folder / f"epoch-{epoch:03d}.weights.h5").touch()
    >>> [path.name for path in epoch_checkpoints(folder, 2, last_epoch=3)]
    ['epoch-002.weights.h5', 'epoch-003.weights.h5']
    >>> [path.name for path in epoch_checkpoints(folder, 2)]
    ['epoch-003.weights.h5', 'epoch-004.weights.h5']
    """
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"`count` must be a positive int, received: "
                         f"count={count!r}")
    epochs = {}
    for path in pathlib.Path(folder).glob("epoch-*.weights.h5"):
        match = _EPOCH_FILE.fullmatch(path.name)
        if match:
            epochs[int(match.group(1))] = path
    if last_epoch is None:
        last_epoch = max(epochs, default=0)
    return [epochs[epoch] for epoch in sorted(epochs)
            if last_epoch - count < epoch <= last_epoch]


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
