"""Other workflows from workflow code: ``workflow.start_child_workflow``, ``execute_child_workflow``
and ``get_external_workflow_handle`` (signal or cancel another execution).

Re-exported by ``spindle.workflow``. Each finds the running :class:`~spindle._workflow.instance.WorkflowInstance` through the
running event loop and raises :class:`~spindle.exceptions.WorkflowContextError` when
called outside a workflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, cast

from spindle._interceptors.worker import StartChildWorkflowInput
from spindle._workflow.activity_calls import call_arguments
from spindle._workflow.context import instance as _instance
from spindle._workflow.defn import WorkflowDefinition, handler_name
from spindle._workflow.statemachines.child_workflow import ChildWorkflowHandle

__all__ = ["start_child_workflow", "execute_child_workflow", "ExternalWorkflowHandle", "get_external_workflow_handle"]


async def start_child_workflow(
    workflow: Any,
    *arg_values: Any,
    args: Sequence[Any] | None = None,
    id: str | None = None,
    task_queue: str | None = None,
    parent_close_policy: Any = None,
    execution_timeout: timedelta | None = None,
    run_timeout: timedelta | None = None,
    id_reuse_policy: Any = None,
    memo: Mapping[str, Any] | None = None,
    search_attributes: Mapping[str, Any] | None = None,
    result_type: Any = None,
) -> ChildWorkflowHandle[Any]:
    """Start a child workflow and return its handle once it has started.

    ``workflow`` is a ``@workflow.defn`` target or a type name; its arguments come
    positionally after it or as ``args=[...]``. The default id is
    ``"<parent id>/<parent run id>/child-<n>"``.

    Raises:
        ChildWorkflowError: the child could not start (e.g. the id is in use).
        ValueError: arguments given both positionally and as ``args``.
        TypeError: ``args`` is not a list or tuple.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("start_child_workflow")
    arguments = call_arguments("start_child_workflow", arg_values, args)
    if isinstance(workflow, str):
        name, hint = workflow, None
    else:
        d = WorkflowDefinition.from_target(workflow)
        name, hint = d.name, d.return_type
    request = StartChildWorkflowInput(
        workflow=name, args=arguments, headers={}, id=id, task_queue=task_queue,
        parent_close_policy=parent_close_policy, execution_timeout=execution_timeout, run_timeout=run_timeout,
        id_reuse_policy=id_reuse_policy, memo=memo, search_attributes=search_attributes,
        result_type=result_type if result_type is not None else hint)
    return cast(ChildWorkflowHandle[Any], await inst.outbound.start_child_workflow(request))


async def execute_child_workflow(workflow: Any, *arg_values: Any, **options: Any) -> Any:
    """Start a child workflow and wait for its result (arguments and options as :func:`start_child_workflow`).

    Raises:
        ChildWorkflowError: the child failed, was cancelled, terminated or timed out.
        ValueError, TypeError, WorkflowContextError: as :func:`start_child_workflow`.
    """
    handle = await start_child_workflow(workflow, *arg_values, **options)
    return await handle


# ---------------------------------------------------------------------------- external workflows


class ExternalWorkflowHandle:
    """Another workflow execution this workflow can signal or cancel."""

    def __init__(self, workflow_id: str, run_id: str | None, namespace: str = "") -> None:
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.namespace = namespace

    async def signal(self, signal: Any, *args: Any) -> None:
        """Send signal ``signal`` (name or decorated method) with ``args``.

        Raises:
            ApplicationError: the server could not deliver it (``type`` is the cause,
                e.g. ``EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND``).
            WorkflowContextError: outside a workflow or in a query/validator.
        """
        inst = _instance("get_external_workflow_handle(...).signal")
        await inst.runtime.signal_external(self.workflow_id, self.run_id, handler_name(signal), args,
                                   namespace=self.namespace).future

    async def cancel(self) -> None:
        """Request the cancellation of that execution.

        Raises:
            ApplicationError: the server could not deliver the request.
            WorkflowContextError: outside a workflow or in a query/validator.
        """
        inst = _instance("get_external_workflow_handle(...).cancel")
        await inst.runtime.cancel_external(self.workflow_id, self.run_id, namespace=self.namespace).future


def get_external_workflow_handle(workflow_id: str, run_id: str | None = None) -> ExternalWorkflowHandle:
    """A handle to signal or cancel another execution (the latest run when ``run_id`` is None).

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    _instance("get_external_workflow_handle")
    return ExternalWorkflowHandle(workflow_id, run_id)
