"""`batches`: any iterable in lists of up to `size` items, in order."""


def batches(items, size):
    """Yield lists of up to `size` consecutive items of `items` (a list, a
    file, stdin), each as soon as it is full; the last may be shorter.

    >>> list(batches(iter("abcde"), 2))
    [['a', 'b'], ['c', 'd'], ['e']]
    """
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
