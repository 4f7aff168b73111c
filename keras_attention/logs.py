"""`quiet_tensorflow`: a first screen without TensorFlow's start-up logs.

On import and on its first operation TensorFlow writes C++ log lines to
stderr: `Could not find cuda drivers`, `oneDNN custom operations are on`,
`This TensorFlow binary is optimized to use available CPU instructions`
and, on a machine without a GPU, `failed call to cuInit: INTERNAL: CUDA
error` (an error-level line, so `TF_CPP_MIN_LOG_LEVEL=2` still shows it).
None of them is a failure, and each reads like one to a newcomer. The
command line, the demo, the examples and the benchmarks call
`quiet_tensorflow()` before anything imports TensorFlow, as a script of
yours can:

    from keras_attention.logs import quiet_tensorflow

    quiet_tensorflow()

    import keras  # on the TensorFlow backend, this loads TensorFlow

`TF_CPP_MIN_LOG_LEVEL` does it on TensorFlow 2.20. TensorFlow 2.21 logs
through absl, and writes its first lines (absl's `WARNING: All log
messages before absl::InitializeLog() is called are written to STDERR`,
then the oneDNN and CUDA-driver notices, twice) while its libraries load,
before it reads the variable; so the first `import tensorflow` after
`quiet_tensorflow()` runs with the process's stderr (file descriptor 2)
pointed at /dev/null. A Python exception raised by that import still
reaches the caller with its traceback.

It must run before TensorFlow is imported (Keras imports it on the
TensorFlow backend): TensorFlow reads the variable once, when it loads.
Importing this module imports neither.
"""

import contextlib
import importlib.abc
import importlib.machinery
import logging
import os
import sys

# The Python loggers TensorFlow and absl write their warnings to.
LOGGERS = ("tensorflow", "absl")


def quiet_tensorflow(show_logs=False):
    """Hide TensorFlow's start-up log lines, unless `show_logs`.

    Sets `TF_CPP_MIN_LOG_LEVEL=3` (TensorFlow's C++ logs: errors too, such
    as the `cuInit` line of a machine without a GPU) unless the variable is
    already set, which is kept: a user who sets it gets what they asked for.
    The Python loggers of TensorFlow and absl show errors only. Unless the
    level is 0 (show everything), the first `import tensorflow` runs with
    stderr muted (see the module docstring). With `show_logs`, sets
    `TF_CPP_MIN_LOG_LEVEL=0`: everything is shown.
    """
    if show_logs:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    if (os.environ["TF_CPP_MIN_LOG_LEVEL"].strip() not in ("", "0")
            and "tensorflow" not in sys.modules
            and not any(isinstance(finder, _MutedImport)
                        for finder in sys.meta_path)):
        sys.meta_path.insert(0, _MutedImport("tensorflow"))


@contextlib.contextmanager
def muted_stderr():
    """File descriptor 2 (where C++ libraries write) to /dev/null for the
    block; Python's `sys.stderr` is flushed on the way in and out."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


class _MutedImport(importlib.abc.MetaPathFinder):
    """A finder that finds nothing itself: the first import of `name`
    (found as the path finder after it finds it) runs its module with
    stderr muted, and the finder removes itself."""

    def __init__(self, name):
        self.name = name

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        # A look-up alone (`importlib.util.find_spec`, as
        # keras_attention._extras.require does) executes nothing: the
        # finder stays until the module runs.
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None and hasattr(
                spec.loader, "exec_module"):
            execute = spec.loader.exec_module

            def exec_module(module):
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
                with muted_stderr():
                    execute(module)

            spec.loader.exec_module = exec_module
        return spec
