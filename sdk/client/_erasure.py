"""Erasure from the client (issue 26): delete one run for good, or every execution a query selects, as a server job.

``client.delete_workflow`` is Temporal's ``DeleteWorkflowExecution`` for one run. ``client.start_erasure``
starts a durable server-side batch job (``StartBatchOperation`` with a deletion operation): the server
erases the executions the query matches (live and archived) and survives restarts; the returned
:class:`ErasureJob` reads its progress (``DescribeBatchOperation``) and waits for it. ``count_erasure``
is the dry run: it counts what a job would erase now, and changes nothing. What is and is not erased,
who may, and how a job runs: docs/ERASURE.md. The client's methods ARE these functions (``Client``
assigns them: ``delete_workflow = _erasure.delete_workflow``), so each call is documented here.
"""

from __future__ import annotations

import asyncio
import datetime
import enum
import time
import uuid

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._rpc import time_from_ms

__all__ = ["BatchOperationDescription", "BatchOperationState", "ErasureCount", "ErasureJob", "count_erasure",
           "delete_workflow", "list_batch_operations", "start_erasure"]


class DeleteClient(Protocol):
    """What deleting one run uses of a :class:`spindle.client.Client` (which imports this module)."""

    namespace: str
    identity: str

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow", **options: Any) -> Any: ...


class ErasureClient(DeleteClient, Protocol):
    """What an erasure job and its dry run use of a client."""

    async def count_workflows_by(self, query: str = "", group_by: str = "ExecutionStatus") -> dict[Any, int]: ...


class BatchOperationState(enum.Enum):
    """State of a server-side batch job (Temporal's ``BatchOperationState``)."""

    UNSPECIFIED = svc.BATCH_OPERATION_STATE_UNSPECIFIED
    RUNNING = svc.BATCH_OPERATION_STATE_RUNNING
    COMPLETED = svc.BATCH_OPERATION_STATE_COMPLETED
    FAILED = svc.BATCH_OPERATION_STATE_FAILED


@dataclass(frozen=True)
class BatchOperationDescription:
    """A server-side batch job's progress (``DescribeBatchOperation``); counts grow while it runs.

    ``total`` is how many executions (live and archived) the job found so far, ``completed`` how
    many it erased, of which ``terminated`` were running and terminated first and ``archived``
    were found only in the archive; ``failed`` counts failed attempts (a failed item is retried:
    see ``last_error``). ``close_time`` is None while the job runs.
    """

    job_id: str
    state: BatchOperationState
    operation_type: str
    query: str
    reason: str
    identity: str
    start_time: datetime.datetime | None
    close_time: datetime.datetime | None
    total: int
    completed: int
    failed: int
    terminated: int
    archived: int
    last_error: str

    @property
    def done(self) -> bool:
        """True once the job completed or failed (its counts no longer change)."""
        return self.state in (BatchOperationState.COMPLETED, BatchOperationState.FAILED)

    @classmethod
    def from_proto(cls, r: svc.DescribeBatchOperationResponse) -> BatchOperationDescription:
        """The description a ``DescribeBatchOperationResponse`` carries."""
        return cls(job_id=r.job_id, state=BatchOperationState(r.state),
                   operation_type=svc.BatchOperationType.Name(r.operation_type).removeprefix("BATCH_OPERATION_TYPE_"),
                   query=r.visibility_query, reason=r.reason, identity=r.identity,
                   start_time=time_from_ms(r.start_time_ms), close_time=time_from_ms(r.close_time_ms),
                   total=r.total_operation_count, completed=r.complete_operation_count,
                   failed=r.failure_operation_count, terminated=r.terminated_count, archived=r.archived_count,
                   last_error=r.last_error)


@dataclass(frozen=True)
class ErasureCount:
    """What an erasure job for ``query`` would erase now (a dry run: nothing is changed).

    ``total`` executions in visibility match, ``running`` of them are running and would be
    terminated first. Archived runs (those retention already removed from the store) are not
    counted: the job scans the namespace's archive when it runs, and ``archived`` in its
    description says how many it found there.
    """

    query: str
    total: int
    running: int


def _check(query: str | None, reason: str) -> None:
    if query is not None and not query.strip():
        raise ValueError("query: must not be empty (an erasure names what it erases; "
                         "select everything explicitly, e.g. \"StartTime > 0\")")
    if not reason.strip():
        raise ValueError("reason: must not be empty (it is recorded in the audit log)")


async def delete_workflow(client: DeleteClient, workflow_id: str, run_id: str | None = None, *, reason: str) -> None:
    """Erase one run for good: ``client.delete_workflow(workflow_id, run_id=None, *, reason)``.

    Temporal's DeleteWorkflowExecution. The server terminates the run first when it is running (reason
    "erased"), then deletes its history, mutable state, visibility row, pending tasks and timers, the
    large-payload blobs no other run refers to, and its archived copy; ``run_id`` None: the workflow id's
    current run. Idempotent: a run that is already gone answers OK. Audited (ids and reason, never data).

    Raises:
        RPCError: ``PERMISSION_DENIED`` unless the caller administers the namespace (or is a system admin);
            ``INVALID_ARGUMENT`` for a malformed id or reason; ``UNAVAILABLE`` when the server stayed
            unreachable past the client's retry budget (the call is safe to repeat).
        ValueError: an empty ``workflow_id`` or ``reason`` (nothing is sent).
    """
    if not workflow_id:
        raise ValueError("workflow_id: must not be empty")
    _check(None, reason)
    await client._rpc("DeleteWorkflowExecution", svc.DeleteWorkflowExecutionRequest(
        namespace=client.namespace, workflow_execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
        reason=reason, identity=client.identity), not_found="rpc", retry=True)


async def count_erasure(client: ErasureClient, query: str) -> ErasureCount:
    """The dry run of an erasure: ``client.count_erasure(query)`` counts what ``query`` selects now; changes nothing.

    ``total`` executions in visibility match, ``running`` of them run and would be terminated first.
    Archived runs are not counted: the job scans the archive when it runs. Visibility is eventually
    consistent (a run started a moment ago may not be counted yet).

    Raises:
        RPCError: the query is malformed (``INVALID_ARGUMENT``, with the position) or the caller may not
            read the namespace (``PERMISSION_DENIED``).
        ValueError: an empty query (nothing is sent).
    """
    _check(query, "dry run")
    by_status = await client.count_workflows_by(query, "ExecutionStatus")
    return ErasureCount(query=query, total=sum(by_status.values()), running=by_status.get("Running", 0))


async def start_erasure(client: ErasureClient, query: str, *, reason: str, job_id: str | None = None) -> ErasureJob:
    """Start a durable server job erasing what ``query`` selects: ``client.start_erasure(query, *, reason, job_id=None)``.

    The job (StartBatchOperation with a deletion operation) erases, as :func:`delete_workflow` does one
    run, every execution the query matches that started before the job was created (later runs are
    never touched), then the namespace's archived runs the query matches. It survives a restart of the
    server and resumes where it was. ``job_id`` (default ``erasure-<uuid>``) names it; starting the same
    id with the same request again is OK (nothing new starts). Returns an :class:`ErasureJob` whose
    ``describe()`` and ``wait()`` follow it (``ErasureJob(client, job_id)`` makes one for an existing id).

    Raises:
        RPCError: ``PERMISSION_DENIED`` unless the caller administers the namespace; ``INVALID_ARGUMENT``
            for a malformed query; ``ALREADY_EXISTS`` when ``job_id`` names a job with another request.
        ValueError: an empty query, reason or job id (nothing is sent).
    """
    _check(query, reason)
    if job_id is not None and not job_id.strip():
        raise ValueError("job_id: must not be empty (None: a new id)")
    job_id = job_id or f"erasure-{uuid.uuid4()}"
    # the job id is fixed before the first attempt, so a retried start is the same request (answered OK)
    await client._rpc("StartBatchOperation", svc.StartBatchOperationRequest(
        namespace=client.namespace, visibility_query=query, job_id=job_id, reason=reason,
        deletion_operation=svc.BatchOperationDeletion(identity=client.identity)), not_found="rpc", retry=True)
    return ErasureJob(client, job_id)


async def list_batch_operations(client: ErasureClient) -> list[BatchOperationDescription]:
    """The namespace's server-side batch jobs (erasures) and their progress: ``client.list_batch_operations()``.

    Raises:
        RPCError: ``PERMISSION_DENIED`` without (at least) the reader role on the namespace.
    """
    resp = await client._rpc("ListBatchOperations", svc.ListBatchOperationsRequest(namespace=client.namespace),
                             not_found="rpc", retry=True)
    return [BatchOperationDescription.from_proto(r) for r in resp.operation_info]


class ErasureJob:
    """A handle to a server-side erasure job (no call is made until a method is awaited).

    The job runs in the server whether or not anyone waits: closing the client, or a restart of
    the server, does not stop it.
    """

    def __init__(self, client: ErasureClient, job_id: str) -> None:
        self._client = client
        self.job_id = job_id

    async def describe(self) -> BatchOperationDescription:
        """The job's progress now.

        Raises:
            RPCError: ``NOT_FOUND`` for an unknown job id; ``PERMISSION_DENIED`` without (at least) the
                reader role on the namespace.
        """
        client = self._client
        resp = await client._rpc("DescribeBatchOperation", svc.DescribeBatchOperationRequest(
            namespace=client.namespace, job_id=self.job_id), not_found="rpc", retry=True)
        return BatchOperationDescription.from_proto(resp)

    async def wait(self, *, poll_interval: float = 1.0, timeout: float | None = None,
                   on_progress: Callable[[BatchOperationDescription], None] | None = None) -> BatchOperationDescription:
        """Describe the job every ``poll_interval`` seconds until it is done; return the final description.

        ``on_progress`` is called with each description read (the last one too). A server that
        restarts meanwhile is waited for (each describe retries while it is unavailable).

        Raises:
            TimeoutError: the job was not done after ``timeout`` seconds (it goes on in the server).
            RPCError: as :meth:`describe`.
            ValueError: ``poll_interval`` is not positive.
        """
        if poll_interval <= 0:
            raise ValueError(f"poll_interval: must be positive, got {poll_interval}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            d = await self.describe()
            if on_progress is not None:
                on_progress(d)
            if d.done:
                return d
            if deadline is not None and time.monotonic() + poll_interval > deadline:
                raise TimeoutError(f"erasure job {self.job_id!r} not done after {timeout} s "
                                   f"({d.completed} of {d.total} found erased so far); it goes on in the server")
            await asyncio.sleep(poll_interval)

    def __repr__(self) -> str:
        return f"ErasureJob({self.job_id!r})"
