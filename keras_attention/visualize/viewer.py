"""`AttentionViewer`: attention as one self-contained, interactive HTML page.

The page needs no server and no network: its script, stylesheet and data
are inline. Pick a layer and a head (or the average over heads); hover a
target token to shade the source tokens by its attention over them, or a
source token to shade the target tokens by their attention to it; tick
"Show weights" for the numbers. A heatmap table of the selected matrix sits
below. The data is embedded as JSON in
`<script type="application/json" id="ka-attention-data">`, so tools (and
the tests) can read it back.

In Jupyter a viewer displays inline (`_repr_html_`, an iframe whose
`srcdoc` is the page, so its script runs).

Letters: L layers, N heads, T target (query) length, S source (key) length.
"""

import html
import json
import pathlib

import numpy as np

from keras_attention import _validation
from keras_attention.visualize import _arrays
from keras_attention.visualize import _viewer_assets
from keras_attention.visualize import labels as labels_lib

DATA_ID = "ka-attention-data"
MAX_TOKENS = 200


def _script_json(value):
    """JSON that cannot end its `<script>` element early."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c")
            .replace(">", "\\u003e"))


class AttentionViewer:
    """An interactive page for attention over layers and heads.

    Args:
        attention: `(L, N, T, S)`, `(N, T, S)` (one layer) or `(T, S)` (one
            layer, one head) weights, e.g. one example of a layer's
            `return_attention_scores` output, stacked over layers.
        target_tokens: `T` labels of the rows (queries), pieces or words.
        source_tokens: `S` labels of the columns (keys).
        layer_names, head_names: default `"layer 0"`, ..., `"head 0"`, ...
        row_name, column_name: what the rows (queries) and the columns
            (keys) are, shown beside their tokens: `"target"` and
            `"source"` by default; e.g. `"source (query)"` and
            `"source (key)"` for an encoder's self-attention.
        title: the page's heading.
        clean: clean SentencePiece pieces for display (`labels`).
        decimals: weights are stored rounded to this many decimals.
        max_tokens: longer sequences raise a ValueError.

    Example:

    >>> from keras_attention.visualize import AttentionViewer
    >>> viewer = AttentionViewer([[0.9, 0.1], [0.2, 0.8]],
    ...                          ["▁Ein", "▁Hund"], ["▁A", "▁dog"])
    >>> viewer.attention.shape
    (1, 1, 2, 2)
    >>> page = viewer.to_html()  # or viewer.save("attention.html")
    >>> "ka-attention-data" in page and "<script src" not in page
    True
    """

    def __init__(self, attention, target_tokens, source_tokens, *,
                 layer_names=None, head_names=None, title="Attention",
                 clean=True, decimals=6, max_tokens=MAX_TOKENS,
                 row_name="target", column_name="source"):
        weights = _arrays.weights_array(
            "attention", attention, (2, 3, 4), "(L, N, T, S), (N, T, S) or (T, S)"
        )
        original_shape = weights.shape
        while weights.ndim < 4:
            weights = weights[np.newaxis]
        self.attention = weights  # (L, N, T, S)
        layers, heads, rows, columns = weights.shape
        self.target_pieces = labels_lib.as_strings("target_tokens",
                                                   target_tokens)
        self.source_pieces = labels_lib.as_strings("source_tokens",
                                                   source_tokens)
        self.target_tokens = _arrays.axis_labels(
            "target_tokens", self.target_pieces, rows, "attention",
            original_shape, "target (query) position", "", clean)
        self.source_tokens = _arrays.axis_labels(
            "source_tokens", self.source_pieces, columns, "attention",
            original_shape, "source (key) position", "", clean)
        self.layer_names = _arrays.names("layer_names", layer_names, layers,
                                         "layer")
        self.head_names = _arrays.names("head_names", head_names, heads,
                                        "head")
        self.title = str(title)
        self.row_name, self.column_name = str(row_name), str(column_name)
        self.decimals = _validation.non_negative_int("decimals", decimals)
        _validation.positive_int("max_tokens", max_tokens)
        _arrays.max_tokens_check(max_tokens, target_tokens=rows,
                                 source_tokens=columns)

    def data(self):
        """The JSON-ready dict the page embeds."""
        weights = np.round(self.attention.astype(np.float64), self.decimals)
        return {
            "layers": self.layer_names,
            "heads": self.head_names,
            "target": self.target_tokens,
            "source": self.source_tokens,
            "target_pieces": self.target_pieces,
            "source_pieces": self.source_pieces,
            "axes": [self.row_name, self.column_name],
            "attention": weights.tolist(),  # (L, N, T, S)
        }

    def to_html(self):
        """The whole page, as a string."""
        title = html.escape(self.title)
        rows, columns = (html.escape(self.row_name),
                         html.escape(self.column_name))
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{_viewer_assets.CSS}</style>
</head>
<body>
<h1>{title}</h1>
<div class="controls">
<label>Layer <select id="ka-layer"></select></label>
<label>Head <select id="ka-head"></select></label>
<label><input type="checkbox" id="ka-numbers"> Show weights</label>
</div>
<div class="row"><span class="role">{rows}</span>
<div id="ka-target" class="tokens"></div></div>
<div class="row"><span class="role">{columns}</span>
<div id="ka-source" class="tokens"></div></div>
<p class="hint">Hover a {rows} token to shade the {columns} tokens by its
attention; hover a {columns} token to shade the {rows} tokens attending to it.
Rows of the table are {rows} tokens, columns {columns} tokens.</p>
<table id="ka-matrix"></table>
<script type="application/json" id="{DATA_ID}">{_script_json(self.data())}</script>
<script>{_viewer_assets.SCRIPT}</script>
</body>
</html>
"""

    def save(self, path):
        """Write the page to `path` (e.g. `attention.html`); returns it."""
        path = pathlib.Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def _repr_html_(self):
        rows = self.attention.shape[2]
        height = min(900, 220 + 20 * rows)
        return (
            f'<iframe srcdoc="{html.escape(self.to_html(), quote=True)}" '
            f'style="width: 100%; height: {height}px; border: 0" '
            'sandbox="allow-scripts"></iframe>'
        )


def read_data(page):
    """The data dict embedded in a page written by `AttentionViewer`.

    >>> viewer = AttentionViewer([[1.0]], ["a"], ["b"])
    >>> read_data(viewer.to_html())["attention"]
    [[[[1.0]]]]
    """
    start_tag = f'<script type="application/json" id="{DATA_ID}">'
    start = page.find(start_tag)
    if start < 0:
        raise ValueError(
            f"`page` holds no `#{DATA_ID}` script (not written by "
            f"AttentionViewer), received: page={page[:80]!r}..."
        )
    start += len(start_tag)
    end = page.index("</script>", start)
    return json.loads(page[start:end])
