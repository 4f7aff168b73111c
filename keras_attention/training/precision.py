"""The dtype policy a run trains under when it says `precision="auto"`.

bfloat16 pays only where the hardware computes it: on CPUs with
AVX512-BF16 or AMX-BF16 instructions (through TensorFlow's oneDNN
kernels) and on GPUs from compute capability 8.0 (Ampere) on. Elsewhere
it is emulated and slower than float32: on an AVX2-only AMD EPYC the
`small` translator's training step took 7.1 s in mixed_bfloat16 against
5.9 s in float32. So `"auto"` takes

- `mixed_bfloat16` on a GPU of compute capability 8.0 or newer, and on a
  CPU whose flags include `avx512_bf16` or `amx_bf16` (unless TensorFlow's
  oneDNN kernels are turned off with `TF_ENABLE_ONEDNN_OPTS=0`, which
  leaves bfloat16 without its fast matrix products);
- `mixed_float16` on an older GPU (it has float16 units, not bfloat16);
- `float32` everywhere else.

`KERAS_ATTENTION_PRECISION` in the environment, when set to a policy,
is what `"auto"` takes instead (the test suite sets it to float32 so that
its numbers do not depend on the CPU). This module imports neither
TensorFlow nor Keras until it has to look for a GPU.
"""

import os
import pathlib

from keras_attention import _validation

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
"""The Keras dtype policies a run can train in (`--precision`, besides
`"auto"`, which picks one of them for the hardware)."""
PRECISION_SETTINGS = ("auto",) + PRECISIONS
ENVIRONMENT_VARIABLE = "KERAS_ATTENTION_PRECISION"
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The first processor's flags in `cpuinfo`, or None where the file
    cannot be read (not Linux)."""
    try:
        text = pathlib.Path(cpuinfo).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def gpu_compute_capabilities():
    """`[(major, minor), ...]` of the GPUs the Keras backend computes on
    (an empty list on CPUs; `(0, 0)` where the backend does not say)."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return [tuple(tf.config.experimental.get_device_details(gpu).get(
                    "compute_capability", (0, 0)))
                for gpu in tf.config.list_physical_devices("GPU")]
    if backend == "jax":
        import jax

        return [tuple(int(part) for part in str(getattr(
                    device, "compute_capability", "0.0")).split(".")[:2])
                for device in jax.devices() if device.platform == "gpu"]
    if backend == "torch":
        import torch

        return [torch.cuda.get_device_capability(index)
                for index in range(torch.cuda.device_count())]
    return []


def choose_precision(setting="auto", *, flags=None, gpus=None,
                     environ=None):
    """`(policy, reason)`: the Keras dtype policy for `setting` and why.

    Args:
        setting: `"auto"` or one of `PRECISIONS`.
        flags: the CPU's flags (default: read from /proc/cpuinfo).
        gpus: the GPUs' compute capabilities (default: asked of the Keras
            backend, which imports it).
        environ: the environment (default: `os.environ`).

    Example:
    >>> choose_precision("auto", flags={"avx2", "avx512_bf16"}, gpus=[],
    ...                  environ={})
    ('mixed_bfloat16', 'auto: the CPU computes bfloat16 natively (avx512_bf16)')
    >>> choose_precision("auto", flags={"avx2", "fma"}, gpus=[], environ={})[0]
    'float32'
    >>> choose_precision("float32")
    ('float32', 'asked for')
    """
    _validation.choice("precision", setting, PRECISION_SETTINGS)
    if setting != "auto":
        return setting, "asked for"
    environ = os.environ if environ is None else environ
    forced = environ.get(ENVIRONMENT_VARIABLE)
    if forced:
        _validation.choice(ENVIRONMENT_VARIABLE, forced, PRECISIONS)
        return forced, f"auto: {ENVIRONMENT_VARIABLE}={forced}"
    gpus = gpu_compute_capabilities() if gpus is None else list(gpus)
    if gpus:
        major, minor = min(gpus)
        if major >= 8:
            return "mixed_bfloat16", (
                f"auto: the GPU computes bfloat16 natively (compute "
                f"capability {major}.{minor})")
        return "mixed_float16", (
            f"auto: a GPU of compute capability {major}.{minor} has "
            "float16 units but no bfloat16 ones")
    flags = cpu_flags() if flags is None else set(flags)
    if flags is None:
        return "float32", "auto: the CPU's flags cannot be read here"
    native = [flag for flag in BF16_CPU_FLAGS if flag in flags]
    if not native:
        return "float32", (
            "auto: the CPU has no AVX512-BF16 or AMX-BF16, so bfloat16 "
            "would be emulated and slower than float32")
    if environ.get("TF_ENABLE_ONEDNN_OPTS") == "0":
        return "float32", (
            f"auto: the CPU has {', '.join(native)}, but "
            "TF_ENABLE_ONEDNN_OPTS=0 turns off the oneDNN kernels that use "
            "it")
    return "mixed_bfloat16", (
        f"auto: the CPU computes bfloat16 natively ({', '.join(native)})")


def describe_precision(setting="auto", **kwargs):
    """`(policy, line)`: the chosen policy and the line a run prints, e.g.
    `precision: float32 (auto: the CPU has no AVX512-BF16 ...)`."""
    policy, reason = choose_precision(setting, **kwargs)
    return policy, f"precision: {policy} ({reason})"
