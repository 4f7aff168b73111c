"""The few places where the layer and op tests depend on the Keras backend.

The layers and ops are written with `keras.ops`, so their tests run under
TensorFlow and under JAX (`KERAS_BACKEND=jax`, `make test-jax`). The tests
need a backend only as a tool: to compile a function, to take a gradient.
Those tools live here, so a test reads the same under every backend:

- `compiled(function)`: traced into a graph (`tf.function`; `jax.jit`);
- `jit_compiled(function)`: compiled with XLA
  (`tf.function(jit_compile=True)`; `jax.jit`, always XLA);
- `gradient(function, *arguments)`: the gradients of a scalar function
  (`tf.GradientTape`; `jax.grad`);
- `tensorflow_only(why)`: a pytest mark that skips, under other backends,
  a test of what only TensorFlow has (tracing with unknown dimensions
  through `tf.TensorSpec`, the op types of a TF graph).
"""

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()


def tensorflow_only(why):
    """Skip the test unless the backend is TensorFlow, saying `why`."""
    return pytest.mark.skipif(
        BACKEND != "tensorflow",
        reason=f"TensorFlow only ({why}); KERAS_BACKEND={BACKEND}",
    )


def compiled(function):
    """`function` traced once into a graph and run from it."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(function)
    if BACKEND == "jax":
        import jax

        return jax.jit(function)
    raise NotImplementedError(f"no graph mode for backend={BACKEND!r}")


def jit_compiled(function):
    """`function` compiled with XLA."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(function, jit_compile=True)
    if BACKEND == "jax":
        import jax

        return jax.jit(function)
    raise NotImplementedError(f"no XLA compilation for backend={BACKEND!r}")


def compiled_variants():
    """(name, wrapper, whether it is XLA) for each distinct way to compile.

    Under JAX `compiled` and `jit_compiled` are both `jax.jit`: one entry.
    """
    if BACKEND == "jax":
        return [("jax.jit", jit_compiled, True)]
    return [("tf.function", compiled, False),
            ("jit_compile", jit_compiled, True)]


def gradient(function, *arguments):
    """The gradients of the scalar `function(*arguments)`, one per argument.

    Arguments are NumPy arrays (or tensors); the gradients come back as a
    list of NumPy arrays of the arguments' shapes.
    """
    if BACKEND == "tensorflow":
        import tensorflow as tf

        tensors = [tf.convert_to_tensor(argument) for argument in arguments]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            target = function(*tensors)
        gradients = tape.gradient(target, tensors)
        # TensorFlow says None where JAX says zeros: the result does not
        # depend on that argument, which no caller expects.
        for index, value in enumerate(gradients):
            assert value is not None, f"no path to argument {index}"
    elif BACKEND == "jax":
        import jax

        gradients = jax.grad(
            lambda *values: keras.ops.cast(function(*values), "float32"),
            argnums=tuple(range(len(arguments))),
        )(*[jax.numpy.asarray(argument) for argument in arguments])
    else:
        raise NotImplementedError(f"no gradients for backend={BACKEND!r}")
    return [np.asarray(keras.ops.convert_to_numpy(g)) for g in gradients]
