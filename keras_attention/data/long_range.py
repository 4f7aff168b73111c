"""A long-range retrieval task for decoder-only models: facts early in a
long document, a question at its end that needs one of them.

A document of `length` tokens is `<s>`, then filler words drawn at random,
with `num_facts` facts written early (within the first `early` fraction of
the document): a fact is a key token followed by its value token, the
keys of a document all different. The document ends with the question
token `?`, one of its keys, and that key's value, the answer:

    <s> f12 f3 k5 v2 f40 ... k9 v14 ... f7 f61 ... f2 ? k9 v14

Filler and values are random, so the answer (the last token) is the one
token a model can predict, and only by attending back over the whole
document to the fact: local attention cannot, unless its window reaches
the fact. A language model trains on it with weight only on the answer.
NumPy only; `generate_documents` draws from `numpy.random.default_rng`.

Letters: N documents, L length.
"""

import numpy as np

from keras_attention import _validation

PAD_ID, BOS_ID, QUESTION_ID = 0, 1, 2
FIRST_KEY_ID = 3


def vocabulary(num_keys=16, num_values=16, num_fillers=64):
    """The id ranges: `{"keys": range, "values": range, "fillers": range,
    "size": vocabulary size}`, after `<pad>` 0, `<s>` 1 and `?` 2.

    >>> from keras_attention.data.long_range import vocabulary
    >>> ids = vocabulary(4, 5, 6)
    >>> ids["keys"], ids["values"], ids["fillers"], ids["size"]
    (range(3, 7), range(7, 12), range(12, 18), 18)
    """
    keys = range(FIRST_KEY_ID, FIRST_KEY_ID + num_keys)
    values = range(keys.stop, keys.stop + num_values)
    fillers = range(values.stop, values.stop + num_fillers)
    return {"keys": keys, "values": values, "fillers": fillers,
            "size": fillers.stop}


def generate_documents(count, length, num_facts=4, num_keys=16,
                       num_values=16, num_fillers=64, early=0.1, seed=0):
    """`count` documents of `length` tokens (see the module's text).

    Args:
        count: int >= 1, N.
        length: int, L: `<s>`, the body, then `? key value`; the body must
            hold the facts in its first `early` fraction.
        num_facts: int >= 1, facts per document (at most `num_keys`).
        num_keys, num_values, num_fillers: the sizes of the id ranges.
        early: float in (0, 1], the part of the body the facts lie in.
        seed: the generator's seed.

    Returns:
        `(tokens (N, L) int32, answers (N,) int32, fact_positions (N,
        num_facts) int32)`: the answer is `tokens[:, -1]`; a fact's
        position is its key's index in the document.

    Example:

    >>> from keras_attention.data.long_range import generate_documents
    >>> tokens, answers, where = generate_documents(2, 84, num_facts=2)
    >>> tokens.shape, bool((tokens[:, -1] == answers).all())
    ((2, 84), True)
    >>> int(tokens[0, -3])  # the question token
    2
    """
    count = _validation.positive_int("count", count)
    length = _validation.positive_int("length", length)
    num_facts = _validation.positive_int("num_facts", num_facts)
    for name, value in (("num_keys", num_keys), ("num_values", num_values),
                        ("num_fillers", num_fillers)):
        _validation.positive_int(name, value)
    if num_facts > num_keys:
        raise ValueError(
            "Each fact needs a key of its own: `num_facts` must be at most "
            f"`num_keys`, received: num_facts={num_facts}, "
            f"num_keys={num_keys}")
    if not 0.0 < early <= 1.0:
        raise ValueError(
            f"`early` must be in (0, 1], received: early={early!r}")
    body = length - 4  # <s> ... ? key value
    region = int(body * early)
    if region < 2 * num_facts:
        raise ValueError(
            f"The first {early:g} of a body of {body} tokens holds "
            f"{region} tokens, too few for {num_facts} facts of 2 tokens: "
            f"received length={length}")
    ids = vocabulary(num_keys, num_values, num_fillers)
    rng = np.random.default_rng(seed)
    tokens = np.empty((count, length), "int32")
    answers = np.empty((count,), "int32")
    positions = np.empty((count, num_facts), "int32")
    for row in range(count):
        document = rng.integers(ids["fillers"].start, ids["fillers"].stop,
                                body)
        # Fact slots: distinct pairs of cells in the early region.
        slots = np.sort(rng.choice(region // 2, num_facts, replace=False))
        keys = rng.choice(ids["keys"], num_facts, replace=False)
        values = rng.integers(ids["values"].start, ids["values"].stop,
                              num_facts)
        document[2 * slots] = keys
        document[2 * slots + 1] = values
        asked = rng.integers(num_facts)
        tokens[row] = np.concatenate(
            [[BOS_ID], document, [QUESTION_ID, keys[asked], values[asked]]])
        answers[row] = values[asked]
        positions[row] = 1 + 2 * slots
    return tokens, answers, positions
