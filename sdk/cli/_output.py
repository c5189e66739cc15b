"""What the ``spindle`` commands print, how they report errors, and their exit codes.

Exit codes (the same for every command):

- ``0`` (:data:`OK`): done.
- ``1`` (:data:`FAILED`): the command ran and did not succeed: the server refused (the
  message is its error), a workflow failed, a batch item failed, a history did not replay.
- ``2`` (:data:`USAGE`): bad usage, reported before anything is changed: a flag value,
  flags that do not go together, a file that cannot be read. click's own usage errors (an
  unknown flag, a missing option, a value of the wrong type) exit 2 as well, with click's
  message naming the flag.
- ``130`` (:data:`INTERRUPTED`): interrupted (Ctrl-C).

Results go to standard output (JSON where the command prints data, so scripts can read
it); errors, warnings and progress go to standard error. A command reports a user error by
raising :class:`CliError`, which :func:`spindle.cli.main` prints as one line
``spindle: error: MESSAGE``.
"""

from __future__ import annotations

import json
import sys

from typing import IO, Any, NoReturn

import click

__all__ = ["FAILED", "INTERRUPTED", "OK", "USAGE", "CliError", "CommandFailed", "confirm", "fail", "note", "out",
           "out_json", "warn"]

OK = 0
FAILED = 1
USAGE = 2
INTERRUPTED = 130


class CliError(click.ClickException):
    """A usage error, printed as one line ``PREFIX: error: MESSAGE``; exit status 2.

    ``prefix`` is ``spindle`` unless a command names itself (``spindle replay``).
    """

    exit_code = USAGE

    def __init__(self, message: str, *, prefix: str = "spindle") -> None:
        super().__init__(message)
        self.prefix = prefix

    def show(self, file: IO[Any] | None = None) -> None:
        print(f"{self.prefix}: error: {self.message}", file=file if file is not None else sys.stderr, flush=True)


class CommandFailed(CliError):
    """The command ran and did not succeed (the server refused, ...): ``spindle: error: MESSAGE``, exit status 1."""

    exit_code = FAILED


def fail(message: str) -> NoReturn:
    """Stop the command with ``spindle: error: MESSAGE``, a usage error (exit status 2)."""
    raise CliError(message)


def out(text: str = "", *, end: str = "\n") -> None:
    """A line of the command's result on standard output."""
    print(text, end=end)


def out_json(value: Any, *, indent: int | None = None) -> None:
    """``value`` as JSON on standard output (values JSON has no type for are shown with ``str``)."""
    out(json.dumps(value, indent=indent, default=str))


def note(text: str) -> None:
    """A line for the person at the terminal (progress, a hint) on standard error."""
    print(text, file=sys.stderr, flush=True)


def warn(text: str) -> None:
    """``spindle: warning: TEXT`` on standard error."""
    note(f"spindle: warning: {text}")


def confirm(prompt: str) -> bool:
    """Ask ``prompt`` on standard error; True only for an answer of y or yes (no answer, or no terminal: False)."""
    print(prompt, end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        return False
    return answer.strip().lower() in ("y", "yes")
