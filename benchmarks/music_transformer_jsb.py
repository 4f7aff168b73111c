"""The Music Transformer on JSB Chorales: note-wise validation NLL of
decoder-only variants trained with the same time budget, beside the
paper's table.

Data: the chorales of the paper's JSB experiment (Coconet's split at 16th
notes), from `--data` or `$JSB_CHORALES` (a file, or its folder; the
project's copy is `../shared/data/jsb_chorales`). Each chorale is
serialized as the paper does (S, A, T, B of each step, then the next step)
behind a start token, and is one training sequence (batches of chorales of
similar length, padded to a multiple of `--bucket` tokens); every training
chorale is transposed by a random number of semitones in
`[-transpose, +transpose]` each epoch (kept in the pitch range).

Variants (`--variants`), each a `TransformerLanguageModel` of the same size
(`--layers`, `--hidden`, `--heads`, `--ff`, `--dropout`) trained for
`--minutes` of wall clock with Adam (warm-up, then constant):
- `absolute`: full causal self-attention and sinusoidal positions
  (Vaswani et al.; the paper's baseline Transformer);
- `relative`: Shaw et al.'s relative attention, distances clipped at
  `--max-relative` tokens, the relative embeddings on keys and values, no
  absolute positions (the paper's relative attention);
- `relative_sinusoid`: the same relative attention plus the sinusoids;
- `relative_voices`: relative attention plus a learned label of each
  token's voice (S, A, T or B; the paper's "instrument labels"), the
  closest the package comes to the paper's best variant (relative pitch
  is not built; relative timing is what relative attention over the
  interleaved voices already sees).

Scored by the mean negative log-likelihood per token (nats; each token is
one voice's note or rest at one step: the paper's "note-wise" NLL) on every
`valid` chorale whole, after every epoch inside the budget; the best epoch
is reported beside the last. Then, with the best variant: an unconditional
sample and a continuation of a validation chorale's first `--primer` steps,
written as MIDI files and piano rolls in `--output-dir`, and the check that
sampling with the cache draws what sampling without it draws.

Run: `python benchmarks/music_transformer_jsb.py --data
../shared/data/jsb_chorales --minutes 15` (the defaults: three variants of
15 minutes each on 2 CPU cores; any Keras backend).
"""

import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

from keras_attention.data import chorales as chorales_lib  # noqa: E402
from keras_attention.models import TransformerLanguageModel  # noqa: E402

VARIANTS = {
    "absolute": dict(attention="full", positions="sinusoidal"),
    "relative": dict(attention="relative", positions="none"),
    "relative_sinusoid": dict(attention="relative", positions="sinusoidal"),
    "relative_voices": dict(attention="relative", positions="none",
                            voices=4),
}

# Huang et al., ICLR 2019 (arXiv 1809.04281v3), Table 2: "Note-wise
# validation NLL on J.S.Bach Chorales at 16th notes. Relative attention,
# more timing and relational information improve performance." Read from
# the paper's own PDF (a copy in the public repository
# steveyu323/music-transformer, file 1809.04281.pdf); Papers with Code
# lists the same best value. Section 4.1 gives the sizes: L layers, hs
# hidden, att attention, ff feed-forward, h heads, r relative distance.
PAPER_TABLE = (
    ("Coconet (CNN, chronological, 64L)", 0.436),
    ("Transformer baseline (5L, 256hs, 256att, 1024ff, 8h)", 0.417),
    ("baseline + concat positional sinusoids (cps)", 0.398),
    ("baseline + cps + instrument labels (cpsi)", 0.370),
    ("Relative Transformer (Shaw; 5L, 512hs, 512att, 512ff, 256r, 8h)",
     0.357),
    ("Relative Transformer + cpsi", 0.347),
    ("Relative Transformer + cpsi + relative pitch and time (best)", 0.335),
)


"""
## Batches of whole chorales
"""


def padded_length(tokens, bucket):
    """Tokens (with the start token) rounded up to a multiple of
    `bucket`."""
    return -(-tokens // bucket) * bucket


class ChoraleBatches:
    """Whole chorales, one per row: `(inputs, targets, weights)` with
    inputs `<s>` + tokens[:-1], targets the tokens, weights 0 at padding.
    Rows are grouped by padded length; each epoch (`on_epoch_end`)
    reshuffles the batches and, with `transpose`, moves every chorale by a
    random number of semitones in `[-transpose, transpose]` that keeps it
    in range. (Batches differ in width, so training goes batch by batch
    with `train_on_batch` rather than through `fit`, whose dataset would
    fix the width of its first batches.)"""

    def __init__(self, chorales, batch_size, bucket, transpose=0, seed=0):
        self.chorales = list(chorales)
        self.batch_size = batch_size
        self.bucket = bucket
        self.transpose = transpose
        self.rng = np.random.default_rng(seed)
        self.on_epoch_end()

    def _moved(self, chorale):
        if not self.transpose:
            return chorale
        sounding = chorale[chorale >= 0]
        low = max(-self.transpose,
                  chorales_lib.LOWEST_PITCH - int(sounding.min()))
        high = min(self.transpose,
                   chorales_lib.HIGHEST_PITCH - int(sounding.max()))
        return chorales_lib.transpose(chorale,
                                      self.rng.integers(low, high + 1))

    def on_epoch_end(self):
        order = self.rng.permutation(len(self.chorales))
        lengths = np.array([len(self.chorales[i]) for i in order])
        order = order[np.argsort(lengths, kind="stable")]  # similar lengths
        batches = [order[i:i + self.batch_size]
                   for i in range(0, len(order), self.batch_size)]
        self.batches = [batches[i] for i in self.rng.permutation(len(batches))]

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        rows = [chorales_lib.serialize(self._moved(self.chorales[i]))
                for i in self.batches[index]]
        width = padded_length(max(len(r) for r in rows) + 1, self.bucket)
        tokens = np.full((len(rows), width), chorales_lib.PAD_ID, "int32")
        tokens[:, 0] = chorales_lib.BOS_ID
        for row, serialized in enumerate(rows):
            tokens[row, 1:1 + len(serialized)] = serialized
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        weights = (targets != chorales_lib.PAD_ID).astype("float32")
        return inputs, targets, weights


def validation_rows(chorales, bucket):
    """Every chorale whole, `<s>` first, padded: `(N, L + 1)` for
    `negative_log_likelihood`, grouped by padded length."""
    groups = {}
    for chorale in chorales:
        serialized = chorales_lib.serialize(chorale)
        width = padded_length(len(serialized) + 1, bucket) + 1
        row = np.full(width, chorales_lib.PAD_ID, "int32")
        row[0] = chorales_lib.BOS_ID
        row[1:1 + len(serialized)] = serialized
        groups.setdefault(width, []).append(row)
    return [np.stack(rows) for _, rows in sorted(groups.items())]


def validation_nll(model, groups, batch_size):
    """Mean NLL per real token over every group (weighted by tokens)."""
    total, count = 0.0, 0
    for rows in groups:
        tokens = int((rows[:, 1:] != chorales_lib.PAD_ID).sum())
        total += model.negative_log_likelihood(rows, batch_size) * tokens
        count += tokens
    return total / count


"""
## One variant, one budget
"""


def train_variant(name, args, data, groups):
    keras.utils.set_random_seed(args.seed)
    model = TransformerLanguageModel(
        vocabulary_size=chorales_lib.VOCABULARY_SIZE,
        num_layers=args.layers, num_heads=args.heads, hidden_dim=args.hidden,
        intermediate_dim=args.ff, dropout=args.dropout,
        max_relative_position=args.max_relative, relative_values=True,
        padding_id=chorales_lib.PAD_ID, **VARIANTS[name])
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=10**9, alpha=1.0, warmup_target=args.learning_rate,
        warmup_steps=args.warmup)
    model.compile(
        optimizer=keras.optimizers.Adam(schedule, beta_2=0.98,
                                        global_clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[])
    batches = ChoraleBatches(data["train"], args.batch, args.bucket,
                             args.transpose, args.seed)
    # The budget counts training only; the validation after each epoch
    # (inside the loop, outside the clock) picks the best epoch.
    started, training, steps, epochs = time.perf_counter(), 0.0, 0, []
    epoch = 0
    while training < 60 * args.minutes:
        begun, losses = time.perf_counter(), []
        for index in range(len(batches)):
            inputs, targets, weights = batches[index]
            # Keras averages over every position, padding included: scale
            # the weights so that the loss is the mean over real tokens,
            # whatever the padding of the batch.
            weights = weights * (weights.size / weights.sum())
            losses.append(float(model.train_on_batch(
                inputs, targets, sample_weight=weights)))
            steps += 1
            if training + time.perf_counter() - begun > 60 * args.minutes:
                break
        training += time.perf_counter() - begun
        batches.on_epoch_end()
        epoch += 1
        last = training >= 60 * args.minutes
        if epoch % args.eval_every and not last:
            continue
        nll = validation_nll(model, groups, args.batch)
        epochs.append((epoch, steps, training / 60, nll))
        print(f"  epoch {epoch}: {steps} steps, {training / 60:.1f} "
              f"min, train loss {np.mean(losses):.4f}, valid NLL "
              f"{nll:.4f}", flush=True)
    wall = time.perf_counter() - started
    best = min(epochs, key=lambda epoch: epoch[3])
    return model, {
        "variant": name, "weights": model.count_params(),
        "epochs": epoch, "steps": steps,
        "training_minutes": training / 60, "wall_minutes": wall / 60,
        "best_epoch": best[0], "best_nll": best[3], "last_nll": epochs[-1][3],
    }, [list(epoch) for epoch in epochs]


"""
## Samples
"""


def write_samples(model, name, args, data):
    """An unconditional sample and a continuation of a validation chorale,
    as MIDI files and piano rolls; checks cached == uncached sampling."""
    from keras_attention.visualize import plot_piano_roll

    output = pathlib.Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    primer = data["valid"][0][:args.primer]
    prompts = {
        "unconditional": np.full((1, 1), chorales_lib.BOS_ID, "int32"),
        "continuation": np.concatenate(
            [[chorales_lib.BOS_ID], chorales_lib.serialize(primer)])[None],
    }
    steps = 4 * args.sample_steps
    written = {}
    for kind, prompt in prompts.items():
        tokens = model.generate(prompt, steps, seed=args.seed,
                                temperature=1.0)
        if kind == "continuation" and model.can_cache:
            uncached = model.generate(prompt, steps, seed=args.seed,
                                      use_cache=False)
            same = bool(np.array_equal(tokens, uncached))
            print(f"  {name}: cached sampling == uncached: {same}")
            written["cached_equals_uncached"] = same
        body = tokens[0, 1:]
        body = body[: len(body) // 4 * 4]
        body = np.where((body == chorales_lib.PAD_ID)
                        | (body == chorales_lib.BOS_ID),
                        chorales_lib.REST_ID, body)  # sampled specials: rests
        chorale = chorales_lib.deserialize(body)
        stem = output / f"{name}_{kind}"
        chorales_lib.write_midi(chorale, stem.with_suffix(".mid"))
        plot_piano_roll(
            chorale, primer_steps=len(primer) if kind == "continuation" else 0,
            title=f"{name}: {kind}", path=stem.with_suffix(".png"))
        written[kind] = str(stem)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None,
                        help="the chorales file or folder (or "
                             "$JSB_CHORALES)")
    parser.add_argument("--variants", default="absolute,relative,"
                        "relative_voices")
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ff", type=int, default=512)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--max-relative", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--bucket", type=int, default=256)
    parser.add_argument("--transpose", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=1,
                        help="epochs between validations (and after the "
                             "last); the best epoch is chosen among these")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--primer", type=int, default=16,
                        help="steps of the validation chorale to continue")
    parser.add_argument("--sample-steps", type=int, default=64)
    parser.add_argument("--output-dir", default="runs/jsb")
    harness.add_results_arguments(parser, "music_transformer_jsb")
    args = parser.parse_args(argv)
    for flag in ("minutes", "eval_every", "batch", "bucket", "layers"):
        if getattr(args, flag) <= 0:
            parser.error(f"--{flag.replace('_', '-')} must be positive, "
                         f"received: {getattr(args, flag)!r}")
    names = [name for name in args.variants.split(",") if name]
    unknown = [name for name in names if name not in VARIANTS]
    if unknown or not names:
        parser.error(f"--variants must name some of {sorted(VARIANTS)}, "
                     f"received: {args.variants!r}")
    try:
        data = chorales_lib.load_chorales(args.data, ["train", "valid"])
    except (FileNotFoundError, KeyError, ValueError) as error:
        parser.error(str(error).strip("'\""))
    print(f"machine: {harness.machine()}")
    print(f"data: {len(data['train'])} training and {len(data['valid'])} "
          "validation chorales")
    groups = validation_rows(data["valid"], args.bucket)
    results, models, curves = [], {}, {}
    for name in names:
        print(f"{name}: training for {args.minutes:g} minutes", flush=True)
        model, result, curve = train_variant(name, args, data, groups)
        results.append(result)
        models[name], curves[name] = model, curve
    print("\nnote-wise validation NLL (nats per token), "
          f"{args.minutes:g} minutes each:")
    print(f"{'variant':<20} {'weights':>8} {'epochs':>6} {'steps':>6} "
          f"{'best':>7} {'last':>7}")
    for result in results:
        print(f"{result['variant']:<20} {result['weights']:>8} "
              f"{result['epochs']:>6} {result['steps']:>6} "
              f"{result['best_nll']:>7.4f} {result['last_nll']:>7.4f}")
    if PAPER_TABLE:
        print("\nthe paper's table (Huang et al. 2019):")
        for row, value in PAPER_TABLE:
            print(f"  {row:<60} {value}")
    best = min(results, key=lambda result: result["best_nll"])
    samples = write_samples(models[best["variant"]], best["variant"], args,
                            data)
    harness.write_results(
        args.results_name or "music_transformer_jsb", results,
        directory=args.results_dir, curves=curves, samples=samples,
        paper=[list(row) for row in PAPER_TABLE])
    return results


if __name__ == "__main__":
    main()
