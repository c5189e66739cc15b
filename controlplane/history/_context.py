"""What an operation may use: the collaborators of the history service, and the cross-shard port.

Every operation (``ops/``) is a function taking a ``HistoryContext`` and its own
arguments. The context names the parts an operation works with; it holds no behaviour
of its own. ``HistoryEngine`` builds one and passes it everywhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._keyed_locks import KeyedLocks
from spindle.controlplane.archival import Archival
from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.matching import Matching
from spindle.controlplane.namespaces import Namespace, NamespaceRegistry
from spindle.controlplane.store import Mutation, Store

from ._admission import StartAdmission
from ._background import Background
from ._backlog import Backlog
from ._cache import ExecutionCache
from ._outstanding import OutstandingTasks
from ._pacing import StartTokens, Unlimited
from ._pending import PendingQuery
from ._shard import ShardController
from ._tokens import StartNonces, TaskTokens

if TYPE_CHECKING:
    from spindle.controlplane._metrics import ServerMetrics


class CrossShard(Protocol):
    """The operations that reach a workflow on another shard (a port).

    Transfer tasks (child starts, parent-close policies, external signals and cancels,
    parent notifications) and the frontend's start, cancel and terminate reach the
    target through this port. ``LocalCrossShard`` runs them in this process (it owns
    every shard); a cluster member plugs in one that runs them on the owner of the
    target's shard (``spindle.controlplane.cluster``). Arguments are plain values, so a
    call can cross processes.
    """

    def start_workflow(self, ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                       parent: pb.ParentExecutionInfo | None = None) -> Awaitable[tuple[str, bool]]:
        """Start a run (per the request's policies). Returns (run_id, started)."""
        ...

    def request_cancel(self, ns: Namespace, execution: pb.WorkflowExecution, identity: str, reason: str,
                       external: tuple[int, pb.WorkflowExecution] | None = None) -> Awaitable[None]:
        """Request the cancellation of a run (``external``: the requesting run's initiated event id and execution)."""
        ...

    def terminate(self, ns: Namespace, execution: pb.WorkflowExecution, reason: str, details: pb.Payloads,
                  identity: str) -> Awaitable[None]:
        """Terminate a running run."""
        ...

    def signal(self, ns: Namespace, target: pb.WorkflowExecution, name: str, payloads: pb.Payloads, header: pb.Header,
               request_id: str, source: pb.WorkflowExecution) -> Awaitable[None]:
        """Signal ``target`` on behalf of the workflow ``source``."""
        ...

    def notify_parent(self, pns: Namespace, parent: pb.ParentExecutionInfo, close: pb.HistoryEvent, *,
                      child_namespace: str, child: pb.WorkflowExecution, first_run_id: str,
                      workflow_type: str) -> Awaitable[None]:
        """Record a child's close (``close``, its last event) in the parent's history."""
        ...

    def schedule_run_closed(self, ns: Namespace, schedule_id: str, execution: pb.WorkflowExecution) -> Awaitable[None]:
        """Tell schedule ``schedule_id`` that a run it started closed (actions waiting for it may go)."""
        ...


@dataclass(slots=True, eq=False)
class HistoryContext:
    """The collaborators of the history service's operations.

    Attributes:
        store: the persistence of executions, tasks and shards.
        config: server settings (limits, timeouts, defaults).
        clock: the time source (virtual under time skipping).
        namespaces: the namespace registry.
        shards: the owned shards and routing (``shard_for``).
        cache: runs' mutable state, their locks and current runs.
        matching: the task queues workers poll.
        backlog: task sources and the durable backlog of matching's queues.
        admission: start admission and workflow-task bookkeeping.
        outstanding: tasks handed to workers and unfinished.
        background: spawned tasks and the counts of writes under way.
        nonces: workflow-task start nonces of this engine instance.
        tokens: signs the task tokens handed to workers and verifies the ones they return.
        queries: pending queries by id.
        cross_shard: the port to workflows on other shards.
        commit: the commit path (``await ctx.commit(txn)``, see ``_commit``).
        write_background: a write nobody waits for (``Committer.apply_background``).
        metrics: where the operations record metrics (None: not recorded; ``HistoryEngine.attach_metrics``).
        schedule_locks: serialize the changes to one schedule in this engine (``ops.schedule_record.lock``).
        start_tokens: the namespaces' request rate limits, which the starts the server makes itself take
            tokens from (``_pacing``; the frontend plugs its limiter in).
    """

    store: Store
    config: ServerConfig
    clock: Clock
    namespaces: NamespaceRegistry
    shards: ShardController
    cache: ExecutionCache
    matching: Matching
    backlog: Backlog
    admission: StartAdmission
    outstanding: OutstandingTasks
    background: Background
    nonces: StartNonces
    tokens: TaskTokens
    queries: dict[str, PendingQuery]
    cross_shard: CrossShard
    commit: Callable[..., Awaitable[None]]
    write_background: Callable[[Mutation], None]
    schedule_locks: KeyedLocks = field(default_factory=KeyedLocks)
    start_tokens: StartTokens = field(default_factory=Unlimited)
    _archival: Archival | None = None
    metrics: "ServerMetrics | None" = None

    @property
    def archival(self) -> Archival:
        """The archive and blob services (built from the config on first use)."""
        if self._archival is None:
            self._archival = Archival(self.config)
        return self._archival

    @archival.setter
    def archival(self, value: Archival) -> None:
        self._archival = value


__all__ = ["CrossShard", "HistoryContext"]
