"""``spindle workflow start|signal|query|result|cancel|terminate|reset|update-options|delete|delete-status|describe|
show|list``.

Every verb takes the connection flags (``--address``, ``--namespace``, ``--api-key``, TLS)
and ``--codec MODULE:FACTORY`` (see :mod:`spindle.cli._connection`). ``signal``, ``cancel``,
``terminate``, ``reset`` and ``update-options`` act on one execution (``--workflow-id``) or on
every one a ``--query`` matches (:mod:`spindle.cli._batch`). ``delete`` erases one run or, with
``--query``, starts a server-side erasure job (:mod:`spindle.cli._erasure`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click

from spindle.cli import new_group
from spindle.cli._batch import batch_options, dispatch, reset_options, reset_single
from spindle.cli._connection import Connection, client_options
from spindle.cli._erasure import check_delete, delete_body, delete_options, status_body
from spindle.cli._output import OK, out, out_json, warn
from spindle.cli._values import duration_arg, json_arg
from spindle.cli._versioning import override_options, override_single, parse_override, versioning_dict
from spindle.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

if TYPE_CHECKING:
    from spindle.client import Client, WorkflowExecutionDescription

__all__ = ["group"]

group = new_group("workflow", "start, signal, query, result, cancel, terminate, reset, update-options, delete "
                              "(erase), describe, show and list executions")

Body = Callable[[dict[str, Any], "Client"], Awaitable[int]]


def _workflow_options(*, run: bool = True, batch: bool = False) -> Callable[[Any], Any]:
    """The connection flags, ``--codec``, ``--workflow-id`` and (with ``run``) ``--run-id``."""

    def decorate(f: Any) -> Any:
        if run:
            f = click.option("--run-id", "-r", default=None, help="run id (default: the latest run)")(f)
        f = click.option("--workflow-id", "-w", required=not batch,
                         help="workflow id" + (" (or --query for a batch)" if batch else ""))(f)
        return client_options()(f)

    return decorate


def _input_option(f: Any) -> Any:
    return click.option("--input", "-i", multiple=True, help="a JSON argument (repeat for several)")(f)


def _run(conn: Connection, body: Body, params: dict[str, Any]) -> int:
    async def go(client: Client) -> int:
        return await body(params, client)

    return conn.run(go)


def _describe_dict(d: WorkflowExecutionDescription) -> dict[str, Any]:
    return {
        "workflow_id": d.id, "run_id": d.run_id, "workflow_type": d.workflow_type, "task_queue": d.task_queue,
        "status": d.status.name if d.status else None,
        "start_time": d.start_time.isoformat() if d.start_time else None,
        "close_time": d.close_time.isoformat() if d.close_time else None,
        "history_length": d.history_length, "memo": dict(d.memo), "search_attributes": dict(d.search_attributes),
        "pending_activities": [
            {"activity_id": a.activity_id, "activity_type": a.activity_type, "state": a.state, "attempt": a.attempt}
            for a in d.pending_activities],
        **versioning_dict(d),
    }


# ---------------------------------------------------------------------- start
@group.command("start", help="start a workflow")
@_workflow_options(run=False)
@click.option("--type", "workflow_type", required=True, help="workflow type name")
@click.option("--task-queue", "-t", required=True, help="task queue")
@_input_option
@click.option("--id-reuse-policy", type=click.Choice([p.name for p in WorkflowIDReusePolicy]), default="ALLOW_DUPLICATE")
@click.option("--id-conflict-policy", type=click.Choice([p.name for p in WorkflowIDConflictPolicy]), default="FAIL")
@click.option("--execution-timeout", help="e.g. 1h")
@click.option("--run-timeout", help="e.g. 30m")
@click.option("--start-delay", help="e.g. 10s")
def start(conn: Connection, **params: Any) -> int:
    inputs = [json_arg(v, "--input") for v in params["input"]]
    execution_timeout = duration_arg(params["execution_timeout"], "--execution-timeout")
    run_timeout = duration_arg(params["run_timeout"], "--run-timeout")
    start_delay = duration_arg(params["start_delay"], "--start-delay")

    async def body(params: dict[str, Any], client: Client) -> int:
        handle = await client.start_workflow(
            params["workflow_type"], *inputs, id=params["workflow_id"], task_queue=params["task_queue"],
            id_reuse_policy=WorkflowIDReusePolicy[params["id_reuse_policy"]],
            id_conflict_policy=WorkflowIDConflictPolicy[params["id_conflict_policy"]],
            execution_timeout=execution_timeout, run_timeout=run_timeout, start_delay=start_delay)
        out_json({"workflow_id": handle.id, "run_id": handle.run_id})
        return OK

    return _run(conn, body, params)


# ---------------------------------------------------------------------- signal, query, result
async def _signal(params: dict[str, Any], client: Client) -> int:
    inputs = [json_arg(v, "--input") for v in params["input"]]
    await client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).signal(params["name"], *inputs)
    out("signal sent")
    return OK


@group.command("signal", help="send a signal (to one execution, or to every one a --query matches)")
@_workflow_options(batch=True)
@click.option("--name", required=True, help="signal name")
@_input_option
@batch_options
def signal(conn: Connection, **params: Any) -> int:
    return _run(conn, dispatch("signal", _signal), params)


@group.command("query", help="query a workflow")
@_workflow_options()
@click.option("--name", required=True, help="query name")
@_input_option
def query(conn: Connection, **params: Any) -> int:
    inputs = [json_arg(v, "--input") for v in params["input"]]

    async def body(params: dict[str, Any], client: Client) -> int:
        result = await client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).query(
            params["name"], *inputs)
        out_json(result)
        return OK

    return _run(conn, body, params)


@group.command("result", help="wait for a run to close and print its result (JSON)")
@_workflow_options()
def result(conn: Connection, **params: Any) -> int:
    async def body(params: dict[str, Any], client: Client) -> int:
        out_json(await client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).result())
        return OK

    return _run(conn, body, params)


# ---------------------------------------------------------------------- cancel, terminate, reset
async def _cancel(params: dict[str, Any], client: Client) -> int:
    await client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).cancel(params["reason"])
    out("cancellation requested")
    return OK


async def _terminate(params: dict[str, Any], client: Client) -> int:
    await client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).terminate(params["reason"])
    out("terminated")
    return OK


@group.command("cancel", help="request cancellation (of one execution, or of every one a --query matches)")
@_workflow_options(batch=True)
@click.option("--reason", default="", help="why")
@batch_options
def cancel(conn: Connection, **params: Any) -> int:
    return _run(conn, dispatch("cancel", _cancel), params)


@group.command("terminate", help="terminate at once, no cleanup runs (one execution, or every one a --query matches)")
@_workflow_options(batch=True)
@click.option("--reason", default="", help="why")
@batch_options
def terminate(conn: Connection, **params: Any) -> int:
    return _run(conn, dispatch("terminate", _terminate), params)


@group.command("reset", help="reset to a completed workflow task: a new run continues from there with the workers' "
                             "current code (one workflow, or every one a --query matches)")
@_workflow_options(batch=True)
@reset_options
@batch_options
def reset(conn: Connection, **params: Any) -> int:
    return _run(conn, dispatch("reset", reset_single), params)


# ---------------------------------------------------------------------- update-options
@group.command("update-options", short_help="set or remove a run's versioning override (worker build versioning)",
               help="set or remove the versioning override of one execution, or of every one a --query matches: "
                    "--pinned-version DEPLOYMENT.BUILD sends its next workflow tasks only to that build's workers, "
                    "--auto-upgrade to the deployment's current version, --unset-override returns it to the "
                    "behavior its workflow declared. Needs the namespace's admin role")
@_workflow_options(batch=True)
@override_options
@batch_options
def update_options(conn: Connection, **params: Any) -> int:
    parse_override(params)  # exactly one of the three flags, before anything is sent
    return _run(conn, dispatch("set_versioning_override", override_single), params)


# ---------------------------------------------------------------------- delete (erasure)
@group.command("delete", short_help="erase one run, or every execution a --query selects, for good",
               help="erase for good (docs/ERASURE.md): --workflow-id deletes one run (terminated first if running); "
                    "--query starts a server job erasing every execution the query selects, live and archived, and "
                    "shows its progress (--dry-run only counts; --yes skips the confirmation; --no-wait returns the "
                    "job id). Needs the namespace's admin role")
@client_options()
@delete_options
def delete(conn: Connection, **params: Any) -> int:
    check_delete(params)  # before anything is sent
    return _run(conn, delete_body, params)


@group.command("delete-status", help="progress of an erasure job (--job-id; --wait follows it until it is done), or "
                                     "every batch job of the namespace")
@client_options()
@click.option("--job-id", default=None, help="the job (default: list every job)")
@click.option("--wait", is_flag=True, help="describe it every second until it is done")
def delete_status(conn: Connection, **params: Any) -> int:
    return _run(conn, status_body, params)


# ---------------------------------------------------------------------- describe, show, list
@group.command("describe", help="status and pending work of a run; for a run of a versioned worker its versioning: "
                                "behavior, the build that ran its last task, an override, and pinned_version (the "
                                "build its next workflow task waits for; null: the deployment's routing decides)")
@_workflow_options()
def describe(conn: Connection, **params: Any) -> int:
    async def body(params: dict[str, Any], client: Client) -> int:
        d = await client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).describe()
        out_json(_describe_dict(d), indent=2)
        return OK

    return _run(conn, body, params)


def _summary(attrs: dict[str, Any]) -> str:
    keys = ("workflow_type", "activity_type", "activity_id", "timer_id", "signal_name", "marker_name", "workflow_id",
            "attempt", "retry_state", "cause", "reason", "update_id", "start_to_fire_timeout_ms")
    parts = [f"{k}={attrs[k]}" for k in keys if k in attrs]
    failure = attrs.get("failure")
    if isinstance(failure, dict) and failure.get("message"):
        parts.append(f"failure={failure['message']!r}")
    return " ".join(parts)


@group.command("show", help="print a run's history")
@_workflow_options()
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
def show(conn: Connection, **params: Any) -> int:
    async def body(params: dict[str, Any], client: Client) -> int:
        from spindle.client import Client
        from spindle.converter import decode_history

        # Fetched as stored and decoded event by event: a payload the codecs refuse (a poison
        # input, a key this side lacks) is reported and the rest of the history still shown.
        stored = Client(client.stub, namespace=client.namespace)  # no codecs: the history as stored
        history = await stored.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).fetch_history()
        history, errors = await decode_history(history, client.codecs, namespace=client.namespace)
        for error in errors:
            warn(str(error))
        if params["output"] == "json":
            out(history.to_json())
            return OK
        out(f"workflow {history.workflow_id} run {history.run_id}: {len(history.events)} events")
        for e in history.events:
            out(f"{e.event_id:>5}  {e.event_time.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]}  {e.event_type:<44} "
                f"{_summary(e.attributes)}")
        return OK

    return _run(conn, body, params)


@group.command("list", help="list executions matching a query")
@client_options()
@click.option("--query", "-q", default="",
              help="list filter, e.g. \"WorkflowType = 'Order' AND ExecutionStatus = 'Running'\"")
@click.option("--limit", type=int, default=100)
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
def list_(conn: Connection, **params: Any) -> int:
    async def body(params: dict[str, Any], client: Client) -> int:
        rows = []
        async for d in client.list_workflows(params["query"], page_size=min(params["limit"], 1000)):
            rows.append(d)
            if len(rows) >= params["limit"]:
                break
        if params["output"] == "json":
            out_json([_describe_dict(d) for d in rows], indent=2)
            return OK
        out(f"{'WORKFLOW ID':<36} {'TYPE':<24} {'STATUS':<16} START")
        for d in rows:
            begun = d.start_time.strftime("%Y-%m-%d %H:%M:%S") if d.start_time else ""
            out(f"{d.id:<36} {d.workflow_type:<24} {(d.status.name if d.status else ''):<16} {begun}")
        return OK

    return _run(conn, body, params)
