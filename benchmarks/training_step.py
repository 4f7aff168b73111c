"""Translator training speed: ours with and without XLA, and a model of
the same size built from KerasHub layers, on the same batches.

Three models, each compiled with the package's optimizer (Adam, the
inverse-square-root schedule, global-norm clipping) and loss (masked,
label-smoothed cross-entropy), in the same dtype policy:

- *ours*: `TransformerTranslator` of `--preset`, as `keras-attention
  train` compiles it (`--jit-compile auto`: XLA off on CPUs, the choice
  this benchmark measured);
- *ours, XLA*: the same model with `jit_compile=True`;
- *KerasHub*: `keras_hub.layers.TokenAndPositionEmbedding` and stacks of
  `keras_hub.layers.TransformerEncoder` / `TransformerDecoder` of the same
  sizes, logits from the tied embeddings (`ReversibleEmbedding`);
- *shared part*: ours without its encoder and decoder blocks (embeddings,
  positions, output projection, loss and their optimizer updates), the
  part of a step that attention layers cannot speed up. Its time over
  ours is the shared fraction f, and a whole-step speed-up s over KerasHub
  needs blocks (1 - f) / (1/s - f) times as fast as KerasHub's (Amdahl).

The first `--batches` training batches of the corpus (token-count batches
as training makes them) are each trained on once by every model as
warm-up (XLA compiles once per batch shape), then `--passes` more times,
interleaved batch by batch (A B C A B C ...). Prints target tokens per
second for each and the ratios, and writes
`benchmarks/results/training_step.json`.

Run: `python benchmarks/training_step.py` (Multi30k from `$MULTI30K_DIR`
or `--data-dir`; the synthetic corpus without it).
"""

import argparse
import os
import tempfile
import time

import harness  # noqa: E402
import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.models import TRANSLATORS  # noqa: E402
from keras_attention.models import TransformerTranslator  # noqa: E402
from keras_attention.models.transformer_translator import PRESETS  # noqa: E402
from keras_attention.training import seq2seq  # noqa: E402
from keras_attention.training.config import TrainingConfig  # noqa: E402
from keras_attention.training.losses import MaskedAccuracy  # noqa: E402
from keras_attention.training.precision import PRECISION_SETTINGS  # noqa: E402
from keras_attention.training.precision import describe_precision  # noqa: E402


def keras_hub_translator(vocabulary, preset, dtype, pad_id):
    """A Transformer translator of `preset`'s sizes from KerasHub layers."""
    sizes = PRESETS[preset]
    dim, layers = sizes["hidden_dim"], sizes["num_layers"]
    heads, intermediate = sizes["num_heads"], sizes["intermediate_dim"]
    dropout = sizes.get("dropout", 0.1)
    source = keras.Input((None,), dtype="int32", name="encoder_tokens")
    target = keras.Input((None,), dtype="int32", name="decoder_tokens")
    embedding = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary, 512, dim, tie_weights=True,
        dtype=dtype)
    x = embedding(source)
    source_mask = keras.ops.not_equal(source, pad_id)
    for _ in range(layers):
        x = keras_hub.layers.TransformerEncoder(
            intermediate, heads, dropout=dropout, dtype=dtype,
        )(x, padding_mask=source_mask)
    y = embedding(target)
    target_mask = keras.ops.not_equal(target, pad_id)
    for _ in range(layers):
        y = keras_hub.layers.TransformerDecoder(
            intermediate, heads, dropout=dropout, dtype=dtype,
        )(y, x, decoder_padding_mask=target_mask,
          encoder_padding_mask=source_mask)
    logits = embedding.token_embedding(y, reverse=True)
    logits = keras.layers.Activation("linear", dtype="float32")(logits)
    return keras.Model({"encoder_tokens": source, "decoder_tokens": target},
                       logits)


class SharedPart(TransformerTranslator):
    """`TransformerTranslator` without encoder or decoder blocks."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.encoder_blocks, self.decoder_blocks = [], []


def shared_part(config, tokenizer):
    """The run's model without its blocks, compiled as training does."""
    TRANSLATORS["transformer"] = SharedPart
    try:
        return seq2seq.compiled_model(config, tokenizer)
    finally:
        TRANSLATORS["transformer"] = TransformerTranslator


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None,
                        help="Multi30k folder (default: $MULTI30K_DIR)")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--precision", default="auto",
                        choices=PRECISION_SETTINGS,
                        help="dtype policy of all four models (default: "
                             "auto, mixed_bfloat16 on CPUs with AVX512-BF16 "
                             "or AMX, float32 elsewhere)")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--passes", type=int, default=2)
    harness.add_results_arguments(parser, "training_step")
    args = parser.parse_args()
    args.precision, line = describe_precision(args.precision)
    print(line)
    data_dir = args.data_dir or os.environ.get("MULTI30K_DIR")
    if not args.data_dir and data_dir and not os.path.isdir(data_dir):
        data_dir = None  # e.g. the Makefile's default, not on this machine
    config = TrainingConfig(
        output_dir=tempfile.mkdtemp(), preset=args.preset,
        precision=args.precision, verbose=0, max_length=64,
        # The Multi30k benchmark's recipe (benchmarks/translator_multi30k.py).
        vocabulary_size=8000 if data_dir else 1000, tokens_per_batch=4096,
        **(dict(corpus="multi30k", data_dir=data_dir) if data_dir
           else dict(corpus="synthetic")),
    )
    keras.utils.set_random_seed(config.seed)
    data = seq2seq.prepare_data(config)
    batches = list(data.train_data.take(args.batches))
    tokenizer = data.tokenizer

    models = {"ours": seq2seq.compiled_model(config, tokenizer)}
    models["ours, XLA"] = seq2seq.compiled_model(config, tokenizer)
    models["ours, XLA"].jit_compile = True
    hub = keras_hub_translator(tokenizer.vocabulary_size, args.preset,
                               args.precision, tokenizer.pad_id)
    reference = models["ours"]
    hub.compile(optimizer=type(reference.optimizer).from_config(
                    reference.optimizer.get_config()),
                loss=reference.loss,
                metrics=[MaskedAccuracy(pad_id=tokenizer.pad_id)])
    models["KerasHub"] = hub
    models["shared part"] = shared_part(config, tokenizer)
    for name, model in models.items():
        print(f"{name}: {model.count_params():,} weights, jit_compile="
              f"{model.jit_compile}")

    def tokens(labels):
        return int(np.sum(np.asarray(labels) != tokenizer.pad_id))

    seconds = {name: [] for name in models}
    for features, labels in batches:  # warm-up: every shape once
        for model in models.values():
            model.train_on_batch(features, labels)
    for _ in range(args.passes):
        for features, labels in batches:
            for name, model in models.items():
                started = time.perf_counter()
                model.train_on_batch(features, labels)
                seconds[name].append(time.perf_counter() - started)
    total_tokens = args.passes * sum(tokens(labels) for _, labels in batches)
    rates = {name: total_tokens / sum(s) for name, s in seconds.items()}
    rows = []
    for name, rate in rates.items():
        print(f"  {name:<10} {rate:8.0f} target tokens/s")
    for ours, reference in (("ours", "KerasHub"), ("ours, XLA", "ours"),
                            ("ours, XLA", "KerasHub")):
        ratio = rates[ours] / rates[reference]
        print(f"  {ours} / {reference}: {ratio:.2f}x")
        rows.append({"name": f"{args.preset} Transformer, {args.precision}",
                     "ours": ours, "reference": reference,
                     "ours_per_s": rates[ours],
                     "reference_per_s": rates[reference],
                     "unit": "target tokens/s", "speedup": ratio})
    shared = rates["ours"] / rates["shared part"]
    needed = (1 - shared) / (1 / 1.3 - shared) if shared < 1 / 1.3 else None
    print(f"  shared part: {shared:.0%} of our step; a 1.3x step needs "
          + (f"blocks {needed:.2f}x KerasHub's" if needed else
             "more than infinitely fast blocks"))
    harness.write_results(args.results_name or "training_step", rows,
                          directory=args.results_dir,
                          shared_fraction=shared,
                          blocks_needed_for_1_3x=needed,
                          corpus=config.corpus, batches=args.batches,
                          passes=args.passes)


if __name__ == "__main__":
    main()
