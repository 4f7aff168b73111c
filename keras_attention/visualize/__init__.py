"""Attention as pictures: matplotlib heatmaps and a standalone HTML viewer.

- `plot_attention(weights (T, S), target_tokens, source_tokens)`: one
  heatmap; `plot_heads` a grid of heads `(N, T, S)` and their average;
  `plot_hops` bar charts of a memory network's hops `(K, M)`;
  `plot_pooling` self-attentive pooling's hops `(num_hops, T)`. Each returns
  a `matplotlib.figure.Figure` and saves PNG/SVG/PDF when given `path`.
- `AttentionViewer(attention (L, N, T, S), target_tokens, source_tokens)`:
  one self-contained interactive HTML page (`save`, `to_html`), shown
  inline in Jupyter.
- `plot_translation` / `translation_viewer`: the same for the result of
  `TranslatorModule.translate_with_attention`, padding and EOS removed.
- `plot_image_attention(image (H, W), attention (T, L), words, grid)`: a
  captioner's attention over image locations, one panel per word
  (`upsample_attention` spreads each location's weight over its pixels).
- `plot_glimpses(images (N, H, W), locations (N, T, 2), glimpse_size)`:
  a recurrent attention model's glimpses drawn on the images.
- `plot_piano_roll(chorale (T, 4))`: a four-voice chorale (sampled by a
  language model, or a primer and its continuation) as a piano roll.
- `plot_ponder(question, sentences, ponder)`: a Universal Transformer's
  ponder time per sentence of a bAbI story, supporting facts marked.
- `clean_pieces`: SentencePiece pieces as labels ("▁" word starts removed,
  continuation pieces shown as "·piece").

Names load on first use, so `import keras_attention.visualize` does not
import matplotlib.
"""

from keras_attention._lazy import lazy_exports

_EXPORTS = {
    "AttentionViewer": "viewer",
    "clean_pieces": "labels",
    "plot_attention": "heatmaps",
    "plot_glimpses": "glimpses",
    "plot_heads": "heatmaps",
    "plot_image_attention": "image_attention",
    "plot_piano_roll": "piano_roll",
    "plot_ponder": "ponder",
    "plot_hops": "heatmaps",
    "plot_pooling": "heatmaps",
    "plot_translation": "translation",
    "read_data": "viewer",
    "save": "heatmaps",
    "translation_viewer": "translation",
    "upsample_attention": "image_attention",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
