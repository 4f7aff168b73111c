"""The Fréchet distance between two sets of features (Heusel et al.,
2017), and the small image classifier whose features it is computed on
where Inception's would not fit (digits, 28×28 or smaller).

Letters: N rows, F features.
"""

import warnings

import keras
import numpy as np


def frechet_distance(features, reference):
    """`|μ₁ - μ₂|² + Tr(Σ₁ + Σ₂ - 2 (Σ₁ Σ₂)^½)` of two sets of feature
    rows `(N, F)` and `(M, F)`, each read as a Gaussian.

    A singular product (a feature that never varies) is retried with
    10⁻⁶ added to both diagonals, as Heusel et al.'s code does.

    Example:

    >>> import numpy as np
    >>> rows = np.random.default_rng(0).normal(size=(500, 3))
    >>> abs(frechet_distance(rows, rows)) < 1e-9
    True
    >>> round(frechet_distance(rows + [2.0, 0.0, 0.0], rows), 6)  # |Δμ|²
    4.0
    """
    from scipy import linalg

    features = np.asarray(features, "float64")
    reference = np.asarray(reference, "float64")
    if features.ndim != 2 or reference.ndim != 2 or (
            features.shape[1] != reference.shape[1]):
        raise ValueError("features and reference must be (N, F) and (M, F) "
                         f"rows of the same F, received: features.shape="
                         f"{features.shape}, reference.shape="
                         f"{reference.shape}")
    if min(len(features), len(reference)) < 2:
        raise ValueError("features and reference need at least 2 rows each "
                         f"(a covariance), received: {len(features)} and "
                         f"{len(reference)}")
    mean_a, mean_b = features.mean(0), reference.mean(0)
    cov_a = np.cov(features, rowvar=False)
    cov_b = np.cov(reference, rowvar=False)
    with warnings.catch_warnings():  # a dead feature makes Σ singular
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        root = linalg.sqrtm(cov_a @ cov_b)
        if not np.isfinite(root).all():
            offset = 1e-6 * np.eye(len(cov_a))
            root = linalg.sqrtm((cov_a + offset) @ (cov_b + offset))
    root = root.real if np.iscomplexobj(root) else root
    return float(((mean_a - mean_b) ** 2).sum()
                 + np.trace(cov_a + cov_b - 2.0 * root))


def feature_classifier(input_shape, classes=10, filters=(32, 64),
                       features=64):
    """`(classifier, features model)`: 3×3 convolutions of `filters`
    (ReLU, each followed by 2×2 max pooling), a dense layer of `features`
    units named "features" (ReLU), and logits `(B, classes)`. The
    features model shares its weights and ends at the dense layer: train
    the classifier (from logits), then compare the features of two image
    sets with `frechet_distance`.

    >>> classifier, extract = feature_classifier((16, 16, 1), features=8)
    >>> tuple(extract(np.zeros((2, 16, 16, 1))).shape)
    (2, 8)
    """
    layers = keras.layers
    image = keras.Input(tuple(input_shape))
    x = image
    for count in filters:
        x = layers.Conv2D(count, 3, activation="relu", padding="same")(x)
        x = layers.MaxPooling2D()(x)
    hidden = layers.Dense(features, activation="relu", name="features")(
        layers.Flatten()(x))
    classifier = keras.Model(image, layers.Dense(classes)(hidden))
    return classifier, keras.Model(image, hidden)
