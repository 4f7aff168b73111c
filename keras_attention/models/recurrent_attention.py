"""`RecurrentAttentionModel`: Mnih et al.'s recurrent attention model
(RAM, 2014), which classifies an image from a few glimpses and learns
where to look with REINFORCE.

Letters: B batch, H, W image height and width, C channels, T glimpses,
k scales, g glimpse size, G glimpse-network units, U core units, K classes.
"""

import math

import keras
from keras import ops

from keras_attention import _validation
from keras_attention.layers import GlimpseSensor
from keras_attention.ops import stochastic

FIRST_LOCATIONS = ("centre", "random")  # where the first glimpse looks

PRESETS = {
    # Tests.
    "tiny": dict(glimpse_size=4, num_scales=2, glimpse_units=8,
                 units=16),
    # Cluttered digits (40x40) on CPU: 8x8, 16x16 and 32x32 patches.
    "small": dict(glimpse_size=8, num_scales=3, glimpse_units=64,
                  units=128),
}


def gaussian_log_prob(samples, means, std):
    """`log N(samples; means, std² I)` summed over the last axis:
    `(..., D)` -> `(...)` float32.

    Example:

    >>> import math
    >>> from keras_attention.models.recurrent_attention import (
    ...     gaussian_log_prob)
    >>> value = gaussian_log_prob([[0.1, 0.0]], [[0.0, 0.0]], 0.1)
    >>> round(float(value[0]) - 2 * math.log(1 / (0.1 * math.sqrt(2 * math.pi))), 6)
    -0.5
    """
    samples = ops.cast(samples, "float32")
    means = ops.cast(means, "float32")
    dims = samples.shape[-1]
    squared = ops.sum(ops.square((samples - means) / std), axis=-1)
    return -0.5 * squared - dims * math.log(std * math.sqrt(2.0 * math.pi))


def reinforce_loss(log_probs, rewards, baselines, mask=None):
    """The REINFORCE surrogate with a baseline:
    `−(1/B) Σ_b Σ_t mask_bt · log π_bt · stop_gradient(R_b − b_bt)`.

    Its gradient is the policy-gradient estimate
    `−(1/B) Σ_b Σ_t (R_b − b_bt) ∇ log π_bt`; the baselines and the
    rewards get none (the baselines learn from `baseline_loss`).

    Args:
        log_probs: `(B, T)` the log-probabilities of the actions taken.
        rewards: `(B,)` one reward per episode, or `(B, T)` per step.
        baselines: `(B, T)`.
        mask: `(B, T)` boolean, True at the actions that count; None: all.

    Returns:
        A float32 scalar.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.recurrent_attention import reinforce_loss
    >>> float(reinforce_loss(np.array([[-1.0, -2.0]]), np.array([1.0]),
    ...                      np.array([[0.5, 0.25]])))  # -(-0.5 - 1.5)
    2.0
    """
    log_probs = ops.cast(log_probs, "float32")
    rewards = ops.cast(rewards, "float32")
    if len(rewards.shape) == 1:
        rewards = rewards[:, None]  # (B, 1)
    advantages = rewards - ops.cast(baselines, "float32")  # (B, T)
    if mask is not None:
        log_probs = log_probs * ops.cast(mask, "float32")
    batch = ops.cast(ops.shape(log_probs)[0], "float32")
    # Each step's action is one term of the package's estimator.
    return stochastic.reinforce_surrogate(
        ops.reshape(log_probs, (-1,)),
        ops.reshape(ops.broadcast_to(advantages, ops.shape(log_probs)),
                    (-1,))) / batch


def baseline_loss(baselines, rewards, mask=None):
    """The baselines' squared error `mean (b_bt − R_b)²` over the counted
    steps (0 when there is none): the baselines learn the expected reward.
    The rewards get no gradient.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.recurrent_attention import baseline_loss
    >>> float(baseline_loss(np.array([[0.5, 1.0]]), np.array([1.0])))
    0.125
    """
    baselines = ops.cast(baselines, "float32")
    rewards = ops.stop_gradient(ops.cast(rewards, "float32"))
    if len(rewards.shape) == 1:
        rewards = rewards[:, None]  # (B, 1)
    weights = ops.ones_like(baselines)
    if mask is not None:
        weights = weights * ops.cast(mask, "float32")
    squared = ops.square(baselines - rewards) * weights  # (B, T)
    return ops.sum(squared) / ops.maximum(ops.sum(weights), 1.0)


@keras.saving.register_keras_serializable(package="keras_attention")
class RecurrentAttentionModel(keras.Model):
    """The recurrent attention model (RAM) of Mnih et al. (2014): a
    recurrent network that sees the image only through `num_glimpses`
    retina-like glimpses, choosing where to look next from what it has
    seen, and classifies the image after the last one.

    At step `t = 0 .. T−1`, from the location `l_t` (`l_0 = (0, 0)`, the
    image's centre):

    - glimpse sensor `ρ(x, l_t)` (`GlimpseSensor`: k patches of g x g,
      each `scale` times wider than the last);
    - glimpse network `g_t = ReLU(Linear(h_g) + Linear(h_l))`,
      `h_g = ReLU(Linear(ρ))`, `h_l = ReLU(Linear(l_t))` (G units each,
      `g_t` of U);
    - core: the paper's rectifier RNN for classification,
      `h_t = ReLU(Linear(h_{t−1}) + Linear(g_t))`, `h_{−1} = 0`;
    - location network (t < T−1):
      `μ_t = tanh(Linear(stop_gradient(h_t)))` (`location_activation`:
      the paper's is linear) and the next location
      `l_{t+1} = clip(μ_t + σ ε_t, −1, 1)`, `ε_t ~ N(0, I)`, a
      stop-gradient'ed sample (the paper's μ is linear; tanh keeps it on
      the image);
    - baseline `b_t = Linear(stop_gradient(h_t))`;
    - after the last glimpse, `p(y) = softmax(Linear(h_{T−1}))`.

    The location loss reaches the location network only: its gradient
    stops at `h_t` (`stop_location_gradient=True`, as in most
    reproductions), so the high-variance REINFORCE estimate does not move
    the features the classifier reads. The paper's gradient (its eq. 2)
    is over all parameters: `stop_location_gradient=False`. On 60x60
    cluttered MNIST (`reproductions/systems/ram_cluttered_mnist.py`) it trails: at
    the start REINFORCE's gradient at the core is 10 times the
    cross-entropy's (norms 3.69 and 0.36), it drives the location means
    into the tanh's saturation (95% of them beyond ±0.95 after 100
    epochs, glimpses pinned to the image's edges, against 0.6% with the
    stop), where the policy's gradient vanishes, and the model ends at
    69.9% test error against 19.3% with the stop at the same 100 epochs.
    With the paper's linear `μ_t` (`location_activation="linear"`) it
    diverges: 99.8% of the means end off the image and it ends at 88.7%,
    where the stop with a linear `μ_t` reaches 17.7%.

    Loss (`compute_loss`, so `fit` works on every backend): with the reward
    `R = 1` if the prediction is right, else 0,
    `cross-entropy + reinforce_loss(log N(l̃_{t+1}; μ_t, σ²), R, b_t)
    + baseline_loss(b_t, R)`, where `l̃` is the sample before clipping
    (clipping is a fixed function of it). T glimpses take T − 1 location
    actions.

    Randomness: in training (`training=True`) the noise `ε (B, T−1, 2)` is
    `noise` if given, else drawn with the model's `SeedGenerator`; at
    inference the model looks at the means `μ_t` (deterministic).

    Args:
        num_classes: K.
        num_glimpses: T >= 1 (1: the centre glimpse only, no choice).
        glimpse_size: g, the side of each patch.
        num_scales: k, patches per glimpse.
        scale: each patch `scale` times wider than the last.
        glimpse_units: G, the size of `h_g` and `h_l`.
        units: U, the size of `g_t` and `h_t`.
        location_std: σ > 0 of the location policy.
        stop_location_gradient: bool: the location network reads
            `stop_gradient(h_t)` (True) or `h_t` (False: REINFORCE trains
            the core and the glimpse network too).
        location_activation: `"tanh"` (default: `μ_t` stays on the image)
            or `"linear"` (the paper's linear `μ_t`; the location is the
            sample clipped to the image, so a mean past the edge is not
            stuck in a saturated tanh).
        first_location: where the first glimpse looks: `"centre"`
            (default: always the centre) or `"random"` (in training,
            uniform on the image, `l_0 ~ U[-1, 1]²`, as the public
            reproductions draw it; at inference, the centre, the
            uniform's mean, unless `first` is given). The first glimpse
            is not an action of the policy: it has no log-probability.
        seed: the seed of the training noise's `SeedGenerator` (None:
            from Keras's global seed).

    Call arguments:
        images: `(batch, H, W)` or `(batch, H, W, channels)` floats.
        training: bool: sample the locations (True) or take the means.
        noise: optional `(batch, num_glimpses − 1, 2)` standard normal
            noise for the training samples.
        first: optional `(batch, 2)` first locations in [-1, 1] (row,
            column), in place of the centre or the drawn ones.

    Returns:
        A dict: `"logits"` `(batch, K)`, `"locations"` `(batch, T, 2)`
        the `(row, column)` in [-1, 1] of each glimpse, `"means"`
        `(batch, T − 1, 2)`, `"log_probs"` `(batch, T − 1)` of the samples
        taken and `"baselines"` `(batch, T − 1)`, all float32.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models.recurrent_attention import (
    ...     RecurrentAttentionModel)
    >>> model = RecurrentAttentionModel.from_preset("tiny", num_glimpses=3)
    >>> outputs = model(np.zeros((2, 24, 24), "float32"))
    >>> tuple(outputs["logits"].shape), tuple(outputs["locations"].shape)
    ((2, 10), (2, 3, 2))

    References:
        Mnih, Heess, Graves, Kavukcuoglu. "Recurrent Models of Visual
        Attention", NeurIPS 2014 (sections 3-4).
        Williams. "Simple statistical gradient-following algorithms for
        connectionist reinforcement learning", Machine Learning 1992.
    """

    def __init__(
        self,
        num_classes=10,
        num_glimpses=4,
        glimpse_size=8,
        num_scales=3,
        scale=2,
        glimpse_units=128,
        units=256,
        location_std=0.2,
        stop_location_gradient=True,
        location_activation="tanh",
        first_location="centre",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_classes = _validation.positive_int("num_classes",
                                                    num_classes)
        self.num_glimpses = _validation.positive_int("num_glimpses",
                                                     num_glimpses)
        self.glimpse_size = _validation.positive_int("glimpse_size",
                                                     glimpse_size)
        self.num_scales = _validation.positive_int("num_scales", num_scales)
        self.scale = _validation.positive_int("scale", scale)
        self.glimpse_units = _validation.positive_int("glimpse_units",
                                                      glimpse_units)
        self.units = _validation.positive_int("units", units)
        self.location_std = _validation.positive_float("location_std",
                                                       location_std)
        if not isinstance(stop_location_gradient, bool):
            raise ValueError("`stop_location_gradient` must be a bool, "
                             "received: stop_location_gradient="
                             f"{stop_location_gradient!r}")
        self.stop_location_gradient = stop_location_gradient
        self.location_activation = _validation.choice(
            "location_activation", location_activation, ("tanh", "linear"))
        self.first_location = _validation.choice(
            "first_location", first_location, FIRST_LOCATIONS)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

        def dense(size, name, **options):
            return keras.layers.Dense(size, dtype=self.dtype_policy, name=name,
                                      **options)

        self.sensor = GlimpseSensor(glimpse_size, num_scales, scale,
                                    dtype=self.dtype_policy, name="sensor")
        self.what = dense(glimpse_units, "what", activation="relu")  # h_g
        self.where = dense(glimpse_units, "where", activation="relu")  # h_l
        self.what_to_glimpse = dense(units, "what_to_glimpse")
        self.where_to_glimpse = dense(units, "where_to_glimpse",
                                      use_bias=False)
        self.core_input = dense(units, "core_input")
        self.core_state = dense(units, "core_state", use_bias=False)
        self.location_head = dense(2, "location_head",
                                   activation=location_activation)
        self.baseline_head = dense(1, "baseline_head")
        self.classifier = dense(num_classes, "classifier")

    @classmethod
    def from_preset(cls, preset, **overrides):
        """A model of a named size: `"tiny"` or `"small"`."""
        _validation.choice("preset", preset, PRESETS)
        return cls(**{**PRESETS[preset], **overrides})

    def build(self, images_shape):
        channels = images_shape[3] if len(images_shape) == 4 else 1
        flat = self.num_scales * self.glimpse_size**2 * channels
        self.what.build((None, flat))
        self.where.build((None, 2))
        for layer in (self.what_to_glimpse, self.where_to_glimpse):
            layer.build((None, self.glimpse_units))
        for layer in (self.core_input, self.core_state, self.location_head,
                      self.baseline_head, self.classifier):
            layer.build((None, self.units))
        self.built = True

    def _glimpse(self, images, locations):
        """`g_t (B, U)` from the images and `l_t (B, 2)`."""
        patches = self.sensor(images, locations)  # (B, k, g, g, C)
        flat = ops.reshape(patches, (ops.shape(patches)[0], -1))  # (B, kggC)
        where = self.where(ops.cast(locations, self.compute_dtype))
        # ReLU as ops.maximum: TensorFlow's grappler logs errors about the
        # fused add + relu of ops.relu in predict() graphs.
        return ops.maximum(0.0, self.what_to_glimpse(self.what(flat))
                           + self.where_to_glimpse(where))  # (B, U)

    def call(self, images, training=None, noise=None, first=None):
        images = ops.convert_to_tensor(images)
        _validation.rank("images", images.shape, (3, 4),
                         "(batch, height, width) or (batch, H, W, channels)")
        batch = ops.shape(images)[0]
        steps = self.num_glimpses - 1
        if noise is not None:
            noise = ops.convert_to_tensor(noise)
            want = (images.shape[0], steps, 2)
            if not training or len(noise.shape) != 3 or any(
                    a is not None and b is not None and a != b
                    for a, b in zip(noise.shape, want)):
                raise ValueError(
                    "`noise` is the training policy's ε, one (row, column) "
                    "pair per location action: shape (batch, num_glimpses "
                    f"- 1, 2) = {want} with training=True, received: "
                    f"noise.shape={tuple(noise.shape)}, training={training}")
        if training and steps:
            if noise is None:
                noise = keras.random.normal((batch, steps, 2),
                                            seed=self.seed_generator)
            noise = ops.cast(noise, "float32")  # (B, T - 1, 2)
        if first is not None:
            first = ops.convert_to_tensor(first)
            if len(first.shape) != 2 or first.shape[-1] != 2 or (
                    first.shape[0] is not None
                    and images.shape[0] is not None
                    and first.shape[0] != images.shape[0]):
                raise ValueError(
                    "`first` is each image's first (row, column) location: "
                    f"shape (batch, 2) = ({images.shape[0]}, 2), received: "
                    f"first.shape={tuple(first.shape)}")
            locations = ops.clip(ops.cast(first, "float32"), -1.0, 1.0)
        elif training and self.first_location == "random":
            locations = keras.random.uniform(  # l_0 ~ U[-1, 1]²
                (batch, 2), -1.0, 1.0, seed=self.seed_generator)
        else:
            locations = ops.zeros((batch, 2), "float32")  # l_0: the centre
        state = None
        path, means, log_probs, baselines = [locations], [], [], []
        for step in range(self.num_glimpses):
            glimpse = self._glimpse(images, locations)  # (B, U)
            inputs = self.core_input(glimpse)
            state = ops.maximum(0.0, inputs if state is None
                                else inputs + self.core_state(state))
            if step == steps:
                break
            frozen = ops.stop_gradient(state)
            mean = ops.cast(self.location_head(
                frozen if self.stop_location_gradient else state),
                "float32")  # (B, 2)
            baselines.append(ops.cast(self.baseline_head(frozen),
                                      "float32")[:, 0])
            if training:
                sample = ops.stop_gradient(
                    mean + self.location_std * noise[:, step])
            else:
                sample = mean
            log_probs.append(gaussian_log_prob(sample, mean,
                                               self.location_std))
            locations = ops.stop_gradient(ops.clip(sample, -1.0, 1.0))
            means.append(mean)
            path.append(locations)
        logits = ops.cast(self.classifier(state), "float32")  # (B, K)
        empty = logits[:, :0]  # (B, 0) when T = 1
        return {
            "logits": logits,
            "locations": ops.stack(path, axis=1),  # (B, T, 2)
            "means": (ops.stack(means, axis=1) if means
                      else ops.stack([empty, empty], axis=-1)),
            "log_probs": ops.stack(log_probs, axis=1) if steps else empty,
            "baselines": ops.stack(baselines, axis=1) if steps else empty,
        }

    def losses_of(self, outputs, labels):
        """The loss's parts: `{"classification", "reinforce", "baseline",
        "reward"}` (the reward: the batch's accuracy), float32 scalars."""
        labels = ops.cast(ops.reshape(labels, (-1,)), "int32")
        logits = outputs["logits"]
        classification = ops.mean(keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True))
        correct = ops.equal(ops.cast(ops.argmax(logits, axis=-1), "int32"),
                            labels)
        rewards = ops.stop_gradient(ops.cast(correct, "float32"))  # (B,)
        return {
            "classification": classification,
            "reinforce": reinforce_loss(outputs["log_probs"], rewards,
                                        outputs["baselines"]),
            "baseline": baseline_loss(outputs["baselines"], rewards),
            "reward": ops.mean(rewards),
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        """Cross-entropy + REINFORCE + the baseline's squared error (see
        `losses_of`). Out of training (`evaluate`) the model took no
        sampled action, so the REINFORCE term is left out.
        `sample_weight` is not supported."""
        if sample_weight is not None:
            raise ValueError("`sample_weight` is not supported, received: "
                             f"sample_weight={type(sample_weight).__name__}")
        parts = self.losses_of(y_pred, y)
        loss = parts["classification"] + parts["baseline"]
        if training:
            loss = loss + parts["reinforce"]
        if self.losses:
            loss = loss + ops.sum(self.losses)
        return loss

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_classes": self.num_classes,
                "num_glimpses": self.num_glimpses,
                "glimpse_size": self.glimpse_size,
                "num_scales": self.num_scales,
                "scale": self.scale,
                "glimpse_units": self.glimpse_units,
                "units": self.units,
                "location_std": self.location_std,
                "stop_location_gradient": self.stop_location_gradient,
                "location_activation": self.location_activation,
                "first_location": self.first_location,
                "seed": self.seed,
            }
        )
        return config
