"""Commands awaiting their history event, and how commands and events are matched.

A command *matches* a command event when their :func:`command_key` and
:func:`event_key` are equal: same kind and the same identifying attributes
(activity type and id, timer id, marker name and id, child type and id, ...).
"""

from __future__ import annotations

import dataclasses

from collections.abc import Callable
from typing import Any, Protocol

from spindle.api import messages_pb2 as pb

__all__ = [
    "CommandEntry",
    "CommandSink",
    "COMMAND_EVENT_TYPES",
    "command_key",
    "event_key",
    "describe_command",
    "describe_event",
    "MARKER_KEY_FIELD",
]

E = pb  # E.EVENT_TYPE_*: plain module constants (the EventType wrapper resolves attributes slowly)
C = pb.CommandType

# Marker name -> the details field that identifies one marker of that kind.
MARKER_KEY_FIELD: dict[str, str] = {"Version": "change_id", "SideEffect": "id"}

COMMAND_EVENT_TYPES: frozenset[int] = frozenset({
    E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
    E.EVENT_TYPE_TIMER_STARTED,
    E.EVENT_TYPE_TIMER_CANCELED,
    E.EVENT_TYPE_MARKER_RECORDED,
    E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
    E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
})


@dataclasses.dataclass(eq=False)
class CommandEntry:
    """One command produced by workflow code, waiting for its history event.

    ``on_recorded`` is called with the matching event (e.g. to learn an activity's
    scheduled event id). ``sent`` becomes true when the command left the worker (or
    was matched on replay); before that, cancelling may drop it instead.
    """

    command: pb.Command
    on_recorded: Callable[[pb.HistoryEvent], None] | None = None
    sent: bool = False

    @property
    def writes_event(self) -> bool:
        """Whether the server records an event for this command (REJECT_UPDATE does not)."""
        return self.command.command_type != C.COMMAND_TYPE_REJECT_UPDATE


class CommandSink(Protocol):
    """Where state machines put their commands (the running workflow instance)."""

    def add_command(self, entry: CommandEntry) -> None:
        """Append a command to the current activation's commands.

        Raises:
            WorkflowContextError: commands are not allowed now (query, validator).
        """
        ...

    def unsend(self, entry: CommandEntry) -> bool:
        """Drop ``entry`` if it has not been sent yet; return whether it was dropped."""
        ...


def _marker_id(details: Any, name: str) -> str:
    field = MARKER_KEY_FIELD.get(name)
    if field is None or field not in details or not details[field].payloads:
        return ""
    return details[field].payloads[0].data.decode("utf-8", "replace")


def command_key(c: pb.Command) -> tuple[Any, ...]:
    """The identity of a command, comparable with :func:`event_key` of its event."""
    t = c.command_type
    if t == C.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
        a = c.schedule_activity_task_command_attributes
        return (E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, a.activity_type, a.activity_id)
    if t == C.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
        return (E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
                c.request_cancel_activity_task_command_attributes.scheduled_event_id)
    if t == C.COMMAND_TYPE_START_TIMER:
        return (E.EVENT_TYPE_TIMER_STARTED, c.start_timer_command_attributes.timer_id)
    if t == C.COMMAND_TYPE_CANCEL_TIMER:
        return (E.EVENT_TYPE_TIMER_CANCELED, c.cancel_timer_command_attributes.timer_id)
    if t == C.COMMAND_TYPE_RECORD_MARKER:
        m = c.record_marker_command_attributes
        return (E.EVENT_TYPE_MARKER_RECORDED, m.marker_name, _marker_id(m.details, m.marker_name))
    if t == C.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        return (E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,)
    if t == C.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
        s = c.start_child_workflow_execution_command_attributes
        return (E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, s.workflow_type, s.workflow_id)
    if t == C.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
        x = c.signal_external_workflow_execution_command_attributes
        return (E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, x.execution.workflow_id, x.signal_name)
    if t == C.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
        r = c.request_cancel_external_workflow_execution_command_attributes
        return (E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, r.workflow_id)
    if t == C.COMMAND_TYPE_ACCEPT_UPDATE:
        return (E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, c.accept_update_command_attributes.update_id)
    if t == C.COMMAND_TYPE_COMPLETE_UPDATE:
        return (E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, c.complete_update_command_attributes.update_id)
    closing = {
        C.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION: E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        C.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION: E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        C.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION: E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        C.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION: E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
    if t in closing:
        return (closing[t],)
    return (None, t)


def event_key(e: pb.HistoryEvent) -> tuple[Any, ...]:
    """The identity of a command event, comparable with :func:`command_key`."""
    t = e.event_type
    if t == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        a = e.activity_task_scheduled_event_attributes
        return (t, a.activity_type, a.activity_id)
    if t == E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
        return (t, e.activity_task_cancel_requested_event_attributes.scheduled_event_id)
    if t == E.EVENT_TYPE_TIMER_STARTED:
        return (t, e.timer_started_event_attributes.timer_id)
    if t == E.EVENT_TYPE_TIMER_CANCELED:
        return (t, e.timer_canceled_event_attributes.timer_id)
    if t == E.EVENT_TYPE_MARKER_RECORDED:
        m = e.marker_recorded_event_attributes
        return (t, m.marker_name, _marker_id(m.details, m.marker_name))
    if t == E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        s = e.start_child_workflow_execution_initiated_event_attributes
        return (t, s.workflow_type, s.workflow_id)
    if t == E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
        x = e.signal_external_workflow_execution_initiated_event_attributes
        return (t, x.workflow_execution.workflow_id, x.signal_name)
    if t == E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
        return (t, e.request_cancel_external_workflow_execution_initiated_event_attributes.workflow_execution.workflow_id)
    if t == E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        return (t, e.workflow_execution_update_accepted_event_attributes.update_id)
    if t == E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
        return (t, e.workflow_execution_update_completed_event_attributes.update_id)
    return (t,)


_COMMAND_FIELDS: dict[int, tuple[str, ...]] = {
    C.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK: ("activity_type", "activity_id"),
    C.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK: ("scheduled_event_id",),
    C.COMMAND_TYPE_START_TIMER: ("timer_id", "start_to_fire_timeout_ms"),
    C.COMMAND_TYPE_CANCEL_TIMER: ("timer_id",),
    C.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: ("workflow_type", "workflow_id"),
    C.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION: ("signal_name",),
    C.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION: ("workflow_id",),
    C.COMMAND_TYPE_ACCEPT_UPDATE: ("update_id",),
    C.COMMAND_TYPE_COMPLETE_UPDATE: ("update_id",),
    C.COMMAND_TYPE_REJECT_UPDATE: ("update_id",),
}

_EVENT_FIELDS: dict[int, tuple[str, ...]] = {
    E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: ("activity_type", "activity_id"),
    E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED: ("scheduled_event_id",),
    E.EVENT_TYPE_TIMER_STARTED: ("timer_id", "start_to_fire_timeout_ms"),
    E.EVENT_TYPE_TIMER_CANCELED: ("timer_id",),
    E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: ("workflow_type", "workflow_id"),
    E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: ("signal_name",),
    E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: ("update_id", "name"),
    E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: ("update_id",),
}


def _camel(enum_name: str, prefix: str) -> str:
    return "".join(part.capitalize() for part in enum_name.removeprefix(prefix).split("_"))


def _fmt(attrs: Any, fields: tuple[str, ...]) -> str:
    return ", ".join(f"{f}={getattr(attrs, f)!r}" for f in fields)


def describe_command(c: pb.Command) -> str:
    """E.g. ``ScheduleActivityTask(activity_type='charge', activity_id='1')``."""
    kind = _camel(pb.CommandType.Name(c.command_type), "COMMAND_TYPE_")
    which = c.WhichOneof("attributes")
    attrs = getattr(c, which) if which else None
    if c.command_type == C.COMMAND_TYPE_RECORD_MARKER and attrs is not None:
        inner = f"marker_name={attrs.marker_name!r}"
        mid = _marker_id(attrs.details, attrs.marker_name)
        return f"{kind}({inner}, {MARKER_KEY_FIELD[attrs.marker_name]}={mid})" if mid else f"{kind}({inner})"
    if c.command_type == C.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION and attrs is not None:
        return f"{kind}(workflow_id={attrs.execution.workflow_id!r}, signal_name={attrs.signal_name!r})"
    fields = _COMMAND_FIELDS.get(c.command_type, ())
    return f"{kind}({_fmt(attrs, fields)})" if attrs is not None and fields else kind


def describe_event(e: pb.HistoryEvent) -> str:
    """E.g. ``ActivityTaskScheduled(activity_type='charge', activity_id='1')``."""
    kind = _camel(pb.EventType.Name(e.event_type), "EVENT_TYPE_")
    which = e.WhichOneof("attributes")
    attrs = getattr(e, which) if which else None
    if e.event_type == E.EVENT_TYPE_MARKER_RECORDED and attrs is not None:
        inner = f"marker_name={attrs.marker_name!r}"
        mid = _marker_id(attrs.details, attrs.marker_name)
        return f"{kind}({inner}, {MARKER_KEY_FIELD[attrs.marker_name]}={mid})" if mid else f"{kind}({inner})"
    if e.event_type == E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED and attrs is not None:
        return f"{kind}(workflow_id={attrs.workflow_execution.workflow_id!r}, signal_name={attrs.signal_name!r})"
    if e.event_type == E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED and attrs is not None:
        return f"{kind}(workflow_id={attrs.workflow_execution.workflow_id!r})"
    fields = _EVENT_FIELDS.get(e.event_type, ())
    return f"{kind}({_fmt(attrs, fields)})" if attrs is not None and fields else kind
