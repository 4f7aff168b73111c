"""A GAN's hinge losses and its training step, on TensorFlow and JAX.

SAGAN (Zhang et al., 2019) trains with the hinge loss (its eq. 3), one
discriminator update per generator update and two time scales (Adam with
β₁ = 0, β₂ = 0.9; the discriminator's rate 4× the generator's).
`hinge_gan_trainer` is that step for any pair of Keras models, e.g. a
`keras_attention.models.SAGAN`'s.

Letters: B batch, Z latent size.
"""

import keras
from keras import ops


def discriminator_hinge(real_scores, fake_scores):
    """`E[max(0, 1 - D(x))] + E[max(0, 1 + D(G(z)))]`.

    >>> import numpy as np
    >>> float(discriminator_hinge(np.array([2.0, 0.0]), np.array([-2.0, 0.5])))
    1.25
    """
    return (ops.mean(ops.relu(1.0 - real_scores))
            + ops.mean(ops.relu(1.0 + fake_scores)))


def generator_hinge(fake_scores):
    """`-E[D(G(z))]`.

    >>> import numpy as np
    >>> float(generator_hinge(np.array([1.0, -3.0])))
    1.0
    """
    return -ops.mean(fake_scores)


def sagan_optimizers(generator_rate=1e-4, discriminator_rate=4e-4):
    """`(generator optimizer, discriminator optimizer)`: the paper's Adam
    with β₁ = 0, β₂ = 0.9 at two time scales."""
    return (keras.optimizers.Adam(generator_rate, beta_1=0.0, beta_2=0.9),
            keras.optimizers.Adam(discriminator_rate, beta_1=0.0, beta_2=0.9))


def hinge_gan_trainer(generator, discriminator, generator_optimizer,
                      discriminator_optimizer):
    """`(step, sync)`: `step(real, noise, more_noise)` runs one
    discriminator update on `real` `(B, ...)` against `generator(noise)`,
    then one generator update on `more_noise` `(B, Z)`, and returns
    `(discriminator loss, generator loss)`; `sync()` writes the trained
    state into the Keras variables (JAX keeps it outside them between
    steps; call it before reading or saving weights).

    The discriminator scores real and fake images in one batch, so its
    batch normalization (if any) sees both. On TensorFlow the step is a
    `tf.function`; on JAX a jitted stateless step.
    """
    generator_optimizer.build(generator.trainable_variables)
    discriminator_optimizer.build(discriminator.trainable_variables)
    backend = keras.backend.backend()
    if backend == "jax":
        return _jax_trainer(generator, discriminator, generator_optimizer,
                            discriminator_optimizer)
    if backend != "tensorflow":
        raise ValueError("hinge_gan_trainer runs on the tensorflow or jax "
                         f"backend, received: backend={backend!r}")
    import tensorflow as tf

    @tf.function
    def step(real, noise, more_noise):
        count = tf.shape(real)[0]
        with tf.GradientTape() as tape:
            fake = generator(noise, training=True)
            scores = discriminator(tf.concat([real, fake], 0), training=True)
            judge_loss = discriminator_hinge(scores[:count], scores[count:])
        discriminator_optimizer.apply_gradients(zip(
            tape.gradient(judge_loss, discriminator.trainable_variables),
            discriminator.trainable_variables))
        with tf.GradientTape() as tape:
            make_loss = generator_hinge(discriminator(
                generator(more_noise, training=True), training=True))
        generator_optimizer.apply_gradients(zip(
            tape.gradient(make_loss, generator.trainable_variables),
            generator.trainable_variables))
        return judge_loss, make_loss

    return step, lambda: None


def _jax_trainer(generator, discriminator, generator_optimizer,
                 discriminator_optimizer):
    """The same step, stateless and compiled. Spectral normalization
    assigns its normalized kernel during the call; the scope keeps that
    value, so the stored kernels are the normalized ones as under
    TensorFlow (whose gradient treats the normalized kernel as the
    variable, where JAX differentiates through σ, as Miyato et al.)."""
    import jax

    def run(model, trainable, fixed, inputs):
        mapping = [*zip(model.trainable_variables, trainable),
                   *zip(model.non_trainable_variables, fixed)]
        with keras.StatelessScope(state_mapping=mapping) as scope:
            outputs = model(inputs, training=True)
        return outputs, (
            [scope.get_current_value(v) for v in model.trainable_variables],
            [scope.get_current_value(v)
             for v in model.non_trainable_variables])

    def judge_loss(trainable, fixed, real, fake):
        scores, state = run(discriminator, trainable, fixed,
                            jax.numpy.concatenate([real, fake]))
        count = real.shape[0]
        return discriminator_hinge(scores[:count], scores[count:]), state

    def make_loss(trainable, fixed, judge_state, noise):
        fake, state = run(generator, trainable, fixed, noise)
        scores, judge_state = run(discriminator, *judge_state, fake)
        return generator_hinge(scores), (state, judge_state)

    def step(state, real, noise, more_noise):
        make_trainable, make_fixed, judge_trainable, judge_fixed, \
            make_slots, judge_slots = state
        fake, (make_trainable, make_fixed) = run(
            generator, make_trainable, make_fixed, noise)
        (judge_value, (judge_trainable, judge_fixed)), grads = (
            jax.value_and_grad(judge_loss, has_aux=True)(
                judge_trainable, judge_fixed, real, fake))
        judge_trainable, judge_slots = (
            discriminator_optimizer.stateless_apply(
                judge_slots, grads, judge_trainable))
        (make_value, ((make_trainable, make_fixed),
                      (judge_trainable, judge_fixed))), grads = (
            jax.value_and_grad(make_loss, has_aux=True)(
                make_trainable, make_fixed, (judge_trainable, judge_fixed),
                more_noise))
        make_trainable, make_slots = generator_optimizer.stateless_apply(
            make_slots, grads, make_trainable)
        return (make_trainable, make_fixed, judge_trainable, judge_fixed,
                make_slots, judge_slots), judge_value, make_value

    owners = [generator.trainable_variables,
              generator.non_trainable_variables,
              discriminator.trainable_variables,
              discriminator.non_trainable_variables,
              generator_optimizer.variables, discriminator_optimizer.variables]
    # Copies: the step donates its state, and Keras's own predict donates
    # the variables' buffers.
    state = [[jax.numpy.copy(v.value) for v in group] for group in owners]
    compiled = jax.jit(step, donate_argnums=0)

    def run_step(real, noise, more_noise):
        nonlocal state
        state, judge_value, make_value = compiled(state, real, noise,
                                                  more_noise)
        return judge_value, make_value

    def sync():
        for group, values in zip(owners, state):
            for variable, value in zip(group, values):
                variable.assign(jax.numpy.copy(value))

    return run_step, sync
