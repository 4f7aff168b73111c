"""The Music Transformer on JSB Chorales: note-wise validation NLL of
decoder-only variants, beside the paper's table and a rule with no
weights.

Data: the chorales of the paper's JSB experiment (Coconet's split at 16th
notes), from `--data` or `$JSB_CHORALES` (a file, or its folder; the
project's copy is `../shared/data/jsb_chorales`). Each chorale is
serialized as the paper does (S, A, T, B of each step, then the next
step) behind a start token.

Training (`chorales.training_windows`): every epoch, every training
chorale is transposed by a random number of semitones in
`[-transpose, +transpose]` (kept in range) and cut into consecutive
windows of `--window` tokens (crops, as the paper's; every token a target
once per epoch), the cuts on bar lines (`--start-every` tokens, 64 = 16
steps of 4 voices) shifted at random, so that absolute positions keep the
metre (position 0 of a window is where it starts: it carries the start
token's voice label); batches of `--batch` windows of one width (one
compiled step, no retracing; each epoch's last, partial batch is left
out, a different one each epoch as the windows are reshuffled). Adam
(β₂ 0.98, gradients clipped at norm 1), its rate `--learning-rate` times
a linear warm-up over `--warmup` steps times a cosine from 1 to 0 over
the budget. The budget is the stopping rule (`--steps`, or
`--budget-minutes` of training; given both, training stops at the first
reached and the cosine follows whichever is further on); the package's
loop (`keras_attention.training.train_run`) runs it, `--eval-every` steps
at a time, so `--minutes` ends a piece of every run and `--resume`
continues them from their checkpoints with the same data. The clock
counts training steps (the first one's compilation included), not
validation.

Scoring (`chorales.negative_log_likelihood`, the same number the
`keras-attention score-chorales` command prints for a saved model):
every token of every `valid` chorale, each predicted from up to
`--window` tokens before it and at least half as many (windows every
half window), in nats per token (each token is one voice's note or rest
at one step: the paper's "note-wise" NLL). Every `--eval-every` steps and
at the end; the best is kept (its weights are what is saved).

Variants (`--variants`), `TransformerLanguageModel`s of one size:
- `absolute`: full causal self-attention and sinusoidal positions
  (Vaswani et al.; the paper's baseline Transformer);
- `relative`: Shaw et al.'s relative attention, distances clipped at
  `--max-relative` tokens, relative embeddings on keys and values, no
  absolute positions (the paper's relative attention);
- `relative_voices`: relative attention plus a learned label of each
  token's voice (S, A, T or B; the paper's "instrument labels");
- `relative_sinusoid`: relative attention plus the sinusoids (the
  paper's "cps");
- `relative_sinusoid_voices`: both (the paper's "relative + cpsi").

Beside them, the rule with no learned weights: each voice repeats its
previous step with the training chorales' repeat rate, else any other
token equally (`chorales.repeat_rule_nll`).

Each run's model is saved (`--save-dir`: `VARIANT_seedN.keras`, loadable
by `keras.saving.load_model` with the package installed, and
`VARIANT_seedN.json`, its settings and figures, whose `window` the
scoring command reads). Then, with the best run: an unconditional sample
and a continuation of a validation chorale's first `--primer` steps, as
MIDI files and piano rolls in `--output-dir`, the sampling tokens/s, and
the check that sampling with the cache draws what sampling without it
draws.

Run: `python reproductions/systems/music_transformer_jsb.py --data
../shared/data/jsb_chorales` (see the model's docs page for the commands
behind its figures; `--preset paper` is the paper's size for a GPU,
fixed-shape on JAX: `KERAS_BACKEND=jax python
reproductions/systems/music_transformer_jsb.py --preset paper --budget-minutes 8`).
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
# benchmarks/ for harness.py; the repository for `reproductions` (and for
# the package, on a machine where it is not installed).
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import harness  # noqa: E402
import numpy as np  # noqa: E402

from reproductions import common  # noqa: E402
from reproductions import processes  # noqa: E402

VARIANTS = {
    "absolute": dict(attention="full", positions="sinusoidal"),
    "relative": dict(attention="relative", positions="none"),
    "relative_voices": dict(attention="relative", positions="none",
                            voices=4),
    "relative_sinusoid": dict(attention="relative", positions="sinusoidal"),
    "relative_sinusoid_voices": dict(attention="relative",
                                     positions="sinusoidal", voices=4),
}

# Huang et al., ICLR 2019 (arXiv 1809.04281v3), Table 2: "Note-wise
# validation NLL on J.S.Bach Chorales at 16th notes. Relative attention,
# more timing and relational information improve performance." Read from
# the paper's own PDF (a copy in the public repository
# steveyu323/music-transformer, file 1809.04281.pdf); Papers with Code
# lists the same best value. Section 4.1 gives the sizes: L layers, hs
# hidden, att attention, ff feed-forward, h heads, r relative distance.
PAPER_TABLE = tuple(tuple(row) for row in common.paper_rows(
    "huang2019", "Table 2"))  # reproductions/papers/huang2019.json

# The defaults: what fits 2 CPU cores (see the docs page for the runs
# that chose them, on `valid`), and the paper's size for a GPU (Section
# 4.1's relative Transformer: 5 layers, 512 hidden and feed-forward, 8
# heads, relative distances up to 256).
PRESETS = {
    "cpu": dict(layers=3, hidden=128, heads=4, ff=512, dropout=0.1,
                max_relative=64, window=256, batch=16, learning_rate=2e-3,
                warmup=200),
    "paper": dict(layers=5, hidden=512, heads=8, ff=512, dropout=0.2,
                  max_relative=256, window=512, batch=32,
                  learning_rate=5e-4, warmup=500),
}
PROJECT_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / (
    "data/jsb_chorales")


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None,
                   help="the chorales file or folder (default: "
                        "$JSB_CHORALES, else ../shared/data/jsb_chorales)")
    p.add_argument("--variants", default="relative_sinusoid_voices",
                   help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--seeds", default="0",
                   help="comma-separated seeds, each variant trained once "
                        "per seed (default: 0)")
    p.add_argument("--preset", choices=tuple(PRESETS), default="cpu",
                   help="the defaults of the size and schedule options "
                        "below: cpu (fits 2 cores) or paper (the paper's "
                        "size, for a GPU)")
    p.add_argument("--steps", type=int, default=None,
                   help="the stopping rule: training steps per run; the "
                        "learning rate decays over these")
    p.add_argument("--budget-minutes", type=float, default=None,
                   help="the stopping rule's time budget: training minutes "
                        "per run, the learning rate decaying over whichever "
                        "of the two is further on (default: 60 without "
                        "--steps)")
    for name, kind in (("layers", int), ("hidden", int), ("heads", int),
                       ("ff", int), ("dropout", float),
                       ("max-relative", int), ("window", int),
                       ("batch", int), ("learning-rate", float),
                       ("warmup", int)):
        p.add_argument(f"--{name}", type=kind, default=None,
                       help="default: the preset's")
    p.add_argument("--start-every", type=int, default=64,
                   help="training windows are cut at multiples of this "
                        "many tokens (64: a bar of 16 steps)")
    p.add_argument("--transpose", type=int, default=3,
                   help="random transposition, semitones either way")
    p.add_argument("--eval-every", type=int, default=500,
                   help="steps between validations (and at the end)")
    p.add_argument("--precision", default="auto",
                   choices=("auto", "float32", "mixed_bfloat16"),
                   help="the dtype policy (default auto: mixed_bfloat16 "
                        "where the CPU or GPU computes bfloat16 natively, "
                        "1.15x float32 on an AVX512-BF16 EPYC at the same "
                        "valid NLL; float32 elsewhere)")
    p.add_argument("--backend", default="auto",
                   choices=("auto", "tensorflow", "jax", "torch"),
                   help="the Keras backend (auto: $KERAS_BACKEND, else "
                        "TensorFlow, the faster on 2 CPU cores)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for the backend (default: all)")
    p.add_argument("--parallel", type=int, default=1,
                   help="runs at once, each in its own process pinned to "
                        "its own core with one thread (on 2 cores, 2 "
                        "one-core runs train 25%% more tokens/s in all "
                        "than one two-core run); default 1")
    p.add_argument("--primer", type=int, default=16,
                   help="steps of the validation chorale to continue")
    p.add_argument("--sample-steps", type=int, default=64)
    p.add_argument("--no-samples", action="store_true",
                   help="skip the samples and the cache check")
    p.add_argument("--append", action="store_true",
                   help="add this command's rows to the results file's "
                        "(same --results-name) instead of replacing them; "
                        "the file keeps every command in `commands`")
    p.add_argument("--output-dir", default="runs/jsb",
                   help="samples (MIDI, piano rolls)")
    p.add_argument("--save-dir", default="runs/jsb/models",
                   help="the trained models and their settings")

    harness.add_results_arguments(p, "music_transformer_jsb")
    common.add_resume_options(p, "runs/jsb/checkpoints")
    return p


def finish_arguments(p, args):
    """Fill the preset's defaults and check every value; mistakes are one
    line through `p.error`."""
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.budget_minutes is None and args.steps is None:
        args.budget_minutes = 60.0
    for flag in ("layers", "hidden", "heads", "ff", "max_relative",
                 "window", "batch", "eval_every", "start_every",
                 "budget_minutes", "steps", "learning_rate", "threads",
                 "parallel"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            p.error(f"--{flag.replace('_', '-')} must be positive, "
                    f"received: {value!r}")
    for flag in ("warmup", "transpose", "primer", "sample_steps"):
        if getattr(args, flag) < 0:
            p.error(f"--{flag.replace('_', '-')} must be >= 0, received: "
                    f"{getattr(args, flag)!r}")
    if not 0 <= args.dropout < 1:
        p.error(f"--dropout must be in [0, 1), received: {args.dropout!r}")
    if args.hidden % args.heads:
        p.error(f"--hidden must be divisible by --heads, received: "
                f"{args.hidden} and {args.heads}")
    if args.window % 8:
        p.error(f"--window must be a multiple of 8, received: {args.window}")
    if (args.window // 2) % args.start_every or args.start_every % 4:
        p.error(f"--start-every must be a multiple of 4 dividing half of "
                f"--window ({args.window // 2}; scoring windows start "
                f"every half window), received: {args.start_every}")

    common.variants_and_seeds(p, args, VARIANTS)
    return common.finish_resume(p, args, {key: getattr(args, key) for key in (
        "preset", "steps", "budget_minutes", "layers", "hidden", "heads",
        "ff", "dropout", "max_relative", "window", "batch", "learning_rate",
        "warmup", "start_every", "transpose", "eval_every", "precision")})


"""
## One run: a variant, a seed, a budget
"""


def build_model(name, args):
    import keras

    from keras_attention.data import chorales as chorales_lib
    from keras_attention.models import TransformerLanguageModel

    model = TransformerLanguageModel(
        vocabulary_size=chorales_lib.VOCABULARY_SIZE,
        num_layers=args.layers, num_heads=args.heads, hidden_dim=args.hidden,
        intermediate_dim=args.ff, dropout=args.dropout,
        max_relative_position=args.max_relative, relative_values=True,
        padding_id=chorales_lib.PAD_ID, **VARIANTS[name])
    model.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate, beta_2=0.98,
                                        global_clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"))
    return model


def learning_rate(args, step, progress):
    """`--learning-rate` times a linear warm-up over `--warmup` steps
    times a cosine from 1 at `progress` 0 to 0 at `progress` 1 (the
    fraction of the budget spent)."""
    warm = min(1.0, (step + 1) / max(args.warmup, 1))
    return args.learning_rate * warm * 0.5 * (
        1 + np.cos(np.pi * min(progress, 1.0)))


class Batches:
    """The training batches of a run, step by step: data epoch `k` is
    `chorales.training_windows` drawn from the seeds `[seed, k]`, cut
    into `--batch` windows (its last, partial batch left out), so the
    batch of any step is known without replaying the run (a resumed run
    goes on with the same data)."""

    def __init__(self, chorales, args, seed):
        self.chorales, self.args, self.seed = chorales, args, seed
        self.epoch, self.first, self.rows = -1, 0, None

    def _load(self, epoch):
        from keras_attention.data import chorales as chorales_lib

        rows = chorales_lib.training_windows(
            self.chorales, self.args.window,
            np.random.default_rng([self.seed, epoch]),
            start_every=self.args.start_every,
            transpose=self.args.transpose)
        return rows[:len(rows) // self.args.batch * self.args.batch]

    def at(self, step):
        """`(data epoch, (batch, window + 1) rows)` of training step
        `step`."""
        if step < self.first or self.rows is None:
            self.epoch, self.first, self.rows = 0, 0, self._load(0)
        while step >= self.first + len(self.rows) // self.args.batch:
            self.first += len(self.rows) // self.args.batch
            self.epoch += 1
            self.rows = self._load(self.epoch)
        offset = (step - self.first) * self.args.batch
        return self.epoch, self.rows[offset:offset + self.args.batch]


def train_run(name, seed, args, data):
    """Train one variant from one seed with the package's loop
    (`training.train_run`), an "epoch" of the loop being `--eval-every`
    training steps and a validation: the rule (`--steps`,
    `--budget-minutes`) finishes the run, the weights of the best
    validation NLL are kept (the paper reports validation NLL; there is
    no test split); `--minutes` ends a piece, `--resume` continues it.
    Returns the model (None for a finished run whose checkpoint kept its
    state alone) and its row."""
    import math

    import keras

    from keras_attention.data import chorales as chorales_lib
    from keras_attention.training import StoppingRule
    from keras_attention.training import train_run as run_epochs

    keras.utils.set_random_seed(seed)
    model = build_model(name, args)
    model(np.zeros((1, 8), "int32"))  # built, to restore into
    valid = data["valid"]
    budget = 60 * args.budget_minutes if args.budget_minutes else math.inf
    steps_cap = args.steps or math.inf
    checkpoint = common.checkpoint_for(args, name, seed)
    # Training seconds over every piece (the clock).
    trained = sum(common.saved_counts(checkpoint).get("train_seconds", []))
    batches = Batches(data["train"], args, seed)

    def epoch(model, index, _):
        nonlocal trained
        step, seen, tokens, spent = index * args.eval_every, 0, 0, 0.0
        data_epoch = max(batches.epoch, 0)
        while seen < args.eval_every and step < steps_cap and (
                trained < budget):
            # The clock: each step with its batch, what the rule's time
            # budget counts too (validation is not counted).
            began = time.perf_counter()
            data_epoch, batch = batches.at(step)  # (B, W + 1)
            inputs, targets = batch[:, :-1], batch[:, 1:]
            weights = (targets != chorales_lib.PAD_ID).astype("float32")
            model.optimizer.learning_rate.assign(learning_rate(
                args, step, max(step / steps_cap, trained / budget)))
            model.train_on_batch(inputs, targets, sample_weight=weights)
            took = time.perf_counter() - began
            trained, spent = trained + took, spent + took
            step, seen, tokens = step + 1, seen + 1, tokens + int(
                weights.sum())
        return {"steps": seen, "tokens": tokens, "train_seconds": [spent],
                "points": [[step, round(trained / 60, 3), data_epoch + 1]]}

    def validate(model):
        nll = chorales_lib.negative_log_likelihood(model, valid, args.window)
        print(f"  {name} seed {seed}: {trained / 60:.1f} min, valid NLL "
              f"{nll:.4f}", flush=True)
        return nll

    rule = StoppingRule(
        math.ceil(steps_cap / args.eval_every) if args.steps else 10**9,
        minutes=args.budget_minutes)
    state = run_epochs(model, epoch=epoch, validate=validate, rule=rule,
                       higher_is_better=False, directory=checkpoint,
                       seed=seed, verbose=0,
                       seconds=common.piece_seconds(args))
    if not state["finished"]:
        print(f"  {name} seed {seed}: stopped at step "
              f"{state['counts']['steps']} by --minutes; --resume "
              "continues it", flush=True)
    counts, machine = state["counts"], harness.machine()
    curve = [[step, minutes, nll] for (step, minutes, _), nll in zip(
        counts["points"], state["curve"])]
    row = {
        "variant": name, "seed": seed, "weights": model.count_params(),
        "steps": counts["steps"], "epochs": counts["points"][-1][2],
        "training_tokens": counts["tokens"],
        "tokens_per_second": round(counts["tokens"] / trained, 1),
        "training_minutes": round(trained / 60, 3),
        "wall_minutes": round(sum(piece["minutes"]
                                  for piece in state["pieces"]), 3),
        "best_nll": state["best"]["score"][0],
        "best_step": curve[state["best"]["epoch"] - 1][0],
        "last_nll": curve[-1][2], "valid_curve": curve, "cpu": machine["cpu"],
        "backend": machine["backend"], "device": machine["device"],
        "precision": keras.config.dtype_policy().name,
        # False: a piece ended by --minutes; the summary leaves it out
        # until --resume finishes it.
        "finished": state["finished"], "stopped_by": state["stopped_by"],
        "weights_sha256": state.get("weights_sha256"),
    }
    return (model if state.get("weights_kept", True) else None), row


def save_run(model, row, args):
    """`SAVE_DIR/VARIANT_seedN.keras` and its `.json` settings. The model
    is saved without its optimizer's state (a third of the file at the
    paper's size: 32 MiB, not 95), as scoring and sampling need."""
    import json

    import numpy as np

    folder = pathlib.Path(args.save_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{row['variant']}_seed{row['seed']}"
    bare = model.__class__.from_config(model.get_config())
    bare(np.zeros((1, 8), "int32"))
    bare.set_weights(model.get_weights())
    bare.save(stem.with_suffix(".keras"))
    settings = {key: getattr(args, key) for key in (
        "window", "start_every", "layers", "hidden", "heads", "ff",
        "dropout", "max_relative", "batch", "learning_rate", "warmup",
        "transpose", "preset")}
    settings.update(variant=row["variant"], seed=row["seed"],
                    valid_nll=row["best_nll"], steps=row["steps"])
    stem.with_suffix(".json").write_text(json.dumps(settings, indent=2)
                                         + "\n")
    return str(stem.with_suffix(".keras"))


def run_parallel(args, argv, jobs, on_rows=None):
    """Each `(variant, seed)` of `jobs` in a process of its own (this
    script with one variant, one seed, one thread), `--parallel` at a
    time, process `i` pinned to core `i` (`processes.run_pinned`); returns
    their rows in the order of `jobs`, and gives `on_rows` those of the
    jobs finished so far as each finishes. Each job's output goes to
    `SAVE_DIR/VARIANT_seedN.log`."""

    shared = common.strip_options(
        argv, {"--variants", "--seeds", "--parallel", "--results-dir",
               "--results-name", "--threads"})
    found = processes.run_pinned(
        pathlib.Path(__file__).resolve(),
        [(f"{variant}_seed{seed}",
          [*shared, "--variants", variant, "--seeds", str(seed),
           "--threads", "1", "--no-samples"]) for variant, seed in jobs],
        args.parallel, args.save_dir, getattr(args, "deadline", None),
        on_rows=on_rows)
    return [row for rows in found for row in rows[:1]]


"""
## Samples
"""


def write_samples(model, row, args, data):
    """An unconditional sample and a continuation of a validation chorale,
    as MIDI files and piano rolls; the sampling rate; cached == uncached
    sampling on a short continuation."""
    from keras_attention.data import chorales as chorales_lib
    from keras_attention.visualize import plot_piano_roll

    name = f"{row['variant']}_seed{row['seed']}"
    output = pathlib.Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    primer = data["valid"][0][:args.primer]
    prompts = {
        "unconditional": np.full((1, 1), chorales_lib.BOS_ID, "int32"),
        "continuation": chorales_lib.sequence(primer)[None],
    }
    steps = 4 * args.sample_steps
    written = {"nll": row["best_nll"], "model": name}
    for kind, prompt in prompts.items():
        began = time.perf_counter()
        tokens = model.generate(prompt, steps, seed=args.seed_list[0],
                                temperature=1.0)
        written[f"{kind}_tokens_per_second"] = round(
            steps / (time.perf_counter() - began), 1)
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
            title=f"{kind} (valid NLL {row['best_nll']:.3f})",
            path=stem.with_suffix(".png"))
        written[kind] = str(stem)
    short = prompts["continuation"]
    cached = model.generate(short, 16, seed=1)
    uncached = model.generate(short, 16, seed=1, use_cache=False)
    written["cached_equals_uncached"] = bool(np.array_equal(cached,
                                                            uncached))
    print(f"  samples of {name}: {written}", flush=True)
    return written


"""
## The runs, the table
"""


def summary(rows):
    """Per variant: runs, mean and spread of the best NLL, steps,
    tokens/s; unfinished runs are left out."""
    by_variant = {}
    for row in rows:
        if not row.get("finished", True):
            continue
        by_variant.setdefault(row["variant"], []).append(row)
    table = []
    for variant, runs in by_variant.items():
        values = [run["best_nll"] for run in runs]
        table.append({
            "variant": variant, "runs": len(runs),
            "mean_nll": statistics.mean(values),
            "std_nll": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min_nll": min(values), "max_nll": max(values),
            "steps": statistics.mean(run["steps"] for run in runs),
            "training_minutes": statistics.mean(
                run["training_minutes"] for run in runs),
            "tokens_per_second": statistics.mean(
                run["tokens_per_second"] for run in runs),
        })
    return table


def print_table(rows, rule, args):
    print(f"\nnote-wise validation NLL (nats per token), window "
          f"{args.window}:")
    print(f"{'variant':<26} {'seed':>4} {'weights':>8} {'steps':>6} "
          f"{'min':>6} {'tok/s':>7} {'best':>7} {'last':>7}")
    for row in rows:
        print(f"{row['variant']:<26} {row['seed']:>4} {row['weights']:>8} "
              f"{row['steps']:>6} {row['training_minutes']:>6.1f} "
              f"{row['tokens_per_second']:>7.0f} {row['best_nll']:>7.4f} "
              f"{row['last_nll']:>7.4f}")
    for line in summary(rows):
        print(f"{line['variant']:<26} mean of {line['runs']}: "
              f"{line['mean_nll']:.4f} ± {line['std_nll']:.4f}")
    print(f"{'repeat rule (no weights)':<26} {rule['nll']:.4f} (repeat "
          f"probability {rule['repeat_probability']:.4f}, the training "
          "chorales' rate)")
    print("\nthe paper's table (Huang et al. 2019):")
    for label, value in PAPER_TABLE:
        print(f"  {label:<64} {value}")


def main(argv=None):
    p = parser()
    args = finish_arguments(p, p.parse_args(argv))
    if args.backend == "auto":
        args.backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    os.environ["KERAS_BACKEND"] = args.backend
    if args.threads and args.backend == "tensorflow":
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.threads)
        os.environ["TF_NUM_INTEROP_THREADS"] = "1"
    import keras

    from keras_attention.data import chorales as chorales_lib
    from keras_attention.training.precision import choose_precision

    data_path = args.data or os.environ.get(chorales_lib.ENVIRONMENT_VARIABLE)
    if not data_path and PROJECT_DATA.is_dir():
        data_path = PROJECT_DATA
    try:
        data = chorales_lib.load_chorales(data_path, ["train", "valid"])
        if not data["train"] or not data["valid"]:
            raise ValueError(f"the chorales at {data_path} need chorales "
                             "in both `train` and `valid`")
    except (FileNotFoundError, KeyError, ValueError) as error:
        p.error(str(error).strip("'\""))
    windows = len(chorales_lib.training_windows(
        data["train"], args.window, np.random.default_rng(0)))
    if windows < args.batch:
        p.error(f"--batch must be at most the {windows} training windows "
                f"of an epoch, received: {args.batch}")
    policy, reason = choose_precision(args.precision)
    keras.config.set_dtype_policy(policy)
    print(f"machine: {harness.machine()}")
    print(f"precision: {policy} ({reason})")
    print(f"data: {len(data['train'])} training and {len(data['valid'])} "
          "validation chorales")
    rate = chorales_lib.repeat_rate(data["train"])
    rule = {"repeat_probability": rate,
            "nll": chorales_lib.repeat_rule_nll(data["valid"], rate)}
    print(f"repeat rule: valid NLL {rule['nll']:.4f} (repeat probability "
          f"{rate:.4f})", flush=True)
    budget = (f"{args.steps} steps" if args.steps else "") + (
        f"{' or ' if args.steps else ''}{args.budget_minutes:g} min"
        if args.budget_minutes else "")
    models, saved = {}, {}
    earlier, commands = harness.earlier_results(
        args.results_name or "music_transformer_jsb", args.results_dir,
        args.append)
    settings = {key: value for key, value in vars(args).items()
                if key not in ("results_dir", "results_name",
                               "variant_list", "seed_list")}
    name = args.results_name or "music_transformer_jsb"
    jobs = [(variant, seed) for variant in args.variant_list
            for seed in args.seed_list]
    # With --resume, a run the file already holds finished gives its row
    # again as it is (its checkpoint may be gone); the others train.
    given = common.finished_earlier(
        args, pathlib.Path(args.results_dir or harness.RESULTS_DIR)
        / f"{name}.json")
    todo = [job for job in jobs if job not in given]

    def in_order(trained):
        return common.in_job_order(jobs, given, trained)

    def write(rows, **extra):
        # While the runs go on, the file says so and names each one's
        # checkpoint (what a stopped command's `--resume` continues).
        harness.write_results(
            name, earlier + rows, directory=args.results_dir,
            summary=summary(earlier + rows), repeat_rule=rule,
            paper=[list(line) for line in PAPER_TABLE], settings=settings,
            commands=commands + [harness.command_line()],
            complete=sum(row["finished"] for row in rows) == len(jobs),
            in_progress=common.runs_in_progress(args, rows, jobs),
            run_settings=args.run_settings, **extra)

    trained = []
    if args.parallel > 1 and len(todo) > 1:
        write(in_order([]))  # the runs of this piece, before they begin
        trained = run_parallel(args, common.with_deadline(
            sys.argv[1:] if argv is None else list(argv), args), todo,
            on_rows=lambda found: write(in_order(found)))
    else:
        for variant, seed in processes.before_deadline(todo, args.deadline):
            print(f"{variant}, seed {seed}: training for {budget}",
                  flush=True)
            model, row = train_run(variant, seed, args, data)
            if row["finished"] and model is not None:
                saved[f"{variant}_seed{seed}"] = save_run(model, row, args)
            trained.append(row)
            models[(variant, seed)] = model
            write(in_order(trained), saved=saved)
    rows = in_order(trained)
    for row in rows:  # trained apart, or given again: the models saved
        key = f"{row['variant']}_seed{row['seed']}"
        path = pathlib.Path(args.save_dir) / f"{key}.keras"
        if key not in saved and row["finished"] and path.is_file():
            saved[key] = str(path)
    print_table(rows, rule, args)
    finished = [row for row in rows if row["finished"]]
    samples = None
    with_weights = [row for row in finished
                    if f"{row['variant']}_seed{row['seed']}" in saved]
    if not args.no_samples and with_weights:
        best = min(with_weights, key=lambda row: row["best_nll"])
        model = models.get((best["variant"], best["seed"]))
        if model is None:  # trained in another process
            import keras_attention.models  # noqa: F401  (registers them)

            model = keras.saving.load_model(
                saved[f"{best['variant']}_seed{best['seed']}"])
        samples = write_samples(model, best, args, data)
    write(rows, saved=saved, samples=samples)
    return rows


if __name__ == "__main__":
    main()
