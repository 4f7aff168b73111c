"""Draw a translator's attention, from either of its two reports:

- `Translator.attention(text)`: one sentence, `target_pieces`,
  `source_pieces` and `attention` `(L, N, T, S)`, every decoder layer and
  head (the target's pieces end with EOS);
- `TranslatorModule.translate_with_attention(text)` (also the SavedModel's
  signature): a batch, `pieces` `(B, T)`, `source_pieces` `(B, S)` and
  `attention` `(B, T, S)`, the last block with its heads averaged; rows
  after the EOS and source columns past the sentence are `<pad>`.

Rows and columns whose piece is in `drop` (padding, EOS, BOS by default) are
removed before drawing.

Letters: B batch, L layers, N heads, T target length, S source length.
"""

import numpy as np

from keras_attention.visualize import _arrays
from keras_attention.visualize import heatmaps
from keras_attention.visualize import labels as labels_lib
from keras_attention.visualize import viewer

DROP = ("<pad>", "</s>", "<s>")
_BATCH_KEYS = ("pieces", "source_pieces", "attention")
_SENTENCE_KEYS = ("target_pieces", "source_pieces", "attention")


def _numpy(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _one(result, index):
    """`(attention (..., T, S), target_pieces, source_pieces)` of one
    sentence, padded or not."""
    if isinstance(result, dict) and all(k in result for k in _SENTENCE_KEYS):
        weights = _arrays.weights_array("result['attention']",
                                        _numpy(result["attention"]), (4,),
                                        "(L, N, T, S)")
        target, source = result["target_pieces"], result["source_pieces"]
    elif isinstance(result, dict) and all(k in result for k in _BATCH_KEYS):
        batch = _arrays.weights_array("result['attention']",
                                      _numpy(result["attention"]), (3,),
                                      "(B, T, S)")
        if isinstance(index, bool) or not 0 <= int(index) < batch.shape[0]:
            raise ValueError(
                f"`index` must be in [0, {batch.shape[0]}) for a batch of "
                f"{batch.shape[0]}, received: index={index!r}"
            )
        weights = batch[index]  # (T, S)
        target = _numpy(result["pieces"])[index]
        source = _numpy(result["source_pieces"])[index]
    else:
        received = sorted(result) if isinstance(result, dict) else type(result)
        raise ValueError(
            "`result` must be the dict of `Translator.attention` (keys "
            f"{list(_SENTENCE_KEYS)}) or of `translate_with_attention` (keys "
            f"{list(_BATCH_KEYS)}), received: {received}"
        )
    target = labels_lib.as_strings("target pieces", target)
    source = labels_lib.as_strings("source pieces", source)
    if (len(target), len(source)) != weights.shape[-2:]:
        raise ValueError(
            "`result` pieces must match its attention (..., T, S), received: "
            f"attention.shape={weights.shape}, {len(target)} target pieces, "
            f"{len(source)} source pieces"
        )
    return weights, target, source


def translation_example(result, index=0, drop=DROP):
    """`(attention (..., T', S'), target_pieces, source_pieces)` of one
    sentence (example `index` of a batch), without the rows and columns
    whose piece is in `drop`.

    >>> result = {"pieces": [[b"\\xe2\\x96\\x81A", b"</s>", b"<pad>"]],
    ...           "source_pieces": [[b"\\xe2\\x96\\x81Ein", b"<pad>"]],
    ...           "attention": [[[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]]}
    >>> weights, target, source = translation_example(result)
    >>> weights.tolist(), target, source
    ([[1.0]], ['▁A'], ['▁Ein'])
    """
    weights, target, source = _one(result, index)
    rows = [i for i, piece in enumerate(target) if piece not in drop]
    columns = [j for j, piece in enumerate(source) if piece not in drop]
    if not rows or not columns:
        raise ValueError(
            f"Nothing is left to draw once {list(drop)} are dropped, "
            f"received: target pieces={target}, source pieces={source}"
        )
    weights = np.take(np.take(weights, rows, axis=-2), columns, axis=-1)
    return (weights, [target[i] for i in rows], [source[j] for j in columns])


def _title(result, index):
    if "translation" not in result:
        return None
    translation = _numpy(result["translation"])
    if translation.ndim:  # a batch
        translation = translation[index]
    translation = translation.item() if hasattr(translation, "item") else (
        translation)
    if isinstance(translation, bytes):
        return translation.decode("utf-8", errors="replace")
    return str(translation)


def plot_translation(result, index=0, *, layer=-1, drop=DROP, title=None,
                     **kwargs):
    """A translation's attention as matplotlib figures: a heatmap for a
    `translate_with_attention` result (example `index`), or the grid of
    heads (and their average) of decoder layer `layer` (default the last)
    for a `Translator.attention` result. The title defaults to the
    translation; other keyword arguments go to `plot_attention` or
    `plot_heads` (e.g. `path="attention.png"`)."""
    weights, target, source = translation_example(result, index, drop)
    if title is None:
        title = _title(result, index)
    if weights.ndim == 2:
        return heatmaps.plot_attention(weights, target, source, title=title,
                                       **kwargs)
    layers = weights.shape[0]
    if isinstance(layer, bool) or not -layers <= int(layer) < layers:
        raise ValueError(
            f"`layer` must be in [{-layers}, {layers}) for {layers} decoder "
            f"layers, received: layer={layer!r}"
        )
    return heatmaps.plot_heads(weights[layer], target, source, title=title,
                               **kwargs)


def translation_viewer(result, index=0, *, drop=DROP, **kwargs):
    """An `AttentionViewer` of a translation: every layer and head of a
    `Translator.attention` result, or the one averaged matrix of example
    `index` of a `translate_with_attention` result. Keyword arguments go to
    `AttentionViewer`; the title defaults to the translation."""
    weights, target, source = translation_example(result, index, drop)
    if weights.ndim == 2:
        kwargs.setdefault("layer_names", ["last layer"])
        kwargs.setdefault("head_names", ["heads averaged"])
    title = _title(result, index)
    if title is not None:
        kwargs.setdefault("title", title)
    return viewer.AttentionViewer(weights, target, source, **kwargs)
