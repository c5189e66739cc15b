"""Range, length and character rules for every scalar field of the wire API's requests.

One table says what each field of a request may hold: a duration, an id or name, free
text, a token, a page size, a rate... (:data:`RULES`, by field name, with the exceptions in
:data:`RULES_BY_MESSAGE`), and :func:`check_fields` walks a message against it, raising
:class:`InvalidArgument` naming the first bad field by its path (``start.workflow_id``,
``commands[2].retry_policy.backoff_coefficient``). It sits below the frontend (every RPC's
request, ``frontend._validate.check_request``) and the history service (the attributes of a
workflow task's commands, ``history.ops.commands.validate``) so that neither imports the
other, and so that one rule holds on every path a value takes (client, worker, cluster peer).

What it does not check: payload contents (``Payload``, ``Payloads``; size limits apply),
the text of failures (only ``next_retry_delay_ms`` inside a ``Failure`` is a rule here),
and anything needing state (required fields, ids that must exist). Those stay with the
operation. ``tests/controlplane/test_cp_field_rules.py`` checks that every scalar field of
every request has a rule, so a new field cannot be forgotten.

The limits (Temporal's where it has one):

- durations (``*_ms``): 0 to :data:`MAX_DURATION_MS` (100 years), so ``now + duration``
  stays a valid timestamp in every store;
- a workflow task's timeout is then clamped to :data:`MAX_WORKFLOW_TASK_TIMEOUT_MS`
  (2 minutes, as Temporal does): a worker that dies holding a task delays its workflow by at
  most that (:func:`workflow_task_timeout_ms`);
- ids and names (workflow ids, types, task queues, signal/query/update names, activity ids,
  namespace names, search-attribute keys, identities...): at most the server's
  ``max_id_length`` characters (1,000 by default), and no control character (C0, DEL, C1);
- free text (reasons, descriptions, list queries, error messages): at most
  :data:`MAX_TEXT_LENGTH` characters;
- tokens (task and page tokens): at most :data:`MAX_TOKEN_BYTES`;
- instants (``start_at_ms``, ``end_at_ms`` of a schedule spec, a backfill's range): epoch
  milliseconds from 1970 to the end of year 9999 (:data:`MAX_INSTANT_MS`);
- page sizes 0 (the default) to :data:`MAX_PAGE_SIZE`; counts and event ids not negative;
- rates finite and not negative; percentages (a deployment's ramp) 0 to 100; a retry backoff coefficient 0 (the default) or 1 to
  :data:`MAX_BACKOFF_COEFFICIENT`; a retry policy's maximum interval not below its initial one;
- enums: a value the API defines.
"""

from __future__ import annotations

import functools
import math
import re

from collections.abc import Callable
from typing import Any

from google.protobuf import descriptor as _d
from google.protobuf.message import Message

from spindle.controlplane._resource_rules import MAX_DURATION_MS, is_rate
from spindle.controlplane.errors import InvalidArgument

MAX_INSTANT_MS = 253_402_300_799_000
"""Latest instant (epoch milliseconds) a field may hold: 9999-12-31T23:59:59Z, so it converts to a datetime."""
MAX_WORKFLOW_TASK_TIMEOUT_MS = 120_000
"""A workflow task's start-to-close timeout is clamped to this (Temporal's maximum, 2 minutes)."""
MAX_TEXT_LENGTH = 32_768
"""Longest free text (reason, description, list query, error message), in characters."""
MAX_URI_LENGTH = 4096
MAX_TOKEN_BYTES = 16_384
"""Longest task or page token: the server's own are far shorter."""
MAX_PAGE_SIZE = 10_000
MAX_BACKOFF_COEFFICIENT = 1000.0

_T = _d.FieldDescriptor
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

Check = Callable[[Any, str, int], "str | None"]


# ---------------------------------------------------------------------- the kinds of value
def _duration(v: int, path: str, max_id: int) -> str | None:
    if v < 0:
        return f"{path}: must not be negative, got {v}"
    if v > MAX_DURATION_MS:
        return f"{path}: {v} ms is over the limit of {MAX_DURATION_MS} ms (100 years)"
    return None


def _instant(v: int, path: str, max_id: int) -> str | None:
    if not 0 <= v <= MAX_INSTANT_MS:
        return f"{path}: {v} is not an instant between 1970 and 9999 (epoch milliseconds)"
    return None


def _not_negative(v: int, path: str, max_id: int) -> str | None:
    return f"{path}: must not be negative, got {v}" if v < 0 else None


def _page_size(v: int, path: str, max_id: int) -> str | None:
    if not 0 <= v <= MAX_PAGE_SIZE:
        return f"{path}: must be between 0 (the default) and {MAX_PAGE_SIZE}, got {v}"
    return None


def _rate(v: float, path: str, max_id: int) -> str | None:
    if not is_rate(v):
        return f"{path}: must be a finite number, 0 or more, got {v:g}"
    return None


def _coefficient(v: float, path: str, max_id: int) -> str | None:
    if v == 0:
        return None
    if not math.isfinite(v) or not 1.0 <= v <= MAX_BACKOFF_COEFFICIENT:
        return f"{path}: must be 0 (the default) or between 1 and {MAX_BACKOFF_COEFFICIENT:g}, got {v:g}"
    return None


def _short_without_controls(v: str, path: str, limit: int, why: str) -> str | None:
    if len(v) > limit:
        return f"{path}: {len(v)} characters is over the limit of {limit}"
    m = _CONTROL.search(v)
    return f"{path}: control character U+{ord(m.group()):04X} at position {m.start()}{why}" if m else None


def _name(v: str, path: str, max_id: int) -> str | None:
    return _short_without_controls(v, path, max_id, " (ids and names must not contain control characters)")


def _text(v: str, path: str, max_id: int) -> str | None:
    if len(v) > MAX_TEXT_LENGTH:
        return f"{path}: {len(v)} characters is over the limit of {MAX_TEXT_LENGTH}"
    return None


def _uri(v: str, path: str, max_id: int) -> str | None:
    return _short_without_controls(v, path, MAX_URI_LENGTH, "")


def _token(v: bytes, path: str, max_id: int) -> str | None:
    if len(v) > MAX_TOKEN_BYTES:
        return f"{path}: {len(v)} bytes is over the limit of {MAX_TOKEN_BYTES} (not a token this server issued)"
    return None


def _percent(v: float, path: str, max_id: int) -> str | None:
    if not (math.isfinite(v) and 0.0 <= v <= 100.0):
        return f"{path}: must be a percentage between 0 and 100, got {v:g}"
    return None


def _free(v: Any, path: str, max_id: int) -> str | None:
    return None


INSTANT = _instant
DURATION, NOT_NEGATIVE, PAGE_SIZE, RATE, COEFFICIENT = _duration, _not_negative, _page_size, _rate, _coefficient
NAME, TEXT, URI, TOKEN, FREE, PERCENT = _name, _text, _uri, _token, _free, _percent

# ---------------------------------------------------------------------- the table
_NAMES = ("namespace", "name", "workflow_id", "run_id", "workflow_type", "task_queue", "request_id", "identity",
          "signal_name", "query_type", "update_id", "activity_id", "activity_type", "timer_id", "marker_name",
          "worker_task_queue", "sticky_task_queue", "owner_email", "update_mask", "non_retryable_error_types", "id",
          "schedule_id", "time_zone_name", "cron_expressions", "cron_schedule", "deployment_name", "build_id", "paths",
          "job_id")
_DURATIONS = ("execution_timeout_ms", "run_timeout_ms", "task_timeout_ms", "workflow_start_delay_ms",
              "schedule_to_close_timeout_ms", "schedule_to_start_timeout_ms", "start_to_close_timeout_ms",
              "heartbeat_timeout_ms", "start_to_fire_timeout_ms", "initial_interval_ms", "maximum_interval_ms",
              "backoff_start_interval_ms", "retention_ms", "ttl_ms", "timeout_ms",
              "every_ms", "offset_ms", "jitter_ms", "catchup_window_ms")

RULES: dict[str, Check] = {
    **{n: NAME for n in _NAMES},
    **{n: DURATION for n in _DURATIONS},
    "description": TEXT, "reason": TEXT, "error_message": TEXT, "query": TEXT, "visibility_query": TEXT,
    "notes": TEXT, "pause": TEXT, "unpause": TEXT,
    "archival_uri": URI,
    "task_token": TOKEN, "next_page_token": TOKEN, "conflict_token": TOKEN,
    "page_size": PAGE_SIZE, "maximum_page_size": PAGE_SIZE,
    "maximum_attempts": NOT_NEGATIVE, "scheduled_event_id": NOT_NEGATIVE, "remaining_actions": NOT_NEGATIVE,
    "workflow_task_finish_event_id": NOT_NEGATIVE,
    "rps_limit": RATE, "max_tasks_per_second": RATE, "percentage": PERCENT,
    "backoff_coefficient": COEFFICIENT,
}
"""Rule of a scalar field by its name (enums and bools need none: enums must be defined values)."""

RULES_BY_MESSAGE: dict[str, Check] = {
    # inside a Failure only the retry delay is a rule: its texts are whatever the worker's error said
    "ApplicationFailureInfo.next_retry_delay_ms": DURATION,
    # instants, not durations (a schedule's bounds, a backfill's range)
    "ScheduleSpec.start_at_ms": INSTANT, "ScheduleSpec.end_at_ms": INSTANT,
    "ScheduleBackfillRequest.start_time_ms": INSTANT, "ScheduleBackfillRequest.end_time_ms": INSTANT,
    # Nexus (issue 30; docs/NEXUS.md)
    "Nexus.url": URI, "ScheduleNexusOperationCommandAttributes.endpoint": NAME,
    "ScheduleNexusOperationCommandAttributes.service": NAME, "ScheduleNexusOperationCommandAttributes.operation": NAME,
    "EndpointSpec.allowed_caller_namespaces": NAME, "UpdateNexusEndpointRequest.version": NOT_NEGATIVE,
    "DeleteNexusEndpointRequest.version": NOT_NEGATIVE, "Async.operation_token": TEXT,
    "NexusUnsuccessfulOperationError.operation_state": NAME, "NexusHandlerError.error_type": NAME,
}
"""Exceptions to :data:`RULES`, by ``Message.field``."""

SKIPPED_MESSAGES = frozenset({"spindle.v1.Payload"})
"""Messages not walked: payload contents (their size is checked elsewhere)."""
LENIENT_MESSAGES = frozenset({"spindle.v1.Failure"})
"""Messages whose fields follow :data:`RULES_BY_MESSAGE` only (everything else in them is free)."""


def _retry_policy(m: Message, path: str) -> str | None:
    initial, maximum = m.initial_interval_ms, m.maximum_interval_ms
    if initial and maximum and maximum < initial:
        return f"{path}.maximum_interval_ms: {maximum} ms is below initial_interval_ms ({initial} ms)"
    return None


MESSAGE_CHECKS: dict[str, Callable[[Message, str], "str | None"]] = {"spindle.v1.RetryPolicy": _retry_policy}
"""Checks across the fields of one message, run after its fields' own."""


def rule_for(desc: _d.Descriptor, fd: _d.FieldDescriptor, lenient: bool = False) -> Check | None:
    """The rule of scalar field ``fd`` of ``desc`` (None: no rule, which the completeness test refuses)."""
    rule = RULES_BY_MESSAGE.get(f"{desc.name}.{fd.name}")
    if rule is not None:
        return rule
    if lenient:
        return FREE
    if fd.type in (_T.TYPE_BOOL, _T.TYPE_ENUM):
        return FREE  # enums are checked against their definition by the walker
    return RULES.get(fd.name)


# ---------------------------------------------------------------------- the walk
def _clip(key: Any) -> str:
    s = repr(key)
    return s if len(s) <= 40 else s[:37] + "..."


def _enum(fd: _d.FieldDescriptor, v: int, path: str) -> str | None:
    if v not in fd.enum_type.values_by_number:
        return f"{path}: unknown value {v} for {fd.enum_type.name}"
    return None


def _scalar_check(desc: _d.Descriptor, fd: _d.FieldDescriptor, lenient: bool) -> Check | None:
    """What a scalar field is checked with (None: nothing to check), worked out once per field (hot path)."""
    key = (fd, lenient)
    try:
        return _SCALAR_CHECKS[key]
    except KeyError:
        pass
    check: Check | None
    if fd.type == _T.TYPE_ENUM and not lenient:
        check = functools.partial(_enum_check, fd)
    else:
        rule = rule_for(desc, fd, lenient)
        if rule is None:  # a field nobody gave a rule (the completeness test fails first): the safe default
            rule = NAME if fd.type == _T.TYPE_STRING else TOKEN if fd.type == _T.TYPE_BYTES else FREE
        check = None if rule is FREE else rule
    _SCALAR_CHECKS[key] = check
    return check


def _enum_check(fd: _d.FieldDescriptor, v: int, path: str, max_id: int) -> str | None:
    return _enum(fd, v, path)


_SCALAR_CHECKS: dict[tuple[_d.FieldDescriptor, bool], Check | None] = {}

#: How the walk treats a message field, worked out once per field: ("skip",), ("map", value field) or ("walk",).
_MESSAGE_KINDS: dict[_d.FieldDescriptor, tuple[Any, ...]] = {}


def _message_kind(fd: _d.FieldDescriptor) -> tuple[Any, ...]:
    kind = _MESSAGE_KINDS.get(fd)
    if kind is None:
        if fd.message_type.GetOptions().map_entry:
            kind = ("map", fd.message_type.fields_by_name["value"])
        elif fd.message_type.full_name in SKIPPED_MESSAGES:
            kind = ("skip",)
        else:
            kind = ("walk",)
        _MESSAGE_KINDS[fd] = kind
    return kind


def find_problem(msg: Message, path: str, max_id: int, *, skip: frozenset[str] = frozenset(),
                 lenient: bool = False) -> str | None:
    """The first field of ``msg`` that breaks its rule, as ``"<path>: <what is wrong>"``; None if all are fine.

    ``path`` is the name of ``msg`` itself ("" for a request); ``skip`` names fields of ``msg``
    (not nested) to leave out, because another layer checks them.
    """
    desc = msg.DESCRIPTOR
    lenient = lenient or desc.full_name in LENIENT_MESSAGES
    for fd, value in msg.ListFields():
        if skip and fd.name in skip:
            continue
        if fd.type == _T.TYPE_MESSAGE:
            kind = _message_kind(fd)
            if kind[0] == "skip":
                continue
            p = f"{path}.{fd.name}" if path else fd.name
            if kind[0] == "map":
                vf = kind[1]
                for k, v in value.items():
                    kp = f"{p}[{_clip(k)}]"
                    error = None if lenient else _name(k, f"{p} key {_clip(k)}", max_id) if isinstance(k, str) else None
                    if error is None:
                        if vf.type == _T.TYPE_MESSAGE:
                            error = None if vf.message_type.full_name in SKIPPED_MESSAGES else \
                                find_problem(v, kp, max_id, lenient=lenient)
                        elif not lenient:
                            error = _enum(vf, v, kp) if vf.type == _T.TYPE_ENUM else \
                                _name(v, kp, max_id) if vf.type == _T.TYPE_STRING else None
                    if error:
                        return error
                continue
            items = list(enumerate(value)) if fd.is_repeated else [(None, value)]
            for i, m in items:
                error = find_problem(m, p if i is None else f"{p}[{i}]", max_id, lenient=lenient)
                if error:
                    return error
            continue
        check = _scalar_check(desc, fd, lenient)
        if check is None:
            continue
        p = f"{path}.{fd.name}" if path else fd.name
        for i, v in (enumerate(value) if fd.is_repeated else [(None, value)]):
            error = check(v, p if i is None else f"{p}[{i}]", max_id)
            if error:
                return error
    extra = MESSAGE_CHECKS.get(desc.full_name)
    return extra(msg, path or desc.name) if extra is not None else None


def check_fields(msg: Message, path: str, max_id: int, *, skip: frozenset[str] = frozenset()) -> None:
    """Raise InvalidArgument naming the first field of ``msg`` that breaks its rule (see :func:`find_problem`)."""
    error = find_problem(msg, path, max_id, skip=skip)
    if error is not None:
        raise InvalidArgument(error)


def workflow_task_timeout_ms(requested_ms: int, default_ms: int) -> int:
    """The start-to-close timeout a workflow task gets: ``requested_ms`` (or the default when 0), at most 2 minutes.

    Clamped, not refused, as in Temporal: a worker configured with a longer task timeout
    keeps working, and a worker that dies holding a task delays its workflow by at most
    :data:`MAX_WORKFLOW_TASK_TIMEOUT_MS`.
    """
    return min(requested_ms if requested_ms > 0 else default_ms, MAX_WORKFLOW_TASK_TIMEOUT_MS)


__all__ = ["DURATION", "INSTANT", "MAX_BACKOFF_COEFFICIENT", "MAX_DURATION_MS", "MAX_INSTANT_MS", "MAX_PAGE_SIZE", "MAX_TEXT_LENGTH",
           "MAX_TOKEN_BYTES", "MAX_WORKFLOW_TASK_TIMEOUT_MS", "RULES", "RULES_BY_MESSAGE", "check_fields",
           "find_problem", "rule_for", "workflow_task_timeout_ms"]
