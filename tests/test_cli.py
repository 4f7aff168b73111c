"""The `keras-attention` command line: fast, quiet help; one-line errors for
the user's mistakes (status 2) and tracebacks for bugs; progress and
streaming output. No model is trained: a fake stands in for
`Translator.load` where a command needs a translator."""

import dataclasses
import errno
import io
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_attention import cli


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """These tests build no Keras model: no per-test Keras reset."""
    yield


def run(*args, cwd, code=None, stdin=""):
    """`python -m keras_attention ARGS` (or `python -c CODE ARGS`) in a
    fresh interpreter, without the suite's TF_CPP_MIN_LOG_LEVEL and without
    the MULTI30K_DIR that `make` exports (a test that means the data to be
    missing must not find it)."""
    environment = dict(os.environ)
    environment.pop("TF_CPP_MIN_LOG_LEVEL", None)
    environment.pop("MULTI30K_DIR", None)
    command = ([sys.executable, "-c", code] if code
               else [sys.executable, "-m", "keras_attention"])
    return subprocess.run([*command, *args], cwd=cwd, env=environment,
                          input=stdin, capture_output=True, text=True,
                          timeout=120)


def assert_one_line_error(stderr, *fragments):
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("keras-attention: error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in stderr


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- help: fast, quiet, no TensorFlow ----------------------------------------

@pytest.mark.parametrize("command", [
    [], ["train"], ["evaluate"], ["translate"], ["attention-map"], ["export"],
    ["serve"], ["score-chorales"]])
def test_help_answers_in_under_a_second_without_log_lines(command, tmp_path):
    seconds = []
    for _ in range(3):  # the best of 3: the machine is shared
        started = time.perf_counter()
        result = run(*command, "--help", cwd=tmp_path)
        seconds.append(time.perf_counter() - started)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
    assert result.stdout.startswith(
        "usage: " + " ".join(["keras-attention", *command]))
    assert min(seconds) < 1.0, seconds


def test_building_the_parser_imports_no_tensorflow(tmp_path):
    # In a fresh interpreter: the suite's own process imported Keras first.
    code = ("import json, sys\n"
            "from keras_attention.cli import build_parser\n"
            "build_parser().parse_args(['train', '--epochs', '2'])\n"
            "heavy = {'tensorflow', 'keras', 'keras_attention.translator',"
            " 'keras_attention.text.tokenizer', 'keras_attention.text.pipeline',"
            " 'keras_attention.serving.server'}\n"
            "print(json.dumps(sorted(heavy & set(sys.modules))))")
    result = run(cwd=tmp_path, code=code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_the_console_script_and_python_m_run_cli_main(tmp_path):
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="keras-attention")
    assert script.value == "keras_attention.cli:main"
    assert script.load() is cli.main
    package, module = run("--help", cwd=tmp_path), run(
        "--help", cwd=tmp_path, code="import runpy\n"
        "runpy.run_module('keras_attention.cli', run_name='__main__')")
    assert package.returncode == module.returncode == 0, module.stderr
    assert package.stdout == module.stdout


# -- train options from the dataclass metadata --------------------------------

def _option(default, help, **metadata):
    return dataclasses.field(default=default,
                             metadata={"help": help, **metadata})


@dataclasses.dataclass
class FakeConfig:
    model: str = _option("transformer", "the model", choices=("transformer",
                                                                "rnn"))
    train_files: list = _option(None, "one TSV or two files", nargs="+")
    epochs: int = _option(8, "passes over 100% of the data")
    rate: float = _option(0.5, "a rate")
    limit: int = _option(None, "the first N pairs", type=int)
    language: str = _option("en", "source language")
    relative_values: bool = _option(False, "a switch")
    shuffle: bool = _option(True, "on by default")
    verbose: str = _option("auto", "auto or a number",
                           type=lambda text: text if text == "auto"
                           else int(text))


def fake_parser():
    import argparse

    parser = argparse.ArgumentParser(prog="train")
    cli.add_config_options(parser, FakeConfig)
    return parser


def test_options_follow_the_field_metadata():
    parser = fake_parser()
    assert cli.config_from_arguments(FakeConfig, parser.parse_args([])) == (
        FakeConfig())
    args = parser.parse_args([
        "--model", "rnn", "--train-files", "a.en", "a.de", "--epochs", "3",
        "--rate", "0.25", "--limit", "7", "--language", "fr",
        "--relative-values", "--no-shuffle", "--verbose", "2"])
    assert cli.config_from_arguments(FakeConfig, args) == FakeConfig(
        model="rnn", train_files=["a.en", "a.de"], epochs=3, rate=0.25,
        limit=7, language="fr", relative_values=True, shuffle=False,
        verbose=2)
    text = parser.format_help()  # "%" in a help text is escaped
    assert "passes over 100% of the data (default: 8)" in text
    assert "--model {transformer,rnn}" in text


@pytest.mark.parametrize("flags, message", [
    (["--model", "cnn"], "argument --model: invalid choice: 'cnn'"),
    (["--epochs", "two"], "argument --epochs: invalid int value: 'two'"),
    (["--train-files"], "argument --train-files: expected at least one"),
])
def test_bad_values_are_usage_errors(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        fake_parser().parse_args(flags)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_field_without_help_is_refused():
    @dataclasses.dataclass
    class Config:
        epochs: int = 8

    import argparse

    with pytest.raises(ValueError, match=r"Config.epochs needs "
                                         r"metadata\['help'\].*metadata={}"):
        cli.add_config_options(argparse.ArgumentParser(), Config)


def test_train_options_are_the_training_config_fields(capsys):
    from keras_attention.training.config import TrainingConfig

    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["train", "--help"])
    text = capsys.readouterr().out
    packed = "".join(text.split())  # argparse wraps lines, also at hyphens
    for field in dataclasses.fields(TrainingConfig):
        assert "--" + field.name.replace("_", "-") + " " in text
        assert "".join(field.metadata["help"].split()) in packed
    args = cli.build_parser().parse_args([
        "train", "--model", "rnn", "--corpus", "files", "--train-files",
        "train.en", "train.de", "--val-files", "val.tsv",
        "--source-language", "fr", "--target-language", "en"])
    config = cli.config_from_arguments(TrainingConfig, args)
    assert (config.model, config.corpus, list(config.train_files),
            list(config.val_files), config.source_language,
            config.target_language) == (
        "rnn", "files", ["train.en", "train.de"], ["val.tsv"], "fr", "en")


# -- one-line errors, status 2 ------------------------------------------------

@pytest.mark.parametrize("command", ["evaluate", "translate", "export"])
def test_missing_model_folder(command, tmp_path):
    result = run(command, "--model-dir", "no-such-run", "A dog runs.",
                 cwd=tmp_path) if command == "translate" else run(
        command, "--model-dir", "no-such-run", cwd=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result.stderr,
                          "--model-dir no-such-run does not exist")


@pytest.mark.parametrize("flags, fragments", [
    (["train", "--epochs", "0"], ["epochs", "received: epochs=0"]),
    (["train", "--corpus", "files", "--train-files", "missing.tsv"],
     ["--train-files: missing.tsv does not exist"]),
    (["train", "--corpus", "multi30k"], ["needs --data-dir or $MULTI30K_DIR"]),
    (["evaluate", "--split", "test_2017_flickr"],
     ["--split must be one of train, val, test for --corpus synthetic",
      "received: --split=test_2017_flickr"]),
    (["evaluate", "--corpus", "multi30k", "--data-dir", ".", "--split",
      "dev"], ["--split must be one of train, val, test, test_2016_flickr"]),
    (["evaluate", "--files", "a.tsv", "--split", "val"],
     ["--split: only with --corpus"]),
    (["evaluate", "--files", "a", "b", "c"],
     ["--files takes one tab-separated file", "received 3 paths"]),
    (["translate", "--url", "ftp://localhost", "A dog."],
     ["url must start with http://", "received: url='ftp://localhost'"]),
])
def test_bad_option_values(flags, fragments, tmp_path):
    result = run(*flags, cwd=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, *fragments)


def test_argparse_errors_exit_with_2_without_traceback(tmp_path):
    result = run("evaluate", "--beam-size", "0", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "keras-attention evaluate: error: argument --beam-size: must be a "
        "positive integer, received: '0'")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("flags, edges", [
    ([], None),
    (["--by-length"], (10, 15, 20, 25)),
    (["--by-length", "5,10"], (5, 10)),
    (["--by-length", "12"], (12,)),
])
def test_by_length_edges(flags, edges):
    args = cli.build_parser().parse_args(["evaluate", *flags])
    assert args.by_length == edges


@pytest.mark.parametrize("text", ["10,5", "10,10", "0,5", "-5", "ten",
                                  "10,,20", "10.5", ""])
def test_bad_by_length_edges_are_usage_errors(text, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["evaluate", "--by-length", text])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "keras-attention evaluate: error: argument --by-length: must be "
        "positive, strictly increasing word counts separated by commas "
        f"(e.g. 10,15,20,25), received: {text!r}")
    assert "Traceback" not in err


def test_a_closed_port_with_url(tmp_path):
    port = free_port()
    result = run("translate", "--url", f"http://127.0.0.1:{port}",
                 "--timeout", "5", "A dog runs.", cwd=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, f"http://127.0.0.1:{port}/v1/models/"
                          "translator:predict: no answer")


def test_a_bug_keeps_its_traceback(tmp_path):
    code = ("import sys\n"
            "from keras_attention.serving import client\n"
            "def translate(self, texts):\n"
            "    raise RuntimeError('a bug')\n"
            "client.Client.translate = translate\n"
            "from keras_attention.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    result = run("translate", "--url", "http://127.0.0.1:1", "A dog.",
                 cwd=tmp_path, code=code)
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.splitlines()[-1] == "RuntimeError: a bug"


def test_corpus_files_of_unequal_length(tmp_path, capsys):
    (tmp_path / "test.en").write_text("A dog runs.\nTwo cats.\n")
    (tmp_path / "test.de").write_text("Ein Hund rennt.\n")
    status = cli.main(["evaluate", "--model-dir", str(tmp_path), "--files",
                       str(tmp_path / "test.en"), str(tmp_path / "test.de")])
    assert status == 2
    assert_one_line_error(capsys.readouterr().err, "test.en has 2 lines",
                          "test.de has 1 lines")


def test_a_port_in_use(tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = cli.main(["serve", f"--model_base_path={tmp_path}",
                           f"--rest_api_port={port}"])
    assert status == 2
    assert_one_line_error(capsys.readouterr().err,
                          f"127.0.0.1:{port} is already in use")


def test_a_port_taken_while_the_models_load(tmp_path, capsys, monkeypatch):
    """The port is free at the early check and taken when the server
    binds: the server's own bind error gives the same line."""
    from keras_attention.serving import main as serving_main

    monkeypatch.setattr(serving_main, "check_address", lambda host, port: None)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = cli.main(["serve", f"--model_base_path={tmp_path}",
                           f"--rest_api_port={port}",
                           "--file_system_poll_wait_seconds=0"])
    assert status == 2
    # (the log lines of the server's start go to the logging handlers)
    assert_one_line_error(capsys.readouterr().err,
                          f"127.0.0.1:{port} is already in use")


@pytest.mark.parametrize("error, status, line", [
    (cli.UserError("--model-dir runs/x\ndoes not exist"), 2,
     "keras-attention: error: --model-dir runs/x does not exist"),
    (KeyboardInterrupt(), 130, "keras-attention: interrupted"),
])
def test_exit_statuses(error, status, line, capsys, monkeypatch):
    def command(args):
        raise error

    monkeypatch.setitem(cli.commands.COMMANDS, "export", command)
    assert cli.main(["export"]) == status
    assert capsys.readouterr() == ("", line + "\n")


# -- train: only the user's mistakes are one line -----------------------------

@pytest.fixture
def training(tmp_path, monkeypatch):
    """`train` on a user's file with `translator.train` replaced: returns
    (flags, set the exception train raises)."""
    from keras_attention import translator

    corpus = tmp_path / "train.tsv"
    corpus.write_text("A dog runs.\tEin Hund rennt.\n")
    raised = {}

    def train(config):
        raise raised["error"]

    monkeypatch.setattr(translator, "train", train)
    flags = ["train", "--corpus", "files", "--train-files", str(corpus),
             "--output-dir", str(tmp_path / "run")]
    return flags, raised, corpus


def test_train_errors_about_the_users_files_are_one_line(training, capsys):
    from keras_attention.text import CorpusError

    flags, raised, corpus = training
    raised["error"] = CorpusError(f"{corpus}: line 1 has no tab")
    assert cli.main(flags) == 2
    assert_one_line_error(capsys.readouterr().err, "line 1 has no tab")
    raised["error"] = PermissionError(errno.EACCES, "Permission denied",
                                      str(corpus))
    assert cli.main(flags) == 2
    assert_one_line_error(capsys.readouterr().err,
                          f"{corpus}: Permission denied")


@pytest.mark.parametrize("error", [
    RuntimeError("a bug"),
    FileNotFoundError(errno.ENOENT, "No such file", "/usr/lib/not-yours"),
    ValueError("a bug raising ValueError"),
])
def test_other_errors_during_training_are_bugs(training, error):
    flags, raised, _ = training
    raised["error"] = error
    with pytest.raises(type(error)):
        cli.main(flags)


# -- evaluate and translate with a fake translator ---------------------------

class FakeTranslator:
    """`Translator.load`'s stand-in: upper-cases, a batch at a time."""

    def __init__(self, directory, beam_size, alpha):
        self.directory, self.beam_size, self.alpha = directory, beam_size, alpha
        self.batches = []

    def translate_iter(self, texts, batch_size=64):
        batch = []
        for text in texts:
            batch.append(text)
            if len(batch) == batch_size:
                self.batches.append(batch)
                yield [text.upper() for text in batch]
                batch = []
        if batch:
            self.batches.append(batch)
            yield [text.upper() for text in batch]

    def attention(self, text, kind="cross"):
        """Two layers of three heads over two target pieces (and EOS) and
        three source pieces (and EOS), distinct weights everywhere; for a
        self-attention `kind`, source by source or target by target (the
        decoder's columns: BOS, then the target but EOS)."""
        import numpy as np

        self.kinds = getattr(self, "kinds", []) + [kind]
        source = ["▁a", "▁do", "g", "</s>"]
        target = ["▁A", "▁DOG", "</s>"]
        rows, columns = {"cross": (target, source),
                         "encoder": (source, source),
                         "decoder": (target, ["<s>", *target[:-1]])}[kind]
        size = 2 * 3 * len(rows) * len(columns)
        weights = np.arange(size, dtype="float32").reshape(
            2, 3, len(rows), len(columns)) / 100.0
        result = {"translation": text.upper(), "source_pieces": source,
                  "target_pieces": target, "attention": weights}
        if kind != "cross":
            result.update(kind=kind, row_pieces=rows, column_pieces=columns)
        return result

    def evaluate(self, pairs, batch_size=64, on_batch=None, by_length=None):
        from keras_attention.translator import bleu_by_length

        hypotheses = []
        for batch in self.translate_iter([p[0] for p in pairs], batch_size):
            hypotheses.extend(batch)
            on_batch(len(hypotheses))
        right = sum(h == p[1] for h, p in zip(hypotheses, pairs))
        result = {"bleu": 100.0 * right / len(pairs), "signature": "fake",
                  "sentences": len(pairs), "sentences_per_second": 50.0,
                  "hypotheses": hypotheses}
        if by_length is not None:  # the real buckets of the fake's output
            result["by_length"] = bleu_by_length(
                [p[0] for p in pairs], hypotheses, [p[1] for p in pairs],
                by_length)
        return result


@pytest.fixture
def loaded(monkeypatch, tmp_path):
    """Translator.load returns a FakeTranslator; yields the loaded ones."""
    from keras_attention.translator import Translator

    translators = []

    def load(cls, directory, beam_size=1, alpha=0.6):
        translators.append(FakeTranslator(directory, beam_size, alpha))
        return translators[-1]

    monkeypatch.setattr(Translator, "load", classmethod(load))
    (tmp_path / "model").mkdir()
    return translators


def test_evaluate_reports_progress_and_writes_the_translations(
        loaded, tmp_path, capsys):
    (tmp_path / "test.tsv").write_text(
        "a dog.\tA DOG.\nthe cat.\tDie Katze.\ntwo.\tTWO.\n")
    status = cli.main([
        "evaluate", "--model-dir", str(tmp_path / "model"), "--files",
        str(tmp_path / "test.tsv"), "--batch-size", "2", "--beam-size", "4",
        "--alpha", "0.8", "--output", str(tmp_path / "hypotheses.txt")])
    assert status == 0
    (translator,) = loaded
    assert (translator.directory, translator.beam_size, translator.alpha) == (
        str(tmp_path / "model"), 4, 0.8)
    assert translator.batches == [["a dog.", "the cat."], ["two."]]
    out, err = capsys.readouterr()
    assert out == ("BLEU = 66.67 on 3 sentences (fake); 50.0 sentences/s\n")
    # Not a terminal: one plain line at the end (the run takes < 10 s).
    assert err.startswith("evaluate: 3/3 sentences in ")
    assert err.count("\n") == 1 and "\r" not in err
    assert (tmp_path / "hypotheses.txt").read_text() == (
        "A DOG.\nTHE CAT.\nTWO.\n")


def test_evaluate_a_corpus_split_with_a_limit(loaded, tmp_path, capsys):
    from keras_attention.text import load_corpus

    status = cli.main(["evaluate", "--model-dir", str(tmp_path / "model"),
                       "--split", "val", "--limit", "5"])
    assert status == 0
    (translator,) = loaded
    sources = [pair[0] for pair in load_corpus("synthetic")["val"][:5]]
    assert translator.batches == [sources]
    assert "on 5 sentences" in capsys.readouterr().out


# Source words 4, 3, 7 and 5 (with --by-length 4,8 the first is on an edge);
# upper-cased, the first and the third are their references.
BY_LENGTH_PAIRS = [
    ("a dog runs fast.", "A DOG RUNS FAST."),
    ("the cat sleeps.", "DIE KATZE SCHLÄFT."),
    ("the old man sees a small dog.", "THE OLD MAN SEES A SMALL DOG."),
    ("two children read the books.", "ZWEI KINDER LESEN DIE BÜCHER."),
]


def sacrebleu_of(pairs):
    import sacrebleu

    return sacrebleu.BLEU().corpus_score(
        [source.upper() for source, _ in pairs],
        [[reference for _, reference in pairs]]).score


@pytest.mark.parametrize("flags, expected", [
    (["--by-length", "4,8"],
     [("1-4", BY_LENGTH_PAIRS[:2]), ("5-8", BY_LENGTH_PAIRS[2:]),
      ("9+", [])]),
    (["--by-length"],  # the default edges
     [("1-10", BY_LENGTH_PAIRS), ("11-15", []), ("16-20", []),
      ("21-25", []), ("26+", [])]),
])
def test_evaluate_prints_bleu_by_source_length(loaded, tmp_path, capsys,
                                               flags, expected):
    (tmp_path / "test.tsv").write_text(
        "".join(f"{source}\t{target}\n" for source, target in BY_LENGTH_PAIRS))
    status = cli.main(["evaluate", "--model-dir", str(tmp_path / "model"),
                       "--files", str(tmp_path / "test.tsv"), *flags])
    assert status == 0
    assert loaded[0].batches == [[source for source, _ in BY_LENGTH_PAIRS]]
    bleu_line, header, *lines = capsys.readouterr().out.splitlines()
    assert bleu_line == "BLEU = 50.00 on 4 sentences (fake); 50.0 sentences/s"
    assert header.split() == ["source", "words", "sentences", "BLEU"]
    rows = [line.split() for line in lines]
    assert rows == [
        [words, str(len(pairs)), f"{sacrebleu_of(pairs):.2f}" if pairs else "-"]
        for words, pairs in expected]
    assert sum(int(row[1]) for row in rows) == len(BY_LENGTH_PAIRS)
    # Aligned: every line as wide as the header, the numbers right-aligned.
    assert {len(line) for line in lines} == {len(header)}
    assert all(line.endswith(row[2]) for line, row in zip(lines, rows))


def test_evaluate_without_by_length_prints_no_table(loaded, tmp_path, capsys):
    (tmp_path / "test.tsv").write_text("a dog.\tA DOG.\n")
    assert cli.main(["evaluate", "--model-dir", str(tmp_path / "model"),
                     "--files", str(tmp_path / "test.tsv")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "BLEU = 100.00 on 1 sentences (fake); 50.0 sentences/s"]


class Stdin:
    """stdin whose `buffer` notes what stdout held before each line was
    read: a batch's translations must be out before the next batch is
    read."""

    def __init__(self, lines, stdout):
        self.lines, self.stdout, self.written_before = lines, stdout, []

    @property
    def buffer(self):
        for line in self.lines:
            self.written_before.append(self.stdout.getvalue())
            yield line


class Stdout(io.StringIO):
    flushes = 0

    def flush(self):
        self.flushes += 1


def test_translate_streams_stdin_in_batches(loaded, tmp_path, monkeypatch):
    stdout, stderr = Stdout(), io.StringIO()
    stdin = Stdin([b"\xef\xbb\xbfone\r\n", b"two\n", b"three\n", b"four\n",
                   b"five"], stdout)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "stdin", stdin)
    status = cli.main(["translate", "--model-dir", str(tmp_path / "model"),
                       "--batch-size", "2"])
    assert status == 0
    assert stdout.getvalue() == "ONE\nTWO\nTHREE\nFOUR\nFIVE\n"
    assert stdin.written_before == [
        "", "", "ONE\nTWO\n", "ONE\nTWO\n", "ONE\nTWO\nTHREE\nFOUR\n"]
    assert stdout.flushes >= 3
    err = stderr.getvalue()
    assert err.startswith("translate: 5 sentences in ") and "\r" not in err


def test_translate_reads_input_files_and_sentences(loaded, tmp_path, capsys):
    (tmp_path / "input.txt").write_text("one\ntwo\n")
    model = str(tmp_path / "model")
    assert cli.main(["translate", "--model-dir", model, "--input",
                     str(tmp_path / "input.txt")]) == 0
    assert capsys.readouterr().out == "ONE\nTWO\n"
    assert cli.main(["translate", "--model-dir", model, "a", "b"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("A\nB\n", "")  # no progress for arguments


@pytest.mark.parametrize("content, flags, fragments", [
    (b"ok\n\xff bad\n", [], ["line 2 is not valid UTF-8 (byte 1 of the "
                             "line)"]),
    (None, [], ["missing.txt: No such file or directory"]),
    (b"ok\n", ["also an argument"], ["as arguments or --input FILE, not "
                                     "both"]),
])
def test_translate_input_errors(loaded, tmp_path, capsys, content, flags,
                                fragments):
    path = tmp_path / ("input.txt" if content is not None else "missing.txt")
    if content is not None:
        path.write_bytes(content)
    status = cli.main(["translate", "--model-dir", str(tmp_path / "model"),
                       "--input", str(path), *flags])
    assert status == 2
    assert_one_line_error(capsys.readouterr().err, *fragments)


def test_a_bug_in_the_translator_propagates(loaded, tmp_path, monkeypatch):
    def translate_iter(self, texts, batch_size=64):
        raise RuntimeError("a bug")
        yield

    monkeypatch.setattr(FakeTranslator, "translate_iter", translate_iter)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["translate", "--model-dir", str(tmp_path / "model"), "a"])


# -- progress -------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_off_a_terminal_prints_a_line_every_interval():
    clock, stream = Clock(), io.StringIO()
    progress = cli.Progress("translate", stream=stream, interval=10,
                            clock=clock)
    for seconds, done in [(4, 64), (9.9, 128), (10, 192), (15, 256),
                          (20.5, 320)]:
        clock.now = 100 + seconds
        progress.update(done)
    clock.now = 125
    progress.close()
    assert stream.getvalue() == (
        "translate: 192 sentences, 19.2 sentences/s\n"
        "translate: 320 sentences, 15.6 sentences/s\n"
        "translate: 320 sentences in 25.0 s, 12.8 sentences/s\n")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_on_a_terminal_redraws_one_line():
    clock, stream = Clock(), Terminal()
    progress = cli.Progress("evaluate", total=8, stream=stream, clock=clock)
    clock.now = 102
    progress.update(4)
    clock.now = 102.05  # redrawn at most every 0.1 s ...
    progress.update(5)
    clock.now = 102.06  # ... and always at the end
    progress.update(8)
    clock.now = 104
    progress.close()
    half = "[" + "#" * 12 + "-" * 12 + "]"
    full = "[" + "#" * 24 + "]"
    first = f"evaluate: {half} 4/8 sentences, 2.0 sentences/s"
    second = f"evaluate: {full} 8/8 sentences, 3.9 sentences/s"
    assert stream.getvalue() == (
        f"\r{first}\r{second}\r{' ' * len(second)}\r"
        "evaluate: 8/8 sentences in 4.0 s, 2.0 sentences/s\n")


# -- attention-map ------------------------------------------------------------

def test_attention_map_page_holds_every_layer_and_head(loaded, tmp_path,
                                                       capsys):
    from keras_attention.visualize import read_data

    page = tmp_path / "map.html"
    status = cli.main(["attention-map", "--model-dir", str(tmp_path / "model"),
                       "a dog", "-o", str(page)])
    assert status == 0
    out, err = capsys.readouterr()
    assert out == "A DOG\n" and str(page) in err
    data = read_data(page.read_text("utf-8"))
    want = loaded[0].attention("a dog")["attention"][..., :2, :3]  # no EOS
    assert np.asarray(data["attention"]).shape == (2, 3, 2, 3)
    np.testing.assert_allclose(data["attention"], want, atol=1e-6)


@pytest.mark.parametrize("layer", [-1, 0])
def test_attention_map_picture_shows_the_chosen_layer(loaded, tmp_path,
                                                      monkeypatch, layer):
    import matplotlib.image

    from keras_attention.visualize import heatmaps

    drawn = []
    plot_heads = heatmaps.plot_heads

    def spy(weights, *args, **kwargs):
        drawn.append(np.asarray(weights))
        return plot_heads(weights, *args, **kwargs)

    monkeypatch.setattr(heatmaps, "plot_heads", spy)
    picture = tmp_path / "map.png"
    assert cli.main(["attention-map", "--model-dir", str(tmp_path / "model"),
                     "--layer", str(layer), "a dog", "-o", str(picture)]) == 0
    assert matplotlib.image.imread(picture).ndim == 3
    want = loaded[0].attention("a dog")["attention"][layer, :, :2, :3]
    (weights,) = drawn
    np.testing.assert_allclose(weights, want)


@pytest.mark.parametrize("flags, fragment", [
    (["-o", "map.jpg"], "map.jpg must end with one of .png, .svg, .pdf, .html"),
    (["-o", "missing/map.png"], "the folder"),
    (["--layer", "5", "-o", "map.png"], "`layer` must be in [-2, 2)"),
])
def test_attention_map_mistakes_are_one_line(loaded, tmp_path, capsys,
                                             flags, fragment):
    status = cli.main(["attention-map", "--model-dir",
                       str(tmp_path / "model"), "a dog",
                       *[str(tmp_path / f) if f.endswith(("png", "jpg"))
                         else f for f in flags]])
    assert status == 2
    assert_one_line_error(capsys.readouterr().err, fragment)


def test_attention_map_of_a_model_without_attention_is_one_line(
        loaded, tmp_path, capsys, monkeypatch):
    """`RNNTranslator(attention=None)` has no attention to draw: its
    error (tests/models/test_rnn_translator.py) reaches the user as one
    line."""
    from keras_attention.models import RNNTranslator

    model = RNNTranslator(20, 20, embedding_dim=4, encoder_units=3,
                          decoder_units=5, attention=None)
    source = np.array([[5, 6, 7]], "int32")
    model({"encoder_tokens": source, "decoder_tokens": source})
    monkeypatch.setattr(
        FakeTranslator, "attention",
        lambda self, text, kind: model.cross_attention(source, source))
    status = cli.main(["attention-map", "--model-dir",
                       str(tmp_path / "model"), "a dog", "-o",
                       str(tmp_path / "map.png")])
    assert status == 2
    assert_one_line_error(capsys.readouterr().err, "attention=None")


def test_attention_map_page_of_the_encoders_self_attention(loaded, tmp_path,
                                                           capsys):
    from keras_attention.visualize import read_data

    page = tmp_path / "map.html"
    assert cli.main(["attention-map", "--model-dir", str(tmp_path / "model"),
                     "--kind", "encoder", "a dog", "-o", str(page)]) == 0
    assert loaded[0].kinds == ["encoder"]
    text = page.read_text("utf-8")
    data = read_data(text)
    want = loaded[0].attention("a dog", "encoder")["attention"][..., :3, :3]
    np.testing.assert_allclose(data["attention"], want, atol=1e-6)
    assert data["target"] == data["source"] == ["a", "do", "·g"]
    assert data["axes"] == ["source (query)", "source (key)"]
    assert '<span class="role">source (query)</span>' in text


def test_attention_map_picture_of_the_decoders_self_attention(
        loaded, tmp_path, monkeypatch):
    """A square map, target by target: the decoder's rows write the pieces
    (EOS last), its columns read them (BOS first); only padding goes."""
    from keras_attention.visualize import heatmaps

    drawn = []
    plot_heads = heatmaps.plot_heads

    def spy(weights, *args, **kwargs):
        drawn.append((np.asarray(weights), args, kwargs))
        return plot_heads(weights, *args, **kwargs)

    monkeypatch.setattr(heatmaps, "plot_heads", spy)
    picture = tmp_path / "map.png"
    assert cli.main(["attention-map", "--model-dir", str(tmp_path / "model"),
                     "--kind", "decoder", "--layer", "0", "a dog", "-o",
                     str(picture)]) == 0
    ((weights, (rows, columns), options),) = drawn
    want = loaded[0].attention("a dog", "decoder")["attention"][0]
    np.testing.assert_allclose(weights, want)
    assert weights.shape == (3, 3, 3)
    assert rows == ["▁A", "▁DOG", "</s>"] and columns == ["<s>", "▁A", "▁DOG"]
    assert (options["ylabel"], options["xlabel"]) == ("target (query)",
                                                      "target (key)")


def test_attention_map_self_attention_mistakes_are_one_line(
        loaded, tmp_path, capsys, monkeypatch):
    output = str(tmp_path / "map.png")
    status = cli.main(["attention-map", "--url", "http://localhost:1",
                       "--kind", "encoder", "a dog", "-o", output])
    assert status == 2
    assert_one_line_error(capsys.readouterr().err,
                          "--kind encoder needs --model-dir")

    def no_self_attention(self, text, kind):
        raise ValueError(f"kind={kind!r} asks for self-attention, but this "
                         "RNNTranslator has no self-attention")

    monkeypatch.setattr(FakeTranslator, "attention", no_self_attention)
    status = cli.main(["attention-map", "--model-dir",
                       str(tmp_path / "model"), "--kind", "decoder", "a dog",
                       "-o", output])
    assert status == 2
    assert_one_line_error(capsys.readouterr().err,
                          "kind='decoder' asks for self-attention")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["attention-map", "--model-dir", str(tmp_path / "model"),
                  "--kind", "sideways", "a dog", "-o", output])
    assert exit_.value.code == 2
    assert "argument --kind: invalid choice: 'sideways'" in (
        capsys.readouterr().err)


# -- tf-config, and train in an Indexed Job ------------------------------------

INDEXED_JOB = {"JOB_COMPLETION_INDEX": "1", "KERAS_ATTENTION_WORKERS": "2",
               "KERAS_ATTENTION_JOB_NAME": "translator-job",
               "KERAS_ATTENTION_SERVICE": "translator-job-workers"}
INDEXED_JOB_TF_CONFIG = {
    "cluster": {"worker": ["translator-job-0.translator-job-workers:2222",
                           "translator-job-1.translator-job-workers:2222"]},
    "task": {"type": "worker", "index": 1},
}


def test_tf_config_prints_one_line_without_tensorflow(tmp_path, monkeypatch):
    for name, value in INDEXED_JOB.items():
        monkeypatch.setenv(name, value)
    code = ("import json, sys\n"
            "from keras_attention.cli import main\n"
            "status = main(['tf-config'])\n"
            "print(json.dumps([status, 'tensorflow' in sys.modules]),"
            " file=sys.stderr)")
    result = run(cwd=tmp_path, code=code)
    assert json.loads(result.stderr) == [0, False]
    (line,) = result.stdout.splitlines()
    assert json.loads(line) == INDEXED_JOB_TF_CONFIG
    assert run("tf-config", "--help", cwd=tmp_path).stdout.startswith(
        "usage: keras-attention tf-config")


@pytest.mark.parametrize("changes, fragment", [
    ({"JOB_COMPLETION_INDEX": None}, "JOB_COMPLETION_INDEX is not set"),
    ({"JOB_COMPLETION_INDEX": "2"}, "JOB_COMPLETION_INDEX must be an integer "
     "from 0 to 1, received: JOB_COMPLETION_INDEX='2'"),
    ({"KERAS_ATTENTION_PORT": "0"}, "received: KERAS_ATTENTION_PORT='0'"),
])
def test_tf_config_mistakes_are_one_line(monkeypatch, capsys, changes,
                                         fragment):
    for name, value in {**INDEXED_JOB, **changes}.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert cli.main(["tf-config"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_one_line_error(captured.err, fragment)


@pytest.fixture
def recorded_tf_config(training, monkeypatch):
    """`train` whose `translator.train` records TF_CONFIG; TF_CONFIG and
    the Indexed Job's variables are restored afterwards."""
    from keras_attention import translator

    seen = []
    monkeypatch.setattr(translator, "train", lambda config: seen.append(
        os.environ.get("TF_CONFIG")))
    monkeypatch.setenv("TF_CONFIG", "")  # unset, and restored afterwards
    for name in INDEXED_JOB:
        monkeypatch.delenv(name, raising=False)
    return training[0], seen


def test_train_in_an_indexed_job_sets_tf_config(recorded_tf_config,
                                                monkeypatch, capsys):
    flags, seen = recorded_tf_config
    assert cli.main(flags) == 0
    assert seen == [""]  # not in a Job: left alone
    for name, value in INDEXED_JOB.items():
        monkeypatch.setenv(name, value)
    assert cli.main(flags) == 0
    assert json.loads(seen[-1]) == INDEXED_JOB_TF_CONFIG
    assert "TF_CONFIG from the Indexed Job's environment" in (
        capsys.readouterr().out)
    # A TF_CONFIG already set (a TFJob sets it) is kept.
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["a:1"]}}')
    assert cli.main(flags) == 0
    assert seen[-1] == '{"cluster": {"worker": ["a:1"]}}'


def test_train_in_an_incomplete_indexed_job_is_one_line(recorded_tf_config,
                                                        monkeypatch, capsys):
    flags, seen = recorded_tf_config
    monkeypatch.setenv("KERAS_ATTENTION_WORKERS", "2")
    assert cli.main(flags) == 2
    assert_one_line_error(capsys.readouterr().err,
                          "JOB_COMPLETION_INDEX is not set")
    assert seen == []  # stopped before training
