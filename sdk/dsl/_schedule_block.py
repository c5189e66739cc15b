"""The optional ``schedule:`` block of a YAML workflow: checked like the rest of the document.

```yaml
schedule:
  id: daily-sales              # the schedule id (default: the workflow's name)
  cron: "0 6 * * *"            # a cron expression or a list of them (five fields or @daily-style)
  interval: 1h/15m             # EVERY or EVERY/PHASE, or a list of them
  time_zone: Europe/Berlin     # IANA name the cron expressions are read in (default UTC)
  inputs: {date: "today"}      # the inputs of every scheduled run (checked against 'inputs')
  overlap: skip                # skip, buffer_one, buffer_all, cancel_other, terminate_other, allow_all
  jitter: 30s
```

At least one of ``cron`` and ``interval``. ``spindle dsl schedule`` uses the block where
its flags are absent. Each problem is a ``DslError`` at the key's line and column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from spindle.dsl._durations import parse_duration
from spindle.dsl._errors import Pos
from spindle.dsl._model import InputSpec, ScheduleBlock, json_type, value_matches
from spindle.dsl._parser import YMap, YNode, YScalar, YSeq, plain

T = TypeVar("T")


class _Builder(Protocol):
    """What this module needs of the document builder (``spindle.dsl._build``): record errors, check shapes."""

    def error(self, reason: str, pos: Pos, step: str | None = None) -> None: ...
    def fail(self, reason: str, pos: Pos, step: str | None = None) -> Exception: ...
    def mapping(self, node: YNode, what: str, step: str | None = None) -> YMap: ...
    def check_keys(self, node: YMap, allowed: Iterable[str], what: str, step: str | None = None) -> None: ...
    def scalar(self, node: YNode, what: str, types: tuple[type, ...], step: str | None = None) -> Any: ...
    def static_string(self, node: YNode, what: str, step: str | None = None) -> str: ...
    def duration(self, node: YNode, what: str, step: str | None = None) -> float: ...
    def attempt(self, build: Callable[[], T]) -> T | None: ...

__all__ = ["OVERLAP_NAMES", "SCHEDULE_KEYS", "build_schedule_block", "parse_interval"]

SCHEDULE_KEYS = ("id", "cron", "interval", "time_zone", "inputs", "overlap", "jitter")
OVERLAP_NAMES = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all")


def parse_interval(text: str) -> tuple[int, int]:
    """``EVERY`` or ``EVERY/PHASE`` (DSL durations) as whole seconds ``(every, offset)``.

    Raises:
        ValueError: not durations, not whole seconds, under a second, or a phase not shorter than the period.
    """
    from spindle.client._schedule_types import ScheduleIntervalSpec

    every_text, sep, phase_text = text.partition("/")
    every = parse_duration(every_text)
    offset = parse_duration(phase_text) if sep else 0.0
    try:
        spec = ScheduleIntervalSpec(every=timedelta(seconds=every), offset=timedelta(seconds=offset))
    except ValueError as e:
        raise ValueError(f"{text!r}: {str(e).removeprefix('ScheduleIntervalSpec.')}") from None
    return int(spec.every.total_seconds()), int(spec.offset.total_seconds())


def _strings(b: _Builder, node: YNode, what: str) -> list[YScalar]:
    items = node.items if isinstance(node, YSeq) else [node]
    out = []
    for item in items:
        b.scalar(item, what, (str,))
        assert isinstance(item, YScalar)
        out.append(item)
    if not out:
        raise b.fail(f"{what} must not be an empty list", node.pos)
    return out


def build_schedule_block(b: _Builder, node: YNode, inputs: tuple[InputSpec, ...]) -> ScheduleBlock:
    """Check a ``schedule:`` block; every problem is recorded on ``b`` (at the key's position)."""
    from spindle.api._schedule_rules import check_cron_expression, check_time_zone_name

    block = b.mapping(node, "'schedule'")
    b.check_keys(block, SCHEDULE_KEYS, "'schedule'")
    items = block.items
    if "cron" not in items and "interval" not in items:
        b.error("'schedule' needs 'cron' or 'interval' (or both)", block.pos)
    values: dict[str, Any] = {}

    def one(key: str, build: Any) -> None:
        if key in items:
            got = b.attempt(lambda: build(items[key]))
            if got is not None:
                values[key] = got

    def schedule_id(n: YNode) -> str:
        return b.static_string(n, "'schedule.id'")

    def crons(n: YNode) -> tuple[str, ...]:
        out = []
        for item in _strings(b, n, "'schedule.cron'"):
            try:
                check_cron_expression(item.value)
            except ValueError as e:
                b.error(f"'schedule.cron': {e}", item.pos)
                continue
            out.append(item.value)
        return tuple(out)

    def intervals(n: YNode) -> tuple[tuple[int, int], ...]:
        out = []
        for item in _strings(b, n, "'schedule.interval'"):
            try:
                out.append(parse_interval(item.value))
            except ValueError as e:
                b.error(f"'schedule.interval': {e} (an interval is EVERY or EVERY/PHASE, e.g. 1h or 1h/15m)", item.pos)
        return tuple(out)

    def zone(n: YNode) -> str:
        value = b.scalar(n, "'schedule.time_zone'", (str,))
        try:
            return check_time_zone_name(value, what="'schedule.time_zone':")
        except ValueError as e:
            raise b.fail(str(e), n.pos) from None

    def overlap(n: YNode) -> str:
        value = b.scalar(n, "'schedule.overlap'", (str,))
        key = value.strip().lower().replace("-", "_")
        if key not in OVERLAP_NAMES:
            raise b.fail(f"'schedule.overlap': unknown policy {value!r}; use one of {', '.join(OVERLAP_NAMES)}", n.pos)
        return key

    def jitter(n: YNode) -> float:
        return b.duration(n, "'schedule.jitter'")

    def given_inputs(n: YNode) -> dict[str, Any]:
        m = b.mapping(n, "'schedule.inputs'")
        declared = {spec.name: spec for spec in inputs}
        out: dict[str, Any] = {}
        for name, value_node in m.items.items():
            value = plain(value_node)
            spec = declared.get(name)
            if spec is None:
                known = ", ".join(declared) or "none are declared"
                b.error(f"'schedule.inputs': unknown input {name!r} (declared: {known})", m.where(name))
            elif not value_matches(value, spec.type):
                b.error(f"'schedule.inputs': input {name!r} must be of type {spec.type}, got "
                        f"{json_type(value)} {value!r}", value_node.pos)
            else:
                out[name] = value
        return out

    one("id", schedule_id)
    one("cron", crons)
    one("interval", intervals)
    one("time_zone", zone)
    one("overlap", overlap)
    one("jitter", jitter)
    one("inputs", given_inputs)
    if not isinstance(block, YMap):  # pragma: no cover - mapping() raised
        raise AssertionError
    return ScheduleBlock(id=values.get("id"), cron=values.get("cron", ()), intervals=values.get("interval", ()),
                         time_zone=values.get("time_zone"), inputs=values.get("inputs"),
                         overlap=values.get("overlap"), jitter=values.get("jitter"), pos=block.pos)
