"""Retention: archive a closed run's history, then delete the run, from a durable timer.

When a run closes, ``arm_retention`` writes a ``TM_RETENTION`` timer (in the closing
transaction) due at close time + the namespace's retention. When it fires:

1. the run's events are written to the namespace's archive (its ``archival_uri``, else
   ``ServerConfig.archive_uri``; no archive configured = skip this step);
2. only after that write succeeded, ONE store mutation deletes the execution (events,
   row, buffered events, the current pointer if it still points at this run), its
   visibility row and the timer row itself.

A failed archive write leaves everything in place and tries again after
``ServerConfig.archival_retry_interval`` (and again after a restart: the timer row
is still in the store). Nothing is ever deleted unarchived.
"""

from __future__ import annotations

import logging

from collections.abc import Sequence

from spindle.api import messages_pb2 as pb
from spindle.controlplane._log_format import run_fields
from spindle.controlplane.archival import ObjectStoreError
from spindle.controlplane.errors import Unavailable
from spindle.controlplane.store import Mutation

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._shard import Shard
from .._tasks import TM_RETENTION, Task
from .._txn import Txn
from ._run import new_timer

log = logging.getLogger("spindle.retention")


def arm_retention(ctx: HistoryContext, txn: Txn) -> None:
    """Add the closing run's retention timer to ``txn`` (close time + namespace retention)."""
    st = txn.state
    ns = ctx.namespaces.by_id(st.namespace_id)
    retention_ms = ns.retention_ms if ns is not None and ns.retention_ms > 0 else \
        int(ctx.config.default_retention_days * 86_400_000)
    close_ms = st.close_time_ms or txn.now_ms
    new_timer(txn, TM_RETENTION, close_ms + retention_ms)


async def retention_fired(ctx: HistoryContext, shard: Shard, t: Task) -> None:
    """Archive (if configured), then delete the run in one mutation. See the module docstring."""
    # The store row's key; a retried timer fires at another time but deletes this row.
    t.extra.setdefault("_row", [t.fire_time_ms, t.task_id])
    row_key = (int(t.extra["_row"][0]), int(t.extra["_row"][1]))
    cache = ctx.cache
    async with cache.locked(t.namespace_id, t.workflow_id):
        st = await cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or st.running:
            shard.timers.done(row_key)  # already deleted (or, impossibly, reopened)
            return
        events = list(st.events)
        close_ms = st.close_time_ms
    ns = ctx.namespaces.by_id(t.namespace_id)
    archival = ctx.archival
    uri = archival.archive_uri(ns) if ns is not None else ctx.config.archive_uri
    if uri:
        try:
            archiver = archival.archiver_for(ns) if ns is not None else None
            if archiver is None:
                raise ValueError("the namespace is gone and no server-wide archive_uri is set")
            # The archive holds the values, not blob references: the blobs go with the run below.
            # (A reference whose blob is already gone stays a reference.)
            hist = await archival.payloads.expand(pb.History(events=events), t.namespace_id, keep_missing=True)
            await archiver.archive(t.namespace_id, t.workflow_id, t.run_id, list(hist.events), close_ms)
        except (ObjectStoreError, ValueError, OSError, Unavailable) as e:
            if ctx.metrics is not None:
                ctx.metrics.archived(ns.name if ns is not None else t.namespace_id, None)
            _retry_later(ctx, shard, t, e)
            return
        if ctx.metrics is not None:  # lag: from when retention was due (the timer row's time) to now
            ctx.metrics.archived(ns.name if ns is not None else t.namespace_id,
                                 (ctx.clock.now_ms() - row_key[0]) / 1000)
    blob_keys = await ctx.store.list_blob_refs(t.namespace_id, t.workflow_id, t.run_id) \
        if archival.blobs is not None else []
    async with cache.locked(t.namespace_id, t.workflow_id):
        st = await cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None:
            shard.timers.done(row_key)
            return
        # a StoreError propagates: the timer loop retries it
        await delete_run(ctx, shard, t.namespace_id, t.workflow_id, t.run_id, st, timer_delete=[row_key])
    await _collect_blobs(ctx, t, blob_keys)
    log.info("retention: deleted %s/%s%s", t.workflow_id, t.run_id, f" (archived to {uri})" if uri else "",
             extra=run_fields(ns.name if ns is not None else "", t.workflow_id, t.run_id))


async def delete_run(ctx: HistoryContext, shard: Shard, namespace_id: str, workflow_id: str, run_id: str,
                     st: MutableState | None, *, timer_delete: Sequence[tuple[int, int]] = (),
                     backlog_delete: Sequence[tuple[str, str, int, int, int]] = ()) -> None:
    """Delete a run for good in ONE mutation on its shard: its events, execution row, buffered events,
    blob references, the current-run pointer if it still points at the run, its visibility row and
    the timer rows ``timer_delete``; then forget it in memory (cached state, current run, a
    visibility upsert still queued for it), and the matching backlog rows ``backlog_delete``.
    Retention and erasure (``ops.erase``) both call this.

    ``st`` is the run's loaded state, or None when the run is gone already (its visibility row is
    still deleted: a row written again after a crash must not outlive the run). The caller holds
    the workflow id's lock. Raises StoreError (nothing deleted).
    """
    m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id,
                 delete_execution=(namespace_id, workflow_id, run_id) if st is not None else None,
                 visibility_delete=[(namespace_id, run_id)], timer_delete=list(timer_delete),
                 backlog_delete=list(backlog_delete))
    # A visibility upsert still queued for this run must not bring its row back. Taken out BEFORE the
    # write: an ack batch that takes it while the delete is on its way would land after the delete.
    # (One already on its way was queued before this write, which lands after it.)
    mine = [v for v in shard.visibility if v.run_id == run_id and v.namespace_id == namespace_id]
    if mine:
        shard.visibility = [v for v in shard.visibility if not (v.run_id == run_id and v.namespace_id == namespace_id)]
    try:
        await ctx.store.apply(m)
    except BaseException:
        shard.visibility[:0] = mine  # nothing deleted: the run's row is written as it would have been
        raise
    cache = ctx.cache
    if st is not None:
        cache.evict(st)
    cache.forget_current(namespace_id, workflow_id, run_id)


async def delete_unreferenced_blobs(ctx: HistoryContext, namespace_id: str, keys: Sequence[str]) -> None:
    """Delete the large-payload blobs of ``keys`` that no run refers to any more (a deleted run's rows
    went with it). Runs share a blob when the server copied a reference (a child's input, a signal
    sent by another workflow, continue-as-new): such a blob stays until its last run is deleted.

    Raises ObjectStoreError / StoreError (some may be left; calling again with the same keys is safe).
    """
    blobs = ctx.archival.blobs
    if blobs is None or not keys:
        return
    await blobs.delete_unreferenced(keys, namespace_id, ctx.store.blob_is_referenced)


async def _collect_blobs(ctx: HistoryContext, t: Task, keys: list[str]) -> None:
    """Retention's blob collection (``delete_unreferenced_blobs``): a failure here (or a crash before
    it) leaves a blob behind; nothing refers to it."""
    try:
        await delete_unreferenced_blobs(ctx, t.namespace_id, keys)
    except Exception as e:  # noqa: BLE001 - the run is deleted; a leftover blob is only space
        log.warning("retention of %s/%s: its blobs could not all be deleted: %s", t.workflow_id, t.run_id, e,
                    extra=run_fields("", t.workflow_id, t.run_id))


def _retry_later(ctx: HistoryContext, shard: Shard, t: Task, err: BaseException) -> None:
    delay_ms = int(ctx.config.archival_retry_interval * 1000)
    log.warning("retention of %s/%s: archive write failed, run kept; retrying in %.1f s: %s",
                t.workflow_id, t.run_id, delay_ms / 1000, err, extra=run_fields("", t.workflow_id, t.run_id))
    t.fire_time_ms = ctx.clock.now_ms() + delay_ms
    shard.timers.retry_at(t, t.fire_time_ms)


__all__ = ["arm_retention", "delete_run", "delete_unreferenced_blobs", "retention_fired"]
