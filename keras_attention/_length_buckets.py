"""Source-length buckets for BLEU by sentence length (Bahdanau et al.,
2015, Fig. 2): the edges, their labels, which bucket a sentence falls in.
Pure Python, no TensorFlow, so that the command line's parser checks
`--by-length` at once; `keras_attention.translator.bleu_by_length` scores
the buckets."""

import bisect
import numbers

# 1-10, 11-15, 16-20, 21-25 and 26+ source words.
DEFAULT_EDGES = (10, 15, 20, 25)


def length_edges(name, value):
    """`value` as a tuple of bucket edges: a non-empty sequence of positive,
    strictly increasing ints; else a ValueError naming `name` and `value`.

    >>> length_edges("edges", [10, 20])
    (10, 20)
    >>> try:
    ...     length_edges("edges", (10, 5))
    ... except ValueError as error:
    ...     print(error)
    `edges` must be positive, strictly increasing ints (e.g. (10, 15, 20,
    25)), received: edges=(10, 5)
    """
    try:
        edges = tuple(value)
    except TypeError:
        edges = None
    if (
        not edges
        or isinstance(value, (str, bytes))
        or any(isinstance(edge, bool)
               or not isinstance(edge, numbers.Integral) or edge <= 0
               for edge in edges)
        or any(low >= high for low, high in zip(edges, edges[1:]))
    ):
        raise ValueError(
            f"`{name}` must be positive, strictly increasing ints (e.g. "
            f"{DEFAULT_EDGES}), received: {name}={value!r}"
        )
    return tuple(int(edge) for edge in edges)


def bucket_labels(edges):
    """The buckets' labels, in words: edges `e1 < e2 < ...` give `1-e1`,
    `e1+1 - e2`, ..., and `eK+1` and up.

    >>> bucket_labels((10, 15, 20, 25))
    ['1-10', '11-15', '16-20', '21-25', '26+']
    >>> bucket_labels((1, 2, 5))
    ['1', '2', '3-5', '6+']
    """
    labels, low = [], 1
    for high in edges:
        labels.append(str(high) if low == high else f"{low}-{high}")
        low = high + 1
    return [*labels, f"{low}+"]


def bucket_index(length, edges):
    """The bucket of a sentence of `length` words: the first whose edge is
    `>= length` (an edge's own length is in the bucket it closes), else
    the last; an empty sentence counts in the first.

    >>> [bucket_index(length, (10, 15)) for length in (0, 10, 11, 15, 16)]
    [0, 0, 1, 1, 2]
    """
    return bisect.bisect_left(edges, length)
