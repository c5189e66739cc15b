"""The schedule text rules are written once (``spindle.api._schedule_rules``), so both sides of the wire agree.

Every place that checks a cron expression or a time zone name refuses the same text with the
same message: on the client a ``ScheduleSpec``, the DSL's ``schedule:`` block and ``spindle
schedule create``'s options; on the server a stored ``CalendarSpec``, the wire check of a
``CreateSchedule`` request and, through a real (embedded) server, ``CreateSchedule`` and a legacy
``cron_schedule`` sent without the client's check. Where a side adds context (the request
field, the YAML key), the rule's message follows it unchanged.
"""

from __future__ import annotations

import json

import pytest

from spindle import dsl, workflow
from spindle.api import _schedule_rules as rules
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.cli.schedule import _cron, _zone
from spindle.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleSpec
from spindle.client._schedule_wire import schedule_to_proto
from spindle.controlplane import schedules as server_schedules
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.schedules import _cron as server_cron
from spindle.controlplane.schedules._wire import calendar_of
from spindle.converter import DataConverter
from spindle.exceptions import RPCError

BAD_CRONS = [
    "",
    "   ",
    "* * * *",
    "0 0 * * * 2030",
    "61 * * * *",
    "  0 24 * * *",
    "0 0 32 * *",
    "0 0 * 13 *",
    "0 0 * * 8",
    "*/0 * * * *",
    "0 0 30 2 *",
    "@every 5m",
    "@fortnightly",
    "@daily now",
]
BAD_ZONES = ["Mars/Olympus", "europe/berlin", "localtime", "posixrules", "America", "", " UTC", "../etc/passwd"]

DSL_BODY = """\
name: daily_sales
task_queue: analytics
steps:
  - id: report
    set: {line: "x"}
"""


@workflow.defn
class Report:
    @workflow.run
    async def run(self) -> None:
        pass


def _refusal(check: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(ValueError) as info:
        check(*args, **kwargs)  # type: ignore[operator]
    return str(info.value)


def test_the_server_uses_the_shared_rules_not_a_copy() -> None:
    assert server_schedules.check_cron_expression is rules.check_cron_expression
    assert server_cron.check_cron_expression is rules.check_cron_expression
    assert server_schedules.ALIASES is rules.CRON_ALIASES


@pytest.mark.parametrize("bad", BAD_CRONS)
def test_client_and_server_refuse_a_bad_cron_expression_with_the_same_message(bad: str) -> None:
    said = _refusal(rules.check_cron_expression, bad)
    assert said.startswith(f"cron expression {bad!r}")
    # the client
    assert _refusal(ScheduleSpec, cron_expressions=[bad]) == said
    with pytest.raises(ValueError) as cli:
        _cron(bad)
    assert str(cli.value) == said
    if bad.strip():  # the DSL refuses an empty entry before the rule sees it
        with pytest.raises(dsl.DslError) as doc:
            dsl.load(DSL_BODY + f"schedule:\n  cron: {json.dumps(bad)}\n")
        assert doc.value.reason == f"'schedule.cron': {said}"
    # the server
    assert _refusal(server_schedules.CalendarSpec, cron_expressions=[bad]) == said
    with pytest.raises(InvalidArgument) as wire:
        calendar_of(pb.ScheduleSpec(cron_expressions=["@daily", bad]))
    assert wire.value.message == f"schedule.spec.cron_expressions[1]: {said}"


@pytest.mark.parametrize("bad", BAD_ZONES)
def test_client_and_server_refuse_a_bad_time_zone_with_the_same_message(bad: str) -> None:
    said = _refusal(rules.check_time_zone_name, bad)
    assert said.startswith(f"time_zone_name {bad!r} is not a known IANA time zone")
    reason = said.removeprefix("time_zone_name ")
    assert _refusal(ScheduleSpec, time_zone_name=bad) == f"ScheduleSpec.time_zone_name {reason}"
    with pytest.raises(ValueError) as cli:
        _zone(bad)
    assert str(cli.value) == f"time zone {reason}"
    assert _refusal(server_schedules.load_time_zone, bad) == said
    assert _refusal(server_schedules.CalendarSpec, cron_expressions=["@daily"], time_zone_name=bad) == said
    if bad:  # an empty name on the wire means UTC
        with pytest.raises(InvalidArgument) as wire:
            calendar_of(pb.ScheduleSpec(cron_expressions=["@daily"], time_zone_name=bad))
        assert wire.value.message == f"schedule.spec.time_zone_name: {said}"


async def test_a_real_server_refuses_what_the_client_refuses_with_the_same_message() -> None:
    """Requests that skip the client's check (a raw CreateSchedule, a legacy cron_schedule) get the client's words."""
    good = Schedule(action=ScheduleActionStartWorkflow(Report.run, id="report", task_queue="reports"),
                    spec=ScheduleSpec(cron_expressions=["@daily"]))
    client = await Client.connect("embedded::memory:")
    try:
        for bad in ("61 * * * *", "* * * *", "@every 5m", "0 0 30 2 *", ""):
            said = _refusal(ScheduleSpec, cron_expressions=[bad])
            req = svc.CreateScheduleRequest(namespace=client.namespace, schedule_id="s", request_id="r-" + bad,
                                            schedule=schedule_to_proto(good, DataConverter.default))
            req.schedule.spec.cron_expressions[:] = [bad]
            with pytest.raises(RPCError) as created:
                await client._rpc("CreateSchedule", req, not_found="rpc")
            assert (created.value.status, created.value.message) == (
                "INVALID_ARGUMENT", f"schedule.spec.cron_expressions[0]: {said}")
            if bad:  # an empty cron_schedule means no cron
                with pytest.raises(RPCError) as started:
                    await client.start_workflow(Report.run, id="legacy", task_queue="reports", cron_schedule=bad)
                assert (started.value.status, started.value.message) == ("INVALID_ARGUMENT", f"cron_schedule: {said}")
    finally:
        await client.close()
