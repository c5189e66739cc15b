"""``spindle replay``: replay recorded histories through workflow code (for CI).

    spindle replay --workflows myapp.workflows:OrderWorkflow [--workflows ...] histories/*.json
    spindle replay --workflows myapp.workflows:OrderWorkflow --address HOST:PORT --namespace NS \
        --query "WorkflowType = 'Order' AND StartTime > '2026-11-01T00:00:00Z'" [--limit 500] [--save DIR]

The first form replays history JSON files; the second (server mode, :mod:`spindle.cli._replay_server`)
fetches the histories of the runs a visibility query selects and replays them, with the
connection flags of the other commands (TLS, ``--api-key`` defaulting to ``$SPINDLE_API_KEY``).

Exit status: 0 when every history replays, 1 when at least one does not (each failing
history is listed with its error, e.g. the NonDeterminismError message naming the event), 2
for usage errors, reported before anything is read or written (a ``--workflows`` value that
cannot be imported, no files, files together with ``--query``, ``--limit`` below 1, a
``--save`` path that is not a directory, a query the server refuses).
"""

from __future__ import annotations

import asyncio
import pathlib

from collections.abc import Sequence
from typing import Any

import click

from spindle.cli._connection import Connection, client_options
from spindle.cli._output import CliError
from spindle.cli._replay_server import check_save_dir, print_results, run_server_replay
from spindle.cli._user_modules import UserModuleError, import_user_module

__all__ = ["command", "resolve_workflow", "run_replay"]


def _usage(message: str) -> CliError:
    return CliError(message, prefix="spindle replay")


def resolve_workflow(spec: str) -> list[Any]:
    """Import ``module:attr`` (``attr`` may be dotted) and return the workflow definitions it names.

    Raises:
        CliError: malformed spec, module or attribute missing, or not a workflow (exit status 2).
    """
    from spindle.worker import Replayer

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise _usage(f"--workflows {spec!r}: expected MODULE:ATTR, e.g. myapp.workflows:OrderWorkflow")
    try:
        obj: Any = import_user_module(module_name, f"--workflows {spec!r}")
    except UserModuleError as e:
        raise _usage(str(e)) from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise _usage(f"--workflows {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    for item in items:
        try:
            Replayer(workflows=[item])  # checks that it is a workflow definition
        except TypeError as e:
            raise _usage(f"--workflows {spec!r}: {e}") from e
    return items


def _expand(paths: Sequence[str]) -> list[pathlib.Path]:
    found: list[pathlib.Path] = []
    for raw in paths:
        p = pathlib.Path(raw)
        if p.is_dir():
            inside = sorted(p.rglob("*.json"))
            if not inside:
                raise _usage(f"{raw}: directory contains no *.json files")
            found.extend(inside)
        elif p.exists():
            found.append(p)
        else:
            raise _usage(f"{raw}: no such file or directory")
    return found


def run_replay(workflow_specs: Sequence[str], paths: Sequence[str]) -> int:
    """Replay ``paths`` with the workflows named by ``workflow_specs``; return the exit status.

    Prints one ``ok``/``FAILED`` line per file and a summary. Never raises for a failing history.

    Raises:
        CliError: a usage error (exit status 2).
    """
    from spindle.worker import Replayer

    workflows = [w for spec in workflow_specs for w in resolve_workflow(spec)]
    try:
        replayer = Replayer(workflows=workflows)
    except ValueError as e:  # two definitions of one workflow type
        raise _usage(str(e)) from None
    files = _expand(paths)
    report = asyncio.run(replayer.replay_workflows(files, raise_on_replay_failure=False))
    return print_results(report, lambda r: f"{r.source} ({r.workflow_type or '?'} {r.workflow_id or '?'})")


@click.command("replay", short_help="check that workflow code reproduces recorded histories (files or a server's)",
               help="Replay each history JSON file (History.to_json() / `spindle workflow show --output json`) through "
                    "the given workflow definitions (PATH: a history JSON file, or a directory: every *.json below it); "
                    "or, with --query, the histories of the runs the query selects on the server (--address, "
                    "--namespace, TLS and API key flags as the other commands). "
                    "Exit 0 if all replay, 1 if any fails, 2 on usage errors.")
@click.option("--workflows", "-w", multiple=True, required=True, metavar="MODULE:ATTR",
              help="a workflow definition to register, e.g. myapp.workflows:OrderWorkflow (repeatable); MODULE:ATTR "
                   "may also name a list of definitions")
@click.option("--query", "-q", default=None,
              help="server mode: replay the runs this visibility query selects, e.g. "
                   "\"WorkflowType = 'Order' AND StartTime > '2026-11-01T00:00:00Z'\" (no PATH then)")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="with --query: replay at most this many runs (at least 1)")
@click.option("--save", "save", metavar="DIR", default=None,
              help="with --query: write each replayed history to DIR as JSON (the format PATH takes), for CI to keep")
@client_options()
@click.argument("paths", nargs=-1, metavar="[PATH...]")
def command(conn: Connection, workflows: tuple[str, ...], query: str | None, limit: int | None, save: str | None,
            paths: tuple[str, ...]) -> int:
    if query is None:
        if limit is not None or save is not None:
            raise _usage(f"{'--limit' if limit is not None else '--save'} needs --query (server mode)")
        if not paths:
            raise _usage("give history files (PATH...) or --query to replay from a server")
        return run_replay(workflows, paths)
    if paths:
        raise _usage(f"give either history files or --query, not both (got --query and {paths[0]!r})")
    save_dir = check_save_dir(save) if save is not None else None
    defns = [w for spec in workflows for w in resolve_workflow(spec)]
    return run_server_replay(conn, defns, query, limit=limit, save=save_dir)
