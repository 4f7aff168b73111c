"""Run a Python script as the GPU machine runs it: with no TensorFlow.

A GPU machine may have JAX and PyTorch but no TensorFlow, so every
benchmark `benchmarks/gpu/run.py` starts goes through this runner, here as
there: an import of `tensorflow` (or of the packages built on it) fails as
it fails where it is not installed, so a code path that needs TensorFlow
fails on the CPU smoke run (`run.py --smoke`, in `make test`) before it can
fail on the GPU. Imports that a library tries and survives (Keras probes
for TensorFlow) are counted and printed at exit.

    python benchmarks/gpu/without_tensorflow.py SCRIPT [ARGUMENTS...]
"""

import atexit
import importlib.abc
import json
import os
import pathlib
import runpy
import sys

BLOCKED = ("tensorflow", "tensorflow_text", "tf_keras", "keras_hub",
           "tensorflow_hub")
attempts = []


class BlockTensorFlow(importlib.abc.MetaPathFinder):
    """A finder, first on `sys.meta_path`, that refuses `BLOCKED`."""

    def find_spec(self, name, path=None, target=None):
        root = name.partition(".")[0]
        if root in BLOCKED:
            attempts.append(name)
            raise ModuleNotFoundError(
                f"No module named {name!r} (the GPU run has no TensorFlow; "
                "benchmarks/gpu/without_tensorflow.py)", name=name)
        return None


def loaded():
    """The `BLOCKED` modules in `sys.modules` (none, if the block held)."""
    return sorted(name for name, module in sys.modules.items()
                  if module is not None
                  and name.partition(".")[0] in BLOCKED)


def report():
    """Print the refused imports; write them and `loaded()` as JSON to
    `$WITHOUT_TENSORFLOW_REPORT` when it is set."""
    path = os.environ.get("WITHOUT_TENSORFLOW_REPORT")
    if path:
        with open(path, "w") as file:
            json.dump({"tensorflow_modules": loaded(),
                       "tensorflow_imports_refused": sorted(set(attempts))},
                      file)
    if attempts:
        print(f"without_tensorflow: {len(attempts)} import(s) of TensorFlow "
              f"refused and survived: {sorted(set(attempts))}", flush=True)


def main(argv):
    if not argv:
        print("usage: without_tensorflow.py SCRIPT [ARGUMENTS...]",
              file=sys.stderr)
        return 2
    if loaded():
        print(f"without_tensorflow: already imported: {loaded()}",
              file=sys.stderr)
        return 2
    sys.meta_path.insert(0, BlockTensorFlow())
    atexit.register(report)
    sys.argv = list(argv)
    sys.path.insert(0, str(pathlib.Path(argv[0]).resolve().parent))
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
