"""
Title: Adapting a trained translator to new data with LoRA
Description: train only low-rank adapters on the attention projections of
a trained Transformer translator, merge them, save and export.

LoRA (Hu et al., 2021) fine-tunes a large model cheaply: its weights stay
frozen and each adapted projection `W` computes with `W + (α/r) A B`,
where only the small matrices `A` (d × r) and `B` (r × k) train.
`TransformerTranslator.enable_lora(rank)` (as KerasHub's
`Backbone.enable_lora`) freezes every weight and adds Keras's
`EinsumDense` adapters to the query and value projections of every
attention layer, self- and cross-attention; an RNN translator's
`enable_lora` adapts its decoder's `Dense` projections instead. Training
then goes through
the package's own loss and data pipeline (`MaskedCrossentropy`,
`make_dataset`); saving merges the adapters into the kernels, so the
adapted translator saves, loads and exports as a plain one.

Run, with a translator trained by `make demo` (or `keras-attention
train`) and your new pairs (one file `source<TAB>target`, or a source and
a target file):

    python examples/lora_finetune.py --model-dir runs/tiny \
        --train-files new.tsv --val-files new-val.tsv \
        --output-dir runs/tiny-lora --export-base models

It prints the trainable weights against all of them, the validation
BLEU before and after, and where the merged translator went.
"""

import argparse
import sys

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

"""
## Setup
"""


def parse(argv):
    p = argparse.ArgumentParser(
        description="Adapt a trained translator to new data with LoRA.")
    p.add_argument("--model-dir", required=True,
                   help="a trained translator's folder")
    p.add_argument("--train-files", nargs="+", required=True,
                   help="the new pairs: a TSV, or a source and a target file")
    p.add_argument("--val-files", nargs="+", default=None,
                   help="pairs for BLEU before and after (default: none)")
    p.add_argument("--rank", type=int, default=4)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--output-dir", required=True,
                   help="where the adapted (merged) translator is saved")
    p.add_argument("--export-base", default=None,
                   help="also export a SavedModel under this base path")
    args = p.parse_args(argv)
    for name in ("rank", "epochs", "batch_size"):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive, "
                    f"received: {getattr(args, name)}")
    if not args.learning_rate > 0:
        p.error(f"--learning-rate must be positive, received: "
                f"{args.learning_rate}")
    return args


"""
## Freeze, adapt, train, merge
"""


def finetune(args):
    import keras

    from keras_attention.text import load_parallel
    from keras_attention.text.pipeline import make_dataset
    from keras_attention.training.losses import MaskedCrossentropy
    from keras_attention.translator import Translator

    translator = Translator.load(args.model_dir)
    model, tokenizer = translator.model, translator.tokenizer
    train_pairs = load_parallel(args.train_files)
    val_pairs = load_parallel(args.val_files) if args.val_files else []
    before = translator.evaluate(val_pairs)["bleu"] if val_pairs else None

    model.enable_lora(args.rank)
    trainable = sum(int(keras.ops.size(w)) for w in model.trainable_weights)
    total = sum(int(keras.ops.size(w)) for w in model.weights)
    print(f"trainable: {trainable:,} of {total:,} weights "
          f"({100 * trainable / total:.1f}%), rank {args.rank}")

    data, report = make_dataset(train_pairs, tokenizer, tokenizer,
                                batch_size=args.batch_size,
                                max_length=translator.max_source_length)
    print(f"new data: {report}")
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate),
                  loss=MaskedCrossentropy(0.1, pad_id=tokenizer.pad_id))
    history = model.fit(data, epochs=args.epochs, verbose=2,
                        shuffle=False).history["loss"]
    print(f"loss: {history[0]:.3f} (epoch 1) -> {history[-1]:.3f} "
          f"(epoch {len(history)})")

    # Saving merges the adapters into the kernels: a plain translator.
    translator.save(args.output_dir)
    adapted = Translator.load(args.output_dir)
    result = {"trainable": trainable, "total": total, "loss": history,
              "bleu_before": before, "bleu_after": None, "export": None}
    if val_pairs:
        result["bleu_after"] = adapted.evaluate(val_pairs)["bleu"]
        print(f"validation BLEU: {before:.2f} -> {result['bleu_after']:.2f}")
    print(f"saved to {args.output_dir}")
    if args.export_base:
        result["export"] = adapted.export(args.export_base)
        print(f"exported to {result['export']}")
    return result


def main(argv=None):
    return finetune(parse(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
