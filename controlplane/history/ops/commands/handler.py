"""What a command handler is, and what the checks of one task's commands share.

A ``CommandHandler`` says, for one command type, which attributes field the command
carries, how to check those attributes (``check``) and which events and tasks a valid
one writes (``apply``). ``Validation`` is what the checks of one task's commands share:
the run, the id length limit, and what the task's earlier commands claimed or ended (the
activity ids and timer ids they took, the activities and timers they cancelled, the updates
they accepted, rejected or completed): a later command of the same task is checked against
the run as those commands leave it, so that every command that passes can be applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.controlplane.namespaces import Namespace

from ..._context import HistoryContext
from ..._mutable_state import MutableState
from ..._txn import Txn


class Validation:
    """The checks of one task's commands, in command order: the run, its limits, and what earlier commands did.

    ``where`` below is the ``"commands[j]"`` of the earlier command, for messages.

    Attributes:
        ctx: the history service's collaborators (config, namespaces).
        state: the run the task belongs to (not changed by the checks).
        max_id: the longest id or name allowed (``ServerConfig.max_id_length``).
        activity_ids: ids of the run's pending activities and of those the task's earlier commands schedule.
        cancelled_activities: scheduled event id -> ``where`` of the earlier command that requests its cancel.
        timers: ids of the run's pending timers, plus those started and less those cancelled by earlier commands.
        cancelled_timers: timer id -> ``where`` of the earlier command that last cancelled it.
        accepted_updates: updates the run accepted, and those the task's earlier commands accept.
        update_commands: update id -> (``"accepted"``, ``"rejected"`` or ``"completed"``, ``where``): what the
            task's last command naming the update did to it.
    """

    __slots__ = ("accepted_updates", "activity_ids", "cancelled_activities", "cancelled_timers", "ctx", "max_id",
                 "state", "timers", "update_commands")

    def __init__(self, ctx: HistoryContext, st: MutableState) -> None:
        self.ctx = ctx
        self.state = st
        self.max_id = ctx.config.max_id_length
        self.activity_ids = set(st.activity_ids)
        self.cancelled_activities: dict[int, str] = {}
        self.timers = set(st.timers)
        self.cancelled_timers: dict[str, str] = {}
        self.accepted_updates = set(st.accepted_updates)
        self.update_commands: dict[str, tuple[str, str]] = {}


#: ``check(attributes, where, validation)``: the problem with one command's attributes (``where`` is
#: ``"commands[i]"``, the prefix of the message), or None. Called before the field rules (``find_problem``).
Check = Callable[[Any, str, Validation], "str | None"]
#: ``apply(ctx, txn, attributes, wtc, identity)``: write a valid command's events and tasks (``wtc``: the
#: task's WorkflowTaskCompleted event id; ``identity``: the worker's).
Apply = Callable[[HistoryContext, Txn, Any, int, str], None]
#: ``namespace_of(validation, attributes)``: the namespace the command's search attributes are checked against.
NamespaceOf = Callable[[Validation, Any], "Namespace | None"]


@dataclass(frozen=True, slots=True, eq=False)
class CommandHandler:
    """How one command type is checked and written.

    Attributes:
        command_type: the ``pb.CommandType`` handled.
        attr: the command's attributes field (``Command.attributes`` oneof) this type needs.
        check: the command-specific checks (see ``Check``); the field rules and search attributes are checked after it.
        apply: writes the command's events and tasks (see ``Apply``).
        closes_run: the command closes the run, so it must be the last of its task.
        search_attributes_namespace: for a command that carries ``search_attributes``, the namespace
            they must be registered in (see ``NamespaceOf``); None for the others.
        name: the command type's name, for messages.
    """

    command_type: int
    attr: str
    check: Check
    apply: Apply
    closes_run: bool = False
    search_attributes_namespace: NamespaceOf | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", pb.CommandType.Name(self.command_type))


def nothing_to_check(a: Any, where: str, v: Validation) -> None:
    """The check of a command with no rule of its own (its fields still meet the field rules)."""


def own_namespace(v: Validation, a: Any) -> Namespace | None:
    """The run's own namespace (where upserted and continued search attributes live)."""
    return v.ctx.namespaces.by_id(v.state.namespace_id)


__all__ = ["Apply", "Check", "CommandHandler", "NamespaceOf", "Validation", "nothing_to_check", "own_namespace"]
