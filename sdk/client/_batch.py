"""Batch operations: terminate, cancel, signal, reset or set the versioning override of every execution a query matches.

The server has no batch object: a batch is ordinary per-execution calls made by the
client, with a rate limit and a bounded number in flight. Safe to run again after an
interruption: every call carries a request id derived from the batch id and the
execution (``uuid5(batch id, operation/workflow id/run id)``; reset acts once per
workflow id, on its earliest matching run, with a request id from the workflow id only,
so a re-run does not reset the new run again), and an execution that is
already closed (or gone) counts as skipped, not failed. The default batch id is derived
from the namespace, the operation, the query and its arguments, so running the same
command again resumes it; pass another ``batch_id`` to repeat a batch on purpose (a
signal batch with the same id is not delivered twice to a run that still remembers it).

The matching executions are read (all pages) before the first call, so acting on them
does not move the pages of a query such as ``ExecutionStatus = 'Running'``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf.message import Message

from spindle import exceptions as E
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._definitions import SIGNAL_ATTR, handler_name_and_hint
from spindle.client._reset import ResetClient, ResetType, reset_workflow
from spindle.client._versioning import check_override, options_request
from spindle.common._versioning import VersioningOverride
from spindle.converter._data_converter import DataConverter

audit_log = logging.getLogger("spindle.audit")


class BatchClient(ResetClient, Protocol):
    """What batches use of a :class:`spindle.client.Client` (which imports this module, so it is not named here)."""

    data_converter: DataConverter

    async def _encode(self, msg: Message, workflow_id: str = "") -> None: ...

#: Statuses a failed call maps to "skipped": the execution is closed (or gone) already.
_SKIP_STATUSES = {"FAILED_PRECONDITION", "NOT_FOUND"}


@dataclass(frozen=True)
class BatchTarget:
    """One execution a batch acts on."""

    workflow_id: str
    run_id: str
    start_time_ms: int = 0
    #: For reset: other matching runs of the workflow id, tried when ``run_id`` has no point to reset to.
    other_run_ids: tuple[str, ...] = ()


def one_per_workflow(targets: Sequence[BatchTarget]) -> list[BatchTarget]:
    """For reset: one target per workflow id (its earliest-started matching run, the others as fallbacks).

    A reset acts on the workflow id (it makes a new current run), so a batch resets each id
    once. A run made by a reset copies its start time, so the earliest run is not always the
    one with a point to reset to: the reset tries the other matching runs of the id in turn
    (a re-run of the batch then reaches the server, whose request-id check finds the run the
    first pass made).
    """
    groups: dict[str, list[BatchTarget]] = {}
    for t in targets:
        groups.setdefault(t.workflow_id, []).append(t)
    out = []
    for runs in groups.values():
        runs = sorted(runs, key=lambda r: r.start_time_ms)
        out.append(BatchTarget(runs[0].workflow_id, runs[0].run_id, runs[0].start_time_ms,
                               tuple(r.run_id for r in runs[1:])))
    return out


@dataclass(frozen=True)
class BatchItemOutcome:
    """What happened to one execution: ``outcome`` is "done", "skipped" or "failed"; ``reason`` says why."""

    workflow_id: str
    run_id: str
    outcome: str
    reason: str = ""


@dataclass
class BatchOperationSummary:
    """The outcome of a batch operation.

    Attributes:
        batch_id: the id its request ids derive from (run the same batch again with it to resume).
        operation: ``terminate``, ``cancel``, ``signal``, ``reset`` or ``set_versioning_override``.
        query: the visibility query that chose the executions.
        total: how many executions matched.
        done: executions the operation was applied to (or had been, by an earlier run of the batch).
        skipped: executions already closed or gone, with the reason.
        failed: executions the call failed for, with the error.
    """

    batch_id: str
    operation: str
    query: str
    total: int = 0
    done: list[BatchItemOutcome] = field(default_factory=list)
    skipped: list[BatchItemOutcome] = field(default_factory=list)
    failed: list[BatchItemOutcome] = field(default_factory=list)

    def add(self, item: BatchItemOutcome) -> None:
        {"done": self.done, "skipped": self.skipped, "failed": self.failed}[item.outcome].append(item)

    def __str__(self) -> str:
        lines = [f"{self.operation}: {self.total} matched, {len(self.done)} done, {len(self.skipped)} skipped, "
                 f"{len(self.failed)} failed (batch {self.batch_id})"]
        lines += [f"  skipped {i.workflow_id} ({i.run_id}): {i.reason}" for i in self.skipped[:20]]
        lines += [f"  failed {i.workflow_id} ({i.run_id}): {i.reason}" for i in self.failed[:50]]
        more = max(0, len(self.skipped) - 20) + max(0, len(self.failed) - 50)
        if more:
            lines.append(f"  ... and {more} more")
        return "\n".join(lines)


def default_batch_id(namespace: str, operation: str, query: str, args: Any) -> str:
    """The batch id a batch gets when none is given: the same command gets the same id (re-runs resume)."""
    text = json.dumps([namespace, operation, query, args], sort_keys=True, default=str)
    return "batch-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def item_request_id(batch_id: str, operation: str, workflow_id: str, run_id: str) -> str:
    """The request id of one call of a batch (stable across re-runs of the batch)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"spindle-batch:{batch_id}/{operation}/{workflow_id}/{run_id}"))


async def collect_targets(client: BatchClient, query: str) -> list[BatchTarget]:
    """Every execution ``query`` matches (all pages), read before any is acted on.

    Raises:
        RPCError: the query is malformed (``status="INVALID_ARGUMENT"``, nothing was changed).
    """
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query: a batch needs a non-empty visibility query (e.g. \"WorkflowType = 'Order'\"); "
                         "to act on every execution say so, e.g. \"ExecutionStatus = 'Running'\"")
    out: list[BatchTarget] = []
    seen: set[tuple[str, str]] = set()
    token: bytes | None = None
    while True:
        req = svc.ListWorkflowExecutionsRequest(namespace=client.namespace, page_size=1000,
                                                next_page_token=token or b"", query=query)
        resp = await client._rpc("ListWorkflowExecutions", req)
        for info in resp.executions:
            key = (info.execution.workflow_id, info.execution.run_id)
            if key not in seen:
                seen.add(key)
                out.append(BatchTarget(*key, start_time_ms=info.start_time_ms))
        token = resp.next_page_token or None
        if token is None:
            return out


Action = Callable[[BatchTarget, str], Awaitable[None]]


def make_action(client: BatchClient, operation: str, *, reason: str = "", signal: str = "", args: Sequence[Any] = (),
                reset_type: ResetType = ResetType.LAST_WORKFLOW_TASK, reapply_signals: bool = True,
                override: VersioningOverride | None = None) -> Action:
    """The per-execution call of ``operation`` (given the target and its request id)."""
    if operation == "terminate":
        async def act(t: BatchTarget, request_id: str) -> None:
            await client._rpc("TerminateWorkflowExecution", svc.TerminateWorkflowExecutionRequest(
                namespace=client.namespace, workflow_execution=pb.WorkflowExecution(
                    workflow_id=t.workflow_id, run_id=t.run_id),
                reason=reason, identity=client.identity))
    elif operation == "cancel":
        async def act(t: BatchTarget, request_id: str) -> None:
            await client._rpc("RequestCancelWorkflowExecution", svc.RequestCancelWorkflowExecutionRequest(
                namespace=client.namespace, workflow_execution=pb.WorkflowExecution(
                    workflow_id=t.workflow_id, run_id=t.run_id),
                identity=client.identity, request_id=request_id, reason=reason))
    elif operation == "signal":
        if not signal:
            raise ValueError("signal: the signal name is required")
        payloads = client.data_converter.to_payloads(list(args))

        async def act(t: BatchTarget, request_id: str) -> None:
            req = svc.SignalWorkflowExecutionRequest(
                namespace=client.namespace, workflow_execution=pb.WorkflowExecution(
                    workflow_id=t.workflow_id, run_id=t.run_id),
                signal_name=signal, identity=client.identity, request_id=request_id)
            req.input.CopyFrom(payloads)
            await client._encode(req, t.workflow_id)
            await client._rpc("SignalWorkflowExecution", req)
    elif operation == "reset":
        async def act(t: BatchTarget, request_id: str) -> None:
            first_error: ValueError | None = None
            for run_id in (t.run_id, *t.other_run_ids):
                try:
                    await reset_workflow(client, t.workflow_id, run_id, event_id=None, reset_type=reset_type,
                                         reason=reason, reapply_signals=reapply_signals, request_id=request_id)
                    return
                except ValueError as e:  # this run has no completed workflow task: try the next one
                    first_error = first_error or e
            assert first_error is not None
            raise first_error
    elif operation == "set_versioning_override":
        override = check_override(override)

        async def act(t: BatchTarget, request_id: str) -> None:  # setting the same override again is a no-op
            await client._rpc("UpdateWorkflowExecutionOptions", options_request(
                client.namespace, pb.WorkflowExecution(workflow_id=t.workflow_id, run_id=t.run_id), override,
                client.identity))
    else:
        raise ValueError(f"operation: {operation!r} is not one of terminate, cancel, signal, reset, "
                         "set_versioning_override")
    return act


async def run_batch(client: BatchClient, operation: str, query: str, targets: Sequence[BatchTarget], action: Action, *,
                    batch_id: str, rps: float | None = None, concurrency: int = 8,
                    on_item: Callable[[BatchItemOutcome], None] | None = None) -> BatchOperationSummary:
    """Apply ``action`` to every target (at most ``rps`` calls a second, ``concurrency`` at a time).

    Never raises for one execution's failure: it is recorded in the summary. Writes one
    line on the ``spindle.audit`` logger when the batch ends.
    """
    if rps is not None and not rps > 0:
        raise ValueError(f"rps: must be a positive number of calls per second, got {rps!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency: must be at least 1, got {concurrency!r}")
    summary = BatchOperationSummary(batch_id=batch_id, operation=operation, query=query, total=len(targets))
    loop = asyncio.get_running_loop()
    start = loop.time()
    sem = asyncio.Semaphore(concurrency)
    pace = asyncio.Lock()
    issued = 0

    async def one(t: BatchTarget) -> None:
        nonlocal issued
        async with sem:
            if rps is not None:
                async with pace:
                    due = start + issued / rps
                    issued += 1
                    delay = due - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
            key = t.run_id if operation != "reset" else ""
            try:
                await action(t, item_request_id(batch_id, operation, t.workflow_id, key))
                item = BatchItemOutcome(t.workflow_id, t.run_id, "done")
            except E.RPCError as e:
                outcome = "skipped" if e.status in _SKIP_STATUSES else "failed"
                item = BatchItemOutcome(t.workflow_id, t.run_id, outcome, f"{e.status}: {e}")
            except ValueError as e:  # a reset of a run with no completed workflow task
                item = BatchItemOutcome(t.workflow_id, t.run_id, "failed", str(e))
        summary.add(item)
        if on_item is not None:
            on_item(item)

    try:
        await asyncio.gather(*(one(t) for t in targets))
    finally:
        audit_log.info(json.dumps({
            "action": f"Batch{operation.capitalize()}", "target": f"namespace/{client.namespace} query {query!r}",
            "principal": client.identity, "details": {"batch_id": batch_id},
            "outcome": f"{summary.total} matched, {len(summary.done)} done, {len(summary.skipped)} skipped, "
                       f"{len(summary.failed)} failed"}, sort_keys=True))
    return summary


async def batch(client: BatchClient, operation: str, query: str, *, reason: str = "", signal: Any = "",
                args: Sequence[Any] = (), reset_type: ResetType = ResetType.LAST_WORKFLOW_TASK,
                reapply_signals: bool = True, rps: float | None = None, batch_id: str | None = None,
                on_item: Callable[[BatchItemOutcome], None] | None = None,
                override: VersioningOverride | None = None) -> BatchOperationSummary:
    """Collect the targets of ``query`` and apply the operation to each (see the module docstring).

    ``signal`` is the signal's name or its ``@workflow.signal`` method (TypeError for anything else);
    ``override`` is what ``set_versioning_override`` sets (None: removes it).
    """
    signal = handler_name_and_hint(signal, SIGNAL_ATTR)[0]
    action = make_action(client, operation, reason=reason, signal=signal, args=args, reset_type=reset_type,
                         reapply_signals=reapply_signals, override=override)
    if batch_id is None:
        batch_id = default_batch_id(client.namespace, operation, query,
                                    [reason, signal, int(reset_type), reapply_signals,
                                     [a if isinstance(a, (str, int, float, bool, type(None))) else repr(a)
                                      for a in args]] + ([repr(override)] if override is not None else []))
    targets = await collect_targets(client, query)
    if operation == "reset":
        targets = one_per_workflow(targets)
    return await run_batch(client, operation, query, targets, action, batch_id=batch_id, rps=rps, on_item=on_item)


__all__ = ["BatchClient", "BatchItemOutcome", "BatchOperationSummary", "BatchTarget", "batch", "collect_targets",
           "default_batch_id", "item_request_id", "make_action", "one_per_workflow", "run_batch"]
