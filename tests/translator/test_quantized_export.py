"""The translator quantized end to end: `Translator.quantize` (weight-only
int8 by default, weight-only int4, int8 with its activations quantized),
saved and loaded (also in another dtype policy) in the same mode, exported
by the Python API and by `keras-attention export --quantize int8`, loaded
in a process that imports only tensorflow and tensorflow_text, and served
over REST and gRPC: everywhere it translates as the quantized model does
in memory."""

import numpy as np
import pytest

from keras_attention.cli import main as cli
from keras_attention.serving.client import Client
from keras_attention.translator import Translator
from tests.serving import http
from tests.serving.conftest import running_server
from tests.trained_translators import TEXTS
from tests.trained_translators import VARIANTS
from tests.trained_translators import trained_translator
from tests.translator.test_export import _load_elsewhere

# (variant, the policy it is loaded in before quantizing): the
# Transformer from mixed_bfloat16 (the precision `--precision auto` trains
# in on a bfloat16 CPU; its export failed before). Both translators'
# quantized logits are checked in tests/models/test_translator_quantization.py.
CASES = [("sinusoidal", "mixed_bfloat16")]


def _int8_layers(model):
    return sorted(layer.name for layer in model._flatten_layers()
                  if getattr(layer, "quantization_mode", None) == "int8")


def _modes(model):
    """{layer name: (mode, activations quantized)} of the quantized
    layers."""
    return {layer.name: (layer.quantization_mode,
                         layer.quantization_config is not None
                         and layer.quantization_config.activation_quantizer
                         is not None)
            for layer in model._flatten_layers()
            if getattr(layer, "quantization_mode", None)}


def _weights_bytes(path):
    return sum(f.stat().st_size for f in (path / "variables").iterdir())


@pytest.fixture(scope="module", params=CASES, ids=["-".join(case)
                                                    for case in CASES])
def quantized(tmp_path_factory, request):
    """(the quantized translator in memory, the export `keras-attention
    export --quantize int8 --dtype POLICY` wrote, the bytes of the float32
    weights, what the command printed): from the tiny trained translator
    of the case's variant."""
    import contextlib
    import io

    variant, policy = request.param
    directory = trained_translator(tmp_path_factory, variant,
                                   then=list(VARIANTS))
    base = tmp_path_factory.mktemp("quantized")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        cli(["export", "--model-dir", str(directory), "--base-path",
             str(base), "--name", "int8", "--quantize", "int8", "--dtype",
             policy])
    float_bytes = 4 * Translator.load(directory, dtype="float32"
                                      ).model.count_params()
    translator = Translator.load(directory, dtype=policy)
    assert translator.quantize("int8") is translator
    return translator, base / "int8" / "1", float_bytes, printed.getvalue()


@pytest.fixture(scope="module")
def int4(tmp_path_factory):
    """(the int4 translator's quantized layers {name: mode}, its
    translations in memory, the translator saved and loaded again, the
    SavedModel that one exported): int4 from the float32 tiny
    translator."""
    directory = trained_translator(tmp_path_factory, "sinusoidal",
                                   then=list(VARIANTS))
    translator = Translator.load(directory, dtype="float32").quantize("int4")
    modes = _modes(translator.model)
    expected = translator.translate(TEXTS)
    base = tmp_path_factory.mktemp("int4")
    translator.save(base / "run")
    again = Translator.load(base / "run")
    return modes, expected, again, again.export(base / "export", "int4")


@pytest.fixture(scope="module")
def elsewhere(quantized, int4):
    """What one other process, importing only tensorflow and
    tensorflow_text, reads from the int8 and the int4 exports (one
    process for both: a start of TensorFlow fewer)."""
    int8_read, int4_read = _load_elsewhere(quantized[1], int4[3])
    return {"int8": int8_read, "int4": int4_read}


def test_quantized_export_translates_like_the_quantized_model(quantized,
                                                             elsewhere):
    import tensorflow as tf

    translator, path, float_bytes, printed = quantized
    assert f"exported to {path}" in printed
    layers = _int8_layers(translator.model)
    # The attention projections are quantized (FlatEinsumDense through
    # EinsumDense's own quantize), the embeddings and feed-forwards too.
    assert any("query" in name or "attention" in name for name in layers)
    assert any("embedding" in name for name in layers), layers
    loaded = elsewhere["int8"]
    assert loaded["translation"] == translator.translate(TEXTS)
    assert loaded["xla_ops"] == []
    saved = tf.train.load_checkpoint(str(path / "variables" / "variables"))
    dtypes = saved.get_variable_to_dtype_map()
    assert sum(dtype == tf.int8 for dtype in dtypes.values()) > 10
    assert not any("optimizer" in name for name in dtypes)  # weights only
    # int8 weights: well under half the float32 weights' bytes (the
    # biases and layer norms stay float).
    assert _weights_bytes(path) < 0.5 * float_bytes


def test_quantized_translator_saves_and_loads_in_another_policy(
        quantized, tmp_path):
    translator = quantized[0]
    translator.save(tmp_path / "run")
    again = Translator.load(tmp_path / "run")
    assert _int8_layers(again.model) == _int8_layers(translator.model)
    assert again.translate(TEXTS) == Translator(
        translator.model, translator.tokenizer,
        translator.max_source_length).translate(TEXTS)
    # weight-only, and loaded weight-only (Keras's nested layers would come
    # back with their activations quantized)
    assert set(_modes(translator.model).values()) == {("int8", False)}
    assert _modes(again.model) == _modes(translator.model)
    other = Translator.load(tmp_path / "run", dtype="mixed_bfloat16")
    assert _int8_layers(other.model) == _int8_layers(translator.model)
    assert other.model.dtype_policy.name == "mixed_bfloat16"
    # int8 from mixed_bfloat16: the quantized layers compute in bfloat16.
    assert {layer.compute_dtype for layer in other.model._flatten_layers()
            if getattr(layer, "quantization_mode", None)} == {"bfloat16"}
    assert len(other.translate(TEXTS[:2])) == 2


def test_export_quantize_mistakes_are_one_line(capsys):
    with pytest.raises(SystemExit):
        cli(["export", "--quantize", "int4x"])
    assert "--quantize: invalid choice: 'int4x'" in capsys.readouterr().err
    assert cli(["export", "--quantize", "int4",
                "--quantize-activations"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "keras-attention: error: --quantize-activations needs --quantize "
        "int8, received: --quantize int4"]


def test_activations_mode_quantizes_every_product_s_inputs():
    """`activations=True`: Keras's default int8 on every quantized layer
    (the weight-only default is checked on the trained translator)."""
    from keras_attention.models import TransformerTranslator
    from keras_attention.translator import quantize_model

    model = TransformerTranslator.from_preset("tiny", 50, 50, pad_id=0)
    model({"encoder_tokens": np.ones((1, 4), "int32"),
           "decoder_tokens": np.ones((1, 3), "int32")})
    quantize_model(model, "int8", activations=True)
    modes = _modes(model)
    assert modes and set(modes.values()) == {("int8", True)}


@pytest.mark.parametrize("mode, activations, message", [
    ("int2", False, "`mode` must be one of ('int8', 'int4'), received: "
                    "mode='int2'"),
    ("int8", "yes", "`activations` must be True or False, received: "
                    "activations='yes'"),
    ("int4", True, "received: mode='int4', activations=True"),
])
def test_quantize_mistakes_name_the_argument(mode, activations, message):
    from keras_attention.translator import quantization_config

    with pytest.raises(ValueError) as caught:
        quantization_config(mode, activations)
    assert message in str(caught.value)


def test_int4_saves_loads_and_exports_as_it_translates(int4, elsewhere):
    """int4 (the embeddings weight-only int8): the layers in that mode,
    the same translations after a save and a load, and from the
    SavedModel."""
    modes, expected, again, _ = int4
    embeddings = {name for name in modes if "embedding" in name}
    assert embeddings, modes
    assert {modes[name] for name in embeddings} == {("int8", False)}
    assert {modes[name] for name in modes if name not in embeddings} \
        == {("int4", False)}
    assert _modes(again.model) == modes
    assert again.translate(TEXTS) == expected
    assert elsewhere["int4"]["translation"] == expected


def test_the_quantized_export_is_served_over_rest_and_grpc(quantized):
    translator, path, _, _ = quantized
    expected = translator.translate(TEXTS)
    with running_server("--model_name=int8",
                        f"--model_base_path={path.parent}",
                        model="int8") as (url, process):
        reply = http.call(url, "predict", {"inputs": {"text": TEXTS}},
                          model="int8")
        assert reply.status == 200, reply.raw
        assert reply.json["outputs"] == expected
        with Client(f"grpc://{process.grpc_target}", "int8") as client:
            assert client.translate(TEXTS) == expected
