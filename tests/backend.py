"""The few places where the layer and op tests depend on the Keras backend.

The layers and ops are written with `keras.ops`, so their tests run under
TensorFlow, JAX (`KERAS_BACKEND=jax`, `make test-jax`) and PyTorch
(`KERAS_BACKEND=torch`, `make test-torch`). The tests need a backend only
as a tool: to compile a function, to take a gradient, to read a tensor.
Those tools live here, so a test reads the same under every backend:

- `compiled(function)`: traced into a graph (`tf.function`; `jax.jit`;
  PyTorch: run eagerly);
- `jit_compiled(function)`: compiled with XLA
  (`tf.function(jit_compile=True)`; `jax.jit`, always XLA; PyTorch: the
  test is skipped);
- `gradient(function, *arguments)`: the gradients of a scalar function
  (`tf.GradientTape`; `jax.grad`; `torch.autograd.grad`);
- `as_numpy(value)`: a tensor of any backend (or an array) as a NumPy
  array; PyTorch's tensors that carry gradients are detached first;
- `assert_allclose`, `assert_array_equal`: NumPy's, on tensors of any
  backend;
- `tensorflow_only(why)`: a pytest mark that skips, under other backends,
  a test of what only TensorFlow has (tracing with unknown dimensions
  through `tf.TensorSpec`, the op types of a TF graph).
"""

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()


def as_numpy(value):
    """`value` (a tensor of the backend, or an array) as a NumPy array."""
    return np.asarray(keras.ops.convert_to_numpy(value))


def assert_allclose(actual, desired, **options):
    """`np.testing.assert_allclose` on tensors of any backend."""
    np.testing.assert_allclose(as_numpy(actual), as_numpy(desired), **options)


def assert_array_equal(actual, desired, **options):
    """`np.testing.assert_array_equal` on tensors of any backend."""
    np.testing.assert_array_equal(as_numpy(actual), as_numpy(desired),
                                  **options)


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
    if BACKEND == "torch":
        # PyTorch runs eagerly; `torch.compile` needs a C++ toolchain at
        # test time and is not what a Keras user's layer runs under.
        return function
    raise NotImplementedError(f"no graph mode for backend={BACKEND!r}")


def jit_compiled(function):
    """`function` compiled with XLA."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(function, jit_compile=True)
    if BACKEND == "jax":
        import jax

        return jax.jit(function)
    if BACKEND == "torch":
        pytest.skip("PyTorch has no XLA compilation; the eager tests run")
    raise NotImplementedError(f"no XLA compilation for backend={BACKEND!r}")


def compiled_variants():
    """(name, wrapper, whether it is XLA) for each distinct way to compile.

    Under JAX `compiled` and `jit_compiled` are both `jax.jit`: one entry.
    PyTorch has no graph mode the tests use: none (the eager run is the
    reference every compiled variant is compared with).
    """
    if BACKEND == "jax":
        return [("jax.jit", jit_compiled, True)]
    if BACKEND == "torch":
        return []
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
    elif BACKEND == "torch":
        import torch

        tensors = [
            keras.ops.convert_to_tensor(argument).detach().clone()
            .requires_grad_(True)
            for argument in arguments
        ]
        target = keras.ops.cast(function(*tensors), "float32")
        gradients = torch.autograd.grad(target, tensors)
        gradients = [value.detach() for value in gradients]
    else:
        raise NotImplementedError(f"no gradients for backend={BACKEND!r}")
    return [as_numpy(value) for value in gradients]
