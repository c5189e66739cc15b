"""Erasure jobs (issue 26): the durable record of a job and its state transitions, on the store's batch_jobs rows.

A job is one ``batch_jobs`` row per (namespace id, job id): ``state`` is its
``BatchOperationState`` and ``data`` a serialized ``BatchJobRecord`` (the request, the
progress, the cutoff time, the phase, the page in flight). Every write is optimistic on the
row's version, so two writers never both win. Starting a job id again with the same request
is a no-op; with another request, ALREADY_EXISTS.
"""

from __future__ import annotations

import asyncio

from collections.abc import Callable
from dataclasses import dataclass

from spindle.api import service_pb2 as svc
from spindle.controlplane.clock import Clock
from spindle.controlplane.errors import AlreadyExists, NotFound
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.store import ConditionFailedError, Store
from spindle.controlplane.store._interface import BatchJobRow

RUNNING = svc.BATCH_OPERATION_STATE_RUNNING
COMPLETED = svc.BATCH_OPERATION_STATE_COMPLETED
FAILED = svc.BATCH_OPERATION_STATE_FAILED
#: Most jobs ListBatchOperations returns for a namespace.
LIST_LIMIT = 1000


@dataclass
class Job:
    """A job as read from the store: its row (for the optimistic version) and its decoded record."""

    row: BatchJobRow
    record: svc.BatchJobRecord

    @property
    def progress(self) -> svc.DescribeBatchOperationResponse:
        return self.record.progress


def _same_request(a: svc.StartBatchOperationRequest, b: svc.StartBatchOperationRequest) -> bool:
    return (a.visibility_query, a.reason, a.deletion_operation.identity) == \
        (b.visibility_query, b.reason, b.deletion_operation.identity)


class ErasureJobs:
    """Creates, reads and writes erasure jobs (the runner, ``_runner``, advances them)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        #: Called after a new job row is written (the runner wakes up to run it).
        self.on_created: Callable[[str, str], None] | None = None

    async def start(self, ns: Namespace, req: svc.StartBatchOperationRequest) -> bool:
        """Create the job ``req.job_id`` (already validated); True if it was created, False if the same
        request created it before. Its cutoff is now: only executions started by now are selected.

        Raises AlreadyExists (the job id is taken by another request) and StoreError.
        """
        now = self.clock.now_ms()
        record = svc.BatchJobRecord(namespace_id=ns.id, cutoff_time_ms=now, phase=svc.BATCH_JOB_PHASE_UNSPECIFIED)
        record.request.CopyFrom(req)
        p = record.progress
        p.operation_type = svc.BATCH_OPERATION_TYPE_DELETE
        p.job_id, p.state, p.start_time_ms = req.job_id, RUNNING, now
        p.identity, p.reason, p.visibility_query = req.deletion_operation.identity, req.reason, req.visibility_query
        row = BatchJobRow(ns.id, req.job_id, 0, RUNNING, record.SerializeToString())
        try:
            await self.store.create_batch_job(row)
        except ConditionFailedError:
            existing = await self.get(ns, req.job_id)
            if not _same_request(existing.record.request, req):
                raise AlreadyExists(f"job_id: batch operation {req.job_id!r} exists with another request") from None
            return False
        if self.on_created is not None:
            self.on_created(ns.id, req.job_id)
        for _ in range(20):  # answer after the cutoff's millisecond: a run the caller starts next is not selected
            if self.clock.now_ms() > now:
                break
            await asyncio.sleep(0.001)
        return True

    async def get(self, ns: Namespace, job_id: str) -> Job:
        """The job; NotFound if the namespace has no job of that id."""
        job = await self.load(ns.id, job_id)
        if job is None:
            raise NotFound(f"job_id: batch operation {job_id!r} not found in namespace {ns.name!r}")
        return job

    async def load(self, namespace_id: str, job_id: str) -> Job | None:
        """The job, or None."""
        row = await self.store.get_batch_job(namespace_id, job_id)
        return None if row is None else Job(row, svc.BatchJobRecord.FromString(row.data))

    async def list_jobs(self, ns: Namespace) -> list[Job]:
        """The namespace's jobs (at most ``LIST_LIMIT``), by job id."""
        rows = await self.store.list_batch_jobs(namespace_id=ns.id, limit=LIST_LIMIT)
        return [Job(r, svc.BatchJobRecord.FromString(r.data)) for r in rows]

    async def running(self) -> list[tuple[str, str]]:
        """(namespace id, job id) of every job still running, in every namespace."""
        return [(r.namespace_id, r.job_id) for r in await self.store.list_batch_jobs(state=RUNNING, limit=100_000)]

    async def save(self, job: Job) -> None:
        """Write the job's record (its state from ``progress.state``) over the version it was read at.

        Raises ConditionFailedError (someone else wrote it: the caller stops) and StoreError.
        """
        row = BatchJobRow(job.row.namespace_id, job.row.job_id, job.row.version, job.progress.state,
                          job.record.SerializeToString())
        await self.store.update_batch_job(row, job.row.version)
        job.row = row

    def finish(self, job: Job, state: int, error: str = "") -> None:
        """Mark the job done (COMPLETED or FAILED with ``error``) in memory; ``save`` writes it."""
        p = job.progress
        p.state = state  # type: ignore[assignment,unused-ignore]  # a BatchOperationState number
        p.close_time_ms = self.clock.now_ms()
        if error:
            p.last_error = error
        job.record.phase = svc.BATCH_JOB_PHASE_DONE


__all__ = ["COMPLETED", "FAILED", "LIST_LIMIT", "RUNNING", "ErasureJobs", "Job"]
