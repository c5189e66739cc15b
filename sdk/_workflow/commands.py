"""A run's commands: those the current activation produces, and those sent and awaiting their event.

Workflow code and the state machines add commands through :meth:`CommandBuffer.add_command`
(refused in a query handler, an update validator or during eviction); the runtime's own
update and closing commands go in with :meth:`CommandBuffer.append`. At the end of an
activation :meth:`CommandBuffer.send` hands them out, and each that writes an event waits
for it: :meth:`CommandBuffer.match` pairs the command events of history with them, in
order, and raises :class:`~spindle.exceptions.NonDeterminismError` naming both sides when
they differ.
"""

from __future__ import annotations

import collections
import contextlib

from collections.abc import Iterator

from spindle._workflow.fatal import Fatal
from spindle._workflow.statemachines._command import (
    COMMAND_EVENT_TYPES,
    CommandEntry,
    command_key,
    describe_command,
    describe_event,
    event_key,
)
from spindle._workflow.statemachines.markers import VERSION_MARKER
from spindle.api import messages_pb2 as pb
from spindle.exceptions import WorkflowContextError

__all__ = ["CommandBuffer", "task_command_events"]

E = pb  # E.EVENT_TYPE_*: plain module constants (the EventType wrapper resolves attributes slowly)


class CommandBuffer:
    """The commands of one run (the :class:`~spindle._workflow.statemachines._command.CommandSink`).

    Args:
        fatal: where a nondeterminism found while matching is recorded as well as raised.

    Attributes:
        mode: ``None`` while workflow code may issue commands, else ``"query"``,
            ``"validator"`` or ``"evicting"`` (set with :meth:`in_mode`).
    """

    def __init__(self, fatal: Fatal) -> None:
        self._fatal = fatal
        self.mode: str | None = None
        self._pending: list[CommandEntry] = []
        self._unmatched: collections.deque[CommandEntry] = collections.deque()
        self._counters: collections.Counter[str] = collections.Counter()
        self._closing: pb.Command | None = None
        self._closing_emitted = False
        self._last_completed_event_id = 0

    # ------------------------------------------------------------------ producing

    def add_command(self, entry: CommandEntry) -> None:
        """Append a command to the current activation (refused in queries and validators).

        During eviction commands are discarded silently: cleanup code that cancels
        handles must not fail, and nothing is sent any more.

        Raises:
            WorkflowContextError: in a query handler or an update validator.
        """
        if self.mode == "evicting":
            return
        self.require_allowed("this call")
        self._pending.append(entry)

    def append(self, entry: CommandEntry) -> None:
        """Append one of the runtime's own commands (update answers), whatever the mode."""
        self._pending.append(entry)

    def unsend(self, entry: CommandEntry) -> bool:
        """Drop ``entry`` if it was produced in the current activation; return whether it was."""
        if entry.sent:
            return False
        try:
            self._pending.remove(entry)
        except ValueError:
            return False
        return True

    def require_allowed(self, api: str) -> None:
        """Raise WorkflowContextError inside a query handler, update validator or eviction.

        Raises:
            WorkflowContextError: the message names ``api`` and why it is refused.
        """
        if self.mode == "query":
            raise WorkflowContextError(f"{api} is not allowed in a query handler: queries must not change the "
                                       "workflow (no activities, timers, markers or other commands)")
        if self.mode == "validator":
            raise WorkflowContextError(f"{api} is not allowed in an update validator: validators must not change "
                                       "the workflow (no activities, timers, markers or other commands)")
        if self.mode == "evicting":
            raise WorkflowContextError(f"{api}: the workflow is being evicted from the worker cache")

    def next_seq(self, kind: str) -> int:
        """The next sequence number (1, 2, ...) of ``kind`` (activity, timer, child, ...)."""
        self._counters[kind] += 1
        return self._counters[kind]

    @contextlib.contextmanager
    def in_mode(self, mode: str | None) -> Iterator[None]:
        """Run a block as a query, validator or eviction (commands refused), then restore the mode."""
        previous, self.mode = self.mode, mode
        try:
            yield
        finally:
            self.mode = previous

    # ------------------------------------------------------------------ closing

    def set_closing(self, command: pb.Command) -> None:
        """Make ``command`` the run's closing command, unless one was set already (the first wins)."""
        if self._closing is None:
            self._closing = command

    def emit_closing(self) -> None:
        """Append the closing command at the end of the activation that set it (once)."""
        if self._closing is not None and not self._closing_emitted:
            self._closing_emitted = True
            self._pending.append(CommandEntry(self._closing))

    # ------------------------------------------------------------------ sending and matching

    @property
    def produced_any(self) -> bool:
        """Whether any command was produced or is still waiting for its event."""
        return bool(self._pending or self._unmatched)

    def discard_pending(self) -> None:
        """Forget the current activation's commands (a replayed task whose outcome is unknown)."""
        self._pending.clear()

    def send(self) -> list[pb.Command]:
        """Hand out the current activation's commands, in order; those that write an event await it."""
        commands = self._pending
        self._pending = []
        for c in commands:
            c.sent = True
            if c.writes_event:
                self._unmatched.append(c)
        return [c.command for c in commands]

    def task_completed(self, event_id: int) -> None:
        """Note a WorkflowTaskCompleted event: the command events that follow are that task's."""
        self._last_completed_event_id = event_id

    def match(self, event: pb.HistoryEvent) -> None:
        """Pair a command event of history with the oldest sent command.

        A Version marker with no command is skipped (the code no longer calls
        ``get_version``/``patched`` there).

        Raises:
            NonDeterminismError: no command is waiting, or the oldest is of another kind
                or identity; the message names the event and the command.
        """
        is_version_marker = (event.event_type == E.EVENT_TYPE_MARKER_RECORDED
                             and event.marker_recorded_event_attributes.marker_name == VERSION_MARKER)
        if not self._unmatched:
            if is_version_marker:
                return  # the code no longer calls get_version/patched here: allowed
            raise self._fatal.nondeterminism(
                f"nondeterministic workflow: history event {event.event_id} is {describe_event(event)} but the "
                f"workflow code produced no command for it (workflow task completed at event "
                f"{self._last_completed_event_id})", event.event_id)
        head = self._unmatched[0]
        if command_key(head.command) != event_key(event):
            if is_version_marker:
                return
            raise self._fatal.nondeterminism(
                f"nondeterministic workflow: history event {event.event_id} is {describe_event(event)} but the "
                f"workflow code produced {describe_command(head.command)}", event.event_id)
        self._unmatched.popleft()
        if head.on_recorded is not None:
            head.on_recorded(event)

    def check_all_matched(self, at: pb.HistoryEvent | None) -> None:
        """Check that every sent command found its event before ``at`` (``None``: the end of history).

        Raises:
            NonDeterminismError: commands are left over; the message lists them.
        """
        if not self._unmatched:
            return
        extra = ", ".join(describe_command(c.command) for c in self._unmatched)
        where = f"before event {at.event_id}" if at is not None else "at the end of the history"
        raise self._fatal.nondeterminism(
            f"nondeterministic workflow: the workflow code produced {extra} but the history has no matching event "
            f"{where}: the workflow task completed at event {self._last_completed_event_id} recorded fewer commands",
            self._last_completed_event_id)


def task_command_events(events: list[pb.HistoryEvent], start: int) -> list[pb.HistoryEvent]:
    """The events of one completed task's command batch: from ``start`` to the next WorkflowTaskStarted."""
    out: list[pb.HistoryEvent] = []
    for e in events[start:]:
        if e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            break
        if e.event_type in COMMAND_EVENT_TYPES:
            out.append(e)
    return out
