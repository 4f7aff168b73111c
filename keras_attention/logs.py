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

It must run before TensorFlow is imported (Keras imports it on the
TensorFlow backend): TensorFlow reads the variable once, when it loads.
Importing this module imports neither.
"""

import logging
import os

# The Python loggers TensorFlow and absl write their warnings to.
LOGGERS = ("tensorflow", "absl")


def quiet_tensorflow(show_logs=False):
    """Hide TensorFlow's start-up log lines, unless `show_logs`.

    Sets `TF_CPP_MIN_LOG_LEVEL=3` (TensorFlow's C++ logs: errors too, such
    as the `cuInit` line of a machine without a GPU) unless the variable is
    already set, which is kept: a user who sets it gets what they asked for.
    The Python loggers of TensorFlow and absl show errors only. With
    `show_logs`, sets `TF_CPP_MIN_LOG_LEVEL=0`: everything is shown.
    """
    if show_logs:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
