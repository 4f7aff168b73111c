"""RecurrentAttentionModel (RAM): the REINFORCE surrogate's gradient against
a tiny case computed by hand, the baseline's loss, where the location
loss's gradient stops, shapes and the glimpse path, deterministic
inference and fixed noise, the loss falling in a few steps, configuration
round trips and argument errors."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.models import RecurrentAttentionModel
from keras_attention.models.recurrent_attention import PRESETS
from keras_attention.models.recurrent_attention import baseline_loss
from keras_attention.models.recurrent_attention import gaussian_log_prob
from keras_attention.models.recurrent_attention import reinforce_loss

RNG = np.random.default_rng(0)
IMAGES = RNG.random((4, 24, 24)).astype("float32")  # (B, H, W)
LABELS = np.array([3, 1, 4, 1])


def tiny(**options):
    model = RecurrentAttentionModel.from_preset("tiny", **{
        "num_glimpses": 3, **options})
    model(IMAGES)
    return model


def test_reinforce_gradient_of_a_tiny_case_by_hand():
    """Two episodes, two location actions each, σ = 0.5.

    With `log π = log N(l; μ, σ²)`, `∂ log π / ∂μ = (l − μ) / σ²`, so the
    surrogate's gradient is `∂L/∂μ_bt = −(R_b − b_bt)(l_bt − μ_bt) / (σ² B)`
    where the mask is True, else 0.
    """
    std = 0.5
    means = tf.Variable([[[0.1, -0.2], [0.3, 0.0]],
                         [[0.0, 0.0], [0.5, 0.5]]])  # (B=2, T=2, 2)
    samples = np.array([[[0.6, -0.2], [0.3, -0.5]],
                        [[0.25, 0.0], [0.0, 1.0]]], "float32")
    rewards = np.array([1.0, 0.0], "float32")
    baselines = tf.Variable([[0.25, 0.5], [0.5, 0.75]])
    mask = np.array([[True, True], [True, False]])
    with tf.GradientTape(persistent=True) as tape:
        log_probs = gaussian_log_prob(samples, means, std)  # (B, T)
        loss = reinforce_loss(log_probs, rewards, baselines, mask)
    grad = tape.gradient(loss, means).numpy()
    # b=0, t=0: −(1 − 0.25)(0.6 − 0.1, 0) / (0.25 · 2) = (−0.75, 0)
    # b=0, t=1: −(1 − 0.5)(0, −0.5) / 0.5 = (0, 0.5)
    # b=1, t=0: −(0 − 0.5)(0.25, 0) / 0.5 = (0.25, 0)
    # b=1, t=1: masked out.
    expected = [[[-0.75, 0.0], [0.0, 0.5]], [[0.25, 0.0], [0.0, 0.0]]]
    np.testing.assert_allclose(grad, expected, atol=1e-6)
    # The baselines get no gradient from the surrogate (stop-gradient).
    assert tape.gradient(loss, baselines) is None
    # The value: −(1/B) Σ mask · log π · (R − b).
    constant = -2 * math.log(std * math.sqrt(2 * math.pi))
    log_pi = constant - 0.5 * ((samples - means.numpy()) ** 2).sum(-1) / std**2
    advantages = rewards[:, None] - baselines.numpy()
    np.testing.assert_allclose(
        loss, -(log_pi * advantages * mask).sum() / 2, rtol=1e-6)


def test_per_step_rewards_and_no_mask():
    log_probs = np.array([[-1.0, -2.0], [-0.5, -0.5]], "float32")
    baselines = np.zeros((2, 2), "float32")
    per_episode = reinforce_loss(log_probs, np.array([1.0, 2.0]), baselines)
    per_step = reinforce_loss(log_probs, np.array([[1.0, 1.0], [2.0, 2.0]]),
                              baselines)
    np.testing.assert_allclose(per_episode, (3.0 + 2.0) / 2, rtol=1e-6)
    np.testing.assert_allclose(per_step, per_episode, rtol=1e-6)


def test_baseline_loss_value_and_gradient():
    baselines = tf.Variable([[0.5, 1.0], [0.0, 0.25]])
    rewards = tf.constant([1.0, 0.0])
    mask = np.array([[True, True], [True, False]])
    with tf.GradientTape() as tape:
        loss = baseline_loss(baselines, rewards, mask)
    # (0.25 + 0 + 0) / 3 counted steps; ∂/∂b = 2 (b − R) / 3 where counted.
    np.testing.assert_allclose(loss, 0.25 / 3, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(loss, baselines),
                               [[-1 / 3, 0.0], [0.0, 0.0]], atol=1e-6)
    assert float(baseline_loss(np.zeros((3, 0)), np.ones(3))) == 0.0


def test_shapes_and_the_glimpse_path():
    model = tiny()
    outputs = model(IMAGES)
    shapes = {name: tuple(value.shape) for name, value in outputs.items()}
    assert shapes == {"logits": (4, 10), "locations": (4, 3, 2),
                      "means": (4, 2, 2), "log_probs": (4, 2),
                      "baselines": (4, 2)}
    assert all(value.dtype == "float32" for value in outputs.values())
    locations = outputs["locations"].numpy()
    np.testing.assert_array_equal(locations[:, 0], 0.0)  # the centre first
    # At inference the model looks at the means.
    np.testing.assert_array_equal(locations[:, 1:], outputs["means"])
    assert np.abs(locations).max() <= 1.0
    channels = model(IMAGES[..., None])  # (B, H, W, 1): the same model
    np.testing.assert_allclose(channels["logits"], outputs["logits"],
                               atol=1e-6)


def test_inference_is_deterministic_training_samples_around_the_means():
    model = tiny(location_std=0.2)
    first, second = model(IMAGES), model(IMAGES)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])
    noise = RNG.normal(size=(4, 2, 2)).astype("float32")
    sampled = model(IMAGES, training=True, noise=noise)
    again = model(IMAGES, training=True, noise=noise)
    np.testing.assert_array_equal(sampled["locations"], again["locations"])
    means = sampled["means"].numpy()
    np.testing.assert_allclose(sampled["locations"][:, 1:],
                               np.clip(means + 0.2 * noise, -1, 1),
                               atol=1e-6)
    # log π of the unclipped sample μ + σε: constant − |ε|² / 2.
    constant = -2 * math.log(0.2 * math.sqrt(2 * math.pi))
    np.testing.assert_allclose(sampled["log_probs"],
                               constant - 0.5 * (noise**2).sum(-1), rtol=1e-5)
    drawn = model(IMAGES, training=True)["locations"].numpy()
    assert not np.allclose(drawn[:, 1:], first["locations"][:, 1:])


def test_a_random_first_glimpse_is_drawn_in_training_only():
    """`first_location="random"`: in training l_0 ~ U[-1, 1]² (a fresh
    draw each call); at inference the centre, the uniform's mean; `first`
    puts it anywhere. It takes no action: T − 1 log-probabilities."""
    model = tiny(first_location="random", seed=1)
    inference = model(IMAGES)
    np.testing.assert_array_equal(inference["locations"][:, 0], 0.0)
    centred = tiny()
    centred.set_weights(model.get_weights())
    np.testing.assert_array_equal(inference["logits"],
                                  centred(IMAGES)["logits"])
    drawn = [model(IMAGES, training=True)["locations"].numpy()[:, 0]
             for _ in range(50)]
    drawn = np.concatenate(drawn)  # (200, 2)
    assert np.abs(drawn).max() <= 1.0 and drawn.std() > 0.45  # 1/√3
    assert abs(drawn.mean()) < 0.15
    assert tuple(model(IMAGES, training=True)["log_probs"].shape) == (4, 2)
    # A centred model draws nothing; `first` moves either.
    np.testing.assert_array_equal(
        centred(IMAGES, training=True)["locations"][:, 0], 0.0)
    first = np.array([[0.5, -0.5]] * 4, "float32")
    for each in (model, centred):
        for training in (False, True):
            np.testing.assert_allclose(
                each(IMAGES, training=training,
                     first=first)["locations"][:, 0], first)
    with pytest.raises(ValueError, match=r"first.shape=\(4, 3\)"):
        model(IMAGES, first=np.zeros((4, 3), "float32"))
    clone = RecurrentAttentionModel.from_config(model.get_config())
    assert clone.first_location == "random"


def test_the_location_loss_stops_at_the_core_state():
    """REINFORCE trains the location network only; the classifier's loss
    trains everything but the location and baseline heads."""
    model = tiny()
    noise = RNG.normal(size=(4, 2, 2)).astype("float32")
    with tf.GradientTape(persistent=True) as tape:
        outputs = model(IMAGES, training=True, noise=noise)
        parts = model.losses_of(outputs, LABELS)
    names = [w.path for w in model.trainable_weights]

    def reached(loss):
        grads = tape.gradient(loss, model.trainable_weights)
        return {name.split("/")[1] for name, grad in zip(names, grads)
                if grad is not None and np.any(grad.numpy() != 0)}

    assert reached(parts["reinforce"]) == {"location_head"}
    # With the paper's gradient, REINFORCE reaches the core and glimpses.
    paper = tiny(stop_location_gradient=False)
    paper.set_weights(model.get_weights())
    with tf.GradientTape() as paper_tape:
        reinforce = paper.losses_of(
            paper(IMAGES, training=True, noise=noise), LABELS)["reinforce"]
    grads = paper_tape.gradient(reinforce, paper.trainable_weights)
    assert {w.path.split("/")[1] for w, g in zip(paper.trainable_weights,
                                                 grads) if g is not None} == {
        "location_head", "core_input", "core_state", "what", "where",
        "what_to_glimpse", "where_to_glimpse"}
    assert reached(parts["baseline"]) == {"baseline_head"}
    assert "location_head" not in reached(parts["classification"])
    assert {"what", "where", "core_input", "classifier"} <= reached(
        parts["classification"])


def test_the_loss_decreases_in_a_few_steps():
    """On images whose brightness is the label, 20 Adam steps: the total
    loss (REINFORCE's term is noisy) and the cross-entropy fall."""
    keras.utils.set_random_seed(0)
    labels = np.arange(32) % 10
    images = (0.1 * RNG.random((32, 24, 24))
              + labels[:, None, None] / 10).astype("float32")
    model = tiny(seed=1, location_std=0.1)
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    before = model.losses_of(model(images), labels)
    history = model.fit(images, labels, batch_size=32, epochs=20, verbose=0)
    after = model.losses_of(model(images), labels)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:3])
    assert float(after["classification"]) < 0.8 * float(
        before["classification"])
    # evaluate() reports the loss at the means: cross-entropy + baseline.
    evaluated = model.evaluate(images, labels, batch_size=32, verbose=0)
    np.testing.assert_allclose(
        evaluated, float(after["classification"] + after["baseline"]),
        rtol=1e-4)


def test_one_glimpse_takes_no_action_and_trains():
    model = tiny(num_glimpses=1)
    outputs = model(IMAGES, training=True)
    assert tuple(outputs["log_probs"].shape) == (4, 0)
    assert tuple(outputs["means"].shape) == (4, 0, 2)
    parts = model.losses_of(outputs, LABELS)
    assert float(parts["reinforce"]) == 0.0 and float(parts["baseline"]) == 0.0
    model.compile(optimizer="adam")
    history = model.fit(IMAGES, LABELS, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_config_and_keras_serialization_round_trip(tmp_path):
    model = tiny(location_std=0.1, seed=3, scale=3)
    config = keras.saving.serialize_keras_object(model)
    clone = keras.saving.deserialize_keras_object(config)
    assert isinstance(clone, RecurrentAttentionModel)
    clone(IMAGES)
    clone.set_weights(model.get_weights())
    assert clone.get_config() == model.get_config()
    assert clone.location_std == 0.1 and clone.scale == 3
    for name, value in model(IMAGES).items():
        np.testing.assert_allclose(clone(IMAGES)[name], value, atol=1e-6)
    path = tmp_path / "ram.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    np.testing.assert_allclose(restored(IMAGES)["logits"],
                               model(IMAGES)["logits"], atol=1e-6)


def test_the_papers_linear_mean_may_leave_the_image_the_glimpse_may_not():
    """`location_activation="linear"`: μ is the location head's affine
    output (the paper's), unbounded; the glimpse goes to the sample
    clipped to [-1, 1]. tanh's μ stays inside."""
    linear = tiny(location_activation="linear")
    bounded = tiny(location_activation="tanh")
    for model in (linear, bounded):
        head = model.location_head
        head.kernel.assign(np.full(head.kernel.shape, 0.5, "float32"))
        head.bias.assign(np.array([3.0, -3.0], "float32"))
    state = np.maximum(0.0, np.random.default_rng(3).normal(
        size=(4, linear.units)))
    np.testing.assert_allclose(
        linear.location_head(state.astype("float32")),
        state.sum(-1, keepdims=True) * 0.5 + [3.0, -3.0], atol=1e-5)
    outputs = linear(IMAGES)
    means = outputs["means"].numpy()
    assert np.abs(means).max() > 1.0  # the mean leaves the image
    np.testing.assert_allclose(outputs["locations"][:, 1:].numpy(),
                               np.clip(means, -1.0, 1.0))
    assert np.abs(bounded(IMAGES)["means"].numpy()).max() <= 1.0
    config = linear.get_config()
    assert config["location_activation"] == "linear"
    assert RecurrentAttentionModel.from_config(
        config).location_activation == "linear"


def test_presets():
    assert set(PRESETS) == {"tiny", "small"}
    model = RecurrentAttentionModel.from_preset("small", num_glimpses=6)
    assert model.num_glimpses == 6
    assert model.units == PRESETS["small"]["units"]


@pytest.mark.parametrize(
    "options, message",
    [({"num_classes": 0}, "num_classes=0"),
     ({"num_glimpses": 0}, "num_glimpses=0"),
     ({"glimpse_size": -1}, "glimpse_size=-1"),
     ({"scale": 0}, "scale=0"),
     ({"units": 2.5}, "units=2.5"),
     ({"location_std": 0.0}, "location_std=0.0"),
     ({"stop_location_gradient": 1}, "stop_location_gradient=1"),
     ({"location_activation": "relu"}, "location_activation='relu'"),
     ({"first_location": "left"}, "first_location='left'")],
)
def test_bad_arguments_name_themselves(options, message):
    with pytest.raises(ValueError, match=message):
        RecurrentAttentionModel(**options)


def test_bad_inputs_name_themselves():
    model = tiny()
    with pytest.raises(ValueError, match="images.shape"):
        model(np.zeros((24, 24), "float32"))
    with pytest.raises(ValueError, match="preset='huge'"):
        RecurrentAttentionModel.from_preset("huge")
    with pytest.raises(ValueError, match="sample_weight"):
        model.compute_loss(y=LABELS, y_pred=model(IMAGES),
                           sample_weight=np.ones(4))


def test_noise_of_the_wrong_shape_or_outside_training_names_itself():
    model = RecurrentAttentionModel.from_preset("tiny", num_glimpses=3)
    images = np.zeros((2, 40, 40), "float32")
    model(images)
    with pytest.raises(ValueError, match=r"noise.shape=\(2, 3, 2\)"):
        model(images, training=True, noise=np.zeros((2, 3, 2), "float32"))
    with pytest.raises(ValueError, match="training=False"):
        model(images, training=False, noise=np.zeros((2, 2, 2), "float32"))
