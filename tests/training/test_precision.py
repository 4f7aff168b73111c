"""`precision="auto"`: bfloat16 only where the hardware computes it, the
choice printed with its reason, and every place that takes a precision
defaulting to it."""

import subprocess
import sys

import pytest

from keras_attention.training import precision
from keras_attention.training import seq2seq
from keras_attention.training.config import TrainingConfig
from keras_attention.training.precision import choose_precision
from keras_attention.training.precision import cpu_flags
from keras_attention.training.precision import describe_precision

# /proc/cpuinfo flags of the project's two CPU kinds (abridged).
INTEL_AVX512_BF16 = {"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16"}
AMD_AVX2 = {"avx2", "fma", "sse4_2", "bmi2"}
SAPPHIRE_RAPIDS = {"avx2", "avx512f", "amx_tile", "amx_bf16", "amx_int8"}


@pytest.mark.parametrize(
    "flags, gpus, environ, expected",
    [
        (INTEL_AVX512_BF16, [], {}, "mixed_bfloat16"),
        (AMD_AVX2, [], {}, "float32"),
        (SAPPHIRE_RAPIDS - {"avx512f"}, [], {}, "mixed_bfloat16"),
        # oneDNN off: TensorFlow's CPU kernels do not use AVX512-BF16.
        (INTEL_AVX512_BF16, [], {"TF_ENABLE_ONEDNN_OPTS": "0"}, "float32"),
        (INTEL_AVX512_BF16, [], {"TF_ENABLE_ONEDNN_OPTS": "1"},
         "mixed_bfloat16"),
        (AMD_AVX2, [(8, 0)], {}, "mixed_bfloat16"),  # an A100
        (AMD_AVX2, [(9, 0)], {}, "mixed_bfloat16"),  # an H100
        (INTEL_AVX512_BF16, [(7, 0)], {}, "mixed_float16"),  # a V100
        (AMD_AVX2, [(9, 0), (7, 5)], {}, "mixed_float16"),  # the weakest
        (INTEL_AVX512_BF16, [], {"KERAS_ATTENTION_PRECISION": "float32"},
         "float32"),
        (AMD_AVX2, [], {"KERAS_ATTENTION_PRECISION": "mixed_bfloat16"},
         "mixed_bfloat16"),
    ],
    ids=["intel-avx512-bf16", "amd-avx2", "amx", "onednn-off", "onednn-on",
         "ampere", "hopper", "volta", "mixed-gpus",
         "env-float32", "env-bf16"],
)
def test_auto_follows_the_hardware(flags, gpus, environ, expected):
    policy, reason = choose_precision("auto", flags=flags, gpus=gpus,
                                      environ=environ)
    assert policy == expected
    assert reason.startswith("auto: ")


def test_unreadable_flags_mean_float32(monkeypatch):
    """Where /proc/cpuinfo cannot be read (not Linux), bfloat16 is not
    assumed."""
    monkeypatch.setattr(precision, "cpu_flags", lambda: None)
    assert choose_precision("auto", gpus=[], environ={}) == (
        "float32", "auto: the CPU's flags cannot be read here")


def test_reasons_name_what_decided():
    _, reason_avx2 = choose_precision("auto", flags=AMD_AVX2, gpus=[],
                                      environ={})
    assert "no AVX512-BF16 or AMX-BF16" in reason_avx2
    _, reason = choose_precision("auto", flags=INTEL_AVX512_BF16, gpus=[],
                                 environ={})
    assert reason == "auto: the CPU computes bfloat16 natively (avx512_bf16)"
    _, reason = choose_precision("auto", flags=INTEL_AVX512_BF16, gpus=[],
                                 environ={"TF_ENABLE_ONEDNN_OPTS": "0"})
    assert "TF_ENABLE_ONEDNN_OPTS=0" in reason
    _, reason = choose_precision("auto", flags=AMD_AVX2, gpus=[(8, 6)],
                                 environ={})
    assert "compute capability 8.6" in reason
    policy, line = describe_precision("auto", flags=AMD_AVX2, gpus=[],
                                      environ={})
    assert line == f"precision: float32 ({reason_avx2})"


@pytest.mark.parametrize("setting", ["float32", "mixed_bfloat16",
                                     "mixed_float16"])
def test_an_explicit_policy_is_obeyed_on_any_hardware(setting):
    for flags in (INTEL_AVX512_BF16, AMD_AVX2):
        assert choose_precision(setting, flags=flags, gpus=[],
                                environ={}) == (setting, "asked for")


def test_bad_values_name_the_argument():
    with pytest.raises(ValueError, match=r"`precision`.*received: "
                                         r"precision='bf16'"):
        choose_precision("bf16")
    with pytest.raises(ValueError, match=r"received: precision='bf16'"):
        TrainingConfig(precision="bf16")
    with pytest.raises(ValueError, match=r"KERAS_ATTENTION_PRECISION='fp8'"):
        choose_precision("auto", flags=AMD_AVX2, gpus=[],
                         environ={"KERAS_ATTENTION_PRECISION": "fp8"})


def test_cpu_flags_read_the_first_processor(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\n"
                       "flags\t\t: fpu avx2 fma avx512_bf16\n\n"
                       "processor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(cpuinfo) == {"fpu", "avx2", "fma", "avx512_bf16"}
    assert cpu_flags(tmp_path / "missing") is None


def test_auto_is_the_default_of_training_and_the_command_line():
    assert TrainingConfig().precision == "auto"
    result = subprocess.run(
        [sys.executable, "-m", "keras_attention", "train", "--help"],
        capture_output=True, text=True, check=True)
    help_text = " ".join(result.stdout.split())
    assert "--precision {auto,float32,mixed_bfloat16,mixed_float16}" in (
        help_text)
    assert "Keras dtype policy: auto" in help_text


def test_a_run_prints_its_choice_and_trains_under_it(tmp_path, capsys,
                                                      monkeypatch):
    monkeypatch.setenv("KERAS_ATTENTION_PRECISION", "mixed_bfloat16")
    config = TrainingConfig(output_dir=str(tmp_path), preset="tiny",
                            train_size=64, epochs=1, max_length=16,
                            vocabulary_size=200, bleu_sentences=0,
                            verbose=0)
    _, _, model = seq2seq.setup(config)
    printed = capsys.readouterr().out
    assert ("precision: mixed_bfloat16 (auto: "
            "KERAS_ATTENTION_PRECISION=mixed_bfloat16)") in printed
    assert model.dtype_policy.name == "mixed_bfloat16"
    assert config.precision == "auto"  # the caller's config is unchanged
