"""What a schedule is (docs/SCHEDULES.md): ``Schedule`` and its spec, policy, state and action.

Shaped as Temporal's ``temporalio.client`` schedule classes, so Temporal code ports by
renaming the package. As in Temporal, ``Schedule``, its spec, policy, state and action are
mutable dataclasses (an ``update`` callback may assign ``action.args``). Each class checks its values when it is built, and the
whole schedule is checked again when it is sent (create or update), raising the same
``ValueError`` (or ``TypeError``) naming the field, so a bad schedule never reaches the server::

    Schedule(
        action=ScheduleActionStartWorkflow(DailySales.run, "eu", id="daily-sales", task_queue="reports"),
        spec=ScheduleSpec(cron_expressions=["0 6 * * *"], time_zone_name="Europe/Berlin"),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )

Where Spindle differs from Temporal: ``ScheduleSpec`` has no ``calendars`` / ``skip``
(structured calendars) and takes five-field cron expressions only; ``ScheduleState`` uses
``remaining_actions=None`` for "unlimited" (Temporal's ``limited_actions`` is a read-only
property); ``ScheduleActionStartWorkflow`` takes the arguments positionally as
``client.start_workflow`` does (``args=[...]`` also works).
"""

from __future__ import annotations

import dataclasses
import enum

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from spindle.api._schedule_rules import check_cron_expression, check_time_zone_name
from spindle.client._definitions import START_ARGS_ATTR
from spindle.common._retry_policy import RetryPolicy

if TYPE_CHECKING:  # pragma: no cover
    from spindle.common._search_attributes import TypedSearchAttributes

__all__ = [
    "Schedule",
    "ScheduleActionStartWorkflow",
    "ScheduleBackfill",
    "ScheduleIntervalSpec",
    "ScheduleOverlapPolicy",
    "SchedulePolicy",
    "ScheduleSpec",
    "ScheduleState",
]

_UTC = timezone.utc
_SECOND = timedelta(seconds=1)


class ScheduleOverlapPolicy(enum.IntEnum):
    """What a schedule does when an action is due while its previous workflow still runs.

    Values are Temporal's ``ScheduleOverlapPolicy`` numbers.
    """

    SKIP = 1
    """Start nothing; the next due time after the running workflow closes is considered (default)."""
    BUFFER_ONE = 2
    """Start once the running workflow closes; at most one start waits, later ones are dropped."""
    BUFFER_ALL = 3
    """Start each due action, one after another, as the previous workflow closes."""
    CANCEL_OTHER = 4
    """Cancel the running workflow and start the new one once it has closed."""
    TERMINATE_OTHER = 5
    """Terminate the running workflow and start the new one at once."""
    ALLOW_ALL = 6
    """Start every due action at once, however many are running."""


def _check_duration(value: Any, what: str) -> timedelta:
    if not isinstance(value, timedelta):
        raise TypeError(f"{what} must be a datetime.timedelta, got {type(value).__name__} {value!r}")
    return value


def _check_instant(value: Any, what: str) -> datetime:
    """``value`` in UTC; a naive datetime is taken as UTC (as Temporal's SDK does)."""
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime.datetime, got {type(value).__name__} {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=_UTC)
    return value.astimezone(_UTC)


def _check_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


@dataclasses.dataclass
class ScheduleIntervalSpec:
    """Every ``every``, at ``1970-01-01T00:00:00Z + k * every + offset`` (as Temporal).

    The phase is aligned to the Unix epoch in UTC, not to when the schedule was created and
    not to ``time_zone_name``: ``every=timedelta(hours=1), offset=timedelta(minutes=15)``
    runs at :15 past every hour, ``every=timedelta(days=1), offset=timedelta(hours=6)`` at
    06:00 UTC every day (use a cron expression for a local time of day).

    Raises:
        TypeError: ``every`` or ``offset`` is not a ``timedelta``.
        ValueError: ``every`` under one second or not whole seconds; ``offset`` negative,
            not whole seconds, or not shorter than ``every``.
    """

    every: timedelta
    offset: timedelta = timedelta(0)

    def __post_init__(self) -> None:
        if self.offset is None:  # Temporal's default
            object.__setattr__(self, "offset", timedelta(0))
        every = _check_duration(self.every, "ScheduleIntervalSpec.every")
        offset = _check_duration(self.offset, "ScheduleIntervalSpec.offset")
        if every < _SECOND:
            raise ValueError(f"ScheduleIntervalSpec.every must be at least 1 second, got {every!r}")
        if every % _SECOND:
            raise ValueError(f"ScheduleIntervalSpec.every must be a whole number of seconds, got {every!r}")
        if offset < timedelta(0):
            raise ValueError(f"ScheduleIntervalSpec.offset must not be negative, got {offset!r}")
        if offset % _SECOND:
            raise ValueError(f"ScheduleIntervalSpec.offset must be a whole number of seconds, got {offset!r}")
        if offset >= every:
            raise ValueError(f"ScheduleIntervalSpec.offset ({offset}) must be shorter than every ({every})")


@dataclasses.dataclass(kw_only=True)
class ScheduleSpec:
    """When a schedule acts: every time named by a cron expression or an interval, once.

    Args:
        cron_expressions: five-field cron expressions (``minute hour day-of-month month
            day-of-week``, with ``*``, lists, ranges, steps, names, ``L``, ``LW``, ``#``) or
            the aliases ``@yearly``, ``@annually``, ``@monthly``, ``@weekly``, ``@daily``,
            ``@midnight``, ``@hourly``; read in ``time_zone_name``. When day-of-month and
            day-of-week are both restricted, a day matching either matches (as cron).
        intervals: fixed periods (:class:`ScheduleIntervalSpec`), independent of the zone.
        time_zone_name: IANA zone the cron expressions are read in (default ``"UTC"``).
        jitter: delay each action by a random but repeatable amount in ``[0, jitter)``,
            never up to the next due time (spreads schedules that share a time).
        start_at, end_at: no action is due before ``start_at`` or after ``end_at`` (both
            inclusive; stored in UTC, a naive datetime taken as UTC, as in Temporal).

    Daylight-saving time, as Debian cron: a job at a fixed wall-clock time (minute and hour
    both fixed, e.g. ``30 2 * * *``) runs once on the spring-forward day, right after the
    gap (03:00 in Europe/Berlin), and once on the fall-back day (at the first 02:30). Jobs
    whose minute or hour starts with ``*`` (``0 * * * *``, ``*/15 * * * *``) follow elapsed
    time: an hourly job runs 23 times on the spring-forward day and 25 on the fall-back day.

    The times are the union of all expressions and intervals (a time named twice is one
    action); an empty spec names no time (the schedule then acts only when triggered or
    backfilled).

    Raises:
        TypeError: a field of the wrong type (including one str as ``cron_expressions``).
        ValueError: naming the field: a bad cron expression (with the bad field, its column
            and what it accepts), an unknown time zone, a negative jitter, ``end_at`` before
            ``start_at``.
    """

    cron_expressions: Sequence[str] = ()
    intervals: Sequence[ScheduleIntervalSpec] = ()
    time_zone_name: str = "UTC"
    jitter: timedelta = timedelta(0)
    start_at: datetime | None = None
    end_at: datetime | None = None

    def __post_init__(self) -> None:
        if isinstance(self.cron_expressions, str):
            raise TypeError("ScheduleSpec.cron_expressions must be a sequence of str, not a single str "
                            f"(write [{self.cron_expressions!r}])")
        crons = tuple(self.cron_expressions)
        for c in crons:
            check_cron_expression(c)
        intervals = tuple(self.intervals)
        for iv in intervals:
            if not isinstance(iv, ScheduleIntervalSpec):
                raise TypeError(f"ScheduleSpec.intervals must hold ScheduleIntervalSpec values, "
                                f"got {type(iv).__name__} {iv!r}")
        zone = "UTC" if self.time_zone_name is None else self.time_zone_name  # None: Temporal's default
        check_time_zone_name(zone, what="ScheduleSpec.time_zone_name")
        jitter = timedelta(0) if self.jitter is None else _check_duration(self.jitter, "ScheduleSpec.jitter")
        if jitter < timedelta(0):
            raise ValueError(f"ScheduleSpec.jitter must not be negative, got {jitter!r}")
        start = None if self.start_at is None else _check_instant(self.start_at, "ScheduleSpec.start_at")
        end = None if self.end_at is None else _check_instant(self.end_at, "ScheduleSpec.end_at")
        if start is not None and end is not None and end < start:
            raise ValueError(f"ScheduleSpec.end_at ({end.isoformat()}) is before start_at ({start.isoformat()})")
        for name, value in (("cron_expressions", crons), ("intervals", intervals), ("time_zone_name", zone),
                            ("jitter", jitter), ("start_at", start), ("end_at", end)):
            object.__setattr__(self, name, value)


@dataclasses.dataclass
class SchedulePolicy:
    """How a schedule treats overlaps, outages and failures.

    Args:
        overlap: what to do when an action is due while the previous workflow still runs.
        catchup_window: after the control plane was down, actions that were due at most
            this long ago still run; older ones are counted as missed. The default, one
            year, is Temporal's.
        pause_on_failure: pause the schedule when a workflow it started fails or times out
            (after its retries).

    Raises:
        TypeError: ``overlap`` is not a :class:`ScheduleOverlapPolicy`, ``catchup_window``
            not a ``timedelta``, ``pause_on_failure`` not a bool.
        ValueError: ``catchup_window`` is not positive.
    """

    overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP
    catchup_window: timedelta = timedelta(days=365)
    pause_on_failure: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.overlap, ScheduleOverlapPolicy):
            raise TypeError(f"SchedulePolicy.overlap must be a ScheduleOverlapPolicy, got {self.overlap!r}")
        window = _check_duration(self.catchup_window, "SchedulePolicy.catchup_window")
        if window <= timedelta(0):
            raise ValueError(f"SchedulePolicy.catchup_window must be positive, got {window!r}")
        if not isinstance(self.pause_on_failure, bool):
            raise TypeError(f"SchedulePolicy.pause_on_failure must be a bool, got {self.pause_on_failure!r}")


@dataclasses.dataclass(kw_only=True)
class ScheduleState:
    """Whether a schedule runs, why not, and how many more actions it may take.

    Args:
        paused: a paused schedule takes no scheduled action (trigger and backfill still act).
        note: a human-readable reason (``pause(note=...)`` sets it; the server may too,
            e.g. when ``pause_on_failure`` pauses the schedule).
        remaining_actions: ``None`` for no limit; otherwise the number of scheduled actions
            still allowed (each one taken counts down; at 0 the schedule stops acting).

    Raises:
        TypeError: a field of the wrong type.
        ValueError: ``remaining_actions`` is negative.
    """

    paused: bool = False
    note: str = ""
    remaining_actions: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.paused, bool):
            raise TypeError(f"ScheduleState.paused must be a bool, got {self.paused!r}")
        if self.note is None:  # Temporal's default
            object.__setattr__(self, "note", "")
        if not isinstance(self.note, str):
            raise TypeError(f"ScheduleState.note must be a str, got {type(self.note).__name__} {self.note!r}")
        left = self.remaining_actions
        if left is not None:
            if not isinstance(left, int) or isinstance(left, bool):
                raise TypeError(f"ScheduleState.remaining_actions must be an int or None, got {left!r}")
            if left < 0:
                raise ValueError(f"ScheduleState.remaining_actions must not be negative (None means no limit), "
                                 f"got {left}")

    @property
    def limited_actions(self) -> bool:
        """Whether ``remaining_actions`` limits the schedule (Temporal's field of that name)."""
        return self.remaining_actions is not None


@dataclasses.dataclass(init=False)
class ScheduleActionStartWorkflow:
    """Start a workflow: each due time starts a run with the id ``{id}-{time as YYYY-MM-DDTHH:MM:SSZ}``.

    Arguments are as :meth:`spindle.client.Client.start_workflow`: the workflow (a ``@workflow.defn``
    class's run method, a decorated function, a DSL definition or a type name), its
    arguments positionally (or as ``args=[...]``, Temporal's form), then by keyword ``id``
    (the prefix of each run's workflow id), ``task_queue``, the three timeouts, a retry
    policy, ``memo`` and ``search_attributes``. The arguments are converted by the client's
    data converter when the schedule is created or updated.

    Raises:
        TypeError: ``workflow`` is not a workflow definition or name; a field of the wrong type.
        ValueError: an empty ``id`` or ``task_queue``, a timeout that is not positive,
            arguments given both positionally and as ``args``.
    """

    workflow: str
    args: tuple[Any, ...]
    id: str
    task_queue: str
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    retry_policy: RetryPolicy | None
    memo: Mapping[str, Any] | None
    search_attributes: TypedSearchAttributes | Mapping[str, Any] | None

    def __init__(
        self,
        workflow: Any,
        *positional: Any,
        args: Sequence[Any] | None = None,
        id: str,
        task_queue: str,
        execution_timeout: timedelta | None = None,
        run_timeout: timedelta | None = None,
        task_timeout: timedelta | None = None,
        retry_policy: RetryPolicy | None = None,
        memo: Mapping[str, Any] | None = None,
        search_attributes: TypedSearchAttributes | Mapping[str, Any] | None = None,
    ) -> None:
        if args is not None:
            if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
                raise TypeError(f"ScheduleActionStartWorkflow: args must be a list or tuple of arguments, "
                                f"got {type(args).__name__}")
            if positional and args:
                raise ValueError("ScheduleActionStartWorkflow: give the workflow's arguments positionally or "
                                 "as args=[...], not both")
            positional = positional or tuple(args)
        name = _workflow_type_name(workflow)
        prepare = None if isinstance(workflow, str) else getattr(workflow, START_ARGS_ATTR, None)
        if prepare is not None:
            positional = tuple(prepare(positional))
        self.workflow = name
        self.args = tuple(positional)
        self.id, self.task_queue = id, task_queue
        self.execution_timeout, self.run_timeout, self.task_timeout = execution_timeout, run_timeout, task_timeout
        self.retry_policy, self.memo, self.search_attributes = retry_policy, memo, search_attributes
        self._check()

    def _check(self) -> None:
        """Check (and normalise) the fields as they are now: at build time and again when sent."""
        self.workflow = _check_text(self.workflow, "ScheduleActionStartWorkflow.workflow")
        args = self.args
        if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
            raise TypeError(f"ScheduleActionStartWorkflow.args must be a list or tuple of arguments, "
                            f"got {type(args).__name__}")
        self.args = tuple(args)
        self.id = _check_text(self.id, "ScheduleActionStartWorkflow.id")
        self.task_queue = _check_text(self.task_queue, "ScheduleActionStartWorkflow.task_queue")
        for field in ("execution_timeout", "run_timeout", "task_timeout"):
            value = getattr(self, field)
            if value is not None:
                _check_duration(value, f"ScheduleActionStartWorkflow.{field}")
                if value <= timedelta(0):
                    raise ValueError(f"ScheduleActionStartWorkflow.{field} must be positive, got {value!r}")
        if self.retry_policy is not None and not isinstance(self.retry_policy, RetryPolicy):
            raise TypeError(f"ScheduleActionStartWorkflow.retry_policy must be a RetryPolicy, got {self.retry_policy!r}")
        memo = self.memo
        if memo is not None:
            if not isinstance(memo, Mapping) or not all(isinstance(k, str) for k in memo):
                raise TypeError(f"ScheduleActionStartWorkflow.memo must be a mapping with str keys, got {memo!r}")
            self.memo = dict(memo)
        attrs = self.search_attributes
        if attrs is not None and not isinstance(attrs, Mapping):
            from spindle.common._search_attributes import TypedSearchAttributes

            if not isinstance(attrs, TypedSearchAttributes):
                raise TypeError("ScheduleActionStartWorkflow.search_attributes must be TypedSearchAttributes or a "
                                f"mapping of name to value, got {type(attrs).__name__}")


def _workflow_type_name(workflow: Any) -> str:
    if isinstance(workflow, str):
        return _check_text(workflow, "ScheduleActionStartWorkflow.workflow")
    from spindle._workflow.defn import WorkflowDefinition

    return WorkflowDefinition.from_target(workflow).name


@dataclasses.dataclass
class Schedule:
    """A schedule: which ``action`` to take, ``spec`` for when, ``policy`` for how, ``state`` for whether.

    Raises:
        TypeError: a field is not of its class (``action`` a :class:`ScheduleActionStartWorkflow`,
            ``spec`` a :class:`ScheduleSpec`, ...).
    """

    action: ScheduleActionStartWorkflow
    spec: ScheduleSpec
    policy: SchedulePolicy = dataclasses.field(default_factory=SchedulePolicy)
    state: ScheduleState = dataclasses.field(default_factory=ScheduleState)

    def __post_init__(self) -> None:
        for name, cls in (("action", ScheduleActionStartWorkflow), ("spec", ScheduleSpec),
                          ("policy", SchedulePolicy), ("state", ScheduleState)):
            value = getattr(self, name)
            if not isinstance(value, cls):
                raise TypeError(f"Schedule.{name} must be a {cls.__name__}, got {type(value).__name__} {value!r}")

    def _check(self) -> None:
        """Check every part as it is now (an updater may have assigned fields): called when the schedule is sent.

        Raises:
            TypeError, ValueError: as when the part was built, naming the field.
        """
        self.__post_init__()
        self.spec.__post_init__()
        for interval in self.spec.intervals:
            interval.__post_init__()
        self.policy.__post_init__()
        self.state.__post_init__()
        self.action._check()


@dataclasses.dataclass
class ScheduleBackfill:
    """Take the actions due between ``start_at`` and ``end_at`` (both inclusive) now, as if that time passed.

    ``overlap`` overrides the schedule's overlap policy for these actions (``None``: the
    schedule's own). Times are stored in UTC; a naive datetime is taken as UTC (as in
    Temporal, whose samples pass ``datetime.utcnow()``).

    Raises:
        TypeError: a time is not a datetime, ``overlap`` not a :class:`ScheduleOverlapPolicy`.
        ValueError: ``end_at`` before ``start_at``.
    """

    start_at: datetime
    end_at: datetime
    overlap: ScheduleOverlapPolicy | None = None

    def __post_init__(self) -> None:
        start = _check_instant(self.start_at, "ScheduleBackfill.start_at")
        end = _check_instant(self.end_at, "ScheduleBackfill.end_at")
        if end < start:
            raise ValueError(f"ScheduleBackfill.end_at ({end.isoformat()}) is before start_at ({start.isoformat()})")
        if self.overlap is not None and not isinstance(self.overlap, ScheduleOverlapPolicy):
            raise TypeError(f"ScheduleBackfill.overlap must be a ScheduleOverlapPolicy or None, got {self.overlap!r}")
        object.__setattr__(self, "start_at", start)
        object.__setattr__(self, "end_at", end)
