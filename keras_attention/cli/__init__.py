"""The `keras-attention` command: train, evaluate, translate, attention-map,
export, serve, tf-config.

Each command is a thin wrapper over `keras_attention.translator` or
`keras_attention.serving`. Building the parser imports neither TensorFlow
nor Keras, so `--help` answers at once; a command imports them when it
runs, with TensorFlow's own log lines hidden unless `--verbose` comes
before the command.

A mistake of the user (a missing folder or file, a bad option value, an
unreadable corpus file, a port in use, a server that does not answer)
prints one line, `keras-attention: error: ...`, on stderr and exits with
status 2, as argparse does for what it checks itself. Any other exception
is a bug and keeps its traceback.

The modules: `parser` builds the argument parser, `commands` runs each
command, `progress` reports sentences per second, `errors` tells the
user's mistakes from bugs. None of them imports TensorFlow when imported.
"""

from keras_attention.cli.commands import COMMANDS
from keras_attention.cli.errors import PROG
from keras_attention.cli.errors import UserError
from keras_attention.cli.errors import run_command
from keras_attention.cli.parser import add_config_options
from keras_attention.cli.parser import build_parser
from keras_attention.cli.parser import config_from_arguments
from keras_attention.cli.progress import Progress
from keras_attention.logs import quiet_tensorflow

__all__ = ["PROG", "Progress", "UserError", "add_config_options",
           "build_parser", "config_from_arguments", "main"]


def main(argv=None):
    """Run the command line `argv` (default: `sys.argv[1:]`); returns the
    exit status: 0, or 2 after a mistake of the user printed as one line
    (argparse exits with 2 itself)."""
    args = build_parser().parse_args(argv)
    quiet_tensorflow(show_logs=args.tensorflow_logs)
    return run_command(COMMANDS[args.command], args)
