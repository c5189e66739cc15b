"""Erasure (issue 26): delete one run for good, on its shard (``DeleteWorkflowExecution``).

In order, each step safe to run again after a failure or a crash:

1. under the workflow id's lock: a running run is terminated first (reason "erased" unless
   one is given), then ONE store mutation deletes everything of the run the store holds
   (``retention.delete_run``: events, execution row, buffered events, blob references, the
   current-run pointer, the visibility row, the backlog rows of its tasks still queued in
   matching, which leave the queues) and the run is forgotten in memory (cached state,
   current run, a visibility upsert still queued);
2. its large-payload blobs no other run refers to are deleted;
3. its archived copy (the namespace's archive, if it has one) is deleted through the archive's
   erasure (``spindle.controlplane.archival._erasure.erase_archived_run``).

A run that is gone already answers as erased (``existed=False``): its visibility row and
archived copy are still deleted. A task of the run that matching still hands out (one being
written to the backlog meanwhile, or queued by another process) is dropped when a worker polls
it (the run is gone); its timer rows (ids only, no data) are dropped when due.
"""

from __future__ import annotations

import logging

from dataclasses import dataclass

from spindle.api import messages_pb2 as pb
from spindle.controlplane._log_format import run_fields
from spindle.controlplane.archival import ObjectStoreError, erase_archived_run
from spindle.controlplane.errors import Unavailable
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.store import StoreError

from .._context import HistoryContext
from .cancel import _terminate as terminate_locked  # the terminate of ops.cancel, under the lock held here
from .retention import delete_run, delete_unreferenced_blobs

log = logging.getLogger("spindle.erasure")

#: The termination reason of a run erased while running, when the request gives none.
ERASED_REASON = "erased"


@dataclass(frozen=True)
class Erased:
    """What erasing one run did.

    Attributes:
        run_id: the run erased (the current run's id when the request named none; "" if none was found).
        existed: the run was in the store (False: gone already; only leftovers were deleted).
        terminated: the run was running and was terminated first.
        archived: an archived copy was found and deleted.
    """

    run_id: str
    existed: bool
    terminated: bool
    archived: bool


async def erase_run(ctx: HistoryContext, ns: Namespace, workflow_id: str, run_id: str, reason: str,
                    identity: str) -> Erased:
    """Erase one run (the current run of ``workflow_id`` when ``run_id`` is ""); see the module docstring.

    Raises ShardNotOwned (this process does not serve the run's shard) and Unavailable (the
    store or the blob store or the archive failed; calling again finishes the job).
    """
    cache = ctx.cache
    shard = ctx.shards.shard_for(ns.id, workflow_id)
    terminated = existed = False
    blob_keys: list[str] = []
    async with cache.locked(ns.id, workflow_id):
        rid = run_id or await cache.current_run_id(ns.id, workflow_id) or ""
        st = await cache.load(ns.id, workflow_id, rid) if rid else None
        try:
            if st is not None:
                existed = True
                if st.running:
                    await terminate_locked(ctx, st, reason or ERASED_REASON, pb.Payloads(), identity)
                    terminated = True
                if ctx.archival.blobs is not None:
                    blob_keys = await ctx.store.list_blob_refs(ns.id, workflow_id, rid)
            if rid:
                backlog = _drop_queued_tasks(ctx, ns.id, workflow_id, rid)
                await delete_run(ctx, shard, ns.id, workflow_id, rid, st, backlog_delete=backlog)
                if terminated:  # the termination's transfer rows (its visibility row's data) go now, not later
                    await shard.flush(ctx.store)
        except StoreError as e:
            raise Unavailable(f"erasing workflow {workflow_id!r}: the store failed; nothing was deleted: {e}") from e
    try:
        await delete_unreferenced_blobs(ctx, ns.id, blob_keys)
    except (ObjectStoreError, StoreError, OSError) as e:
        raise Unavailable(f"erasing workflow {workflow_id!r}: its history is deleted but its payload blobs "
                          f"could not all be deleted: {e}") from e
    archived = await _erase_archived(ctx, ns, workflow_id, rid)
    log.info("erased %s/%s%s", workflow_id, rid or "(no run)", " (terminated first)" if terminated else "",
             extra=run_fields(ns.name, workflow_id, rid))
    return Erased(run_id=rid, existed=existed, terminated=terminated, archived=archived)


def _drop_queued_tasks(ctx: HistoryContext, namespace_id: str, workflow_id: str, run_id: str
                       ) -> list[tuple[str, str, int, int, int]]:
    """Take the run's tasks out of this process's matching queues (a run's tasks are queued where its
    shard is served); the keys of their backlog rows, to delete with the run. A task whose row is
    still its transfer row is acknowledged (the shard's next ack batch deletes it)."""
    backlog: list[tuple[str, str, int, int, int]] = []
    for q in ctx.matching.queues():
        if q.namespace_id != namespace_id:
            continue
        for ref in [t for t in q.tasks if t.workflow_id == workflow_id and t.run_id == run_id]:
            if not q.discard(ref):
                continue
            src = ref.source or ()
            if src and src[0] == "b":
                backlog.append((str(src[1]), str(src[2]), int(src[3]), int(src[4]), int(src[5])))
            elif src and src[0] == "t" and (owner := ctx.shards.owned.get(int(src[1]))) is not None:
                owner.transfer.ack(int(src[2]))
    return backlog


async def _erase_archived(ctx: HistoryContext, ns: Namespace, workflow_id: str, run_id: str) -> bool:
    """Delete the run's archived copy; True if there was one. Raises Unavailable (archive unreachable)."""
    archiver = ctx.archival.archiver_for(ns)
    if archiver is None:
        return False
    try:
        rid = run_id or await archiver.latest_run_id(ns.id, workflow_id) or ""
        if not rid:
            return False
        found = await erase_archived_run(archiver.objects, ns.id, workflow_id, rid)
        archiver.forget(ns.id, workflow_id, rid)  # a copy read before must not be served from memory
        return found
    except (ObjectStoreError, OSError, ValueError) as e:
        raise Unavailable(f"erasing workflow {workflow_id!r}: its archived copy could not be deleted: {e}") from e


__all__ = ["ERASED_REASON", "Erased", "erase_run"]
