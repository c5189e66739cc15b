"""The end of a workflow run's outbound interceptor chain: the runtime's own activity and child calls."""

from __future__ import annotations

import asyncio

from datetime import timedelta
from typing import Any, cast

from spindle._interceptors.worker import StartActivityInput, StartChildWorkflowInput, WorkflowOutboundInterceptor
from spindle._workflow.info import WorkflowInfo
from spindle._workflow.runtime import WorkflowRuntime
from spindle._workflow.statemachines.activity import ActivityHandle
from spindle._workflow.statemachines.child_workflow import ChildWorkflowHandle
from spindle.api import messages_pb2 as pb

__all__ = ["WorkflowOutboundImpl"]


def _ms(d: timedelta | None) -> int:
    return int(d.total_seconds() * 1000) if d is not None else 0


def _schedule_activity_now(runtime: WorkflowRuntime, input: StartActivityInput) -> ActivityHandle[Any]:
    """The end of the outbound chain: issue SCHEDULE_ACTIVITY_TASK for ``input``."""
    attrs = pb.ScheduleActivityTaskCommandAttributes(
        activity_id=input.activity_id or "", activity_type=input.activity, task_queue=input.task_queue or "",
        input=runtime.converter.to_payloads(list(input.args)),
        start_to_close_timeout_ms=_ms(input.start_to_close_timeout),
        schedule_to_close_timeout_ms=_ms(input.schedule_to_close_timeout),
        schedule_to_start_timeout_ms=_ms(input.schedule_to_start_timeout),
        heartbeat_timeout_ms=_ms(input.heartbeat_timeout),
    )
    for k, v in input.headers.items():
        attrs.header.fields[k].CopyFrom(v)
    if input.retry_policy is not None:
        attrs.retry_policy.CopyFrom(input.retry_policy.to_proto())
    return runtime.schedule_activity(attrs, input.result_type, input.cancellation_type).handle


async def _start_child_now(runtime: WorkflowRuntime, input: StartChildWorkflowInput) -> ChildWorkflowHandle[Any]:
    """The end of the outbound chain: issue START_CHILD_WORKFLOW_EXECUTION and wait until it started."""
    conv = runtime.converter
    attrs = pb.StartChildWorkflowExecutionCommandAttributes(
        workflow_id=input.id or "", workflow_type=input.workflow, task_queue=input.task_queue or "",
        input=conv.to_payloads(list(input.args)), execution_timeout_ms=_ms(input.execution_timeout),
        run_timeout_ms=_ms(input.run_timeout), parent_close_policy=cast(Any, int(input.parent_close_policy or 0)),
        workflow_id_reuse_policy=cast(Any, int(input.id_reuse_policy or 0)),
    )
    for k, v in (input.memo or {}).items():
        attrs.memo.fields[k].CopyFrom(conv.to_payload(v))
    for k, v in (input.search_attributes or {}).items():
        attrs.search_attributes.indexed_fields[k].CopyFrom(conv.to_payload(v))
    for k, p in input.headers.items():
        attrs.header.fields[k].CopyFrom(p)
    machine = runtime.start_child(attrs, input.result_type)
    try:
        await asyncio.shield(machine.started)
    except asyncio.CancelledError:
        machine.request_cancel()
        raise
    return machine.handle


class WorkflowOutboundImpl(WorkflowOutboundInterceptor):
    """The end of a run's outbound interceptor chain: the runtime's own calls."""

    def __init__(self, runtime: WorkflowRuntime) -> None:  # noqa: D107 - no next: this is the end
        self._runtime = runtime

    def info(self) -> WorkflowInfo:
        return self._runtime.workflow_info

    def start_activity(self, input: StartActivityInput) -> ActivityHandle[Any]:
        return _schedule_activity_now(self._runtime, input)

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> ChildWorkflowHandle[Any]:
        return await _start_child_now(self._runtime, input)
