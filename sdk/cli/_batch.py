"""``spindle workflow reset`` and the batch forms of ``terminate|cancel|signal|reset|update-options --query "..."``.

A batch command reads the executions the query matches, shows their count and asks for
confirmation (``--yes`` skips it), then acts on each with a progress bar (``rich``, on
stderr), at most ``--rps`` calls a second, and prints the summary (done, skipped,
failed with reasons) on stdout. Exit status: 0 when nothing failed, 1 otherwise, 2 for
bad arguments or a refused confirmation. Running the same command again after an
interruption resumes it (the batch id is derived from the command).
"""

from __future__ import annotations

import json

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click

from spindle.cli._output import FAILED, OK, USAGE, confirm, fail, note, out, out_json

if TYPE_CHECKING:
    from spindle.client import Client

__all__ = ["batch_options", "dispatch", "reset_options", "reset_single"]

#: A command's body for one execution: (its parameters, the client) -> exit status.
Single = Callable[[dict[str, Any], "Client"], Awaitable[int]]


def _positive_rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        rate = float(value)
    except ValueError:
        raise click.BadParameter(f"not a number: {value!r}", ctx, param) from None
    if not rate > 0 or rate == float("inf"):
        raise click.BadParameter(f"must be a positive number of calls per second, got {value!r}", ctx, param)
    return rate


def batch_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--query``, ``--yes``, ``--rps`` and ``--batch-id`` on a command that also takes ``--workflow-id``."""
    for option in reversed([
        click.option("--query", "-q", default=None,
                     help="act on every execution this visibility query matches (instead of --workflow-id), e.g. "
                          "\"WorkflowType = 'Order' AND ExecutionStatus = 'Running'\""),
        click.option("--yes", "-y", is_flag=True, help="with --query: do not ask for confirmation"),
        click.option("--rps", callback=_positive_rate, default=None, help="with --query: at most this many calls a second"),
        click.option("--batch-id", default=None,
                     help="with --query: the batch's id (default: derived from the command, so running it again "
                          "resumes it; give a new one to repeat a signal batch on purpose)"),
    ]):
        f = option(f)
    return f


def reset_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options of ``spindle workflow reset`` (besides the connection and ``--workflow-id``)."""
    for option in reversed([
        click.option("--event-id", "-e", type=int, default=None,
                     help="the WorkflowTaskCompleted event to reset to (see 'spindle workflow show')"),
        click.option("--type", "reset_type", type=click.Choice(["first", "last"]), default=None,
                     help="reset to the first or last completed workflow task (default: last)"),
        click.option("--reason", required=True, help="why (recorded in both runs)"),
        click.option("--no-reapply-signals", is_flag=True, help="do not re-apply the signals received after the point"),
    ]):
        f = option(f)
    return f


def _reset_type(name: str | None) -> Any:
    from spindle.client import ResetType

    return {"first": ResetType.FIRST_WORKFLOW_TASK, "last": ResetType.LAST_WORKFLOW_TASK}[name or "last"]


def dispatch(operation: str, single: Single) -> Callable[[dict[str, Any], Client], Awaitable[int]]:
    """The command's body: the batch path with ``--query``, ``single`` with ``--workflow-id``."""

    async def run(params: dict[str, Any], client: Client) -> int:
        query = params.get("query")
        if query is not None and params["workflow_id"]:
            fail("give either --workflow-id or --query, not both")
        if query is None:
            if not params["workflow_id"]:
                fail("one of --workflow-id or --query is required")
            return await single(params, client)
        if params.get("run_id"):
            fail("--run-id names one run; it cannot be combined with --query")
        if params.get("event_id") is not None:
            fail("--event-id names an event of one run; with --query use --type first|last")
        return await _batch(operation, params, client)

    return run


async def reset_single(params: dict[str, Any], client: Client) -> int:
    """``spindle workflow reset --workflow-id X (--event-id N | --type first|last) --reason ...``."""
    if params["event_id"] is not None and params["reset_type"] is not None:
        fail("give either --event-id or --type, not both")
    handle = client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"])
    try:
        run_id = await handle.reset(params["event_id"], type=_reset_type(params["reset_type"]), reason=params["reason"],
                                    reapply_signals=not params["no_reapply_signals"])
    except ValueError as e:
        fail(str(e))
    out_json({"workflow_id": params["workflow_id"], "run_id": run_id})
    return OK


def _action_args(operation: str, params: dict[str, Any]) -> dict[str, Any]:
    if operation == "signal":
        inputs = []
        for v in params["input"]:
            try:
                inputs.append(json.loads(v))
            except ValueError as e:
                fail(f"--input: not valid JSON ({e}): {v!r}")
        return {"signal": params["name"], "args": inputs}
    if operation == "reset":
        return {"reason": params["reason"], "reset_type": _reset_type(params["reset_type"]),
                "reapply_signals": not params["no_reapply_signals"]}
    if operation == "set_versioning_override":  # update-options: the override (None removes it)
        return {"override": params["override"]}
    return {"reason": params["reason"]}


async def _batch(operation: str, params: dict[str, Any], client: Client) -> int:
    # The batch engine's steps (list the targets, confirm, act with progress) have no public API:
    # the Client's batch_* methods run them in one call.
    from spindle.client._batch import (
        BatchItemOutcome,
        collect_targets,
        default_batch_id,
        make_action,
        one_per_workflow,
        run_batch,
    )

    query = params["query"]
    kwargs = _action_args(operation, params)
    try:
        targets = await collect_targets(client, query)
    except ValueError as e:
        fail(str(e))
    if operation == "reset":
        targets = one_per_workflow(targets)
    n = len(targets)
    note(f"{n} execution(s) match {query!r} in namespace {client.namespace!r}")
    override = kwargs.get("override")  # update-options: a different override is a different batch
    batch_id = params["batch_id"] or default_batch_id(
        client.namespace, operation, query,
        [kwargs.get("reason", ""), kwargs.get("signal", ""), int(kwargs.get("reset_type", 0)),
         kwargs.get("reapply_signals", True), kwargs.get("args", [])] + ([repr(override)] if override else []))
    if n and not params["yes"] and not confirm(f"{operation} {n} execution(s)? [y/N] "):
        note("nothing was done (confirm with y, or pass --yes)")
        return USAGE
    action = make_action(client, operation, **kwargs)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task(operation, total=n)

        def advance(item: BatchItemOutcome) -> None:
            progress.advance(task)

        summary = await run_batch(client, operation, query, targets, action, batch_id=batch_id, rps=params["rps"],
                                  on_item=advance)
    out(str(summary))
    return FAILED if summary.failed else OK
