"""The commands of a completed workflow task: one handler per command type, checked all first, then written in order.

``validate`` finds the first problem with a task's commands (naming the command index and
field) before anything is written; ``apply`` turns one valid command into its events, with
the tasks and timers it needs (an activity task, a timer, a child start, an external
signal or cancel) and, for a closing command, the close of the run.

``HANDLERS`` maps each command type to its ``CommandHandler`` (``handler``): the attributes
field it needs, its ``check`` and its ``apply``. They live by what they act on:

- ``activities``: SCHEDULE_ACTIVITY_TASK, REQUEST_CANCEL_ACTIVITY_TASK
- ``timers``: START_TIMER, CANCEL_TIMER
- ``children``: START_CHILD_WORKFLOW_EXECUTION
- ``external``: SIGNAL_EXTERNAL_WORKFLOW_EXECUTION, REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION
- ``markers``: RECORD_MARKER; ``search_attributes``: UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
- ``updates``: ACCEPT_UPDATE, REJECT_UPDATE, COMPLETE_UPDATE
- ``closing``: COMPLETE_, FAIL_, CANCEL_ and CONTINUE_AS_NEW_WORKFLOW_EXECUTION

Adding a command: its handler in the module of its kind, and a line in ``HANDLERS``.
"""

from __future__ import annotations

from collections.abc import Sequence

from spindle.api import messages_pb2 as pb
from spindle.controlplane._field_rules import find_problem
from spindle.controlplane._search_attributes import check_search_attributes
from spindle.controlplane.errors import InvalidArgument

from ..._context import HistoryContext
from ..._mutable_state import MutableState
from ..._txn import Txn
from .activities import REQUEST_CANCEL_ACTIVITY_TASK, SCHEDULE_ACTIVITY_TASK
from .children import START_CHILD_WORKFLOW_EXECUTION
from .closing import (
    CANCEL_WORKFLOW_EXECUTION,
    COMPLETE_WORKFLOW_EXECUTION,
    CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
    FAIL_WORKFLOW_EXECUTION,
)
from .external import (
    REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION,
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
)
from .handler import CommandHandler, Validation
from .markers import RECORD_MARKER
from .search_attributes import UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
from .timers import CANCEL_TIMER, START_TIMER
from .updates import ACCEPT_UPDATE, COMPLETE_UPDATE, REJECT_UPDATE

HANDLERS: dict[int, CommandHandler] = {h.command_type: h for h in (
    SCHEDULE_ACTIVITY_TASK,
    REQUEST_CANCEL_ACTIVITY_TASK,
    START_TIMER,
    COMPLETE_WORKFLOW_EXECUTION,
    FAIL_WORKFLOW_EXECUTION,
    CANCEL_TIMER,
    CANCEL_WORKFLOW_EXECUTION,
    REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION,
    RECORD_MARKER,
    CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
    START_CHILD_WORKFLOW_EXECUTION,
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
    UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    ACCEPT_UPDATE,
    COMPLETE_UPDATE,
    REJECT_UPDATE,
)}
"""The handler of each command type a workflow task may carry."""

CLOSE_COMMANDS = frozenset(t for t, h in HANDLERS.items() if h.closes_run)
"""Commands that close the run (the last command of a task)."""


def _name(t: int) -> str:
    try:
        name: str = pb.CommandType.Name(t)
    except ValueError:
        return str(t)
    return name


def validate(ctx: HistoryContext, st: MutableState, commands: Sequence[pb.Command]) -> str | None:
    """The first problem with ``commands`` (naming the command index and field), or None.

    Per command, in order: a known type with its attributes; a closing command only last;
    the handler's own check; the field rules every request meets (``_field_rules``: every
    field in its range, ids and names without control characters, so that a child's start, a
    timer or a retry never meets a value the store or the clock cannot hold after the task
    completed); search attributes registered and typed as at start. Then the task's size.
    """
    v = Validation(ctx, st)
    max_id = v.max_id
    last = len(commands) - 1
    size = 0
    for i, c in enumerate(commands):
        where = f"commands[{i}]"
        h = HANDLERS.get(c.command_type)
        if h is None:
            return f"{where}: unknown command type {_name(c.command_type)}"
        which = c.WhichOneof("attributes")
        if which != h.attr:
            return f"{where}: {h.name} needs {h.attr} (got {which or 'none'})"
        a = getattr(c, which)
        size += a.ByteSize()
        if h.closes_run and i != last:
            return f"{where}: {h.name} must be the last command of the task"
        problem = h.check(a, where, v)
        if problem is None:
            problem = find_problem(a, where, max_id)
        if problem is not None:
            return problem
        if h.search_attributes_namespace is not None and a.HasField("search_attributes"):
            ns = h.search_attributes_namespace(v, a)
            if ns is not None:
                try:
                    check_search_attributes(ns, a.search_attributes, f"{where}.search_attributes")
                except InvalidArgument as e:
                    return e.message
    if size > ctx.config.max_payload_bytes * 4:
        return f"commands: {size} bytes in one task is over the limit"
    return None


def apply(ctx: HistoryContext, txn: Txn, c: pb.Command, wtc: int, identity: str) -> None:
    """Write the event(s) of one valid command (``wtc``: the task's WorkflowTaskCompleted event id)."""
    h = HANDLERS.get(c.command_type)
    if h is not None:
        h.apply(ctx, txn, getattr(c, h.attr), wtc, identity)


__all__ = ["CLOSE_COMMANDS", "HANDLERS", "apply", "validate"]
