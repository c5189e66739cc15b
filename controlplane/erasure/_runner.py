"""The erasure job runner (issue 26): one asyncio task per running job this member owns.

A job belongs to the member that owns the shard its job id hashes to (``owns``), so exactly
one member runs it; every ``poll_interval`` (and when a job is created here) the runner looks
for RUNNING jobs it owns and is not running yet (after a restart: the ones a crash left).

A job's run, each step durable before the next:

1. phase LIVE, page after page: the executions of ``(<query>) AND StartTime <= cutoff`` (the
   last, empty, page is read at least ``visibility_settle`` seconds after the cutoff, so the
   visibility row of a run started just before it is there). The
   page is written to the job record (``in_flight``, with its runs' blob keys) BEFORE any of it
   is erased; each run is then erased through ``erase`` (``DeleteWorkflowExecution``: a run
   still running is terminated first), paced by the namespace's request rate (a refused call
   waits its retry delay) and at most ``max_rate`` runs a second; then the page's blob keys are
   collected and the counters and an empty ``in_flight`` are written. After a crash the page in
   flight is erased again (a run that is gone is a no-op) and counted once. A run whose erasure
   fails is counted in ``failure_operation_count``, skipped for the rest of the pass and retried
   after it (``retry_delay``);
2. phase ARCHIVE: the namespace's archived runs the query matches, a page at a time from the
   stored cursor (skipped when the namespace has no archive); like the live phase, only runs
   started by the cutoff;
3. COMPLETED; FAILED (with ``last_error``) only when the query can no longer be run (the
   namespace is gone, a search attribute it names was removed).

The audit log gets one line when a job starts running and one when it ends (with its
counts), never the erased data.
"""

from __future__ import annotations

import asyncio
import logging
import time

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from spindle.api import service_pb2 as svc
from spindle.controlplane.archival import ArchivedRun, archived_run_matcher, erase_archived_page
from spindle.controlplane.auth import Principal, audit
from spindle.controlplane.errors import ResourceExhausted, ServiceError
from spindle.controlplane.namespaces import Namespace, NamespaceRegistry
from spindle.controlplane.store import ConditionFailedError, Store, StoreError
from spindle.controlplane.visibility import QueryError, compile_query

from ._jobs import COMPLETED, FAILED, ErasureJobs, Job

log = logging.getLogger("spindle.erasure")

#: Erase one run: (namespace, workflow id, run id, reason, identity); raises ServiceError.
EraseRun = Callable[[Namespace, str, str, str, str], Awaitable[None]]
#: Delete the blobs of these keys no run refers to: (namespace id, keys).
CollectBlobs = Callable[[str, Sequence[str]], Awaitable[None]]
#: The principal the job's audit lines name.
JOB_PRINCIPAL = Principal(id="system:erasure", name="erasure job")


class QueryFailed(Exception):
    """The job's query cannot be run any more: the job fails."""


def archive_selector(query: str, search_attribute_types: dict[str, str], cutoff_ms: int
                     ) -> Callable[[ArchivedRun], bool]:
    """Whether a job selects an archived run: its query matches and, as in the live phase, the run
    started by the job's cutoff (a run started after the job is never erased).

    Raises:
        QueryError, ValueError: the query is malformed or names an attribute the namespace lacks.
    """
    selects = archived_run_matcher(query, search_attribute_types)
    return lambda run: run.start_time_ms <= cutoff_ms and selects(run)


class ErasureRunner:
    """Runs the erasure jobs this member owns (see the module docstring)."""

    def __init__(self, jobs: ErasureJobs, store: Store, namespaces: NamespaceRegistry, erase: EraseRun,
                 collect_blobs: CollectBlobs, owns: Callable[[str, str], bool],
                 archive_of: Callable[[Namespace], Any | None], *, page_size: int = 100, max_rate: float = 200.0,
                 poll_interval: float = 5.0, retry_delay: float = 5.0, visibility_settle: float = 2.0,
                 archive_erased: Callable[[Namespace, str, str], None] | None = None) -> None:
        self.jobs = jobs
        self.store = store
        self.namespaces = namespaces
        self.erase = erase
        self.collect_blobs = collect_blobs
        self.owns = owns
        self.archive_of = archive_of
        self.page_size = page_size
        self.max_rate = max_rate
        self.poll_interval = poll_interval
        self.retry_delay = retry_delay
        self.visibility_settle = visibility_settle
        #: Told of each (namespace, workflow id, run id) erased from the archive (the archive's read cache).
        self.archive_erased = archive_erased
        self._dialect: Literal["sqlite", "spanner"] = "sqlite" if store.name == "sqlite" else "spanner"
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start looking for jobs to run (now, then every ``poll_interval`` and on ``wake``)."""
        if self._loop_task is None:
            self._loop_task = asyncio.ensure_future(self._loop())

    @property
    def jobs_run(self) -> set[tuple[str, str]]:
        """(namespace id, job id) of the jobs this runner has run or is running since it started."""
        return set(self._tasks)

    def wake(self, *_: object) -> None:
        """Look for jobs to run now (a job was just created here)."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop looking and cancel the running jobs (each resumes from its last durable write)."""
        tasks = [t for t in (self._loop_task, *self._tasks.values()) if t is not None]
        self._loop_task = None
        for t in tasks:
            t.cancel()
        for t in tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping
                pass
        self._tasks.clear()

    async def _loop(self) -> None:
        while True:
            try:
                for key in await self.jobs.running():
                    task = self._tasks.get(key)
                    if (task is None or task.done()) and self.owns(*key):
                        self._tasks[key] = asyncio.ensure_future(self._run_job(*key))
            except StoreError as e:
                log.warning("erasure: cannot list the running jobs (retrying): %s", e)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self.poll_interval)
            except asyncio.TimeoutError:
                pass

    # ------------------------------------------------------------------ one job
    async def _run_job(self, namespace_id: str, job_id: str) -> None:
        try:
            await self._advance(namespace_id, job_id)
        except ConditionFailedError:
            log.info("erasure job %s: written by another member; this one stops running it", job_id)
        except StoreError as e:
            log.warning("erasure job %s: the store failed; the job resumes at the next look: %s", job_id, e)

    async def _advance(self, namespace_id: str, job_id: str) -> None:
        job = await self.jobs.load(namespace_id, job_id)
        if job is None or job.progress.state != svc.BATCH_OPERATION_STATE_RUNNING:
            return
        ns = self.namespaces.by_id(namespace_id)
        if ns is None:
            await self.namespaces.load()
            ns = self.namespaces.by_id(namespace_id)
        if job.record.phase == svc.BATCH_JOB_PHASE_UNSPECIFIED:
            job.record.phase = svc.BATCH_JOB_PHASE_LIVE
            await self.jobs.save(job)
            self._audit(job, ns, "started")
        try:
            if ns is None:
                raise QueryFailed(f"namespace {namespace_id!r} no longer exists")
            if job.record.phase == svc.BATCH_JOB_PHASE_LIVE:
                await self._live_phase(job, ns)
                job.record.phase = svc.BATCH_JOB_PHASE_ARCHIVE
                await self.jobs.save(job)
            if job.record.phase == svc.BATCH_JOB_PHASE_ARCHIVE:
                await self._archive_phase(job, ns)
            self.jobs.finish(job, COMPLETED)
        except QueryFailed as e:
            self.jobs.finish(job, FAILED, str(e))
        await self.jobs.save(job)
        self._audit(job, ns, "completed" if job.progress.state == COMPLETED else "failed")

    def _audit(self, job: Job, ns: Namespace | None, outcome: str) -> None:
        p = job.progress
        details: dict[str, Any] = {"job_id": p.job_id, "query": p.visibility_query, "reason": p.reason,
                                   "identity": p.identity}
        if outcome != "started":
            details.update(total=p.total_operation_count, erased=p.complete_operation_count,
                           failures=p.failure_operation_count, terminated=p.terminated_count,
                           archived=p.archived_count, last_error=p.last_error)
        name = ns.name if ns is not None else job.row.namespace_id
        audit(JOB_PRINCIPAL, "BatchOperation.Delete", f"batch/{name}/{p.job_id}", outcome, details)

    # ------------------------------------------------------------------ phase 1: live executions
    def _compiled(self, job: Job, ns: Namespace) -> tuple[str, dict[str, object], str]:
        try:
            q = compile_query(job.record.request.visibility_query, search_attributes=ns.search_attribute_type_names,
                              dialect=self._dialect)
        except (QueryError, ValueError) as e:
            raise QueryFailed(f"visibility_query: {e}") from e
        # the cutoff is an integer this process made: safe to write into the SQL
        return f"({q.where}) AND start_time_ms <= {int(job.record.cutoff_time_ms)}", dict(q.params), q.order_by

    async def _live_phase(self, job: Job, ns: Namespace) -> None:
        rec = job.record
        if rec.in_flight:  # a crash (or a stop) interrupted this page: erase it again, count it once
            await self._erase_page(job, ns)
        where, params, order_by = self._compiled(job, ns)
        failed: set[tuple[str, str]] = {(i.workflow_id, i.run_id) for i in rec.failed}
        while True:
            rows = await self.store.query_visibility(ns.id, where, params, order_by, self.page_size + len(failed), 0)
            page = [r for r in rows if (r.workflow_id, r.run_id) not in failed][: self.page_size]
            if not page:
                # a run's visibility row is written shortly after its start (the shard's next ack batch):
                # the pass that ends the phase must begin after every row of a run started by the cutoff landed
                settle_ms = rec.cutoff_time_ms + int(self.visibility_settle * 1000) - self.jobs.clock.now_ms()
                if settle_ms > 0:
                    await asyncio.sleep(settle_ms / 1000)
                    continue
                if not failed:
                    return
                await asyncio.sleep(self.retry_delay)  # a pass is over with failures: retry them
                failed.clear()
                del rec.failed[:]
                continue
            keys: set[str] = set()
            for r in page:  # the execution row says whether it is running (its visibility row may lag)
                row = await self.store.get_execution_row(ns.id, r.workflow_id, r.run_id)
                rec.in_flight.add(workflow_id=r.workflow_id, run_id=r.run_id, running=row is not None and row.status == 1)
                keys.update(await self.store.list_blob_refs(ns.id, r.workflow_id, r.run_id))
            rec.pending_blob_keys[:] = sorted(keys)
            await self.jobs.save(job)  # the page is durable before the first of it is erased
            await self._erase_page(job, ns)
            failed = {(i.workflow_id, i.run_id) for i in rec.failed}

    async def _erase_page(self, job: Job, ns: Namespace) -> None:
        rec, p = job.record, job.progress
        identity = rec.request.deletion_operation.identity or "erasure"
        reason = rec.request.reason or "erased"
        for item in list(rec.in_flight):
            error = await self._erase_one(ns, item.workflow_id, item.run_id, reason, identity)
            if error is None:
                p.complete_operation_count += 1
                p.terminated_count += int(item.running)
            else:
                p.failure_operation_count += 1
                p.last_error = f"{item.workflow_id}/{item.run_id}: {error}"
                rec.failed.add().CopyFrom(item)
        try:
            await self.collect_blobs(ns.id, list(rec.pending_blob_keys))
        except Exception as e:  # noqa: BLE001 - recorded; the page's runs are gone, a blob left is only space
            p.last_error = f"payload blobs of erased runs: {e}"
            log.warning("erasure job %s: some payload blobs could not be deleted: %s", p.job_id, e)
        del rec.in_flight[:]
        del rec.pending_blob_keys[:]
        p.total_operation_count = p.complete_operation_count + len(rec.failed)
        await self.jobs.save(job)

    async def _erase_one(self, ns: Namespace, workflow_id: str, run_id: str, reason: str, identity: str) -> str | None:
        """Erase one run, waiting out the namespace's rate limit; the error text if it failed."""
        while True:
            began = time.monotonic()
            try:
                await self.erase(ns, workflow_id, run_id, reason, identity)
                error = None
            except ResourceExhausted as e:  # the namespace's request rate: wait for a token
                await asyncio.sleep(e.retry_after if e.retry_after else 1.0)
                continue
            except ServiceError as e:
                error = f"{e.code.name}: {e.message}"
            except (StoreError, OSError) as e:
                error = str(e)
            if self.max_rate > 0:
                await asyncio.sleep(max(0.0, 1.0 / self.max_rate - (time.monotonic() - began)))
            return error

    # ------------------------------------------------------------------ phase 2: archived runs
    async def _archive_phase(self, job: Job, ns: Namespace) -> None:
        archive = self.archive_of(ns)
        if archive is None:
            return
        try:
            matches = archive_selector(job.record.request.visibility_query, ns.search_attribute_type_names,
                                       job.record.cutoff_time_ms)
        except (QueryError, ValueError) as e:
            raise QueryFailed(f"visibility_query: {e}") from e
        rec, p = job.record, job.progress

        while True:
            try:
                page = await erase_archived_page(archive, ns.id, matches, rec.archive_cursor, self.page_size)
            except Exception as e:  # noqa: BLE001 - an archive unreachable for now: retried
                p.last_error = f"archive: {e}"
                await self.jobs.save(job)
                await asyncio.sleep(self.retry_delay)
                continue
            if self.archive_erased is not None:
                for workflow_id, run_id in page.erased:
                    self.archive_erased(ns, workflow_id, run_id)
            p.archived_count += len(page.erased)
            p.complete_operation_count += len(page.erased)
            p.total_operation_count = p.complete_operation_count + len(rec.failed)
            rec.archive_cursor = page.cursor
            await self.jobs.save(job)
            if page.done:
                return


__all__ = ["ErasureRunner", "JOB_PRINCIPAL", "archive_selector"]
