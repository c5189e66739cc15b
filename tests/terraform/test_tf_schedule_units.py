"""``spindle_schedule``'s plan-time rules (``spindle_tf/schedule_rules.py``, pure) agree with the SDK and the server."""

from __future__ import annotations

import sys

import pytest

from _tf_harness import REPO

from spindle.api import messages_pb2 as pb
from spindle.cli.schedule import parse_interval

sys.path.insert(0, str(REPO / "terraform" / "provider"))

from spindle_tf import schedule_rules as rules  # noqa: E402


def never(_: object) -> bool:
    return False


def test_overlap_policies_are_the_wire_enum_in_order() -> None:
    names = [pb.ScheduleOverlapPolicy.Name(v).removeprefix("SCHEDULE_OVERLAP_POLICY_") for v in range(1, 7)]
    assert list(rules.OVERLAP_POLICIES) == names


@pytest.mark.parametrize("text", ["1h", "15m", "1h/15m", "1d/6h", "90s", "1h30m/45m", "2d"])
def test_intervals_the_sdk_accepts_are_read_the_same(text: str) -> None:
    spec = parse_interval(text)
    every, offset = rules.interval_ms(text)
    assert (every, offset) == (spec.every.total_seconds() * 1000, spec.offset.total_seconds() * 1000)
    assert rules.interval_ms(rules.format_interval(every, offset)) == (every, offset)


@pytest.mark.parametrize("text", ["1h/2h", "1h/1h", "500ms", "1x", "", "h", "1h/"])
def test_intervals_the_sdk_refuses_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_interval(text)
    with pytest.raises(ValueError):
        rules.interval_ms(text)


def test_format_interval_is_canonical() -> None:
    assert rules.format_interval(3_600_000, 0) == "1h"
    assert rules.format_interval(86_400_000, 21_600_000) == "1d/6h"
    assert rules.format_interval(5_400_000, 0) == "1h30m"


def test_check_schedule_config_names_each_attribute() -> None:
    problems = rules.check_schedule_config({
        "schedule_id": "a/b", "intervals": ["1h", "1x"], "cron_expressions": [" "], "time_zone": "Mars/Olympus",
        "overlap": "SOMETIMES", "jitter_seconds": -1, "catchup_window_seconds": 0, "input": '{"not": "a list"}',
    }, never)
    paths = [p.path for p in problems.items]
    assert paths == [["schedule_id"], ["intervals", (1,)], ["cron_expressions", (0,)], ["time_zone"], ["overlap"],
                     ["jitter_seconds"], ["catchup_window_seconds"], ["input"]]
    assert not rules.check_schedule_config({"schedule_id": "ok", "cron_expressions": ["0 6 * * *"],
                                            "time_zone": "Europe/Berlin", "overlap": "ALLOW_ALL",
                                            "input": '["eu", 3]'}, never)
    empty = rules.check_schedule_config({"schedule_id": "ok"}, never)
    assert [p.summary for p in empty.items] == ["A schedule needs times"]


def test_unknown_values_are_left_for_later() -> None:
    unknown = object()
    problems = rules.check_schedule_config({"schedule_id": unknown, "intervals": unknown, "cron_expressions": None,
                                            "time_zone": unknown, "input": unknown}, lambda v: v is unknown)
    assert not problems.items
