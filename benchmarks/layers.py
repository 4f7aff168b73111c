"""Our layers against the references, measured side by side in one run.

For each pair, with the same shapes and copied weights where the layouts
match: forward+backward time of a compiled training-like step (tf.function),
median of repeated runs timed alternately, and the ratio ours / reference
(< 1 means we are faster). Then incremental decoding of a whole sequence:
cached decoder steps against re-running the whole prefix at every step.

Run: `make bench` or `python benchmarks/layers.py [--quick]`.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention.layers import MultiHeadSelfAttention  # noqa: E402
from keras_attention.layers import TransformerDecoder  # noqa: E402
from keras_attention.layers import TransformerEncoder  # noqa: E402


def paired_medians(first, second, repeats, warmup=2):
    """Median seconds of two functions, timed alternately so that drift in
    the machine's load affects both alike."""
    for _ in range(warmup):
        first()
        second()
    times = ([], [])
    for _ in range(repeats):
        for function, bucket in ((first, times[0]), (second, times[1])):
            started = time.perf_counter()
            function()
            bucket.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def fwd_bwd(layer, *args, **kwargs):
    variables = layer.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            outputs = layer(*args, **kwargs)
            loss = tf.reduce_sum(tf.square(outputs))
        return tape.gradient(loss, variables)

    return lambda: [g.numpy() for g in step()]


def compare(name, ours, reference, repeats):
    ours_seconds, reference_seconds = paired_medians(ours, reference,
                                                     repeats)
    ratio = ours_seconds / reference_seconds
    print(f"{name:<46} {ours_seconds * 1e3:9.2f} {reference_seconds * 1e3:9.2f}"
          f" {ratio:7.2f}")
    return ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller shapes and fewer repeats")
    args = parser.parse_args()
    batch, length, dim, heads = (4, 64, 128, 4) if args.quick else (8, 128,
                                                                   256, 8)
    repeats = 5 if args.quick else 30
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, length, dim)).astype("float32"))
    source = tf.constant(rng.normal(size=(batch, length, dim)).astype(
        "float32"))
    padding = tf.constant(np.arange(length)[None] < rng.integers(
        length // 2, length + 1, size=(batch, 1)))
    print(f"B={batch} T={length} D={dim} heads={heads}; "
          f"{tf.config.threading.get_intra_op_parallelism_threads() or 'all'}"
          f" intra-op threads; median of {repeats} runs, milliseconds")
    print(f"{'fwd+bwd':<46} {'ours':>9} {'ref':>9} {'ratio':>7}")

    ours = MultiHeadSelfAttention(heads, dim // heads)
    ours(x)
    theirs = keras.layers.MultiHeadAttention(heads, dim // heads)
    theirs(x, x)
    theirs.set_weights(ours.get_weights())
    mask = padding[:, None, :] & padding[:, :, None]
    compare("MultiHeadSelfAttention vs keras MHA, causal",
            fwd_bwd(ours, x, padding_mask=padding, use_causal_mask=True),
            fwd_bwd(theirs, x, x, attention_mask=mask, use_causal_mask=True),
            repeats)

    ours = TransformerEncoder(4 * dim, heads)
    ours(x)
    hub = keras_hub.layers.TransformerEncoder(4 * dim, heads)
    hub(x)
    compare("TransformerEncoder vs keras_hub, padded",
            fwd_bwd(ours, x, padding_mask=padding),
            fwd_bwd(hub, x, padding_mask=padding), repeats)

    ours = TransformerDecoder(4 * dim, heads)
    ours(x, source)
    hub = keras_hub.layers.TransformerDecoder(4 * dim, heads)
    hub(x, source)
    compare("TransformerDecoder vs keras_hub, padded",
            fwd_bwd(ours, x, source, decoder_padding_mask=padding,
                    encoder_padding_mask=padding),
            fwd_bwd(hub, x, source, decoder_padding_mask=padding,
                    encoder_padding_mask=padding), repeats)

    # Incremental decoding of `length` positions: cached steps versus
    # re-running the decoder on the whole prefix at every step.
    print(f"\n{'decode ' + str(length) + ' positions':<46} {'cached':>9} "
          f"{'prefix':>9} {'ratio':>7}")

    @tf.function
    def cached_step(token, cache, index):
        return ours(token, cache=cache, cache_update_index=index)

    @tf.function(reduce_retracing=True)
    def prefix_step(prefix):
        return ours(prefix, source)[:, -1:]

    def decode_cached():
        cache = ours.initial_cache(source, max_length=length)
        for index in range(length):
            out, cache = cached_step(x[:, index:index + 1], cache,
                                     tf.constant(index))
        return out.numpy()

    def decode_prefix():
        for index in range(length):
            out = prefix_step(x[:, : index + 1])
        return out.numpy()

    # Both produce the same last position; check before timing.
    np.testing.assert_allclose(decode_cached(), decode_prefix(), atol=1e-4)
    compare("TransformerDecoder: KV cache vs full prefix",
            decode_cached, decode_prefix, max(3, repeats // 5))


if __name__ == "__main__":
    main()
