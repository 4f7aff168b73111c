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
captured, and what it wrote is passed on less the log lines the level
hides (`hidden_log_lines`): anything else TensorFlow writes while it
loads still shows, and a Python exception raised by that import still
reaches the caller with its traceback. (A crash inside the import, such as
a CPU without the instructions the build needs, loses the captured lines:
run with `TF_CPP_MIN_LOG_LEVEL=0` to see them.)

It must run before TensorFlow is imported (Keras imports it on the
TensorFlow backend): TensorFlow reads the variable once, when it loads.
Importing this module imports neither.
"""

import contextlib
import importlib.abc
import importlib.machinery
import logging
import os
import re
import sys
import tempfile

# The Python loggers TensorFlow and absl write their warnings to.
LOGGERS = ("tensorflow", "absl")


def quiet_tensorflow(show_logs=False):
    """Hide TensorFlow's start-up log lines, unless `show_logs`.

    Sets `TF_CPP_MIN_LOG_LEVEL=3` (TensorFlow's C++ logs: errors too, such
    as the `cuInit` line of a machine without a GPU) unless the variable is
    already set, which is kept: a user who sets it gets what they asked for.
    The Python loggers of TensorFlow and absl show errors only. Unless the
    level is 0 (show everything), the first `import tensorflow` runs with
    stderr filtered (see the module docstring). With `show_logs`, sets
    `TF_CPP_MIN_LOG_LEVEL=0`: everything is shown.
    """
    if show_logs:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    if (_level() > 0 and "tensorflow" not in sys.modules
            and not any(isinstance(finder, _MutedImport)
                        for finder in sys.meta_path)):
        sys.meta_path.insert(0, _MutedImport("tensorflow"))


# A line of TensorFlow's C++ logs: absl's prefix (TensorFlow 2.21, `I0000
# 00:00:1795831243.123778   32248 port.cc:153] `) or TensorFlow's own
# (2.20, `2026-11-28 01:48:19.188701: I tensorflow/core/util/port.cc:153] `);
# and absl's notice that precedes them.
_LOG_LINE = re.compile(
    r"^(?:([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^ ]+:\d+\] "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) [^ ]+:\d+\] )")
_ABSL_NOTICE = "WARNING: All log messages before absl::InitializeLog()"
_SEVERITY = "IWEF"


def hidden_log_lines(text, level):
    r"""`text` without the log lines that TF_CPP_MIN_LOG_LEVEL `level`
    hides (1: info, 2: and warnings, 3: and errors), without absl's
    notice, and without the lines that continue a hidden line (a message
    of several lines, such as the CPU-instructions notice); every other
    line is kept.

    >>> print(hidden_log_lines(
    ...     "WARNING: All log messages before absl::InitializeLog() is "
    ...     "called are written to STDERR\n"
    ...     "I0000 00:00:1795831243.123778   32248 port.cc:153] oneDNN\n"
    ...     "I0000 00:00:1795831243.242401   32248 cpu_feature_guard.cc:227]"
    ...     " This TensorFlow binary is optimized\n"
    ...     "To enable the following instructions: AVX2 FMA\n"
    ...     "E0000 00:00:1795831243.242401   32248 x.cc:1] something else\n"
    ...     "a line of its own\n", level=2), end="")
    E0000 00:00:1795831243.242401   32248 x.cc:1] something else
    a line of its own
    """
    kept, hiding = [], False
    for line in text.splitlines(keepends=True):
        match = _LOG_LINE.match(line)
        if match:
            severity = match.group(1) or match.group(2)
            hiding = _SEVERITY.index(severity) < level
        elif line.startswith(_ABSL_NOTICE):
            hiding = True
        elif not hiding or not line.strip():
            hiding = False
        if not hiding:
            kept.append(line)
    return "".join(kept)


@contextlib.contextmanager
def filtered_stderr(level):
    """For the block, what is written to file descriptor 2 (where C++
    libraries write) goes to a temporary file; on the way out, it is
    written to stderr less the lines `hidden_log_lines(..., level)` drops.
    Python's `sys.stderr` is flushed on the way in and out."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        try:
            os.dup2(captured.fileno(), 2)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", "replace")
            rest = hidden_log_lines(text, level)
            if rest:
                sys.stderr.write(rest)
                sys.stderr.flush()


def _level():
    """TF_CPP_MIN_LOG_LEVEL as a number (0 where unset or not a number)."""
    try:
        return int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
    except ValueError:
        return 0


class _MutedImport(importlib.abc.MetaPathFinder):
    """A finder that finds nothing itself: the first import of `name`
    (found as the path finder after it finds it) runs its module with
    stderr filtered (`filtered_stderr`), and the finder removes itself."""

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
                with filtered_stderr(_level()):
                    execute(module)

            spec.loader.exec_module = exec_module
        return spec
