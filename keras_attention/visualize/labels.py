"""Token labels as a reader expects them: SentencePiece pieces made legible.

SentencePiece marks the start of a word with "▁" (U+2581); a piece without
it continues the word before it. Every piece keeps its own label (one row or
column of the attention matrix each), so pieces are not joined; instead:

- a word-initial piece loses its "▁": `"▁Haus"` -> `"Haus"`;
- a continuation piece gets a leading "·": `"chen"` -> `"·chen"`;
- a piece that is only "▁" (a space before punctuation or a digit SentencePiece
  split off) shows as the visible space `"␣"`;
- control pieces such as `"<s>"`, `"</s>"`, `"<pad>"`, `"<unk>"` stay as
  they are, and so do the first piece of a sequence and a piece right after
  a lone "▁" (both start a word without a marker of their own).

Pieces may be `str`, `bytes` (as TensorFlow returns them) or a NumPy array
of either.
"""

import re

import numpy as np

WORD_START = "\u2581"  # SentencePiece's "▁"
CONTINUATION = "\u00b7"  # "·"
VISIBLE_SPACE = "\u2423"  # "␣"
_CONTROL = re.compile(r"^<[^<>\s]+>$")


def as_strings(name, tokens):
    """`tokens` (a list, tuple or 1-D array of str or UTF-8 bytes) as a list
    of str; a ValueError names `name` otherwise."""
    if isinstance(tokens, (str, bytes)):
        raise ValueError(
            f"`{name}` must be a sequence of tokens, not one string, "
            f"received: {name}={tokens!r}"
        )
    if isinstance(tokens, np.ndarray) and tokens.ndim != 1:
        raise ValueError(
            f"`{name}` must be one-dimensional, received: "
            f"{name}.shape={tokens.shape}"
        )
    if hasattr(tokens, "numpy"):  # a TensorFlow tensor of strings
        tokens = tokens.numpy()
    strings = []
    for token in tokens:
        if isinstance(token, bytes):
            token = token.decode("utf-8", errors="replace")
        elif isinstance(token, np.str_):
            token = str(token)
        elif not isinstance(token, str):
            raise ValueError(
                f"`{name}` must hold strings, received: {name} containing "
                f"{token!r} ({type(token).__name__})"
            )
        strings.append(token)
    return strings


def is_control(piece):
    """True for control pieces like `"<s>"`, `"</s>"`, `"<pad>"`."""
    return bool(_CONTROL.match(piece))


def clean_piece(piece, first=False):
    """One piece's label (rules in the module docstring).

    >>> [clean_piece(p) for p in ["▁Haus", "chen", "▁", "</s>"]]
    ['Haus', '·chen', '␣', '</s>']
    >>> clean_piece("chen", first=True)
    'chen'
    """
    if piece == WORD_START:
        return VISIBLE_SPACE
    if piece.startswith(WORD_START):
        return piece[len(WORD_START):]
    if first or is_control(piece) or not piece:
        return piece
    return CONTINUATION + piece


def clean_pieces(pieces, name="tokens"):
    """Labels for a sequence of SentencePiece pieces (or plain words: those
    without any "▁" in the sequence are returned unchanged, so word-level
    tokens need no option).

    >>> clean_pieces(["▁Ein", "▁Häus", "chen", "▁", "2", "0", "</s>"])
    ['Ein', 'Häus', '·chen', '␣', '2', '·0', '</s>']
    >>> clean_pieces(["a", "dog", "runs"])
    ['a', 'dog', 'runs']
    """
    pieces = as_strings(name, pieces)
    if not any(WORD_START in piece for piece in pieces):
        return pieces
    labels = []
    for index, piece in enumerate(pieces):
        starts_word = index == 0 or pieces[index - 1] == WORD_START
        labels.append(clean_piece(piece, first=starts_word))
    return labels
