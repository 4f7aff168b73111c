"""`SAGAN`: its two networks' shapes and where the block sits, the
arguments it refuses, saving and loading, and the attention probes."""

import keras
import numpy as np
import pytest

from keras_attention.layers import SelfAttention2D
from keras_attention.models import SAGAN


def _blocks(model):
    return [layer for layer in model.layers
            if isinstance(layer, SelfAttention2D)]


@pytest.mark.parametrize("image_size", [16, 28])
def test_shapes_and_the_block_at_half_the_side(image_size):
    gan = SAGAN(image_size=image_size, latent_dim=8, width=8)
    noise = np.random.default_rng(0).normal(size=(3, 8)).astype("float32")
    images = keras.ops.convert_to_numpy(gan(noise))
    assert images.shape == (3, image_size, image_size, 1)
    assert np.abs(images).max() <= 1.0  # tanh
    scores = gan.discriminator(images)
    assert tuple(scores.shape) == (3, 1)
    for network in (gan.generator, gan.discriminator):
        (block,) = _blocks(network)
        # (B, S/2, S/2, 2w) in and out
        assert tuple(block.output[0].shape) == (
            None, image_size // 2, image_size // 2, 16)
    plain = SAGAN(image_size=image_size, latent_dim=8, width=8,
                  attention=False)
    assert not _blocks(plain.generator) and not _blocks(plain.discriminator)
    assert plain.attention_gammas() is None


def test_every_convolution_and_dense_layer_is_spectrally_normalized():
    gan = SAGAN(image_size=16, latent_dim=8, width=8)
    for network in (gan.generator, gan.discriminator):
        wrapped = [layer for layer in network.layers
                   if isinstance(layer, keras.layers.SpectralNormalization)]
        bare = [layer for layer in network.layers if isinstance(
            layer, (keras.layers.Conv2D, keras.layers.Dense))]
        assert len(wrapped) == 4 and not bare, network.name
        (block,) = _blocks(network)
        assert block.spectral_normalization


@pytest.mark.parametrize("arguments, message", [
    (dict(image_size=30), "image_size must be a multiple of 4"),
    (dict(image_size=0), "image_size"),
    (dict(width=6), "width must be a multiple of 4"),
    (dict(latent_dim=0), "latent_dim"),
    (dict(channels=-1), "channels"),
    (dict(attention="yes"), "attention must be a bool"),
])
def test_bad_arguments_are_named(arguments, message):
    with pytest.raises(ValueError, match=message):
        SAGAN(**arguments)


def test_saved_and_loaded_it_generates_the_same_images(tmp_path):
    gan = SAGAN(image_size=16, latent_dim=8, width=8)
    noise = np.random.default_rng(1).normal(size=(2, 8)).astype("float32")
    gan(noise)
    block = gan.generator.get_layer("attention")
    block.gamma.assign(0.5)  # a trained-looking γ must survive the trip
    path = tmp_path / "sagan.keras"
    gan.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, SAGAN) and loaded.width == 8
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(noise)),
                               keras.ops.convert_to_numpy(gan(noise)),
                               atol=1e-6)
    assert loaded.attention_gammas() == {"generator": 0.5,
                                         "discriminator": 0.0}


def test_probes_return_the_blocks_weights():
    gan = SAGAN(image_size=16, latent_dim=8, width=8)
    make_probe, judge_probe = gan.attention_probes()
    noise = np.random.default_rng(2).normal(size=(2, 8)).astype("float32")
    images, weights = (keras.ops.convert_to_numpy(x)
                       for x in make_probe(noise))
    np.testing.assert_allclose(images, keras.ops.convert_to_numpy(gan(noise)),
                               atol=1e-6)
    assert weights.shape == (2, 64, 16)  # 8x8 queries, 4x4 pooled keys
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert tuple(judge_probe(images).shape) == (2, 64, 16)
    with pytest.raises(ValueError, match="attention=False"):
        SAGAN(image_size=16, attention=False).attention_probes()
