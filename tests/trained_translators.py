"""Tiny translators trained once per test run and shared by every test that
needs *a* trained translator: the decoding and export tests
(tests/translator) and the serving tests' model repository
(tests/serving/model_repository.py).

Each is trained briefly on the synthetic corpus: far from good, but its
outputs vary with the input, which those tests need. Right after training,
before anything saves or loads it, the trainer records the in-memory
translator's translations of `RECORDED_TEXTS` (`translations.json` in the
run folder): the tests compare what they load, export or serve with them.
The translators the serving tests serve it also exports, as they will be
served (`export/NAME/1` in the run folder).

Under pytest-xdist every worker is a process of its own: the first worker
that needs a translator trains it into a folder beside the workers' base
temporary folders (the pattern of pytest-xdist's documentation, with a
lock file per translator); the others load it from there. A worker that
finds its translator being trained by another trains one it needs next
instead of waiting. The training runs in a subprocess (`python -m
tests.trained_translators FOLDER VARIANT`): `train()` seeds TensorFlow,
which frees the resources of the tokenizers a test process holds (see
tests/training/test_seeding.py).
"""

import contextlib
import fcntl
import json
import os
import pathlib
import subprocess
import sys

from tests.serving.model_repository import TEXTS as SERVING_TEXTS
from tests.serving.model_repository import TRANSLATORS as SERVED

# The variants (TrainingConfig options): the Transformer with the paper's
# sinusoidal positions, with relative-position self-attention (δ = 4, keys
# and values), and the RNN encoder-decoder with additive attention.
VARIANTS = {
    "sinusoidal": dict(model="transformer"),
    "relative": dict(model="transformer", max_relative_position=4,
                     relative_values=True),
    "rnn": dict(model="rnn"),
}
# Trained on demand only, by the tests of one model (not a `trained`
# fixture parameter): Liu et al.'s decoder-only T-D.
OTHER_VARIANTS = {"decoder_only": dict(model="decoder_only", epochs=2)}
TRAINING = dict(train_size=1500, epochs=3, bleu_sentences=0, verbose=0,
                warmup_steps=100, learning_rate_scale=2.0, max_length=32)
# The export tests' texts (tests/translator/test_export.py).
TEXTS = [
    "The old man sees a small dog.",
    "",
    "Zoë isst Käse über dem Tisch — naïve café ☕.",
    "The children read the books. " * 40,  # longer than max_source_length
    "A woman cooks.",
]
RECORDED_TEXTS = [*TEXTS, *SERVING_TEXTS]
# Variant -> the name the serving tests serve it under.
SERVED_AS = {variant: name for name, variant in SERVED.items()}
DONE = "trained"  # written last: the folder holds a complete run
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def train_translator(directory, name):
    """Train variant `name` into `directory`; returns the `Translator`."""
    from keras_attention.translator import TrainingConfig
    from keras_attention.translator import train

    directory = pathlib.Path(directory)
    variant = {**VARIANTS, **OTHER_VARIANTS}[name]
    translator = train(TrainingConfig(output_dir=str(directory),
                                      **{**TRAINING, **variant}))
    recorded = dict(zip(RECORDED_TEXTS, translator.translate(RECORDED_TEXTS)))
    (directory / "translations.json").write_text(
        json.dumps(recorded, ensure_ascii=False), encoding="utf-8")
    if name in SERVED_AS:
        translator.export(directory / "export", SERVED_AS[name], 1)
    (directory / DONE).touch()
    return translator


def served_export(directory, name):
    """The SavedModel of the run in `directory`, exported as served `name`
    (tests/serving/model_repository.py)."""
    return pathlib.Path(directory) / "export" / name / "1"


def recorded_translations(directory):
    """{text: translation} of the translator as trained, in memory."""
    path = pathlib.Path(directory) / "translations.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _shared_folder(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    # Under xdist the workers' base folders share this run's folder.
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "trained-translators"
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def _locked(folder, name, wait):
    """Hold `name`'s lock (yields True), or yield False if another worker
    holds it and `wait` is False."""
    with open(folder / f"{name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True


def _train_in_a_subprocess(directory, name):
    result = subprocess.run(
        [sys.executable, "-m", "tests.trained_translators", str(directory),
         name], cwd=REPO_ROOT, capture_output=True, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    if result.returncode != 0:
        raise RuntimeError(f"training the {name} translator failed:\n"
                           f"{(result.stdout + result.stderr)[-3000:]}")


def _train_unless_done(folder, name, wait):
    """Whether `name` is trained now (by this call or another worker's)."""
    with _locked(folder, name, wait) as held:
        if held and not (folder / name / DONE).exists():
            _train_in_a_subprocess(folder / name, name)
        return held


def trained_translator(tmp_path_factory, name, then=()):
    """The run folder of variant `name`, trained by whichever worker of
    this run needed it first. While another worker trains it, this one
    trains the first variant of `then` (those it needs next) that no
    worker has trained or is training.

    Load the translator from the folder (`Translator.load`)."""
    folder = _shared_folder(tmp_path_factory)
    if not _train_unless_done(folder, name, wait=False):
        for other in then:
            if (folder / name / DONE).exists():
                break
            if other != name and not (folder / other / DONE).exists():
                _train_unless_done(folder, other, wait=False)
        _train_unless_done(folder, name, wait=True)
    return folder / name


if __name__ == "__main__":
    train_translator(*sys.argv[1:])
