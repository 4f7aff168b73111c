"""
Title: The Universal Transformer on bAbI, with adaptive computation time
Description: one Transformer block applied over depth reads a story and
answers; ACT decides how many steps each sentence gets.

Dehghani et al. (2019) tie the weights of a Transformer's layers: one
block applied `T` times, a coordinate embedding (the position's and the
step's sinusoids) added before each application. With Adaptive Computation
Time each position stops when its summed halting probability passes 1 − ε,
and a ponder cost keeps the steps few. On bAbI they embed each sentence
with a learned positional mask over its words and read the sentences and
the question as one sequence; with 1,000 training questions per task their
UT with ACT makes no error on tasks 1 and 2 (appendix E, best of 10 runs).

This script trains `keras_attention.models.UniversalTransformerReader` on
generated bAbI tasks (`keras_attention.data.babi`, or your bAbI files) with
1,000 training questions, 10% of them held out to keep the best epoch,
and prints the test accuracy beside the package's memory network
(`examples/memory_network_babi.py`: 99.1% on task 1 and 78.3% on task 2
with its defaults). With `--plot`, it draws the ponder time of each
sentence of a test story, as the paper's Figure 2 does.

It also prints how often "the last place the story names" answers the
same questions, the rule a reader falls back on when it has not learnt to
follow the object (docs/models/universal-transformer.md).

Run: `python examples/universal_transformer_babi.py [--task 2]
[--no-act] [--newest-first] [--plot ponder.png]`.
"""

import argparse
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np

from keras_attention import visualize
from keras_attention.data import babi
from keras_attention.models import UniversalTransformerReader

"""
## Data

The same questions as the memory network's example: generated stories of
four people moving between six places (task 2: carrying three objects),
1,000 for training, 1,000 for testing, or any bAbI-format files.
"""


def load(args):
    def read(path, size, seed):
        if path:
            return babi.read_babi(path)
        return babi.parse_babi(babi.generate_babi(args.task, size, seed=seed))

    return (read(args.train_file, args.train_size, args.seed + 1),
            read(args.test_file, args.test_size, args.seed + 2))


"""
## The model and its training

A 64-wide block with 4 heads applied for at most `--steps` steps, ACT on
by default (threshold 0.99, ponder weight 0.01: tensor2tensor's defaults),
Adam with a short warm-up, the epoch with the lowest held-out loss kept.
"""


def train(args, vocabulary, inputs, answers, seed):
    keras.utils.set_random_seed(seed)
    reader = UniversalTransformerReader(
        vocabulary_size=len(vocabulary),
        sentence_size=inputs["story"].shape[-1], hidden_dim=args.hidden,
        num_heads=args.heads, intermediate_dim=2 * args.hidden,
        max_steps=args.steps, act=not args.no_act, dropout=args.dropout,
        newest_first=args.newest_first)
    # The steps of one epoch over the 90% not held out.
    per_epoch = -(-len(answers) * 9 // 10 // args.batch_size)
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=args.epochs * per_epoch, alpha=0.1,
        warmup_target=args.learning_rate, warmup_steps=100)
    reader.compile(optimizer=keras.optimizers.Adam(schedule,
                                                   global_clipnorm=5.0),
                   loss=keras.losses.SparseCategoricalCrossentropy(
                       from_logits=True),
                   metrics=["accuracy"])
    best = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=args.epochs, restore_best_weights=True)
    history = reader.fit(inputs, answers, epochs=args.epochs,
                         batch_size=args.batch_size, validation_split=0.1,
                         callbacks=[best], verbose=2 if args.verbose else 0)
    return reader, history


"""
## A rule to compare with

On task 2 a model that has not learnt to follow the object can still
answer with the last place the story names; this is how often that is
right (about a third of task-2 questions).
"""


def last_place_rule(samples, memory_size):
    """The fraction of `samples` whose answer is the last place named in
    the story's kept sentences (`babi.PLACES`)."""
    right = 0
    for sample in samples:
        named = [word for text in sample.sentences[-memory_size:]
                 for word in babi.tokenize(text) if word in babi.PLACES]
        right += bool(named) and named[-1] == sample.answer
    return right / max(len(samples), 1)


"""
## Ponder time per sentence
"""


def plot_ponder(sample, ponder, path):
    """The ponder time of each sentence of one test story, supporting
    sentences marked (`keras_attention.visualize.plot_ponder`)."""
    supporting = [i for i, line in enumerate(sample.sentence_ids)
                  if line in sample.supporting_ids]
    visualize.plot_ponder(sample.question, sample.sentences, ponder,
                          supporting, answer=sample.answer, path=path)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.strip().splitlines()[0].removeprefix("Title: "))
    parser.add_argument("--task", type=int, choices=babi.TASKS, default=1)
    parser.add_argument("--train-file", help="a bAbI file (default: generate)")
    parser.add_argument("--test-file", help="a bAbI file (default: generate)")
    parser.add_argument("--train-size", type=int, default=1000)
    parser.add_argument("--test-size", type=int, default=1000)
    parser.add_argument("--memory-size", type=int, default=50)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4,
                        help="the most recurrent steps")
    parser.add_argument("--no-act", action="store_true",
                        help="every position takes every step")
    parser.add_argument("--newest-first", action="store_true",
                        help="the story's sentences newest first, positions "
                             "counted back from the question (default: "
                             "oldest first, the paper's order)")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", metavar="FILE",
                        help="the first test story's ponder times (PNG)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    train_samples, test_samples = load(args)
    vocabulary = babi.BabiVocabulary.from_samples(train_samples, test_samples)
    longest = max(len(babi.tokenize(text))
                  for sample in train_samples + test_samples
                  for text in sample.sentences + (sample.question,))
    inputs, answers = babi.vectorize_babi(train_samples, vocabulary,
                                          args.memory_size, longest)
    test_inputs, test_answers = babi.vectorize_babi(
        test_samples, vocabulary, args.memory_size, longest)
    print(f"task {args.task}: {len(train_samples)} training and "
          f"{len(test_samples)} test questions, {len(vocabulary)} words")
    reader, history = train(args, vocabulary, inputs, answers, args.seed)
    logits, ponder = reader(test_inputs, return_ponder=True)
    predicted = np.argmax(keras.ops.convert_to_numpy(logits), -1)
    ponder = keras.ops.convert_to_numpy(
        keras.ops.cast(ponder, "float32"))  # (N, 1 + M)
    accuracy = float(np.mean(predicted == test_answers))
    real = np.concatenate([np.ones((len(ponder), 1), bool),
                           (test_inputs["story"] != 0).any(-1)], 1)
    seconds = time.perf_counter() - started
    best = int(np.argmin(history.history["val_loss"]))
    print(f"\ntest answer accuracy: {accuracy:.1%} on {len(test_samples)} "
          f"questions (best held-out epoch {best + 1}, held-out accuracy "
          f"{history.history['val_accuracy'][best]:.1%}); "
          f"{'ACT' if not args.no_act else 'no ACT'}, at most {args.steps} "
          f"steps, mean ponder time {ponder[real].mean():.2f}; "
          f"{seconds:.0f} s")
    print(f"the rule 'the last place the story names' answers "
          f"{last_place_rule(test_samples, args.memory_size):.1%} of the "
          "same questions")
    if args.plot:
        first = test_samples[0]
        kept = min(len(first.sentences), args.memory_size)
        trimmed = first._replace(
            sentences=first.sentences[-kept:],
            sentence_ids=first.sentence_ids[-kept:])
        print(f"ponder times: {plot_ponder(trimmed, ponder[0], args.plot)}")
    return accuracy, ponder


if __name__ == "__main__":
    main()
