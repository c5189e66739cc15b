"""Hand-built histories for driving WorkflowInstance without a server.

``History`` plays the server: it appends events in the shape of
docs/INTERNAL_CONTRACTS.md, turns the commands a task returned into their command
events, and hands out the events not yet delivered (as a sticky worker would get).
"""

from __future__ import annotations

from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.converter._data_converter import DataConverter

E = pb.EventType
C = pb.CommandType
CONV = DataConverter.default
T0 = 1_700_000_000_000


def payloads(*values: Any) -> pb.Payloads:
    return CONV.to_payloads(list(values))


def decode(p: pb.Payloads) -> list[Any]:
    return CONV.from_payloads(p)


class History:
    """A run's history under construction."""

    def __init__(self, workflow_type: str, *args: Any, task_queue: str = "q", now_ms: int = T0,
                 start_attrs: dict[str, Any] | None = None) -> None:
        self.events: list[pb.HistoryEvent] = []
        self.now_ms = now_ms
        self.delivered = 0
        self.update_requests: dict[str, pb.UpdateRequest] = {}
        self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, workflow_execution_started_event_attributes=(
            pb.WorkflowExecutionStartedEventAttributes(workflow_type=workflow_type, task_queue=task_queue,
                                                       input=payloads(*args), attempt=1, **(start_attrs or {}))))
        self.add(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                 workflow_task_scheduled_event_attributes=pb.WorkflowTaskScheduledEventAttributes(task_queue=task_queue))

    # ------------------------------------------------------------- plumbing

    def add(self, event_type: int, **attrs: Any) -> pb.HistoryEvent:
        e = pb.HistoryEvent(event_id=len(self.events) + 1, event_time_ms=self.now_ms, event_type=event_type, **attrs)
        self.events.append(e)
        return e

    def advance(self, seconds: float) -> None:
        self.now_ms += int(seconds * 1000)

    def next_task(self) -> list[pb.HistoryEvent]:
        """Schedule (if needed) and start a workflow task; return the undelivered events."""
        if self.events[-1].event_type != E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            self.add(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
        self.add(E.EVENT_TYPE_WORKFLOW_TASK_STARTED)
        out = self.events[self.delivered:]
        self.delivered = len(self.events)
        return out

    def fail_task(self) -> None:
        self.add(E.EVENT_TYPE_WORKFLOW_TASK_FAILED)

    def complete(self, commands: list[pb.Command]) -> None:
        """Record WorkflowTaskCompleted and one event per command, as the server does."""
        wtc = self.add(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).event_id
        for c in commands:
            t = c.command_type
            if t == C.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
                a = c.schedule_activity_task_command_attributes
                self.add(E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, activity_task_scheduled_event_attributes=(
                    pb.ActivityTaskScheduledEventAttributes(activity_id=a.activity_id, activity_type=a.activity_type,
                                                            input=a.input, workflow_task_completed_event_id=wtc)))
            elif t == C.COMMAND_TYPE_START_TIMER:
                a2 = c.start_timer_command_attributes
                self.add(E.EVENT_TYPE_TIMER_STARTED, timer_started_event_attributes=pb.TimerStartedEventAttributes(
                    timer_id=a2.timer_id, start_to_fire_timeout_ms=a2.start_to_fire_timeout_ms))
            elif t == C.COMMAND_TYPE_CANCEL_TIMER:
                self.add(E.EVENT_TYPE_TIMER_CANCELED, timer_canceled_event_attributes=pb.TimerCanceledEventAttributes(
                    timer_id=c.cancel_timer_command_attributes.timer_id))
            elif t == C.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
                self.add(E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
                         activity_task_cancel_requested_event_attributes=pb.ActivityTaskCancelRequestedEventAttributes(
                             scheduled_event_id=c.request_cancel_activity_task_command_attributes.scheduled_event_id))
            elif t == C.COMMAND_TYPE_RECORD_MARKER:
                m = c.record_marker_command_attributes
                self.add(E.EVENT_TYPE_MARKER_RECORDED, marker_recorded_event_attributes=pb.MarkerRecordedEventAttributes(
                    marker_name=m.marker_name, details=m.details, workflow_task_completed_event_id=wtc))
            elif t == C.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
                self.add(E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
                         upsert_workflow_search_attributes_event_attributes=(
                             pb.UpsertWorkflowSearchAttributesEventAttributes(
                                 search_attributes=c.upsert_workflow_search_attributes_command_attributes
                                 .search_attributes)))
            elif t == C.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
                s = c.start_child_workflow_execution_command_attributes
                self.add(E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
                         start_child_workflow_execution_initiated_event_attributes=(
                             pb.StartChildWorkflowExecutionInitiatedEventAttributes(
                                 workflow_id=s.workflow_id, workflow_type=s.workflow_type, input=s.input)))
            elif t == C.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
                x = c.signal_external_workflow_execution_command_attributes
                self.add(E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
                         signal_external_workflow_execution_initiated_event_attributes=(
                             pb.SignalExternalWorkflowExecutionInitiatedEventAttributes(
                                 workflow_execution=x.execution, signal_name=x.signal_name, input=x.input)))
            elif t == C.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
                r = c.request_cancel_external_workflow_execution_command_attributes
                self.add(E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
                         request_cancel_external_workflow_execution_initiated_event_attributes=(
                             pb.RequestCancelExternalWorkflowExecutionInitiatedEventAttributes(
                                 workflow_execution=pb.WorkflowExecution(workflow_id=r.workflow_id, run_id=r.run_id),
                                 child_workflow_only=r.child_workflow_only)))
            elif t == C.COMMAND_TYPE_ACCEPT_UPDATE:
                r = self.update_requests[c.accept_update_command_attributes.update_id]
                self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
                         workflow_execution_update_accepted_event_attributes=(
                             pb.WorkflowExecutionUpdateAcceptedEventAttributes(
                                 update_id=r.update_id, name=r.name, input=r.input,
                                 workflow_task_completed_event_id=wtc)))
            elif t == C.COMMAND_TYPE_COMPLETE_UPDATE:
                u = c.complete_update_command_attributes
                self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
                         workflow_execution_update_completed_event_attributes=(
                             pb.WorkflowExecutionUpdateCompletedEventAttributes(update_id=u.update_id,
                                                                                success=u.success)
                             if u.HasField("success") else pb.WorkflowExecutionUpdateCompletedEventAttributes(
                                 update_id=u.update_id, failure=u.failure)))
            elif t == C.COMMAND_TYPE_REJECT_UPDATE:
                pass
            elif t == C.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
                self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, workflow_execution_completed_event_attributes=(
                    pb.WorkflowExecutionCompletedEventAttributes(
                        result=c.complete_workflow_execution_command_attributes.result)))
            elif t == C.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION:
                self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, workflow_execution_failed_event_attributes=(
                    pb.WorkflowExecutionFailedEventAttributes(
                        failure=c.fail_workflow_execution_command_attributes.failure)))
            elif t == C.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION:
                self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED)
            elif t == C.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION:
                self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)
            else:
                raise AssertionError(f"unhandled command {c}")

    def update_request(self, update_id: str, name: str, *args: Any) -> pb.UpdateRequest:
        """An update request for the next task (remembered so ACCEPT_UPDATE can become its event)."""
        r = pb.UpdateRequest(update_id=update_id, name=name, input=payloads(*args))
        self.update_requests[update_id] = r
        return r

    # ------------------------------------------------------------- non-command events

    def _scheduled(self, activity_id: str) -> pb.HistoryEvent:
        for e in self.events:
            if (e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                    and e.activity_task_scheduled_event_attributes.activity_id == activity_id):
                return e
        raise KeyError(activity_id)

    def activity_completed(self, activity_id: str, result: Any = None) -> None:
        sid = self._scheduled(activity_id).event_id
        st = self.add(E.EVENT_TYPE_ACTIVITY_TASK_STARTED, activity_task_started_event_attributes=(
            pb.ActivityTaskStartedEventAttributes(scheduled_event_id=sid, attempt=1))).event_id
        self.add(E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, activity_task_completed_event_attributes=(
            pb.ActivityTaskCompletedEventAttributes(result=payloads(result), scheduled_event_id=sid,
                                                    started_event_id=st)))

    def activity_failed(self, activity_id: str, exc: BaseException,
                        retry_state: int = pb.RETRY_STATE_NON_RETRYABLE_FAILURE) -> None:
        sid = self._scheduled(activity_id).event_id
        st = self.add(E.EVENT_TYPE_ACTIVITY_TASK_STARTED, activity_task_started_event_attributes=(
            pb.ActivityTaskStartedEventAttributes(scheduled_event_id=sid, attempt=1))).event_id
        self.add(E.EVENT_TYPE_ACTIVITY_TASK_FAILED, activity_task_failed_event_attributes=(
            pb.ActivityTaskFailedEventAttributes(failure=CONV.to_failure(exc), scheduled_event_id=sid,
                                                 started_event_id=st, retry_state=retry_state)))

    def timer_fired(self, timer_id: str) -> None:
        self.add(E.EVENT_TYPE_TIMER_FIRED, timer_fired_event_attributes=pb.TimerFiredEventAttributes(timer_id=timer_id))

    def signal(self, name: str, *args: Any) -> None:
        self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, workflow_execution_signaled_event_attributes=(
            pb.WorkflowExecutionSignaledEventAttributes(signal_name=name, input=payloads(*args))))

    def cancel_requested(self) -> None:
        self.add(E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED)

    def _initiated(self, event_type: int, workflow_id: str) -> int:
        for e in reversed(self.events):
            if e.event_type == event_type:
                attrs = getattr(e, e.WhichOneof("attributes"))
                wid = getattr(attrs, "workflow_id", "") or attrs.workflow_execution.workflow_id
                if wid == workflow_id:
                    return e.event_id
        raise KeyError(workflow_id)

    def child_started(self, workflow_id: str, run_id: str = "child-run") -> None:
        iid = self._initiated(E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, workflow_id)
        self.add(E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, child_workflow_execution_started_event_attributes=(
            pb.ChildWorkflowExecutionStartedEventAttributes(
                initiated_event_id=iid, workflow_execution=pb.WorkflowExecution(workflow_id=workflow_id,
                                                                                run_id=run_id))))

    def child_completed(self, workflow_id: str, result: Any) -> None:
        iid = self._initiated(E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, workflow_id)
        self.add(E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, child_workflow_execution_completed_event_attributes=(
            pb.ChildWorkflowExecutionCompletedEventAttributes(initiated_event_id=iid, result=payloads(result))))

    def child_failed(self, workflow_id: str, exc: BaseException) -> None:
        iid = self._initiated(E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, workflow_id)
        self.add(E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED, child_workflow_execution_failed_event_attributes=(
            pb.ChildWorkflowExecutionFailedEventAttributes(initiated_event_id=iid, failure=CONV.to_failure(exc))))

    def external_signaled(self, workflow_id: str) -> None:
        iid = self._initiated(E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, workflow_id)
        self.add(E.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, external_workflow_execution_signaled_event_attributes=(
            pb.ExternalWorkflowExecutionSignaledEventAttributes(initiated_event_id=iid)))

    def external_signal_failed(self, workflow_id: str, cause: str) -> None:
        iid = self._initiated(E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, workflow_id)
        self.add(E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
                 signal_external_workflow_execution_failed_event_attributes=(
                     pb.SignalExternalWorkflowExecutionFailedEventAttributes(initiated_event_id=iid, cause=cause)))


def kinds(commands: list[pb.Command]) -> list[str]:
    """Command types without the COMMAND_TYPE_ prefix, for compact assertions."""
    return [pb.CommandType.Name(c.command_type).removeprefix("COMMAND_TYPE_") for c in commands]


def result_of(commands: list[pb.Command]) -> Any:
    """The decoded result of a COMPLETE_WORKFLOW_EXECUTION command (must be last)."""
    last = commands[-1]
    assert last.command_type == C.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, kinds(commands)
    return decode(last.complete_workflow_execution_command_attributes.result)[0]


def failure_of(commands: list[pb.Command]) -> pb.Failure:
    last = commands[-1]
    assert last.command_type == C.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION, kinds(commands)
    return last.fail_workflow_execution_command_attributes.failure
