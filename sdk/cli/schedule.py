"""``spindle schedule create|describe|list|pause|unpause|trigger|backfill|delete`` (docs/SCHEDULES.md).

Every verb takes the connection flags of the other client commands (``--address``,
``--namespace``, ``--api-key``, TLS, ``--codec``). Malformed flag values (a bad cron
expression, interval, time zone, duration, instant or overlap policy) are usage errors
naming the flag (exit status 2) and nothing is sent; so are flags that do not go together
(``--phase`` without ``--interval``, ``--end-at`` before ``--start-at``); the server's
refusals exit with status 1.

Examples::

    spindle schedule create --schedule-id daily-sales --cron "0 6 * * *" --tz Europe/Berlin \\
        --type DailySales --task-queue reports --input '"eu"'
    spindle schedule create --schedule-id quarter-past --interval 1h/15m --type Sync --task-queue q
    spindle schedule backfill --schedule-id daily-sales --start-time 2026-12-01 --end-time 2026-12-07T23:59:59Z
"""

from __future__ import annotations

import datetime
import re

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import click

from spindle.cli import new_group
from spindle.cli._connection import Connection, client_options
from spindle.cli._output import OK, fail, out, out_json
from spindle.cli._values import json_arg

if TYPE_CHECKING:
    from spindle.client import (
        Client,
        Schedule,
        ScheduleActionResult,
        ScheduleDescription,
        ScheduleIntervalSpec,
        ScheduleListEntry,
        ScheduleOverlapPolicy,
    )

__all__ = ["group", "describe_dict", "parse_duration", "parse_interval", "spec_options"]

group = new_group("schedule", "create, describe, list, pause, unpause, trigger, backfill and delete schedules")

_UNITS = {"ms": datetime.timedelta(milliseconds=1), "s": datetime.timedelta(seconds=1),
          "m": datetime.timedelta(minutes=1), "h": datetime.timedelta(hours=1), "d": datetime.timedelta(days=1)}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UTC = datetime.timezone.utc


# ---------------------------------------------------------------------- flag values
def parse_duration(text: str) -> datetime.timedelta:
    """``90s``, ``15m``, ``1h30m``, ``2d`` as a timedelta.

    Raises:
        ValueError: not a duration (the message quotes it).
    """
    value = text.strip()
    pos, total = 0, datetime.timedelta(0)
    for m in _PART.finditer(value):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not value or pos != len(value):
        raise ValueError(f"{text!r} is not a duration (examples: 90s, 15m, 1h30m, 2d)")
    return total


def parse_interval(text: str) -> ScheduleIntervalSpec:
    """``EVERY`` or ``EVERY/PHASE`` (``1h``, ``1h/15m``: every hour at :15) as a ``ScheduleIntervalSpec``.

    Raises:
        ValueError: a part is not a duration, or the interval is not one a schedule takes.
    """
    from spindle.client import ScheduleIntervalSpec

    every_text, sep, phase_text = text.partition("/")
    every = parse_duration(every_text)
    offset = parse_duration(phase_text) if sep else datetime.timedelta(0)
    try:
        return ScheduleIntervalSpec(every=every, offset=offset)
    except ValueError as e:
        raise ValueError(f"{text!r}: {str(e).removeprefix('ScheduleIntervalSpec.')}") from None


def _cron(text: str) -> str:
    from spindle.client import ScheduleSpec

    ScheduleSpec(cron_expressions=[text])  # ValueError: the expression's own message, naming the field
    return text


def _zone(text: str) -> str:
    from spindle.client import ScheduleSpec

    what = "ScheduleSpec.time_zone_name"
    try:
        ScheduleSpec(time_zone_name=text)
    except ValueError as e:
        message = str(e)
        raise ValueError("time zone" + message.removeprefix(what) if message.startswith(what) else message) from None
    return text


def _overlap(text: str) -> ScheduleOverlapPolicy:
    from spindle.client import ScheduleOverlapPolicy

    key = text.strip().upper().replace("-", "_")
    try:
        return ScheduleOverlapPolicy[key]
    except KeyError:
        names = ", ".join(p.name for p in ScheduleOverlapPolicy)
        raise ValueError(f"{text!r} is not an overlap policy; use one of {names}") from None


def _instant(text: str) -> datetime.datetime:
    try:
        t = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time (e.g. 2026-12-01T06:00:00Z or 2026-12-01; without an "
                         "offset it is UTC)") from None
    return t.replace(tzinfo=_UTC) if t.tzinfo is None else t.astimezone(_UTC)


def _whole_number(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"{text!r} is not a whole number (0 or more)")
    return n


class Parsed(click.ParamType):
    """A flag value read by ``parse`` (a ``ValueError`` is click's usage error naming the flag)."""

    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name = name
        self.parse = parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):  # a default given as the value itself
            return value
        try:
            return self.parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


DURATION = Parsed("DURATION", parse_duration)
INTERVAL = Parsed("EVERY[/PHASE]", parse_interval)
CRON = Parsed("EXPR", _cron)
ZONE = Parsed("ZONE", _zone)
OVERLAP = Parsed("POLICY", _overlap)
TIME = Parsed("TIME", _instant)
WHOLE_NUMBER = Parsed("N", _whole_number)


def spec_options(*, tz_default: str | None = "UTC") -> Callable[[Any], Any]:
    """``--cron`` (repeatable), ``--interval`` (repeatable), ``--phase``, ``--tz`` (also used by ``spindle dsl schedule``)."""

    def decorate(f: Any) -> Any:
        for option in reversed([
            click.option("--cron", multiple=True, type=CRON, metavar="EXPR",
                         help="a five-field cron expression or @daily-style alias, read in --tz (repeat for several)"),
            click.option("--interval", multiple=True, type=INTERVAL, metavar="EVERY[/PHASE]",
                         help="a fixed period from the Unix epoch, e.g. 1h, 15m, 1h/15m (every hour at :15); "
                              "repeatable"),
            click.option("--phase", type=DURATION, default=None, metavar="DURATION",
                         help="the phase of the --interval values, e.g. 15m"),
            click.option("--tz", type=ZONE, default=tz_default, metavar="ZONE",
                         help="IANA time zone of the cron expressions (default UTC), e.g. Europe/Berlin"),
        ]):
            f = option(f)
        return f

    return decorate


# ---------------------------------------------------------------------- printing
def _iso(t: datetime.datetime | None) -> str | None:
    return t.isoformat().replace("+00:00", "Z") if t is not None else None


def _action_dict(r: ScheduleActionResult) -> dict[str, Any]:
    return {"scheduled_at": _iso(r.scheduled_at), "started_at": _iso(r.started_at), "workflow_id": r.workflow_id,
            "run_id": r.run_id}


def _memo_values(memo: Mapping[str, Any] | None, client: Client | None) -> dict[str, Any]:
    """Memo values as plain values, for display; one that cannot be decoded is shown as it is."""
    from spindle.api.messages_pb2 import Payload
    from spindle.converter import default

    conv = client.data_converter if client is not None else default()
    shown: dict[str, Any] = {}
    for k, v in (memo or {}).items():
        try:
            shown[k] = conv.from_payload(v) if isinstance(v, Payload) else v
        except ValueError:
            shown[k] = v
    return shown


def describe_dict(d: ScheduleDescription, client: Client | None = None) -> dict[str, Any]:
    """A description as plain JSON values (what ``spindle schedule describe`` prints)."""
    from spindle.client import decoded_args

    s = d.schedule
    a = s.action
    return {
        "schedule_id": d.id,
        "spec": {"cron_expressions": list(s.spec.cron_expressions),
                 "intervals": [{"every_seconds": i.every.total_seconds(), "offset_seconds": i.offset.total_seconds()}
                               for i in s.spec.intervals],
                 "time_zone_name": s.spec.time_zone_name, "jitter_seconds": s.spec.jitter.total_seconds(),
                 "start_at": _iso(s.spec.start_at), "end_at": _iso(s.spec.end_at)},
        "action": {"workflow_type": a.workflow, "workflow_id": a.id, "task_queue": a.task_queue,
                   "input": decoded_args(a, client.data_converter if client is not None else None),
                   "memo": _memo_values(a.memo, client),
                   "execution_timeout_seconds": a.execution_timeout.total_seconds() if a.execution_timeout else None,
                   "run_timeout_seconds": a.run_timeout.total_seconds() if a.run_timeout else None,
                   "task_timeout_seconds": a.task_timeout.total_seconds() if a.task_timeout else None},
        "policy": {"overlap": s.policy.overlap.name, "catchup_window_seconds": s.policy.catchup_window.total_seconds(),
                   "pause_on_failure": s.policy.pause_on_failure},
        "state": {"paused": s.state.paused, "note": s.state.note, "remaining_actions": s.state.remaining_actions},
        "info": {"num_actions": d.info.num_actions,
                 "num_actions_missed_catchup_window": d.info.num_actions_missed_catchup_window,
                 "num_actions_skipped_overlap": d.info.num_actions_skipped_overlap,
                 "running_workflows": [{"workflow_id": r.workflow_id, "run_id": r.first_execution_run_id}
                                       for r in d.info.running_actions],
                 "recent_actions": [_action_dict(r) for r in d.info.recent_actions],
                 "next_action_times": [_iso(t) for t in d.info.next_action_times],
                 "created_at": _iso(d.info.created_at), "last_updated_at": _iso(d.info.last_updated_at)},
    }


def _entry_dict(e: ScheduleListEntry) -> dict[str, Any]:
    return {"schedule_id": e.id, "paused": e.paused, "note": e.note, "workflow_type": e.workflow_type,
            "recent_actions": [_action_dict(r) for r in e.recent_actions],
            "next_action_times": [_iso(t) for t in e.next_action_times]}


# ---------------------------------------------------------------------- create
def build_schedule(p: Mapping[str, Any]) -> Schedule:
    """The schedule the ``spindle schedule create`` flags (``p``, by parameter name) describe.

    Raises:
        CliError: naming the flag: no --cron/--interval, --phase with a phase already in
            --interval, --end-at before --start-at, a bad --input or --memo.
    """
    from spindle.client import (
        Schedule,
        ScheduleActionStartWorkflow,
        ScheduleIntervalSpec,
        SchedulePolicy,
        ScheduleSpec,
        ScheduleState,
    )

    if not p["cron"] and not p["interval"]:
        fail("schedule create: give --cron or --interval (at least one)")
    intervals = list(p["interval"])
    if p["phase"] is not None:
        if not intervals:
            fail("--phase: applies to --interval; there is none")
        if any(i.offset for i in intervals):
            fail("--phase: an --interval already has a phase (EVERY/PHASE); give it one way")
        try:
            intervals = [ScheduleIntervalSpec(every=i.every, offset=p["phase"]) for i in intervals]
        except ValueError as e:
            fail(f"--phase: {str(e).removeprefix('ScheduleIntervalSpec.')}")
    if p["start_at"] and p["end_at"] and p["end_at"] < p["start_at"]:
        fail(f"--end-at: {_iso(p['end_at'])} is before --start-at {_iso(p['start_at'])}")
    inputs = [json_arg(v, "--input") for v in p["input"]]
    memo = {}
    for item in p["memo"]:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--memo: expected KEY=JSON, got {item!r}")
        memo[key] = json_arg(value, "--memo")
    return Schedule(
        action=ScheduleActionStartWorkflow(p["workflow_type"], *inputs, id=p["workflow_id"] or p["schedule_id"],
                                           task_queue=p["task_queue"], execution_timeout=p["execution_timeout"],
                                           run_timeout=p["run_timeout"], task_timeout=p["task_timeout"],
                                           memo=memo or None),
        spec=ScheduleSpec(cron_expressions=list(p["cron"]), intervals=intervals, time_zone_name=p["tz"],
                          jitter=p["jitter"], start_at=p["start_at"], end_at=p["end_at"]),
        policy=SchedulePolicy(overlap=p["overlap"], pause_on_failure=p["pause_on_failure"],
                              **({} if p["catchup_window"] is None else {"catchup_window": p["catchup_window"]})),
        state=ScheduleState(paused=p["paused"], note=p["note"], remaining_actions=p["remaining_actions"]))


def _schedule_id_option(f: Any) -> Any:
    return click.option("--schedule-id", "-s", required=True, help="the schedule's id")(f)


@group.command("create", help="create a schedule that starts a workflow at each due time")
@client_options()
@_schedule_id_option
@spec_options()
@click.option("--jitter", type=DURATION, default="0s", metavar="DURATION",
              help="delay each action by a random amount below this, e.g. 30s")
@click.option("--start-at", type=TIME, default=None, metavar="TIME", help="no action before (ISO 8601)")
@click.option("--end-at", type=TIME, default=None, metavar="TIME", help="no action after (ISO 8601)")
@click.option("--overlap", type=OVERLAP, default="SKIP", metavar="POLICY",
              help="SKIP (default), BUFFER_ONE, BUFFER_ALL, CANCEL_OTHER, TERMINATE_OTHER or ALLOW_ALL")
@click.option("--catchup-window", type=DURATION, default=None, metavar="DURATION",
              help="after downtime, run missed actions due at most this long ago (default 365d)")
@click.option("--pause-on-failure", is_flag=True, help="pause when a started workflow fails")
@click.option("--paused", is_flag=True, help="create it paused")
@click.option("--note", default="", help="the state's note")
@click.option("--remaining-actions", type=WHOLE_NUMBER, default=None, metavar="N",
              help="take at most N scheduled actions (default: no limit)")
@click.option("--trigger-immediately", is_flag=True, help="also take one action now")
@click.option("--type", "workflow_type", required=True, help="the workflow type each action starts")
@click.option("--task-queue", "-t", required=True, help="the task queue of the started workflows")
@click.option("--workflow-id", "-w", default=None,
              help="prefix of each run's id, '{prefix}-{time}' (default: the schedule id)")
@click.option("--input", "-i", multiple=True, metavar="JSON", help="a JSON argument of the workflow (repeat for several)")
@click.option("--memo", multiple=True, metavar="KEY=JSON", help="a memo entry of each run")
@click.option("--execution-timeout", type=DURATION, default=None, metavar="DURATION")
@click.option("--run-timeout", type=DURATION, default=None, metavar="DURATION")
@click.option("--task-timeout", type=DURATION, default=None, metavar="DURATION")
def create(conn: Connection, **params: Any) -> int:
    schedule = build_schedule(params)  # every mistake exits 2 before connecting

    async def body(client: Client) -> int:
        handle = await client.create_schedule(params["schedule_id"], schedule,
                                              trigger_immediately=params["trigger_immediately"])
        desc = await handle.describe()
        out_json({"schedule_id": handle.id, "next_action_times": [_iso(t) for t in desc.info.next_action_times[:3]]})
        return OK

    return conn.run(body)


# ---------------------------------------------------------------------- the other verbs
@group.command("describe", help="print a schedule, its recent and next actions (JSON)")
@client_options()
@_schedule_id_option
def describe(conn: Connection, schedule_id: str) -> int:
    async def body(client: Client) -> int:
        d = await client.get_schedule_handle(schedule_id).describe()
        out_json(describe_dict(d, client), indent=2)
        return OK

    return conn.run(body)


@group.command("list", help="list the namespace's schedules")
@client_options()
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
def list_(conn: Connection, output: str) -> int:
    async def body(client: Client) -> int:
        entries = [e async for e in client.list_schedules()]
        if output == "json":
            out_json([_entry_dict(e) for e in entries], indent=2)
            return OK
        out(f"{'SCHEDULE ID':<32} {'WORKFLOW TYPE':<24} {'PAUSED':<7} NEXT ACTION")
        for e in entries:
            nxt = _iso(e.next_action_times[0]) if e.next_action_times else ""
            out(f"{e.id:<32} {e.workflow_type:<24} {'yes' if e.paused else 'no':<7} {nxt}")
        return OK

    return conn.run(body)


def _pause_verb(name: str, help: str, paused: bool) -> click.Command:
    @group.command(name, help=help)
    @client_options()
    @_schedule_id_option
    @click.option("--note", default=None, help="why (stored as the schedule's note)")
    def command(conn: Connection, schedule_id: str, note: str | None) -> int:
        async def body(client: Client) -> int:
            handle = client.get_schedule_handle(schedule_id)
            await (handle.pause(note=note) if paused else handle.unpause(note=note))
            out(f"schedule {schedule_id} {name}d")
            return OK

        return conn.run(body)

    return command


pause = _pause_verb("pause", "pause a schedule", True)
unpause = _pause_verb("unpause", "unpause a schedule (no burst of missed actions)", False)


@group.command("trigger", help="take one action now (also while paused)")
@client_options()
@_schedule_id_option
@click.option("--overlap", type=OVERLAP, default=None, metavar="POLICY",
              help="overlap policy for this action (default: the schedule's)")
def trigger(conn: Connection, schedule_id: str, overlap: ScheduleOverlapPolicy | None) -> int:
    async def body(client: Client) -> int:
        await client.get_schedule_handle(schedule_id).trigger(overlap=overlap)
        out(f"schedule {schedule_id} triggered")
        return OK

    return conn.run(body)


@group.command("backfill", help="take now the actions due in a past time range")
@client_options()
@_schedule_id_option
@click.option("--start-time", type=TIME, required=True, metavar="TIME", help="range start (ISO 8601, inclusive)")
@click.option("--end-time", type=TIME, required=True, metavar="TIME", help="range end (ISO 8601, inclusive)")
@click.option("--overlap", type=OVERLAP, default=None, metavar="POLICY",
              help="overlap policy for these actions (default: the schedule's)")
def backfill(conn: Connection, schedule_id: str, start_time: datetime.datetime, end_time: datetime.datetime,
             overlap: ScheduleOverlapPolicy | None) -> int:
    if end_time < start_time:
        fail(f"--end-time: {_iso(end_time)} is before --start-time {_iso(start_time)}")

    async def body(client: Client) -> int:
        from spindle.client import ScheduleBackfill

        await client.get_schedule_handle(schedule_id).backfill(
            ScheduleBackfill(start_at=start_time, end_at=end_time, overlap=overlap))
        out(f"schedule {schedule_id}: backfill from {_iso(start_time)} to {_iso(end_time)} requested")
        return OK

    return conn.run(body)


@group.command("delete", help="delete a schedule (the workflows it started keep running)")
@client_options()
@_schedule_id_option
def delete(conn: Connection, schedule_id: str) -> int:
    async def body(client: Client) -> int:
        await client.get_schedule_handle(schedule_id).delete()
        out(f"schedule {schedule_id} deleted")
        return OK

    return conn.run(body)
