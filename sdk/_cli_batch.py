"""``spindle workflow reset`` and the batch forms of ``terminate|cancel|signal|reset --query "..."``.

A batch command reads the executions the query matches, shows their count and asks for
confirmation (``--yes`` skips it), then acts on each with a progress bar (``rich``, on
stderr), at most ``--rps`` calls a second, and prints the summary (done, skipped,
failed with reasons) on stdout. Exit status: 0 when nothing failed, 1 otherwise, 2 for
bad arguments or a refused confirmation. Running the same command again after an
interruption resumes it (see ``spindle.client._batch``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from spindle.client._batch import BatchItemOutcome, collect_targets, default_batch_id, make_action, one_per_workflow, run_batch
from spindle.client._client import Client
from spindle.client._reset import ResetType

Single = Callable[[argparse.Namespace, Client], Awaitable[int]]

_TYPES = {"first": ResetType.FIRST_WORKFLOW_TASK, "last": ResetType.LAST_WORKFLOW_TASK}


class BatchUsageError(Exception):
    """A batch command's arguments are inconsistent (exit status 2)."""


def add_batch_options(p: argparse.ArgumentParser) -> None:
    """``--query``, ``--yes``, ``--rps`` and ``--batch-id`` on a command that also takes ``--workflow-id``."""
    p.add_argument("--query", "-q", default=None,
                   help="act on every execution this visibility query matches (instead of --workflow-id), e.g. "
                        "\"WorkflowType = 'Order' AND ExecutionStatus = 'Running'\"")
    p.add_argument("--yes", "-y", action="store_true", help="with --query: do not ask for confirmation")
    p.add_argument("--rps", type=_positive_rate, default=None, help="with --query: at most this many calls a second")
    p.add_argument("--batch-id", default=None,
                   help="with --query: the batch's id (default: derived from the command, so running it again "
                        "resumes it; give a new one to repeat a signal batch on purpose)")


def _positive_rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not rate > 0 or rate == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of calls per second, got {value!r}")
    return rate


def add_reset_options(p: argparse.ArgumentParser) -> None:
    """The options of ``spindle workflow reset`` (besides the connection and ``--workflow-id``)."""
    p.add_argument("--event-id", "-e", type=int, default=None,
                   help="the WorkflowTaskCompleted event to reset to (see 'spindle workflow show')")
    p.add_argument("--type", choices=sorted(_TYPES), default=None,
                   help="reset to the first or last completed workflow task (default: last)")
    p.add_argument("--reason", required=True, help="why (recorded in both runs)")
    p.add_argument("--no-reapply-signals", action="store_true",
                   help="do not re-apply the signals received after the point")


def dispatch(operation: str, single: Single) -> Single:
    """The command's body: the batch path with ``--query``, ``single`` with ``--workflow-id``."""

    async def run(args: argparse.Namespace, client: Client) -> int:
        query = getattr(args, "query", None)
        if query is not None and args.workflow_id:
            return _usage("give either --workflow-id or --query, not both")
        if query is None:
            if not args.workflow_id:
                return _usage("one of --workflow-id or --query is required")
            return await single(args, client)
        if getattr(args, "run_id", None):
            return _usage("--run-id names one run; it cannot be combined with --query")
        if getattr(args, "event_id", None) is not None:
            return _usage("--event-id names an event of one run; with --query use --type first|last")
        return await _batch(operation, args, client)

    return run


def _usage(message: str) -> int:
    print(f"spindle: error: {message}", file=sys.stderr)
    return 2


async def reset_single(args: argparse.Namespace, client: Client) -> int:
    """``spindle workflow reset --workflow-id X (--event-id N | --type first|last) --reason ...``."""
    if args.event_id is not None and args.type is not None:
        return _usage("give either --event-id or --type, not both")
    handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
    try:
        run_id = await handle.reset(args.event_id, type=_TYPES[args.type or "last"], reason=args.reason,
                                    reapply_signals=not args.no_reapply_signals)
    except ValueError as e:
        print(f"spindle: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({"workflow_id": args.workflow_id, "run_id": run_id}))
    return 0


def _action_args(operation: str, args: argparse.Namespace) -> dict[str, Any]:
    if operation == "signal":
        inputs = []
        for v in args.input:
            try:
                inputs.append(json.loads(v))
            except ValueError as e:
                raise BatchUsageError(f"--input: not valid JSON ({e}): {v!r}") from None
        return {"signal": args.name, "args": inputs}
    if operation == "reset":
        return {"reason": args.reason, "reset_type": _TYPES[args.type or "last"],
                "reapply_signals": not args.no_reapply_signals}
    return {"reason": args.reason}


async def _batch(operation: str, args: argparse.Namespace, client: Client) -> int:
    try:
        kwargs = _action_args(operation, args)
    except BatchUsageError as e:
        return _usage(str(e))
    try:
        targets = await collect_targets(client, args.query)
    except ValueError as e:
        return _usage(str(e))
    if operation == "reset":
        targets = one_per_workflow(targets)
    n = len(targets)
    print(f"{n} execution(s) match {args.query!r} in namespace {client.namespace!r}", file=sys.stderr)
    batch_id = args.batch_id or default_batch_id(
        client.namespace, operation, args.query,
        [kwargs.get("reason", ""), kwargs.get("signal", ""), int(kwargs.get("reset_type", 0)),
         kwargs.get("reapply_signals", True), kwargs.get("args", [])])
    if n and not args.yes and not _confirm(f"{operation} {n} execution(s)? [y/N] "):
        print("nothing was done (confirm with y, or pass --yes)", file=sys.stderr)
        return 2
    action = make_action(client, operation, **kwargs)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.console import Console

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task(operation, total=n)

        def advance(item: BatchItemOutcome) -> None:
            progress.advance(task)

        summary = await run_batch(client, operation, args.query, targets, action, batch_id=batch_id, rps=args.rps,
                                  on_item=advance)
    print(summary)
    return 1 if summary.failed else 0


def _confirm(prompt: str) -> bool:
    print(prompt, end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        return False
    return answer.strip().lower() in ("y", "yes")


__all__ = ["add_batch_options", "add_reset_options", "dispatch", "reset_single"]
