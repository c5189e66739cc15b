"""The optional ``schedule:`` block of a YAML workflow: what its shape (``_language.SCHEDULE``) cannot say.

```yaml
schedule:
  id: daily-sales              # the schedule id (default: the workflow's name)
  cron: "0 6 * * *"            # a cron expression or a list of them (five fields or @daily-style)
  interval: 1h/15m             # EVERY or EVERY/PHASE, or a list of them
  time_zone: Europe/Berlin     # IANA name the cron expressions are read in (default UTC)
  inputs: {date: "today"}      # the inputs of every scheduled run (checked against 'inputs')
  overlap: skip                # when a run is due while the last one runs (_language.OVERLAP_NAMES)
  jitter: 30s
```

Keys, types and the overlap names are checked with the rest of the document; here, the
cron expressions, the time zone, each interval's arithmetic (whole seconds, a phase
shorter than the period) and the inputs against the declared ones. ``spindle dsl
schedule`` uses the block where its flags are absent. Each problem is a ``DslError`` at
the value's line and column.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from spindle.dsl._durations import parse_duration
from spindle.dsl._language import INTERVAL
from spindle.dsl._model import InputSpec, ScheduleBlock, json_type, value_matches
from spindle.dsl._parser import YMap, YNode, YScalar, YSeq, plain
from spindle.dsl._shapes import Ctx

__all__ = ["build_schedule_block", "parse_interval"]


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


def _items(node: YNode) -> list[YScalar]:
    """A string or a list of strings (the block passed its check)."""
    items = node.items if isinstance(node, YSeq) else [node]
    return [item for item in items if isinstance(item, YScalar)]


def build_schedule_block(ctx: Ctx, block: YMap, inputs: tuple[InputSpec, ...] | None) -> ScheduleBlock:
    """Check what a schema cannot of a ``schedule:`` block; problems go to ``ctx``.

    The block's keys were checked against ``SCHEDULE``: the value of each key that
    passed is checked further here. ``inputs``: the declared inputs, or None if they did
    not pass their own check (then the block's inputs are not compared with them).
    """
    from spindle.api._schedule_rules import check_cron_expression, check_time_zone_name

    items = {key: node for key, node in block.items.items() if ctx.ok(node)}
    crons: list[str] = []
    for item in _items(items["cron"]) if "cron" in items else []:
        try:
            check_cron_expression(item.value)
            crons.append(item.value)
        except ValueError as e:
            ctx.error(f"'schedule.cron': {e}", item.pos, None)
    intervals: list[tuple[int, int]] = []
    for item in _items(items["interval"]) if "interval" in items else []:
        try:
            intervals.append(parse_interval(item.value))
        except ValueError as e:
            ctx.error(f"'schedule.interval': {e}{INTERVAL.help}", item.pos, None)
    zone = None
    if "time_zone" in items:
        node = items["time_zone"]
        assert isinstance(node, YScalar)
        try:
            zone = check_time_zone_name(node.value, what="'schedule.time_zone':")
        except ValueError as e:
            ctx.error(str(e), node.pos, None)
    given: dict[str, Any] | None = None
    if "inputs" in items and inputs is not None:
        given = _given_inputs(ctx, items["inputs"], inputs)
    return ScheduleBlock(id=_value(items, "id"), cron=tuple(crons), intervals=tuple(intervals), time_zone=zone,
                         inputs=given, overlap=_value(items, "overlap"),
                         jitter=parse_duration(_value(items, "jitter")) if "jitter" in items else None, pos=block.pos)


def _value(items: dict[str, YNode], key: str) -> Any:
    node = items.get(key)
    return node.value if isinstance(node, YScalar) else None


def _given_inputs(ctx: Ctx, node: YNode, inputs: tuple[InputSpec, ...]) -> dict[str, Any]:
    assert isinstance(node, YMap)
    declared = {spec.name: spec for spec in inputs}
    out: dict[str, Any] = {}
    for name, value_node in node.items.items():
        value = plain(value_node)
        spec = declared.get(name)
        if spec is None:
            known = ", ".join(declared) or "none are declared"
            ctx.error(f"'schedule.inputs': unknown input {name!r} (declared: {known})", node.where(name), None)
        elif not value_matches(value, spec.type):
            ctx.error(f"'schedule.inputs': input {name!r} must be of type {spec.type}, got "
                      f"{json_type(value)} {value!r}", value_node.pos, None)
        else:
            out[name] = value
    return out
