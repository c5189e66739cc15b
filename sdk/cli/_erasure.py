"""``spindle workflow delete`` and ``spindle workflow delete-status``: erasure (docs/ERASURE.md).

``delete --workflow-id ID [--run-id R] --reason TEXT`` erases one run (DeleteWorkflowExecution).
``delete --query Q --reason TEXT`` starts a server-side erasure job: ``--dry-run`` only counts
(how many match, how many run and would be terminated first) and changes nothing; without
``--yes`` the count is shown and confirmation asked; then the job starts and its progress is
shown every second until it is done (``--no-wait``: print the job id and return). The job runs
in the server: interrupting the command does not stop it (``delete-status --job-id`` follows it
again). Arguments are checked before anything is sent (exit 2 naming the flag).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from spindle.cli._output import FAILED, OK, USAGE, confirm, fail, note, out, out_json

if TYPE_CHECKING:
    from spindle.client import BatchOperationDescription, Client

__all__ = ["check_delete", "delete_body", "delete_options", "status_body"]


def delete_options(f: Any) -> Any:
    """The options of ``spindle workflow delete`` (besides the connection flags)."""
    for option in reversed([
        click.option("--workflow-id", "-w", default=None, help="erase this workflow's run (or --query)"),
        click.option("--run-id", "-r", default=None, help="with --workflow-id: this run (default: the current run)"),
        click.option("--query", "-q", default=None,
                     help="erase every execution this visibility query selects, live and archived, as a server job, "
                          "e.g. \"CustomerId = 'c-42'\""),
        click.option("--reason", required=True, help="why (recorded in the audit log; required)"),
        click.option("--dry-run", is_flag=True, help="with --query: count what would be erased; change nothing"),
        click.option("--yes", "-y", is_flag=True, help="with --query: do not ask for confirmation"),
        click.option("--job-id", default=None,
                     help="with --query: the job's id (default: a new one); the same id and request again is "
                          "accepted and starts nothing new"),
        click.option("--no-wait", is_flag=True, help="with --query: print the job id and return at once"),
    ]):
        f = option(f)
    return f


def check_delete(params: dict[str, Any]) -> None:
    """Refuse bad combinations before any call (CliError, exit 2, naming the flag)."""
    query, workflow_id = params["query"], params["workflow_id"]
    if query is not None and workflow_id is not None:
        fail("give either --workflow-id or --query, not both")
    if query is None and workflow_id is None:
        fail("one of --workflow-id or --query is required")
    if not params["reason"].strip():
        fail("--reason: must not be empty (it is recorded in the audit log)")
    if workflow_id is not None:
        if not workflow_id.strip():
            fail("--workflow-id: must not be empty")
        for flag, name in (("dry_run", "--dry-run"), ("yes", "--yes"), ("job_id", "--job-id"),
                           ("no_wait", "--no-wait")):
            if params[flag]:
                fail(f"{name} goes with --query (one run is erased at once)")
        return
    if not query.strip():
        fail("--query: must not be empty (an erasure names what it erases)")
    if params["run_id"] is not None:
        fail("--run-id names one run; it cannot be combined with --query")
    if params["job_id"] is not None and not params["job_id"].strip():
        fail("--job-id: must not be empty")


async def delete_body(params: dict[str, Any], client: Client) -> int:
    """The command after :func:`check_delete` passed."""
    if params["workflow_id"] is not None:
        await client.delete_workflow(params["workflow_id"], params["run_id"], reason=params["reason"])
        run = f" run {params['run_id']}" if params["run_id"] else ""
        out(f"deleted workflow {params['workflow_id']}{run}")
        return OK
    query = params["query"]
    count = await client.count_erasure(query)
    running = f"; {count.running} running (terminated first)" if count.running else ""
    note(f"{count.total} execution(s) match {query!r} in namespace {client.namespace!r}{running}; archived runs "
         "that match are found when the job scans the archive")
    if params["dry_run"]:
        out_json({"namespace": client.namespace, "query": query, "total": count.total, "running": count.running,
                  "archived": "scanned when the job runs"})
        return OK
    if not params["yes"] and not confirm(f"erase {count.total} execution(s){running} and the matching archived "
                                          "runs, for good? [y/N] "):
        note("nothing was done (confirm with y, or pass --yes)")
        return USAGE
    job = await client.start_erasure(query, reason=params["reason"], job_id=params["job_id"])
    note(f"erasure job {job.job_id} started")
    if params["no_wait"]:
        out_json({"job_id": job.job_id})
        return OK
    return await _follow(client, job.job_id)


async def status_body(params: dict[str, Any], client: Client) -> int:
    """``spindle workflow delete-status [--job-id ID] [--wait]``: one job's progress, or every job's."""
    from spindle.client import ErasureJob

    if params["job_id"] is None:
        if params["wait"]:
            fail("--wait goes with --job-id")
        out_json([_description_dict(d) for d in await client.list_batch_operations()], indent=2)
        return OK
    if params["wait"]:
        return await _follow(client, params["job_id"])
    d = await ErasureJob(client, params["job_id"]).describe()
    out_json(_description_dict(d), indent=2)
    return OK


async def _follow(client: Client, job_id: str) -> int:
    """Describe the job every second, a progress line on stderr when its counts change; the final counts on stdout."""
    from spindle.client import BatchOperationState, ErasureJob

    last: tuple[Any, ...] = ()

    def progress(d: BatchOperationDescription) -> None:
        nonlocal last
        now = (d.state, d.total, d.completed, d.failed)
        if now != last:
            last = now
            note(f"{job_id}: {d.state.name.lower()}: erased {d.completed} of {d.total} found ({d.terminated} "
                 f"terminated first, {d.archived} only in the archive, {d.failed} failed attempt(s))")

    final = await ErasureJob(client, job_id).wait(poll_interval=1.0, on_progress=progress)
    out_json(_description_dict(final), indent=2)
    if final.state is BatchOperationState.FAILED:
        note(f"{job_id} failed: {final.last_error}")
        return FAILED
    return OK


def _description_dict(d: BatchOperationDescription) -> dict[str, Any]:
    return {
        "job_id": d.job_id, "state": d.state.name, "operation": d.operation_type, "query": d.query,
        "reason": d.reason, "identity": d.identity,
        "start_time": d.start_time.isoformat() if d.start_time else None,
        "close_time": d.close_time.isoformat() if d.close_time else None,
        "total": d.total, "erased": d.completed, "terminated": d.terminated, "archived": d.archived,
        "failed_attempts": d.failed, "last_error": d.last_error,
    }
