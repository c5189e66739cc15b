"""The cross-shard port's implementation for one process: every shard is here, so every call runs here.

A cluster member replaces it with one that runs a call on the owner of the target's
shard (``spindle.controlplane.cluster``), and runs the calls other members send it on
this one. Methods return the operation's coroutine (no extra await on the way).
"""

from __future__ import annotations

from collections.abc import Awaitable

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.namespaces import Namespace

from ._context import HistoryContext
from .ops import cancel as cancel_ops
from .ops import child as child_ops
from .ops import schedule as schedule_ops
from .ops import signal as signal_ops
from .ops import start as start_ops


class LocalCrossShard:
    """Runs the cross-shard operations in this process (implements ``_context.CrossShard``; see it for what each does)."""

    def __init__(self, ctx: HistoryContext) -> None:
        self._ctx = ctx

    def start_workflow(self, ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                       parent: pb.ParentExecutionInfo | None = None) -> Awaitable[tuple[str, bool]]:
        return start_ops.start_workflow(self._ctx, ns, req, parent=parent)

    def request_cancel(self, ns: Namespace, execution: pb.WorkflowExecution, identity: str, reason: str,
                       external: tuple[int, pb.WorkflowExecution] | None = None) -> Awaitable[None]:
        return cancel_ops.request_cancel(self._ctx, ns, execution, identity, reason, external)

    def terminate(self, ns: Namespace, execution: pb.WorkflowExecution, reason: str, details: pb.Payloads,
                  identity: str) -> Awaitable[None]:
        return cancel_ops.terminate(self._ctx, ns, execution, reason, details, identity)

    def signal(self, ns: Namespace, target: pb.WorkflowExecution, name: str, payloads: pb.Payloads, header: pb.Header,
               request_id: str, source: pb.WorkflowExecution) -> Awaitable[None]:
        return signal_ops.deliver_external_signal(self._ctx, ns, target, name, payloads, header, request_id, source)

    def notify_parent(self, pns: Namespace, parent: pb.ParentExecutionInfo, close: pb.HistoryEvent, *,
                      child_namespace: str, child: pb.WorkflowExecution, first_run_id: str,
                      workflow_type: str) -> Awaitable[None]:
        return child_ops.notify_parent(self._ctx, pns, parent, close, child_namespace=child_namespace, child=child,
                                       first_run_id=first_run_id, workflow_type=workflow_type)

    def schedule_run_closed(self, ns: Namespace, schedule_id: str, execution: pb.WorkflowExecution) -> Awaitable[None]:
        return schedule_ops.run_closed(self._ctx, ns, schedule_id, execution)


__all__ = ["LocalCrossShard"]
