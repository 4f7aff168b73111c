"""
Title: English-to-German translation on Multi30k with a Transformer
Description: the package's Multi30k recipe (the `small` model, the
training of "Attention Is All You Need", checkpoint averaging) on a CPU,
evaluated with sacreBLEU, exported for TF Serving.

Multi30k (Elliott et al., 2016) pairs 29,000 English image descriptions with
German translations. This script trains `keras_attention`'s
`TransformerTranslator` on it with the recipe `keras-attention train
--corpus multi30k` uses (`CORPUS_RECIPES["multi30k"]`): the paper's
training (Adam with β2 = 0.98 and the warm-up schedule, label smoothing
0.1, shared subword vocabulary and tied embeddings) for 25 epochs, with
the average of the last 5 epoch checkpoints as the final weights. It
reports sacreBLEU on `test_2016_flickr` and exports a SavedModel that
takes raw strings. With `--model rnn` the
same script trains the RNN encoder-decoder with additive attention of
Bahdanau et al. (2015), `RNNTranslator`, through the same loop, decoding
and export.

Run: `python examples/translate_multi30k.py --data-dir ../shared/data/multi30k`
(or set `MULTI30K_DIR`). The defaults train for about an hour on two CPU
cores with AVX512-BF16, where `--precision auto` takes mixed_bfloat16; on
other CPUs it takes float32, about 2.3 times slower; `--epochs 1
--train-size 2000` is a quick look.
"""

import argparse

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

from keras_attention.text import load_multi30k
from keras_attention.training.precision import PRECISION_SETTINGS
from keras_attention.translator import TrainingConfig
from keras_attention.translator import train

"""
## Setup

Everything comes from the package: the corpus loader, the tokenizer, the
model and the training loop are the ones `keras-attention train` uses.
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", default=None,
                        help="Multi30k folder (default: $MULTI30K_DIR)")
    parser.add_argument("--model", default="transformer",
                        choices=["transformer", "rnn", "decoder_only"])
    parser.add_argument("--output-dir", default="runs/multi30k")
    parser.add_argument("--epochs", type=int, default=None,
                        help="passes over the data (default: the "
                             "recipe's, 25)")
    parser.add_argument("--precision", default="auto",
                        choices=PRECISION_SETTINGS,
                        help="Keras dtype policy (default: auto, "
                             "mixed_bfloat16 on CPUs with AVX512-BF16 or "
                             "AMX, float32 on others; training prints its "
                             "choice)")
    parser.add_argument("--train-size", type=int, default=None)
    parser.add_argument("--bleu-sentences", type=int, default=200,
                        help="validation sentences translated after each "
                             "epoch for the printed BLEU (0 disables)")
    parser.add_argument("--test-size", type=int, default=None,
                        help="evaluate on the first N test pairs only")
    parser.add_argument("--export-dir", default="models")
    args = parser.parse_args(argv)

    """
    ## Train

    The recipe: a joint SentencePiece vocabulary of 8,000 pieces trained
    on the English and German training sentences, batches of about 4,096
    tokens grouped by length, the `small` model, and the average of the
    last 5 epoch checkpoints as the final weights. After every epoch, 200
    validation sentences are translated and their BLEU printed.
    """
    config = TrainingConfig(
        corpus="multi30k", data_dir=args.data_dir, output_dir=args.output_dir,
        model=args.model, epochs=args.epochs, precision=args.precision,
        train_size=args.train_size, bleu_sentences=args.bleu_sentences,
    )
    translator = train(config)

    """
    ## Evaluate

    sacreBLEU on detokenized output against the raw references, greedy and
    with a beam of 4 (length penalty α = 0.6).
    """
    test = load_multi30k("test", args.data_dir)[: args.test_size]
    results = {}
    for beam in (1, 4):
        result = translator.with_decoding(beam_size=beam).evaluate(test)
        results[beam] = result
        print(f"beam {beam}: BLEU {result['bleu']:.2f} "
              f"({result['signature']})")
    for source, reference, hypothesis in zip(
        [p[0] for p in test[:3]], [p[1] for p in test[:3]],
        results[4]["hypotheses"][:3],
    ):
        print(f"\n{source}\n  reference: {reference}\n  ours:      "
              f"{hypothesis}")

    """
    ## Export

    The SavedModel holds the tokenizer, the model and beam search in one
    graph: `text` in, `translation` out.
    """
    path = translator.with_decoding(beam_size=4).export(args.export_dir,
                                                        "multi30k")
    print(f"\nexported to {path}")
    return results


if __name__ == "__main__":
    main()
