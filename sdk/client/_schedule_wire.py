"""Schedules between the SDK's types and the wire: ``Schedule`` <-> ``spindle.v1.Schedule`` and friends.

Values only; no I/O. The action's arguments and memo values are converted by the client's
data converter here; the payload codec is applied afterwards to the whole request (and
before this module sees a response) by the client, with the role ``workflow.input`` /
``memo.<key>`` (see :mod:`spindle.converter._payload_visitor`).

Read back (``describe``), the action's arguments and memo values are the raw
``spindle.v1.Payload`` messages (codec already undone), as Temporal's SDK gives them: the
client does not know the types they were made from, and a payload given as an argument
is sent unchanged, so ``handle.update`` round-trips them exactly. :func:`decoded_args`
turns them into plain values for display.

Where the wire has no field for a value, conversion refuses it rather than dropping it:
``ScheduleActionStartWorkflow.retry_policy`` (Spindle's start request has no workflow
retry policy).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._schedule_description import (
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionResult,
    ScheduleDescription,
    ScheduleInfo,
    ScheduleListEntry,
)
from spindle.client._schedule_types import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from spindle.common._search_attributes import search_attributes_to_payloads, typed_from_payloads
from spindle.converter._data_converter import DataConverter

__all__ = [
    "action_from_proto",
    "action_to_proto",
    "backfill_to_proto",
    "decoded_args",
    "description_from_proto",
    "info_from_proto",
    "list_entry_from_proto",
    "memo_values",
    "overlap_to_proto",
    "schedule_from_proto",
    "schedule_to_proto",
    "spec_from_proto",
    "spec_to_proto",
]

_UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=_UTC)
_MS = timedelta(milliseconds=1)
_DEFAULT_CATCHUP = SchedulePolicy().catchup_window


def _ms(d: timedelta) -> int:
    return d // _MS


def _instant_ms(t: datetime) -> int:
    if t.tzinfo is None or t.utcoffset() is None:
        t = t.replace(tzinfo=_UTC)
    return (t - _EPOCH) // _MS


def _instant(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def overlap_to_proto(policy: ScheduleOverlapPolicy | None) -> int:
    """The wire value of an overlap policy (``None``: UNSPECIFIED, the schedule's own)."""
    if policy is None:
        return pb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED
    if not isinstance(policy, ScheduleOverlapPolicy):
        raise TypeError(f"overlap must be a ScheduleOverlapPolicy or None, got {policy!r}")
    return int(policy)


def _overlap_from_proto(value: int) -> ScheduleOverlapPolicy:
    return ScheduleOverlapPolicy(value) if value else ScheduleOverlapPolicy.SKIP


def _payload(value: Any, converter: DataConverter) -> pb.Payload:
    if isinstance(value, pb.Payload):
        copy = pb.Payload()
        copy.CopyFrom(value)
        return copy
    return converter.to_payload(value)


# ---------------------------------------------------------------------------- SDK -> wire
def spec_to_proto(spec: ScheduleSpec) -> pb.ScheduleSpec:
    """The wire form of a spec (checked when it was built)."""
    out = pb.ScheduleSpec(cron_expressions=list(spec.cron_expressions),
                          intervals=[pb.ScheduleIntervalSpec(every_ms=_ms(i.every), offset_ms=_ms(i.offset))
                                     for i in spec.intervals],
                          time_zone_name=spec.time_zone_name, jitter_ms=_ms(spec.jitter))
    if spec.start_at is not None:
        out.start_at_ms = _instant_ms(spec.start_at)
    if spec.end_at is not None:
        out.end_at_ms = _instant_ms(spec.end_at)
    return out


def action_to_proto(action: ScheduleActionStartWorkflow, converter: DataConverter) -> pb.ScheduleActionStartWorkflow:
    """The wire form of an action, its arguments and memo converted by ``converter`` (not yet codec-encoded).

    Raises:
        ValueError: ``retry_policy`` is set (the wire has no place for it).
        TypeError: an argument, memo value or search attribute cannot be converted.
    """
    if action.retry_policy is not None:
        raise ValueError("ScheduleActionStartWorkflow.retry_policy: not supported (Spindle starts workflows "
                         "without a workflow retry policy); retry inside the workflow or with activity retries")
    out = pb.ScheduleActionStartWorkflow(
        workflow_id=action.id, workflow_type=action.workflow, task_queue=action.task_queue,
        execution_timeout_ms=_ms(action.execution_timeout) if action.execution_timeout else 0,
        run_timeout_ms=_ms(action.run_timeout) if action.run_timeout else 0,
        task_timeout_ms=_ms(action.task_timeout) if action.task_timeout else 0)
    if action.args:
        out.input.CopyFrom(pb.Payloads(payloads=[_payload(a, converter) for a in action.args]))
    for key, value in (action.memo or {}).items():
        out.memo.fields[key].CopyFrom(_payload(value, converter))
    for key, p in search_attributes_to_payloads(action.search_attributes, converter,
                                                where="ScheduleActionStartWorkflow.search_attributes").items():
        out.search_attributes.indexed_fields[key].CopyFrom(p)
    return out


def schedule_to_proto(schedule: Schedule, converter: DataConverter) -> pb.Schedule:
    """The wire form of a schedule (payloads converted, not yet codec-encoded).

    Raises:
        ValueError, TypeError: see :func:`action_to_proto`.
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a spindle.client.Schedule, got {type(schedule).__name__}")
    schedule._check()  # an updater may have assigned fields since it was built
    state = pb.ScheduleState(paused=schedule.state.paused, notes=schedule.state.note)
    if schedule.state.remaining_actions is not None:
        state.remaining_actions = schedule.state.remaining_actions
    return pb.Schedule(
        spec=spec_to_proto(schedule.spec),
        action=action_to_proto(schedule.action, converter),
        policies=pb.SchedulePolicies(overlap_policy=int(schedule.policy.overlap),  # type: ignore[arg-type]  # protobuf enum fields are typed as their ValueType; the int is one of its values
                                     catchup_window_ms=_ms(schedule.policy.catchup_window),
                                     pause_on_failure=schedule.policy.pause_on_failure),
        state=state)


def backfill_to_proto(backfill: ScheduleBackfill) -> svc.ScheduleBackfillRequest:
    """The wire form of one backfill range."""
    if not isinstance(backfill, ScheduleBackfill):
        raise TypeError(f"backfill must be a ScheduleBackfill, got {type(backfill).__name__} {backfill!r}")
    backfill.__post_init__()  # checked again: its fields may have been assigned since it was built
    return svc.ScheduleBackfillRequest(start_time_ms=_instant_ms(backfill.start_at),
                                       end_time_ms=_instant_ms(backfill.end_at),
                                       overlap_policy=overlap_to_proto(backfill.overlap))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- wire -> SDK
def spec_from_proto(spec: pb.ScheduleSpec) -> ScheduleSpec:
    return ScheduleSpec(
        cron_expressions=list(spec.cron_expressions),
        intervals=[ScheduleIntervalSpec(every=timedelta(milliseconds=i.every_ms),
                                        offset=timedelta(milliseconds=i.offset_ms)) for i in spec.intervals],
        time_zone_name=spec.time_zone_name or "UTC",
        jitter=timedelta(milliseconds=spec.jitter_ms),
        start_at=_instant(spec.start_at_ms) if spec.HasField("start_at_ms") else None,
        end_at=_instant(spec.end_at_ms) if spec.HasField("end_at_ms") else None)


def _copy(p: pb.Payload) -> pb.Payload:
    out = pb.Payload()
    out.CopyFrom(p)
    return out


def action_from_proto(action: pb.ScheduleActionStartWorkflow) -> ScheduleActionStartWorkflow:
    """The SDK form of an action; arguments and memo values stay ``Payload`` messages (see the module docstring)."""
    def timeout(ms: int) -> timedelta | None:
        return timedelta(milliseconds=ms) if ms else None
    sa: Any = None
    if action.search_attributes.indexed_fields:
        sa = typed_from_payloads(action.search_attributes.indexed_fields)
    return ScheduleActionStartWorkflow(
        action.workflow_type,
        *[_copy(p) for p in action.input.payloads],
        id=action.workflow_id, task_queue=action.task_queue,
        execution_timeout=timeout(action.execution_timeout_ms), run_timeout=timeout(action.run_timeout_ms),
        task_timeout=timeout(action.task_timeout_ms),
        memo={k: _copy(v) for k, v in action.memo.fields.items()} or None,
        search_attributes=sa)


def schedule_from_proto(schedule: pb.Schedule) -> Schedule:
    """The SDK form of a wire schedule (its payloads already codec-decoded)."""
    p = schedule.policies
    s = schedule.state
    return Schedule(
        action=action_from_proto(schedule.action),
        spec=spec_from_proto(schedule.spec),
        policy=SchedulePolicy(overlap=_overlap_from_proto(p.overlap_policy),
                              catchup_window=timedelta(milliseconds=p.catchup_window_ms) if p.catchup_window_ms
                              else _DEFAULT_CATCHUP,
                              pause_on_failure=p.pause_on_failure),
        state=ScheduleState(paused=s.paused, note=s.notes,
                            remaining_actions=s.remaining_actions if s.HasField("remaining_actions") else None))


def _action_result(r: pb.ScheduleActionResult) -> ScheduleActionResult:
    return ScheduleActionResult(scheduled_at=_instant(r.schedule_time_ms), started_at=_instant(r.actual_time_ms),
                                workflow_id=r.workflow_id, run_id=r.run_id)


def info_from_proto(info: pb.ScheduleInfo) -> ScheduleInfo:
    return ScheduleInfo(
        num_actions=info.action_count,
        num_actions_missed_catchup_window=info.missed_catchup_window,
        num_actions_skipped_overlap=info.overlap_skipped,
        running_actions=[ScheduleActionExecutionStartWorkflow(w.workflow_id, w.run_id)
                         for w in info.running_workflows],
        recent_actions=[_action_result(r) for r in info.recent_actions],
        next_action_times=[_instant(ms) for ms in info.future_action_times_ms],
        created_at=_instant(info.create_time_ms) if info.create_time_ms else None,
        last_updated_at=_instant(info.update_time_ms) if info.update_time_ms else None)


def description_from_proto(schedule_id: str, resp: svc.DescribeScheduleResponse) -> ScheduleDescription:
    """A describe response (payloads already codec-decoded) as a :class:`ScheduleDescription`."""
    return ScheduleDescription(id=schedule_id, schedule=schedule_from_proto(resp.schedule),
                               info=info_from_proto(resp.info))


def list_entry_from_proto(entry: svc.ScheduleListEntry) -> ScheduleListEntry:
    return ScheduleListEntry(id=entry.schedule_id, paused=entry.paused,
                             next_action_times=[_instant(ms) for ms in entry.future_action_times_ms],
                             note=entry.notes, workflow_type=entry.workflow_type,
                             recent_actions=[_action_result(r) for r in entry.recent_actions])


def decoded_args(action: ScheduleActionStartWorkflow, converter: DataConverter | None = None) -> list[Any]:
    """The action's arguments as plain values (JSON types, bytes), for display; payloads that cannot be decoded stay."""
    conv = converter or DataConverter.default
    out: list[Any] = []
    for a in action.args:
        if isinstance(a, pb.Payload):
            try:
                out.append(conv.from_payload(a))
            except ValueError:
                out.append(a)
        else:
            out.append(a)
    return out


def memo_values(memo: Mapping[str, Any] | None, converter: DataConverter | None = None) -> dict[str, Any]:
    """Memo values as plain values, for display (see :func:`decoded_args`)."""
    conv = converter or DataConverter.default
    out: dict[str, Any] = {}
    for k, v in (memo or {}).items():
        try:
            out[k] = conv.from_payload(v) if isinstance(v, pb.Payload) else v
        except ValueError:
            out[k] = v
    return out
