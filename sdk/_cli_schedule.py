"""``spindle schedule create|describe|list|pause|unpause|trigger|backfill|delete`` (docs/SCHEDULES.md).

Registered into the ``spindle`` command through the ``spindle.cli`` entry points. Every
verb takes the connection flags of the other client commands (``--address``,
``--namespace``, ``--api-key``, TLS, ``--codec``). Malformed flag values (a bad cron
expression, interval, time zone, duration, instant or overlap policy) are argparse
errors naming the flag (exit status 2) and nothing is sent; the server's refusals exit
with status 1.

Examples::

    spindle schedule create --schedule-id daily-sales --cron "0 6 * * *" --tz Europe/Berlin \\
        --type DailySales --task-queue reports --input '"eu"'
    spindle schedule create --schedule-id quarter-past --interval 1h/15m --type Sync --task-queue q
    spindle schedule backfill --schedule-id daily-sales --start-time 2026-12-01 --end-time 2026-12-07T23:59:59Z
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from spindle._cli import _codec_option, _common, _json_arg, _run, _UserError
from spindle.client._client import Client
from spindle.api._schedule_rules import check_cron_expression, check_time_zone_name
from spindle.client._schedule_description import ScheduleActionResult, ScheduleDescription, ScheduleListEntry
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
from spindle.client._schedule_wire import decoded_args, memo_values

__all__ = ["add_spec_arguments", "checked_first", "describe_dict", "overlap_arg", "parse_duration", "parse_interval",
           "register"]

_UNITS = {"ms": datetime.timedelta(milliseconds=1), "s": datetime.timedelta(seconds=1),
          "m": datetime.timedelta(minutes=1), "h": datetime.timedelta(hours=1), "d": datetime.timedelta(days=1)}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UTC = datetime.timezone.utc


def parse_duration(text: str) -> datetime.timedelta:
    """``90s``, ``15m``, ``1h30m``, ``2d`` as a timedelta (argparse type: a bad value is an ArgumentTypeError)."""
    value = text.strip()
    pos, total = 0, datetime.timedelta(0)
    for m in _PART.finditer(value):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not value or pos != len(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (examples: 90s, 15m, 1h30m, 2d)")
    return total


def parse_interval(text: str) -> ScheduleIntervalSpec:
    """``EVERY`` or ``EVERY/PHASE`` (``1h``, ``1h/15m``: every hour at :15) as a :class:`ScheduleIntervalSpec`."""
    every_text, sep, phase_text = text.partition("/")
    every = parse_duration(every_text)
    offset = parse_duration(phase_text) if sep else datetime.timedelta(0)
    try:
        return ScheduleIntervalSpec(every=every, offset=offset)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {str(e).removeprefix('ScheduleIntervalSpec.')}") from None


def _cron(text: str) -> str:
    try:
        check_cron_expression(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _zone(text: str) -> str:
    try:
        return check_time_zone_name(text, what="time zone")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def overlap_arg(text: str) -> ScheduleOverlapPolicy:
    key = text.strip().upper().replace("-", "_")
    try:
        return ScheduleOverlapPolicy[key]
    except KeyError:
        names = ", ".join(p.name for p in ScheduleOverlapPolicy)
        raise argparse.ArgumentTypeError(f"{text!r} is not an overlap policy; use one of {names}") from None


def _instant(text: str) -> datetime.datetime:
    try:
        t = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time (e.g. 2026-12-01T06:00:00Z or "
                                         "2026-12-01; without an offset it is UTC)") from None
    return t.replace(tzinfo=_UTC) if t.tzinfo is None else t.astimezone(_UTC)


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (0 or more)")
    return n


def _iso(t: datetime.datetime | None) -> str | None:
    return t.isoformat().replace("+00:00", "Z") if t is not None else None


def _action_dict(r: ScheduleActionResult) -> dict[str, Any]:
    return {"scheduled_at": _iso(r.scheduled_at), "started_at": _iso(r.started_at), "workflow_id": r.workflow_id,
            "run_id": r.run_id}


def describe_dict(d: ScheduleDescription, client: Client | None = None) -> dict[str, Any]:
    """A description as plain JSON values (what ``spindle schedule describe`` prints)."""
    s = d.schedule
    conv = client.data_converter if client is not None else None
    a = s.action
    return {
        "schedule_id": d.id,
        "spec": {"cron_expressions": list(s.spec.cron_expressions),
                 "intervals": [{"every_seconds": i.every.total_seconds(), "offset_seconds": i.offset.total_seconds()}
                               for i in s.spec.intervals],
                 "time_zone_name": s.spec.time_zone_name, "jitter_seconds": s.spec.jitter.total_seconds(),
                 "start_at": _iso(s.spec.start_at), "end_at": _iso(s.spec.end_at)},
        "action": {"workflow_type": a.workflow, "workflow_id": a.id, "task_queue": a.task_queue,
                   "input": decoded_args(a, conv), "memo": memo_values(a.memo, conv),
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


# ---------------------------------------------------------------------- verbs
def build_schedule(args: argparse.Namespace) -> Schedule:
    """The schedule ``spindle schedule create`` flags describe.

    Raises:
        _UserError: naming the flag: no --cron/--interval, --phase with a phase already in
            --interval, --end-at before --start-at, a bad --input.
    """
    if not args.cron and not args.interval:
        raise _UserError("schedule create: give --cron or --interval (at least one)")
    intervals = list(args.interval)
    if args.phase is not None:
        if not intervals:
            raise _UserError("--phase: applies to --interval; there is none")
        if any(i.offset for i in intervals):
            raise _UserError("--phase: an --interval already has a phase (EVERY/PHASE); give it one way")
        try:
            intervals = [ScheduleIntervalSpec(every=i.every, offset=args.phase) for i in intervals]
        except ValueError as e:
            raise _UserError(f"--phase: {str(e).removeprefix('ScheduleIntervalSpec.')}") from None
    if args.start_at and args.end_at and args.end_at < args.start_at:
        raise _UserError(f"--end-at: {_iso(args.end_at)} is before --start-at {_iso(args.start_at)}")
    inputs = [_json_arg(v, "--input") for v in args.input]
    memo = {}
    for item in args.memo:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _UserError(f"--memo: expected KEY=JSON, got {item!r}")
        memo[key] = _json_arg(value, "--memo")
    return Schedule(
        action=ScheduleActionStartWorkflow(args.type, *inputs, id=args.workflow_id or args.schedule_id,
                                           task_queue=args.task_queue, execution_timeout=args.execution_timeout,
                                           run_timeout=args.run_timeout, task_timeout=args.task_timeout,
                                           memo=memo or None),
        spec=ScheduleSpec(cron_expressions=list(args.cron), intervals=intervals, time_zone_name=args.tz,
                          jitter=args.jitter, start_at=args.start_at, end_at=args.end_at),
        policy=SchedulePolicy(overlap=args.overlap, catchup_window=args.catchup_window,
                              pause_on_failure=args.pause_on_failure),
        state=ScheduleState(paused=args.paused, note=args.note, remaining_actions=args.remaining_actions))


def checked_first(check: Callable[[argparse.Namespace], None],
                   fn: Callable[[argparse.Namespace, Client], Awaitable[int]]) -> Callable[[argparse.Namespace], int]:
    """A verb whose flags are checked together (``check``) before connecting: a mistake exits 2 at once."""
    run = _run(fn)

    def go(args: argparse.Namespace) -> int:
        try:
            check(args)
        except _UserError as e:
            print(f"spindle: error: {e}", file=sys.stderr)
            return 2
        return run(args)

    return go


def _check_create(args: argparse.Namespace) -> None:
    args.schedule = build_schedule(args)


def _check_backfill(args: argparse.Namespace) -> None:
    if args.end_time < args.start_time:
        raise _UserError(f"--end-time: {_iso(args.end_time)} is before --start-time {_iso(args.start_time)}")


async def _create(args: argparse.Namespace, client: Client) -> int:
    schedule = args.schedule
    handle = await client.create_schedule(args.schedule_id, schedule, trigger_immediately=args.trigger_immediately)
    desc = await handle.describe()
    print(json.dumps({"schedule_id": handle.id,
                      "next_action_times": [_iso(t) for t in desc.info.next_action_times[:3]]}))
    return 0


async def _describe(args: argparse.Namespace, client: Client) -> int:
    d = await client.get_schedule_handle(args.schedule_id).describe()
    print(json.dumps(describe_dict(d, client), indent=2, default=str))
    return 0


async def _list(args: argparse.Namespace, client: Client) -> int:
    entries = [e async for e in client.list_schedules()]
    if args.output == "json":
        print(json.dumps([_entry_dict(e) for e in entries], indent=2))
        return 0
    print(f"{'SCHEDULE ID':<32} {'WORKFLOW TYPE':<24} {'PAUSED':<7} NEXT ACTION")
    for e in entries:
        nxt = _iso(e.next_action_times[0]) if e.next_action_times else ""
        print(f"{e.id:<32} {e.workflow_type:<24} {'yes' if e.paused else 'no':<7} {nxt}")
    return 0


async def _pause(args: argparse.Namespace, client: Client) -> int:
    await client.get_schedule_handle(args.schedule_id).pause(note=args.note)
    print(f"schedule {args.schedule_id} paused")
    return 0


async def _unpause(args: argparse.Namespace, client: Client) -> int:
    await client.get_schedule_handle(args.schedule_id).unpause(note=args.note)
    print(f"schedule {args.schedule_id} unpaused")
    return 0


async def _trigger(args: argparse.Namespace, client: Client) -> int:
    await client.get_schedule_handle(args.schedule_id).trigger(overlap=args.overlap)
    print(f"schedule {args.schedule_id} triggered")
    return 0


async def _backfill(args: argparse.Namespace, client: Client) -> int:
    await client.get_schedule_handle(args.schedule_id).backfill(
        ScheduleBackfill(start_at=args.start_time, end_at=args.end_time, overlap=args.overlap))
    print(f"schedule {args.schedule_id}: backfill from {_iso(args.start_time)} to {_iso(args.end_time)} requested")
    return 0


async def _delete(args: argparse.Namespace, client: Client) -> int:
    await client.get_schedule_handle(args.schedule_id).delete()
    print(f"schedule {args.schedule_id} deleted")
    return 0


# ---------------------------------------------------------------------- parser
def _verb(verbs: Any, name: str, help: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = verbs.add_parser(name, help=help, description=help)
    _common(p)
    _codec_option(p)
    return p


def _sid(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schedule-id", "-s", required=True, help="the schedule's id")


def add_spec_arguments(p: argparse.ArgumentParser, *, tz_default: str | None = "UTC") -> None:
    """``--cron`` (repeatable), ``--interval`` (repeatable), ``--phase``, ``--tz`` (also used by ``spindle dsl schedule``)."""
    p.add_argument("--cron", action="append", default=[], type=_cron, metavar="EXPR",
                   help="a five-field cron expression or @daily-style alias, read in --tz (repeat for several)")
    p.add_argument("--interval", action="append", default=[], type=parse_interval, metavar="EVERY[/PHASE]",
                   help="a fixed period from the Unix epoch, e.g. 1h, 15m, 1h/15m (every hour at :15); repeatable")
    p.add_argument("--phase", type=parse_duration, default=None, metavar="DURATION",
                   help="the phase of the --interval values, e.g. 15m")
    p.add_argument("--tz", type=_zone, default=tz_default, metavar="ZONE",
                   help="IANA time zone of the cron expressions (default UTC), e.g. Europe/Berlin")


def register(sub: Any) -> None:
    """Add ``spindle schedule ...`` to the ``spindle`` parser's subcommands."""
    p = sub.add_parser("schedule", help="create, describe, list, pause, unpause, trigger, backfill and delete "
                                        "schedules")
    verbs = p.add_subparsers(dest="schedule_cmd", required=True, metavar="COMMAND")

    c = _verb(verbs, "create", "create a schedule that starts a workflow at each due time")
    _sid(c)
    add_spec_arguments(c)
    c.add_argument("--jitter", type=parse_duration, default=datetime.timedelta(0), metavar="DURATION",
                   help="delay each action by a random amount below this, e.g. 30s")
    c.add_argument("--start-at", type=_instant, default=None, metavar="TIME", help="no action before (ISO 8601)")
    c.add_argument("--end-at", type=_instant, default=None, metavar="TIME", help="no action after (ISO 8601)")
    c.add_argument("--overlap", type=overlap_arg, default=ScheduleOverlapPolicy.SKIP, metavar="POLICY",
                   help="SKIP (default), BUFFER_ONE, BUFFER_ALL, CANCEL_OTHER, TERMINATE_OTHER or ALLOW_ALL")
    c.add_argument("--catchup-window", type=parse_duration, default=SchedulePolicy().catchup_window,
                   metavar="DURATION", help="after downtime, run missed actions due at most this long ago "
                                            "(default 365d)")
    c.add_argument("--pause-on-failure", action="store_true", help="pause when a started workflow fails")
    c.add_argument("--paused", action="store_true", help="create it paused")
    c.add_argument("--note", default="", help="the state's note")
    c.add_argument("--remaining-actions", type=_positive_int, default=None, metavar="N",
                   help="take at most N scheduled actions (default: no limit)")
    c.add_argument("--trigger-immediately", action="store_true", help="also take one action now")
    c.add_argument("--type", required=True, help="the workflow type each action starts")
    c.add_argument("--task-queue", "-t", required=True, help="the task queue of the started workflows")
    c.add_argument("--workflow-id", "-w", default=None,
                   help="prefix of each run's id, '{prefix}-{time}' (default: the schedule id)")
    c.add_argument("--input", "-i", action="append", default=[], metavar="JSON",
                   help="a JSON argument of the workflow (repeat for several)")
    c.add_argument("--memo", action="append", default=[], metavar="KEY=JSON", help="a memo entry of each run")
    for flag in ("--execution-timeout", "--run-timeout", "--task-timeout"):
        c.add_argument(flag, type=parse_duration, default=None, metavar="DURATION")
    c.set_defaults(func=checked_first(_check_create, _create))

    d = _verb(verbs, "describe", "print a schedule, its recent and next actions (JSON)")
    _sid(d)
    d.set_defaults(func=_run(_describe))

    ls = _verb(verbs, "list", "list the namespace's schedules")
    ls.add_argument("--output", "-o", choices=["table", "json"], default="table")
    ls.set_defaults(func=_run(_list))

    for name, fn, what in (("pause", _pause, "pause a schedule"), ("unpause", _unpause, "unpause a schedule "
                                                                                         "(no burst of missed actions)")):
        v = _verb(verbs, name, what)
        _sid(v)
        v.add_argument("--note", default=None, help="why (stored as the schedule's note)")
        v.set_defaults(func=_run(fn))

    t = _verb(verbs, "trigger", "take one action now (also while paused)")
    _sid(t)
    t.add_argument("--overlap", type=overlap_arg, default=None, metavar="POLICY",
                   help="overlap policy for this action (default: the schedule's)")
    t.set_defaults(func=_run(_trigger))

    b = _verb(verbs, "backfill", "take now the actions due in a past time range")
    _sid(b)
    b.add_argument("--start-time", type=_instant, required=True, metavar="TIME", help="range start (ISO 8601, inclusive)")
    b.add_argument("--end-time", type=_instant, required=True, metavar="TIME", help="range end (ISO 8601, inclusive)")
    b.add_argument("--overlap", type=overlap_arg, default=None, metavar="POLICY",
                   help="overlap policy for these actions (default: the schedule's)")
    b.set_defaults(func=checked_first(_check_backfill, _backfill))

    de = _verb(verbs, "delete", "delete a schedule (the workflows it started keep running)")
    _sid(de)
    de.set_defaults(func=_run(_delete))
