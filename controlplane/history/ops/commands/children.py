"""START_CHILD_WORKFLOW_EXECUTION: the initiated event and the transfer task that starts the child (``ops.child``)."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.controlplane.errors import ServiceError
from spindle.controlplane.namespaces import Namespace

from ..._context import HistoryContext
from ..._tasks import T_START_CHILD, Task
from ..._txn import Txn
from .handler import CommandHandler, Validation

_NAMES = ("workflow_type", "task_queue")
_TIMEOUTS = ("execution_timeout_ms", "run_timeout_ms", "task_timeout_ms")


def check_start_child(a: pb.StartChildWorkflowExecutionCommandAttributes, where: str, v: Validation) -> str | None:
    """What a start must satisfy (frontend ``check_start_request``), and a namespace that exists.

    A child that passes here passes there too, wherever its shard lives (the cluster's
    internal RPC checks it again).
    """
    max_id = v.max_id
    if not a.workflow_id or not a.workflow_type:
        return f"{where}: workflow_id and workflow_type are required"
    if len(a.workflow_id) > max_id:
        return f"{where}.workflow_id: longer than {max_id} characters"
    for f in _NAMES:
        if len(getattr(a, f)) > max_id:
            return f"{where}.{f}: longer than {max_id} characters"
    for f in _TIMEOUTS:
        if getattr(a, f) < 0:
            return f"{where}.{f}: must not be negative"
    if a.workflow_id_reuse_policy not in pb.WorkflowIdReusePolicy.values():
        return f"{where}.workflow_id_reuse_policy: unknown value {a.workflow_id_reuse_policy}"
    if a.namespace and a.namespace != v.state.namespace:
        try:
            v.ctx.namespaces.get(a.namespace)
        except Exception:  # noqa: BLE001
            return f"{where}.namespace: namespace {a.namespace!r} not found"
    return None


def child_namespace(v: Validation, a: pb.StartChildWorkflowExecutionCommandAttributes) -> Namespace | None:
    """The child's namespace (its search attributes are registered there), else the run's own."""
    ns = v.ctx.namespaces.by_id(v.state.namespace_id)
    if a.namespace:
        try:
            ns = v.ctx.namespaces.get(a.namespace)
        except ServiceError:
            pass  # reported by check_start_child
    return ns


def apply_start_child(ctx: HistoryContext, txn: Txn, a: pb.StartChildWorkflowExecutionCommandAttributes, wtc: int,
                      identity: str) -> None:
    """StartChildWorkflowExecutionInitiated and the ``T_START_CHILD`` task."""
    st = txn.state
    e = txn.event(
        pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
        "start_child_workflow_execution_initiated_event_attributes",
        pb.StartChildWorkflowExecutionInitiatedEventAttributes(
            namespace=a.namespace or st.namespace, workflow_id=a.workflow_id, workflow_type=a.workflow_type,
            task_queue=a.task_queue or st.task_queue, input=a.input, execution_timeout_ms=a.execution_timeout_ms,
            run_timeout_ms=a.run_timeout_ms, task_timeout_ms=a.task_timeout_ms,
            parent_close_policy=a.parent_close_policy or pb.PARENT_CLOSE_POLICY_TERMINATE,
            workflow_task_completed_event_id=wtc, workflow_id_reuse_policy=a.workflow_id_reuse_policy,
            memo=a.memo, search_attributes=a.search_attributes, header=a.header,
        ),
    )
    txn.transfer.append(Task(T_START_CHILD, st.namespace_id, st.workflow_id, st.run_id, e.event_id))


START_CHILD_WORKFLOW_EXECUTION = CommandHandler(
    pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION, "start_child_workflow_execution_command_attributes",
    check=check_start_child, apply=apply_start_child, search_attributes_namespace=child_namespace)

__all__ = ["START_CHILD_WORKFLOW_EXECUTION", "apply_start_child", "check_start_child", "child_namespace"]
