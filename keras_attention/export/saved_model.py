"""`export_translator`: write `BASE/NAME/VERSION/` for TensorFlow Serving."""

import pathlib
import re

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import numpy as np
import tensorflow as tf

from keras_attention.export._held_model import track_held_variables
from keras_attention.export.translator_module import TranslatorModule

# TF Serving's warm-up requests (`assets.extra/tf_serving_warmup_requests`):
# each signature once with one sentence and once with a batch of three of
# different lengths. One request per signature would do: the signatures
# take `[None]` strings, so every batch size runs the same traced graph;
# the first call of a loaded signature is what is slow (graph optimization,
# kernel creation, the SentencePiece model read), and the second batch
# also runs the padding and the longer decoding loop.
WARMUP_BATCHES = (
    ("the man sees the dog .",),
    ("a woman is reading a book in the garden .", "", "two children play ."),
)


def next_version(model_directory):
    """1 + the largest integer-named version folder (1 when there is none)."""
    model_directory = pathlib.Path(model_directory)
    versions = [
        int(p.name) for p in model_directory.glob("*")
        if p.is_dir() and re.fullmatch(r"\d+", p.name)
    ]
    return max(versions, default=0) + 1


def _warmup_requests(name, signature_names):
    """`WARMUP_BATCHES` for each signature, as TF Serving's warm-up
    requests."""
    from keras_attention.export.warmup_requests import predict_request

    return [
        predict_request({"text": np.array(batch, dtype=object)},
                        signature_name, model_name=name)
        for signature_name in signature_names for batch in WARMUP_BATCHES
    ]


def export_translator(module, base_path, name="translator", version=None,
                      warmup=True):
    """Save a `TranslatorModule` as a SavedModel at `BASE/NAME/VERSION/`.

    Signatures: `serving_default` (`text: string [batch]` ->
    `translation: string [batch]`) and `translate_with_attention` (also the
    output tokens and pieces, the source pieces, the cross-attention and
    whether each input was truncated).

    Args:
        module: a `TranslatorModule`.
        base_path: TF Serving's `--model_base_path` parent.
        name: the model name (TF Serving's `--model_name`).
        version: a positive int; defaults to one more than the newest.
        warmup: also write `assets.extra/tf_serving_warmup_requests`, a
            few requests per signature (`WARMUP_BATCHES`) that TF Serving
            (and `keras_attention.serving`) replays before the version
            serves, so that its first request is not slow.

    Returns:
        The path written.
    """
    if not isinstance(warmup, bool):
        raise ValueError("`warmup` must be True or False, received: "
                         f"warmup={warmup!r}")
    if not isinstance(module, TranslatorModule):
        raise ValueError("`module` must be a TranslatorModule, received: "
                         f"{type(module).__name__}")
    signatures = {
        "serving_default": module.translate.get_concrete_function(),
        "translate_with_attention":
            module.translate_with_attention.get_concrete_function(),
    }
    requests = _warmup_requests(name, list(signatures)) if warmup else None
    return save_version(module, base_path, name, version, signatures,
                        requests)


def save_version(module, base_path, name, version, signatures,
                 warmup_requests=None):
    """Save `module` with `signatures` at `BASE/NAME/VERSION/`, the layout
    TF Serving watches, and return the path. Every export writes through
    it.

    The SavedModel (and, when `warmup_requests` is a list of
    `PredictionLog` requests, `assets.extra/tf_serving_warmup_requests`)
    goes to a temporary folder that is renamed when complete, so a server
    watching the base path never sees a half-written version. `version`
    None is one more than the newest; an existing version is never
    overwritten."""
    model_directory = pathlib.Path(base_path) / name
    if version is None:
        version = next_version(model_directory)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"`version` must be a positive int, received: "
                         f"version={version!r}")
    path = model_directory / str(version)
    if path.exists():
        raise FileExistsError(f"{path} exists; choose another `version`")
    staging = model_directory / f".{version}.partial"
    track_held_variables(module)
    tf.saved_model.save(module, str(staging), signatures=signatures)
    if warmup_requests:
        from keras_attention.export.warmup_requests import write_warmup_requests

        write_warmup_requests(staging, warmup_requests)
    staging.rename(path)
    return path
