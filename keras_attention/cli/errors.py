"""The user's mistakes as one line, bugs with their traceback.

A mistake of the user (a missing folder or file, a bad option value, an
unreadable corpus file, a port in use, a server that does not answer) is
raised as `UserError`, or turned into one by `user_errors` or
`errors_about` around the step that may fail; `run_command` prints it as
`keras-attention: error: ...` on stderr and returns 2, as argparse does
for what it checks itself. Any other exception is a bug and keeps its
traceback.
"""

import contextlib
import os
import sys

from keras_attention._extras import MissingExtraError

PROG = "keras-attention"
# Errors about a path: the user's mistake when the path is the user's.
PATH_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError,
               PermissionError)


class UserError(Exception):
    """A mistake in the command line or its input; `main` prints it as one
    line, `keras-attention: error: ...`, and returns 2."""


def _describe(error):
    """An exception as the user reads it: `path: reason` for an OSError."""
    if isinstance(error, OSError) and error.strerror and error.filename:
        names = [os.fsdecode(error.filename)]
        if error.filename2:
            names.append(os.fsdecode(error.filename2))
        return f"{' -> '.join(names)}: {error.strerror}"
    return str(error) or type(error).__name__


@contextlib.contextmanager
def user_errors(*kinds):
    """Inside a validation or loading step: exceptions of `kinds` (by
    default the path errors) are the user's mistakes.

    Example:

    >>> try:
    ...     with user_errors():
    ...         open("no-such-file.txt")
    ... except UserError as error:
    ...     print(error)
    no-such-file.txt: No such file or directory
    """
    kinds = kinds or PATH_ERRORS
    try:
        yield
    except UserError:
        raise
    except kinds as error:
        raise UserError(_describe(error)) from error


def _names(error, paths):
    """Whether the OSError `error` is about one of `paths` or a file in it."""
    named = [os.fsdecode(name) for name in (error.filename, error.filename2)
             if name is not None]
    message = str(error)
    for path in paths:
        path = os.fsdecode(path)
        root = os.path.abspath(path)
        for name in named:
            name = os.path.abspath(name)
            if name == root or name.startswith(root.rstrip(os.sep) + os.sep):
                return True
        # Messages written by hand name the path as the user gave it.
        if not named and len(path) > 2 and path in message:
            return True
    return False


@contextlib.contextmanager
def errors_about(paths, also=()):
    """Inside a long step (training, export): only path errors about the
    user's `paths`, and exceptions of `also`, are the user's mistakes;
    anything else raised there is a bug and keeps its traceback.

    Example:

    >>> try:
    ...     with errors_about(["runs/mine"]):
    ...         open("runs/mine/checkpoint")
    ... except UserError as error:
    ...     print(error)
    runs/mine/checkpoint: No such file or directory
    >>> with errors_about(["runs/mine"]):  # doctest: +IGNORE_EXCEPTION_DETAIL
    ...     open("/usr/lib/not-yours.py")
    Traceback (most recent call last):
    FileNotFoundError: /usr/lib/not-yours.py
    """
    try:
        yield
    except also as error:
        raise UserError(_describe(error)) from error
    except PATH_ERRORS as error:
        if not _names(error, paths):
            raise
        raise UserError(_describe(error)) from error


def run_command(command, args):
    """`command(args)`'s exit status: its own, or 2 after a `UserError`
    printed as one line on stderr (so is a missing extra: `pip install
    "keras-attention[translate]"`), 130 after Ctrl-C, 1 when the reader of
    stdout left (`... | head`).

    Example:

    >>> def missing(args):
    ...     raise UserError(f"--model-dir {args}\\ndoes not exist")
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as stderr:
    ...     status = run_command(missing, "runs/x")
    >>> status, stderr.getvalue()
    (2, 'keras-attention: error: --model-dir runs/x does not exist\\n')
    """
    try:
        return command(args)
    except (UserError, MissingExtraError) as error:
        # A missing extra names the `pip install` that adds it.
        message = " ".join(str(error).splitlines())
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`... | head`): no traceback, no flush at exit.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
