"""The ``spindle`` command line (the console script ``spindle = "spindle.cli:main"``).

One module per command group, each a click command loaded only when it is run (so
``spindle workflow ...`` never imports the control plane, and ``spindle server start-dev``
no client)::

    spindle server start-dev | start             spindle.cli.server
    spindle workflow start | signal | ... | list   spindle.cli.workflow
    spindle namespace create | ... | delete        spindle.cli.namespace
    spindle schedule create | ... | delete         spindle.cli.schedule
    spindle deployment list | describe | set-...   spindle.cli.deployment
    spindle nexus endpoint create | ... | delete   spindle.cli.nexus
    spindle dsl validate | graph | run | schedule  spindle.cli.dsl
    spindle replay                                 spindle.cli.replay
    spindle admin setup-schema | api-key ...       spindle.cli.admin
    spindle terraform install-provider             spindle.cli.terraform

Shared by them: :mod:`spindle.cli._output` (printing, JSON output, errors and exit codes)
and :mod:`spindle.cli._connection` (the connection and TLS flags of the client commands).

Other packages add command groups through the ``spindle.cli`` entry-point group: an entry
``NAME = "package.module:command"`` naming a :class:`click.Command` (or group) becomes
``spindle NAME``. A built-in command keeps its name (a plugin of the same name is
not used).

``python -m spindle.cli ...`` runs the same command line.
"""

from __future__ import annotations

import importlib
import sys

from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import click

from spindle.cli._output import FAILED, INTERRUPTED, OK, CliError, warn

__all__ = ["CliError", "cli", "main", "new_group"]

#: The built-in commands: name -> "module:attribute" of the click command.
COMMANDS = {
    "server": "spindle.cli.server:group",
    "workflow": "spindle.cli.workflow:group",
    "namespace": "spindle.cli.namespace:group",
    "schedule": "spindle.cli.schedule:group",
    "deployment": "spindle.cli.deployment:group",
    "nexus": "spindle.cli.nexus:group",
    "dsl": "spindle.cli.dsl:group",
    "replay": "spindle.cli.replay:command",
    "admin": "spindle.cli.admin:group",
    "terraform": "spindle.cli.terraform:group",
}

#: ``-h`` as well as ``--help`` on every command, as before.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def new_group(name: str, help: str, **kwargs: Any) -> click.Group:
    """A command group. Run without a command it is a usage error (exit status 2), whatever click's version."""
    return click.Group(name, help=help, no_args_is_help=False, **kwargs)


def _load(target: str) -> click.Command:
    module, _, attr = target.partition(":")
    command = getattr(importlib.import_module(module), attr)
    assert isinstance(command, click.Command), target
    return command


class _Spindle(click.Group):
    """The root group: the built-in commands, loaded when used, and the ``spindle.cli`` plugins."""

    def _plugins(self) -> dict[str, EntryPoint]:
        return {ep.name: ep for ep in entry_points(group="spindle.cli")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self._plugins()))

    def get_command(self, ctx: click.Context | None, name: str) -> click.Command | None:
        if name in COMMANDS:
            return _load(COMMANDS[name])
        ep = self._plugins().get(name)
        if ep is None:
            return None
        try:
            command = ep.load()
        except Exception as e:  # noqa: BLE001 - a broken plugin must not break the whole CLI
            warn(f"command group {name!r} failed to load: {e}")
            return None
        if not isinstance(command, click.Command):
            warn(f"command group {name!r} ({ep.value}) is a {type(command).__name__}, not a click command")
            return None
        return command


cli = _Spindle(name="spindle", help="Spindle: durable workflows for Python.", context_settings=CONTEXT_SETTINGS,
               no_args_is_help=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``spindle`` command line on ``argv`` (default: ``sys.argv[1:]``) and return its exit status.

    Every outcome is a return value (the console script exits with it): 0 done, 1 the
    command failed, 2 a usage error (click's own, or a :class:`CliError`), 130 interrupted;
    messages are already printed.
    """
    try:
        code = cli.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="spindle",
                        standalone_mode=False)
    except click.ClickException as e:  # CliError, and click's usage errors (exit status 2)
        e.show()
        return e.exit_code
    except click.Abort as e:  # Ctrl-C (or end of input at a prompt)
        cause = e.__cause__ or e.__context__
        return INTERRUPTED if isinstance(cause, KeyboardInterrupt) else FAILED
    except KeyboardInterrupt:
        return INTERRUPTED
    return OK if code is None else int(code)
