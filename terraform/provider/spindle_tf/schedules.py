"""The ``spindle_schedule`` resource: a schedule that starts a workflow at cron or interval times.

Create, in-place update (UpdateSchedule: the schedule keeps what it did), pause and unpause
through the ``paused`` attribute, import by ``SCHEDULE_ID`` or ``NAMESPACE/SCHEDULE_ID``,
and drift: a schedule changed outside Terraform (paused by hand, another cron) reads back
as it is, so the plan shows the difference and apply puts the configuration back.
Changing ``schedule_id`` or ``namespace`` replaces the schedule.

Intervals are written ``EVERY`` or ``EVERY/PHASE`` (``1h``, ``1h/15m``); ``input`` is a
JSON array of the workflow's arguments (each sent as a ``json/plain`` payload, as the SDK's
default data converter does).
"""

from __future__ import annotations

import json

from typing import TYPE_CHECKING, Any, Optional

import grpc

from tf import schema, types
from tf.iface import (
    Config,
    CreateContext,
    DeleteContext,
    ImportContext,
    PlanContext,
    ReadContext,
    Resource,
    State,
    UpdateContext,
    UpgradeContext,
)
from tf.utils import Diagnostics

from .client import SpindleError, svc
from .diagnostics import add_server_error, is_unknown, report
from .schedule_rules import OVERLAP_POLICIES, check_schedule_config, format_interval, interval_ms

if TYPE_CHECKING:
    from .context import ProviderContext

try:
    from spindle.api import messages_pb2 as pb
except ImportError as e:  # pragma: no cover - depends on the installation (see client.py)
    raise ImportError(f"the Spindle gRPC stubs for the provider are missing ({e}); run "
                      "`spindle terraform install-provider` again") from e

_DEFAULT_CATCHUP_S = 365 * 86_400

#: Server field prefixes (as they lead INVALID_ARGUMENT messages) -> attribute names.
_FIELD_TO_ATTRIBUTE = (
    ("schedule.spec.cron_expressions", "cron_expressions"), ("schedule.spec.intervals", "intervals"),
    ("schedule.spec.time_zone_name", "time_zone"), ("schedule.spec.jitter_ms", "jitter_seconds"),
    ("schedule.action.workflow_id", "workflow_id"), ("schedule.action.workflow_type", "workflow_type"),
    ("schedule.action.task_queue", "task_queue"), ("schedule.action.input", "input"),
    ("schedule.action.search_attributes", "workflow_id"), ("schedule.policies.catchup_window_ms",
                                                            "catchup_window_seconds"),
    ("schedule_id", "schedule_id"),
)


class CompactJson(types.NormalizedJson):
    """JSON written as Terraform's ``jsonencode`` writes it (keys sorted, no spaces), so an imported value matches."""

    def encode(self, value: Any) -> Any:
        if value is None or is_unknown(value):
            return value
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _known(planned: State, key: str) -> Any:
    value = planned.get(key)
    return None if is_unknown(value) else value


def _schedule(planned: State) -> Any:
    """The wire Schedule of a planned state (unknown computed values take their defaults)."""
    planned = {k: _known(planned, k) for k in planned}
    every = [interval_ms(iv) for iv in planned.get("intervals") or ()]
    spec = pb.ScheduleSpec(cron_expressions=list(planned.get("cron_expressions") or ()),
                           intervals=[pb.ScheduleIntervalSpec(every_ms=e, offset_ms=o) for e, o in every],
                           time_zone_name=planned.get("time_zone") or "UTC",
                           jitter_ms=int((planned.get("jitter_seconds") or 0) * 1000))
    args = planned.get("input") or []
    if isinstance(args, str):
        args = json.loads(args)
    action = pb.ScheduleActionStartWorkflow(
        workflow_id=planned.get("workflow_id") or planned["schedule_id"], workflow_type=planned["workflow_type"],
        task_queue=planned["task_queue"],
        input=pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"},
                                               data=json.dumps(a, separators=(",", ":")).encode()) for a in args]))
    catchup = planned.get("catchup_window_seconds")
    policies = pb.SchedulePolicies(overlap_policy=OVERLAP_POLICIES.index(planned.get("overlap") or "SKIP") + 1,
                                   catchup_window_ms=int(catchup * 1000) if catchup else 0,
                                   pause_on_failure=bool(planned.get("pause_on_failure")))
    state = pb.ScheduleState(paused=bool(planned.get("paused")), notes=planned.get("note") or "")
    return pb.Schedule(spec=spec, action=action, policies=policies, state=state)


def _same(prior: Any, value: Any) -> bool:
    return prior is not None and not is_unknown(prior) and prior == value


def schedule_state(schedule_id: str, namespace: str, resp: Any, prior: State) -> State:
    """The state of a described schedule; spellings the prior state had for equal values are kept."""
    s = resp.schedule
    intervals = [format_interval(iv.every_ms, iv.offset_ms) for iv in s.spec.intervals]
    prior_iv = prior.get("intervals")
    if prior_iv and not is_unknown(prior_iv) and len(prior_iv) == len(intervals):
        try:
            if [interval_ms(p) for p in prior_iv] == [(iv.every_ms, iv.offset_ms) for iv in s.spec.intervals]:
                intervals = list(prior_iv)
        except ValueError:
            pass
    args: list[Any] = []
    for p in s.action.input.payloads:
        try:
            args.append(json.loads(p.data) if p.metadata.get("encoding") == b"json/plain" else None)
        except ValueError:
            args.append(None)
    catchup_s = s.policies.catchup_window_ms // 1000 if s.policies.catchup_window_ms else _DEFAULT_CATCHUP_S
    overlap = OVERLAP_POLICIES[(s.policies.overlap_policy or 1) - 1]
    return {
        "id": f"{namespace}/{schedule_id}",
        "schedule_id": schedule_id,
        "namespace": namespace,
        "cron_expressions": list(s.spec.cron_expressions) or (None if prior.get("cron_expressions") is None else []),
        "intervals": intervals or (None if prior.get("intervals") is None else []),
        "time_zone": s.spec.time_zone_name or "UTC",
        "jitter_seconds": s.spec.jitter_ms // 1000,
        "workflow_type": s.action.workflow_type,
        "workflow_id": s.action.workflow_id,
        "task_queue": s.action.task_queue,
        "input": args if args or prior.get("input") is not None else None,
        "overlap": overlap,
        "catchup_window_seconds": catchup_s,
        "pause_on_failure": s.policies.pause_on_failure if s.policies.pause_on_failure or prior.get(
            "pause_on_failure") is not None else None,
        "paused": s.state.paused if s.state.paused or prior.get("paused") is not None else None,
        "note": s.state.notes if s.state.notes or prior.get("note") is not None else None,
    }


def _server_error(diags: Diagnostics, summary: str, e: SpindleError) -> None:
    attribute = next((a for f, a in _FIELD_TO_ATTRIBUTE if e.message.startswith(f)), None)
    if attribute is not None:
        diags.add_error(summary, e.describe(), path=[attribute])
    else:
        add_server_error(diags, summary, e)


class ScheduleResource(Resource):
    """A Spindle schedule. Import with ``terraform import spindle_schedule.NAME [NAMESPACE/]SCHEDULE_ID``."""

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        """``spindle_schedule``."""
        return "schedule"

    @classmethod
    def get_schema(cls) -> schema.Schema:
        """Attributes of ``spindle_schedule``."""
        S, N, B = types.String(), types.Number(), types.Bool()
        return schema.Schema(
            version=0,
            description="A Spindle schedule: starts a workflow `{workflow_id}-{time}` at cron and interval times. "
                        "Import with `terraform import spindle_schedule.NAME [NAMESPACE/]SCHEDULE_ID`.",
            attributes=[
                schema.Attribute("id", S, computed=True, description="`NAMESPACE/SCHEDULE_ID`."),
                schema.Attribute("schedule_id", S, required=True, requires_replace=True,
                                 description="The schedule's id. Changing it replaces the schedule."),
                schema.Attribute("namespace", S, optional=True, computed=True, requires_replace=True,
                                 description="Default: the provider's namespace."),
                schema.Attribute("cron_expressions", types.List(S), optional=True,
                                 description="Five-field cron expressions or @daily-style aliases, read in "
                                             "time_zone (checked by the server at apply)."),
                schema.Attribute("intervals", types.List(S), optional=True,
                                 description="Fixed periods from the Unix epoch: `EVERY` or `EVERY/PHASE`, e.g. `1h`, "
                                             "`1h/15m` (every hour at :15)."),
                schema.Attribute("time_zone", S, optional=True, computed=True,
                                 description="IANA time zone of the cron expressions. Default `UTC`."),
                schema.Attribute("jitter_seconds", N, optional=True, computed=True,
                                 description="Delay each action by a random amount below this. Default 0."),
                schema.Attribute("workflow_type", S, required=True, description="The workflow type each action starts."),
                schema.Attribute("workflow_id", S, optional=True, computed=True,
                                 description="Prefix of each run's id. Default: the schedule id."),
                schema.Attribute("task_queue", S, required=True, description="Task queue of the started workflows."),
                schema.Attribute("input", CompactJson(), optional=True,
                                 description="The workflow's arguments as a JSON array, e.g. `jsonencode([\"eu\"])`."),
                schema.Attribute("overlap", S, optional=True, computed=True,
                                 description=f"Overlap policy: {', '.join(OVERLAP_POLICIES)}. Default `SKIP`."),
                schema.Attribute("catchup_window_seconds", N, optional=True, computed=True,
                                 description="After downtime, actions due at most this long ago still run. Default "
                                             "one year."),
                schema.Attribute("pause_on_failure", B, optional=True,
                                 description="Pause the schedule when a workflow it started fails."),
                schema.Attribute("paused", B, optional=True,
                                 description="Pause (true) or unpause (false or unset) the schedule in place; a "
                                             "schedule paused outside Terraform shows as drift. Unpausing does not "
                                             "run the actions missed while paused."),
                schema.Attribute("note", S, optional=True, description="The schedule state's note (why it is paused)."),
            ],
        )

    def validate(self, diags: Diagnostics, type_name: str, config: Config) -> None:
        """Schema checks, then the schedule's own rules (times given, intervals, zone, policy, durations)."""
        super().validate(diags, type_name, config)
        if not diags.has_errors():
            report(diags, check_schedule_config(config, is_unknown))

    def plan(self, ctx: PlanContext, current: Optional[State], planned: State) -> Optional[State]:
        """Updates are planned as configured; intervals spelled otherwise but equal (``60m`` for ``1h``) are no change."""
        if current is not None:
            now, want = current.get("intervals"), planned.get("intervals")
            if now and want and not is_unknown(want) and all(isinstance(w, str) and not is_unknown(w) for w in want):
                try:
                    if [interval_ms(x) for x in now] == [interval_ms(x) for x in want]:
                        planned = {**planned, "intervals": list(now)}
                except ValueError:
                    pass
        return planned

    def create(self, ctx: CreateContext, planned: State) -> Optional[State]:
        """CreateSchedule with the configured spec, action, policy and state."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        ns = _known(planned, "namespace") or self.provider.default_namespace
        sid = planned["schedule_id"]
        try:
            conn.call("CreateSchedule", svc.CreateScheduleRequest(namespace=ns, schedule_id=sid,
                                                                 schedule=_schedule(planned)))
        except SpindleError as e:
            if e.code == grpc.StatusCode.ALREADY_EXISTS:
                ctx.diagnostics.add_error(f"Schedule {sid!r} already exists in namespace {ns!r}",
                                          f"{e.describe()}. To manage it with Terraform, import it: terraform import "
                                          f"<resource address> {ns}/{sid}", path=["schedule_id"])
            else:
                _server_error(ctx.diagnostics, f"Cannot create schedule {sid!r}", e)
            return None
        return self._read(conn, ns, sid, planned, ctx.diagnostics)

    def _read(self, conn: Any, ns: str, sid: str, prior: State, diags: Diagnostics) -> Optional[State]:
        resp = conn.call("DescribeSchedule", svc.DescribeScheduleRequest(namespace=ns, schedule_id=sid))
        return schedule_state(sid, ns, resp, prior)

    def read(self, ctx: ReadContext, current: State) -> Optional[State]:
        """DescribeSchedule; a schedule deleted outside Terraform reads as gone (planned for creation)."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return current
        ns, sid = current.get("namespace") or self.provider.default_namespace, current["schedule_id"]
        try:
            return self._read(conn, ns, sid, current, ctx.diagnostics)
        except SpindleError as e:
            if e.code == grpc.StatusCode.NOT_FOUND and "schedule_id" in e.message:
                return None
            add_server_error(ctx.diagnostics, f"Cannot read schedule {sid!r}", e)
            return current

    def update(self, ctx: UpdateContext, current: State, planned: State) -> Optional[State]:
        """UpdateSchedule: the whole schedule is replaced in place; what it did (its actions) is kept."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        ns = _known(planned, "namespace") or self.provider.default_namespace
        sid = planned["schedule_id"]
        try:
            conn.call("UpdateSchedule", svc.UpdateScheduleRequest(namespace=ns, schedule_id=sid,
                                                                 schedule=_schedule(planned)))
            return self._read(conn, ns, sid, planned, ctx.diagnostics)
        except SpindleError as e:
            _server_error(ctx.diagnostics, f"Cannot update schedule {sid!r}", e)
            return None

    def delete(self, ctx: DeleteContext, current: State) -> None:
        """DeleteSchedule (workflows it started keep running)."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        ns, sid = current["namespace"], current["schedule_id"]
        try:
            conn.call("DeleteSchedule", svc.DeleteScheduleRequest(namespace=ns, schedule_id=sid))
        except SpindleError as e:
            if e.code != grpc.StatusCode.NOT_FOUND:
                add_server_error(ctx.diagnostics, f"Cannot delete schedule {sid!r}", e)
        return None

    def import_(self, ctx: ImportContext, id: str) -> Optional[State]:
        """Import by ``SCHEDULE_ID`` (the provider's namespace) or ``NAMESPACE/SCHEDULE_ID``."""
        ns, sep, sid = id.partition("/")
        if not sep:
            ns, sid = self.provider.default_namespace, id
        if not ns or not sid or "/" in sid:
            ctx.diagnostics.add_error(f"Invalid import ID {id!r}", "The import ID of spindle_schedule is SCHEDULE_ID "
                                                                   "or NAMESPACE/SCHEDULE_ID.")
            return None
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        try:
            return self._read(conn, ns, sid, {}, ctx.diagnostics)
        except SpindleError as e:
            if e.code == grpc.StatusCode.NOT_FOUND:
                ctx.diagnostics.add_error(f"Cannot import schedule {id!r}: not found",
                                          f"{e.message} (on the Spindle server at {conn.address}).")
            else:
                add_server_error(ctx.diagnostics, f"Cannot import schedule {id!r}", e)
            return None

    def upgrade(self, ctx: UpgradeContext, version: int, old: State) -> Optional[State]:
        """Schema version 0 is the only one so far."""
        return old


__all__ = ["CompactJson", "ScheduleResource", "schedule_state"]
