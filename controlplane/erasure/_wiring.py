"""How a server builds its erasure runner from its frontend and history engine (server, embedded, cluster member)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import Namespace, NamespaceRegistry
from spindle.controlplane.store import Store

from ._jobs import ErasureJobs
from ._runner import ErasureRunner


def erasure_runner(jobs: ErasureJobs, frontend: Any, engine: HistoryEngine, store: Store,
                   namespaces: NamespaceRegistry, **settings: Any) -> ErasureRunner:
    """The runner of this process's jobs: each run is erased through ``frontend.DeleteWorkflowExecution``
    (a cluster member's routes it to the run's owner; the call counts against the namespace's rate
    limit like a client's), jobs whose id hashes to a shard ``engine`` owns are this process's, and
    ``jobs`` wakes the runner when a job is created here. ``settings`` are ``ErasureRunner``'s."""
    delete = frontend.DeleteWorkflowExecution

    async def erase(ns: Namespace, workflow_id: str, run_id: str, reason: str, identity: str) -> None:
        req = svc.DeleteWorkflowExecutionRequest(
            namespace=ns.name, workflow_execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
            reason=reason, identity=identity)
        await delete(req, None)

    async def collect_blobs(namespace_id: str, keys: Sequence[str]) -> None:
        blobs = engine.archival.blobs
        if blobs is not None and keys:
            await blobs.delete_unreferenced(keys, namespace_id, store.blob_is_referenced)

    def owns(namespace_id: str, job_id: str) -> bool:
        return engine.shard_id_of(namespace_id, job_id) in engine.shards

    def archive_of(ns: Namespace) -> Any | None:
        archiver = engine.archival.archiver_for(ns)
        return archiver.objects if archiver is not None else None

    def archive_erased(ns: Namespace, workflow_id: str, run_id: str) -> None:
        archiver = engine.archival.archiver_for(ns)
        if archiver is not None:
            archiver.forget(ns.id, workflow_id, run_id)

    runner = ErasureRunner(jobs, store, namespaces, erase, collect_blobs, owns, archive_of,
                           archive_erased=archive_erased, **settings)
    jobs.on_created = runner.wake
    return runner


__all__ = ["erasure_runner"]
