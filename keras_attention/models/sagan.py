"""`SAGAN`: a spectrally normalized GAN with SAGAN's self-attention block
(Zhang et al., 2019) in its generator and discriminator.

Letters: B batch, Z latent size, S image side, w width (channels at S×S;
2w at S/2, 4w at S/4), Q the block's query positions ((S/2)²), K its
pooled key positions ((S/4)²).
"""

import keras

from keras_attention import _validation
from keras_attention.layers.self_attention_2d import SelfAttention2D

BLOCK = "attention"  # the name of the block in both networks


def _spectral(layer):
    return keras.layers.SpectralNormalization(layer)


def _generator(image_size, channels, latent_dim, width, attention, dtype):
    layers, quarter = keras.layers, image_size // 4
    noise = keras.Input((latent_dim,), name="noise")  # (B, Z)
    x = _spectral(layers.Dense(quarter * quarter * 4 * width,
                               dtype=dtype))(noise)
    x = layers.Reshape((quarter, quarter, 4 * width))(x)  # (B, S/4, S/4, 4w)
    x = layers.ReLU()(layers.BatchNormalization(dtype=dtype)(x))
    x = layers.UpSampling2D()(x)  # (B, S/2, S/2, 4w)
    x = _spectral(layers.Conv2D(2 * width, 3, padding="same", dtype=dtype))(x)
    x = layers.ReLU()(layers.BatchNormalization(dtype=dtype)(x))
    if attention:  # (B, S/2, S/2, 2w), weights (B, Q, K)
        x, _ = SelfAttention2D(spectral_normalization=True, name=BLOCK,
                               dtype=dtype)(x, return_attention_scores=True)
    x = layers.UpSampling2D()(x)  # (B, S, S, 2w)
    x = _spectral(layers.Conv2D(width, 3, padding="same", dtype=dtype))(x)
    x = layers.ReLU()(layers.BatchNormalization(dtype=dtype)(x))
    image = _spectral(layers.Conv2D(channels, 3, padding="same",
                                    activation="tanh", dtype=dtype))(x)
    return keras.Model(noise, image, name="generator")  # (B, S, S, channels)


def _discriminator(image_size, channels, width, attention, dtype):
    layers = keras.layers
    image = keras.Input((image_size, image_size, channels), name="images")
    x = _spectral(layers.Conv2D(width, 3, padding="same", dtype=dtype))(image)
    x = layers.LeakyReLU(0.1)(x)  # (B, S, S, w)
    x = _spectral(layers.Conv2D(2 * width, 4, strides=2, padding="same",
                                dtype=dtype))(x)
    x = layers.LeakyReLU(0.1)(x)  # (B, S/2, S/2, 2w)
    if attention:
        x, _ = SelfAttention2D(spectral_normalization=True, name=BLOCK,
                               dtype=dtype)(x, return_attention_scores=True)
    x = _spectral(layers.Conv2D(4 * width, 4, strides=2, padding="same",
                                dtype=dtype))(x)
    x = layers.LeakyReLU(0.1)(x)  # (B, S/4, S/4, 4w)
    score = _spectral(layers.Dense(1, dtype=dtype))(layers.Flatten()(x))
    return keras.Model(image, score, name="discriminator")  # (B, 1)


@keras.saving.register_keras_serializable(package="keras_attention")
class SAGAN(keras.Model):
    """A generator and a discriminator, both spectrally normalized, with
    `SelfAttention2D` on their feature maps at half the image's side.

    The generator maps a latent `(B, latent_dim)` through a dense layer to
    `(S/4, S/4, 4w)`, then twice upsampling and a 3×3 convolution (with
    batch normalization and ReLU) to `(S/2, S/2, 2w)` and `(S, S, w)`, and
    a 3×3 convolution with tanh to the image in [-1, 1]. The discriminator
    mirrors it: a 3×3 convolution at `(S, S, w)`, 4×4 convolutions of
    stride 2 to `(S/2, S/2, 2w)` and `(S/4, S/4, 4w)` (LeakyReLU 0.1), and
    a dense score. Every convolution and dense layer is wrapped in
    `keras.layers.SpectralNormalization`, as in the paper; with
    `attention=True` both networks have the block (spectrally normalized,
    γ starting at 0) on their `(S/2, S/2, 2w)` maps: for a 128×128 image
    that is the paper's "feat64", one of its two best placements.

    Train it with `keras_attention.training.gan.hinge_gan_trainer` (the
    paper's hinge loss, one discriminator step per generator step, two
    time scales) and judge it with
    `keras_attention.training.frechet.frechet_distance`.

    Args:
        image_size: int, S, a multiple of 4 (28 for MNIST).
        channels: int >= 1, the image's channels.
        latent_dim: int >= 1, Z.
        width: int, w, a multiple of 4 (the block's keys have 2w/8
            channels).
        attention: bool, whether both networks have the block.

    Call arguments:
        noise: `(B, latent_dim)`.
        training: bool; batch normalization's mode and spectral
            normalization's power iteration.

    Returns:
        Images `(B, image_size, image_size, channels)` in [-1, 1] (the
        generator's; `sagan.discriminator(images)` scores images `(B, 1)`).

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import SAGAN
    >>> gan = SAGAN(image_size=16, latent_dim=8, width=8)
    >>> images = gan(np.zeros((2, 8), "float32"))
    >>> tuple(images.shape), tuple(gan.discriminator(images).shape)
    ((2, 16, 16, 1), (2, 1))
    >>> gan.attention_gammas()  # γ starts at 0 in both blocks
    {'generator': 0.0, 'discriminator': 0.0}

    References:
        Zhang, Goodfellow, Metaxas, Odena. Self-Attention Generative
        Adversarial Networks. ICML 2019.
        Miyato, Kataoka, Koyama, Yoshida. Spectral Normalization for
        Generative Adversarial Networks. ICLR 2018.
    """

    def __init__(self, image_size=28, channels=1, latent_dim=64, width=16,
                 attention=True, **kwargs):
        super().__init__(**kwargs)
        _validation.positive_int("image_size", image_size)
        if image_size % 4:
            raise ValueError("image_size must be a multiple of 4 (two "
                             f"upsamplings), received: image_size={image_size}")
        _validation.positive_int("channels", channels)
        _validation.positive_int("latent_dim", latent_dim)
        _validation.positive_int("width", width)
        if width % 4:
            raise ValueError("width must be a multiple of 4 (the block's keys "
                             f"have 2*width/8 channels), received: "
                             f"width={width}")
        if not isinstance(attention, bool):
            raise ValueError(f"attention must be a bool, received: "
                             f"attention={attention!r}")
        self.image_size = image_size
        self.channels = channels
        self.latent_dim = latent_dim
        self.width = width
        self.attention = attention
        self.generator = _generator(image_size, channels, latent_dim, width,
                                    attention, self.dtype_policy)
        self.discriminator = _discriminator(image_size, channels, width,
                                            attention, self.dtype_policy)

    def call(self, noise, training=None):
        return self.generator(noise, training=training)

    def attention_gammas(self):
        """`{"generator": γ, "discriminator": γ}` of the two blocks, as
        floats; None without attention."""
        if not self.attention:
            return None
        return {name: float(keras.ops.convert_to_numpy(
            network.get_layer(BLOCK).gamma))
            for name, network in (("generator", self.generator),
                                  ("discriminator", self.discriminator))}

    def attention_probes(self):
        """`(generator probe, discriminator probe)`: models mapping noise
        to `(images, weights)` and images to `weights`, the block's
        attention `(B, Q, K)`, with the networks' own weights."""
        if not self.attention:
            raise ValueError("attention_probes needs the block, received a "
                             "SAGAN with attention=False")
        make, judge = self.generator, self.discriminator
        return (keras.Model(make.inputs,
                            [make.outputs[0], make.get_layer(BLOCK).output[1]]),
                keras.Model(judge.inputs, judge.get_layer(BLOCK).output[1]))

    def get_config(self):
        return {**super().get_config(), "image_size": self.image_size,
                "channels": self.channels, "latent_dim": self.latent_dim,
                "width": self.width, "attention": self.attention}
