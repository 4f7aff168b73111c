"""
Title: Which self-attention heads link a pronoun to its noun
Description: every layer and head of a trained translator's attention,
read at one word's row: how much it attends to each candidate noun, and
where it looks most.

The Transformer papers show an encoder head that links "it" to the noun it
stands for. This script asks a trained translator the same question with
`Translator.attention(text, kind=...)`: by default the encoder's
self-attention of every layer and head (`--word` a source word, `--nouns`
source words); with `--kind cross` the decoder's attention over the
source (`--word` a word of the translation, `--nouns` source words); with
`--kind decoder` the decoder's self-attention (`--word` and `--nouns`
words of the translation; a row reads the words before it). Subword
pieces are grouped into words (a piece that starts with "▁" begins one):
a word's row is the mean of its pieces' rows, and the weight it receives
is the sum over its pieces' columns.

Run: `python examples/pronoun_heads.py --model-dir runs/multi30k
"The car leaves a dust trail as it goes around the dirt track."
--word it --nouns car trail` (any trained Transformer translator, e.g.
from `keras-attention train` or `examples/translate_multi30k.py`).
"""

import argparse

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import numpy as np

from keras_attention.translator import Translator

"""
## Pieces to words
"""


SPECIAL = ("<s>", "</s>", "<pad>", "<unk>")


def words_of(pieces):
    """`[(word, [piece indices])]`: SentencePiece pieces grouped into
    words, a new word at every piece that starts with "▁"; a special
    piece (`<s>`, `</s>`, ...) is a word of its own.

    >>> words_of(["▁The", "▁car", "▁go", "es", "."])
    [('The', [0]), ('car', [1]), ('goes.', [2, 3, 4])]
    >>> words_of(["<s>", "▁Weg", ".", "</s>"])
    [('<s>', [0]), ('Weg.', [1, 2]), ('</s>', [3])]
    """
    words = []
    for index, piece in enumerate(pieces):
        if (piece.startswith("▁") or not words or piece in SPECIAL
                or words[-1][0] in SPECIAL):
            words.append((piece.lstrip("▁"), [index]))
        else:
            words[-1] = (words[-1][0] + piece, words[-1][1] + [index])
    return words


def word_weights(weights, row_pieces, column_pieces):
    """`(L, N, R, C)` piece-by-piece weights to word by word: rows averaged
    over a word's pieces, columns summed. Returns `(row words, column
    words, (L, N, Wr, Wc))`."""
    rows_of, columns_of = words_of(row_pieces), words_of(column_pieces)
    rows = np.stack([weights[..., idx, :].mean(-2) for _, idx in rows_of], -2)
    grouped = np.stack([rows[..., idx].sum(-1) for _, idx in columns_of], -1)
    return ([word for word, _ in rows_of], [word for word, _ in columns_of],
            grouped)


"""
## The table
"""


def head_table(result, word, nouns):
    """For `result = Translator.attention(text, kind=...)`, one row per
    layer and head: `(layer, head, {noun: weight}, top word, its weight)`
    read at `word`'s row (its first occurrence)."""
    row_words, column_words, grouped = word_weights(
        result["attention"], result["row_pieces"], result["column_pieces"])
    for name, words in ((word, row_words),
                        *((noun, column_words) for noun in nouns)):
        if name not in words:
            raise ValueError(f"{name!r} is not a word the map has, whose "
                             f"words are {words}")
    row = row_words.index(word)
    table = []
    for layer in range(grouped.shape[0]):
        for head in range(grouped.shape[1]):
            weights = grouped[layer, head, row]
            top = int(np.argmax(weights))
            table.append((layer, head,
                          {noun: float(weights[column_words.index(noun)])
                           for noun in nouns},
                          column_words[top], float(weights[top])))
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("text", help="an English sentence with the word")
    parser.add_argument("--model-dir", required=True,
                        help="a trained Transformer translator's folder")
    parser.add_argument("--word", default="it")
    parser.add_argument("--kind", default="encoder",
                        choices=["encoder", "cross", "decoder"])
    parser.add_argument("--nouns", nargs="+", required=True,
                        help="the candidate words the --word may stand for")
    args = parser.parse_args(argv)
    translator = Translator.load(args.model_dir)
    result = translator.attention(args.text, kind=args.kind)
    table = head_table(result, args.word, args.nouns)
    print(f"{args.text}\n  -> {result['translation']}")
    print(f"row of {args.word!r}, every {args.kind} layer and head:")
    for layer, head, to_nouns, top, weight in table:
        nouns = "  ".join(f"{noun} {value:.2f}" for noun, value in
                          to_nouns.items())
        print(f"  layer {layer} head {head}:  {nouns}  (most: {top} "
              f"{weight:.2f})")
    return table


if __name__ == "__main__":
    main()
