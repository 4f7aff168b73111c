"""Draw a translator's attention, from either of its two reports:

- `Translator.attention(text, kind=...)`: one sentence, `target_pieces`,
  `source_pieces` and `attention` `(L, N, T, S)`, every decoder layer and
  head (the target's pieces end with EOS); for `kind="encoder"` or
  `"decoder"` the self-attention `(L, N, S, S)` or `(L, N, T, T)`, whose
  rows and columns are the result's `row_pieces` and `column_pieces`;
- `TranslatorModule.translate_with_attention(text)` (also the SavedModel's
  signature): a batch, `pieces` `(B, T)`, `source_pieces` `(B, S)` and
  `attention` `(B, T, S)`, the last block with its heads averaged; rows
  after the EOS and source columns past the sentence are `<pad>`.

Rows and columns whose piece is in `drop` are removed before drawing:
padding, EOS and BOS by default, padding only for the decoder's
self-attention, whose every row and column is a real position (its rows
the positions that write the target pieces, EOS last; its columns the
pieces they read, BOS first), so that its map stays square.

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
# `Translator.attention` kinds -> the names of the rows and the columns.
AXES = {"cross": ("target", "source"),
        "encoder": ("source (query)", "source (key)"),
        "decoder": ("target (query)", "target (key)")}


def _numpy(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _kind(result):
    """The result's `kind` (`"cross"` when it names none)."""
    kind = result.get("kind", "cross") if isinstance(result, dict) else "cross"
    if not isinstance(kind, str) or kind not in AXES:
        raise ValueError(
            f"`result['kind']` must be one of {', '.join(AXES)}, received: "
            f"kind={kind!r}"
        )
    return kind


def _one(result, index):
    """`(attention (..., T, S), target_pieces, source_pieces)` of one
    sentence, padded or not (rows and columns for a self-attention)."""
    kind = _kind(result)
    if isinstance(result, dict) and all(k in result for k in _SENTENCE_KEYS):
        weights = _arrays.weights_array("result['attention']",
                                        _numpy(result["attention"]), (4,),
                                        "(L, N, T, S)")
        target, source = result["target_pieces"], result["source_pieces"]
        if kind != "cross":
            target = result.get("row_pieces", target)
            source = result.get("column_pieces", source)
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
    rows, columns = ("target", "source") if kind == "cross" else (
        "row", "column")
    target = labels_lib.as_strings(f"{rows} pieces", target)
    source = labels_lib.as_strings(f"{columns} pieces", source)
    if (len(target), len(source)) != weights.shape[-2:]:
        raise ValueError(
            "`result` pieces must match its attention (..., T, S), received: "
            f"attention.shape={weights.shape}, {len(target)} {rows} pieces, "
            f"{len(source)} {columns} pieces"
        )
    return weights, target, source


def translation_example(result, index=0, drop=None):
    """`(attention (..., T', S'), target_pieces, source_pieces)` of one
    sentence (example `index` of a batch), without the rows and columns
    whose piece is in `drop` (default `DROP`; only `"<pad>"` for the
    decoder's self-attention). For a self-attention result the pieces are
    its `row_pieces` and `column_pieces`.

    >>> result = {"pieces": [[b"\\xe2\\x96\\x81A", b"</s>", b"<pad>"]],
    ...           "source_pieces": [[b"\\xe2\\x96\\x81Ein", b"<pad>"]],
    ...           "attention": [[[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]]}
    >>> weights, target, source = translation_example(result)
    >>> weights.tolist(), target, source
    ([[1.0]], ['▁A'], ['▁Ein'])
    """
    weights, target, source = _one(result, index)
    if drop is None:
        drop = ("<pad>",) if _kind(result) == "decoder" else DROP
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


def plot_translation(result, index=0, *, layer=-1, drop=None, title=None,
                     **kwargs):
    """A translation's attention as matplotlib figures: a heatmap for a
    `translate_with_attention` result (example `index`), or the grid of
    heads (and their average) of layer `layer` (default the last) for a
    `Translator.attention` result, its axes named after the result's
    `kind` (target and source, source and source for the encoder's
    self-attention, target and target for the decoder's). The title
    defaults to the translation; other keyword arguments go to
    `plot_attention` or `plot_heads` (e.g. `path="attention.png"`)."""
    weights, target, source = translation_example(result, index, drop)
    if title is None:
        title = _title(result, index)
    if weights.ndim == 2:
        return heatmaps.plot_attention(weights, target, source, title=title,
                                       **kwargs)
    layers = weights.shape[0]
    stack = "encoder" if _kind(result) == "encoder" else "decoder"
    if isinstance(layer, bool) or not -layers <= int(layer) < layers:
        raise ValueError(
            f"`layer` must be in [{-layers}, {layers}) for {layers} {stack} "
            f"layers, received: layer={layer!r}"
        )
    ylabel, xlabel = AXES[_kind(result)]
    kwargs.setdefault("ylabel", ylabel)
    kwargs.setdefault("xlabel", xlabel)
    return heatmaps.plot_heads(weights[layer], target, source, title=title,
                               **kwargs)


def translation_viewer(result, index=0, *, drop=None, **kwargs):
    """An `AttentionViewer` of a translation: every layer and head of a
    `Translator.attention` result (of any `kind`, its rows and columns
    named after it), or the one averaged matrix of example `index` of a
    `translate_with_attention` result. Keyword arguments go to
    `AttentionViewer`; the title defaults to the translation."""
    weights, target, source = translation_example(result, index, drop)
    row_name, column_name = AXES[_kind(result)]
    kwargs.setdefault("row_name", row_name)
    kwargs.setdefault("column_name", column_name)
    if weights.ndim == 2:
        kwargs.setdefault("layer_names", ["last layer"])
        kwargs.setdefault("head_names", ["heads averaged"])
    title = _title(result, index)
    if title is not None:
        kwargs.setdefault("title", title)
    return viewer.AttentionViewer(weights, target, source, **kwargs)
