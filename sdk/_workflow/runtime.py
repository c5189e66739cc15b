"""The services workflow code calls through ``spindle.workflow``, as a mixin of the instance.

Every method here runs on the workflow's event loop during an activation. Methods
that issue commands go through :meth:`add_command`, which refuses them inside a
query handler or an update validator.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import random as _random_mod
import uuid as _uuid

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.exceptions import NonDeterminismError, WorkflowContextError
from spindle._workflow.statemachines._command import CommandEntry
from spindle._workflow.statemachines.activity import ActivityCancellationType, ActivityMachine
from spindle._workflow.statemachines.child_workflow import ChildWorkflowMachine
from spindle._workflow.statemachines.external import ExternalRequestMachine
from spindle._workflow.statemachines.markers import (
    RESERVED_MARKERS,
    RecordedMarkers,
    custom_marker_command,
    side_effect_command,
    version_command,
)
from spindle._workflow.statemachines.timer import TimerMachine
from spindle._workflow.defn import handler_name
from spindle._workflow.info import CURRENT_UPDATE, WorkflowInfo
from spindle._workflow.loop import DurableTimerHandle, WorkflowEventLoop

__all__ = ["RuntimeServices", "DEFAULT_VERSION", "ContinueAsNewError"]

DEFAULT_VERSION = 1


class ContinueAsNewError(BaseException):
    """Raised by ``workflow.continue_as_new``; the runtime turns it into CONTINUE_AS_NEW.

    It derives from ``BaseException`` so that ``except Exception`` in workflow code does
    not swallow it.
    """

    def __init__(self, attrs: pb.ContinueAsNewWorkflowExecutionCommandAttributes) -> None:
        super().__init__("continue as new")
        self.attrs = attrs


class RuntimeServices:
    """Command-issuing and read-only services for workflow code (mixed into the instance)."""

    # Set by WorkflowInstance.__init__.
    _loop: WorkflowEventLoop
    _converter: Any
    _info: WorkflowInfo | None
    _now_ms: int
    _replaying: bool
    _suggest_can: bool
    _current_task_event_id: int
    _mode: str | None
    _commands: list[CommandEntry]
    _by_event_id: dict[int, Any]
    _timers: dict[str, TimerMachine]
    _task_markers: RecordedMarkers
    _versions: dict[str, int]
    _fatal: BaseException | None
    _counters: collections.Counter[str]
    _random: _random_mod.Random
    _search_attributes: dict[str, Any]

    # ------------------------------------------------------------------ commands

    def add_command(self, entry: CommandEntry) -> None:
        """Append a command to the current activation (refused in queries and validators).

        During eviction commands are discarded silently: cleanup code that cancels
        handles must not fail, and nothing is sent any more.
        """
        if self._mode == "evicting":
            return
        self.require_commands_allowed("this call")
        self._commands.append(entry)

    def unsend(self, entry: CommandEntry) -> bool:
        """Drop ``entry`` if it was produced in the current activation; return whether it was."""
        if entry.sent:
            return False
        try:
            self._commands.remove(entry)
        except ValueError:
            return False
        return True

    def require_commands_allowed(self, api: str) -> None:
        """Raise WorkflowContextError inside a query handler, update validator or eviction."""
        if self._mode == "query":
            raise WorkflowContextError(f"{api} is not allowed in a query handler: queries must not change the "
                                       "workflow (no activities, timers, markers or other commands)")
        if self._mode == "validator":
            raise WorkflowContextError(f"{api} is not allowed in an update validator: validators must not change "
                                       "the workflow (no activities, timers, markers or other commands)")
        if self._mode == "evicting":
            raise WorkflowContextError(f"{api}: the workflow is being evicted from the worker cache")

    def next_seq(self, kind: str) -> int:
        """The next sequence number (1, 2, ...) of ``kind`` (activity, timer, child, ...)."""
        self._counters[kind] += 1
        return self._counters[kind]

    def nondeterminism(self, message: str, event_id: int | None = None) -> NonDeterminismError:
        """Record a NonDeterminismError (so workflow code cannot swallow it) and return it to raise."""
        err = NonDeterminismError(message, event_id=event_id)
        if self._fatal is None:
            self._fatal = err
        return err

    # ------------------------------------------------------------------ reading

    @property
    def workflow_info(self) -> WorkflowInfo:
        """The current run's info (replaying flag and history length as of now)."""
        if self._info is None:
            raise WorkflowContextError("the workflow has not started yet")
        return dataclasses.replace(self._info, is_replaying=self._replaying,
                                   search_attributes=dict(self._search_attributes),
                                   _history_length=self._current_task_event_id,
                                   _continue_as_new_suggested=self._suggest_can)

    @property
    def current_history_length(self) -> int:
        """The id of the current ``WorkflowTaskStarted`` event (events in history so far)."""
        return self._current_task_event_id

    @property
    def continue_as_new_suggested(self) -> bool:
        """The server's continue-as-new suggestion on the current workflow task."""
        return self._suggest_can

    def logger_details(self) -> dict[str, Any]:
        """What ``workflow.logger`` adds to records: the run's identity (and the update being handled)."""
        if self._info is None:
            raise WorkflowContextError("the workflow has not started yet")
        i = self._info
        details: dict[str, Any] = {"attempt": i.attempt, "namespace": i.namespace, "run_id": i.run_id,
                                   "task_queue": i.task_queue, "workflow_id": i.workflow_id,
                                   "workflow_type": i.workflow_type}
        update = CURRENT_UPDATE.get()
        if update is not None:
            details["update_id"] = update.id
            details["update_name"] = update.name
        return details

    def now(self) -> datetime:
        """Workflow time: the start time of the current workflow task (aware, UTC)."""
        return datetime.fromtimestamp(self._now_ms / 1000, tz=timezone.utc)

    def workflow_time(self) -> float:
        """Workflow time in seconds (the loop's clock)."""
        return self._now_ms / 1000

    @property
    def is_replaying(self) -> bool:
        """Whether the current activation re-runs a recorded workflow task."""
        return self._replaying

    def deterministic_random(self) -> _random_mod.Random:
        """The run's ``random.Random``, seeded from the run id."""
        return self._random

    def uuid4(self) -> _uuid.UUID:
        """A version-4 UUID drawn from the run's deterministic random."""
        return _uuid.UUID(int=self._random.getrandbits(128), version=4)

    # ------------------------------------------------------------------ timers (LoopHost)

    def start_durable_timer(self, handle: DurableTimerHandle, delay_ms: int) -> None:
        """Start a timer for a ``call_later`` handle (``asyncio.sleep``, ``wait_for``, ...)."""
        self.require_commands_allowed("asyncio.sleep / a timeout")
        timer_id = str(self.next_seq("timer"))
        handle.timer_id = timer_id
        loop = self._loop
        self._timers[timer_id] = TimerMachine(self, timer_id, delay_ms, lambda: loop.fire_timer(handle))

    def cancel_durable_timer(self, handle: DurableTimerHandle) -> None:
        """Cancel the timer of a ``call_later`` handle (no-op once fired)."""
        machine = self._timers.get(handle.timer_id)
        if machine is not None and not machine.fired and not machine.cancelled:
            if self._mode == "evicting":
                machine.cancelled = True
                return
            machine.cancel()

    # ------------------------------------------------------------------ activities

    def schedule_activity(self, attrs: pb.ScheduleActivityTaskCommandAttributes, result_type: Any,
                          cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
                          ) -> ActivityMachine:
        """Issue SCHEDULE_ACTIVITY_TASK; assigns the next sequential activity id when none is given."""
        self.require_commands_allowed("workflow.start_activity")
        seq = self.next_seq("activity")
        if not attrs.activity_id:
            attrs.activity_id = str(seq)
        return ActivityMachine(
            self, self._loop, attrs,
            decode_result=lambda p: self._decode_single(p, result_type),
            decode_failure=self._converter.from_failure,
            on_scheduled=self._by_event_id.__setitem__,
            cancellation_type=cancellation_type,
        )

    def _decode_single(self, payloads: pb.Payloads, type_hint: Any) -> Any:
        values = self._converter.from_payloads(payloads, [type_hint] if type_hint is not None else None)
        return values[0] if values else None

    # ------------------------------------------------------------------ children and external workflows

    def start_child(self, attrs: pb.StartChildWorkflowExecutionCommandAttributes, result_type: Any
                    ) -> ChildWorkflowMachine:
        """Issue START_CHILD_WORKFLOW_EXECUTION (a default id is derived from this run)."""
        self.require_commands_allowed("workflow.start_child_workflow")
        seq = self.next_seq("child")
        if not attrs.workflow_id:
            info = self.workflow_info
            attrs.workflow_id = f"{info.workflow_id}/{info.run_id}/child-{seq}"
        return ChildWorkflowMachine(
            self, self._loop, attrs,
            decode_result=lambda p: self._decode_single(p, result_type),
            decode_failure=self._converter.from_failure,
            on_initiated=self._by_event_id.__setitem__,
            send_signal=lambda m, sig, args: self.signal_external(
                m.workflow_id, m.run_id, sig, args, namespace=m.namespace, child_workflow_only=True).future,
            send_cancel=lambda m: self.cancel_external(m.workflow_id, m.run_id, namespace=m.namespace,
                                                       child_workflow_only=True),
        )

    def signal_external(self, workflow_id: str, run_id: str | None, signal: Any, args: Sequence[Any], *,
                        namespace: str = "", child_workflow_only: bool = False) -> ExternalRequestMachine:
        """Issue SIGNAL_EXTERNAL_WORKFLOW_EXECUTION."""
        self.require_commands_allowed("signal to another workflow")
        name = handler_name(signal)
        cmd = pb.Command(
            command_type=pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
            signal_external_workflow_execution_command_attributes=pb.SignalExternalWorkflowExecutionCommandAttributes(
                namespace=namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
                signal_name=name, input=self._converter.to_payloads(list(args)),
                child_workflow_only=child_workflow_only),
        )
        return ExternalRequestMachine(self, self._loop, cmd, on_initiated=self._by_event_id.__setitem__,
                                      what=f"signal {name!r} to workflow {workflow_id!r}")

    def cancel_external(self, workflow_id: str, run_id: str | None, *, namespace: str = "",
                        child_workflow_only: bool = False) -> ExternalRequestMachine:
        """Issue REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION."""
        self.require_commands_allowed("cancelling another workflow")
        cmd = pb.Command(
            command_type=pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION,
            request_cancel_external_workflow_execution_command_attributes=(
                pb.RequestCancelExternalWorkflowExecutionCommandAttributes(
                    namespace=namespace, workflow_id=workflow_id, run_id=run_id or "",
                    child_workflow_only=child_workflow_only)),
        )
        return ExternalRequestMachine(self, self._loop, cmd, on_initiated=self._by_event_id.__setitem__,
                                      what=f"cancel request to workflow {workflow_id!r}")

    # ------------------------------------------------------------------ markers

    def side_effect(self, fn: Callable[[], Any], type_hint: Any) -> Any:
        """Run ``fn`` once and record its value; on replay return the recorded value."""
        self.require_commands_allowed("workflow.side_effect")
        seq = self.next_seq("side_effect")
        if self._replaying:
            data = self._task_markers.side_effects.get(seq)
            if data is None:
                raise self.nondeterminism(
                    f"nondeterministic workflow: side_effect #{seq} has no recorded SideEffect marker in the "
                    f"workflow task started at event {self._current_task_event_id}", self._current_task_event_id)
            value = self._decode_single(data, type_hint)
        else:
            from spindle._workflow.guard import suspended

            with suspended():  # side effects are the one place non-deterministic calls belong
                value = fn()
            data = self._converter.to_payloads([value])
        self.add_command(CommandEntry(side_effect_command(self._converter, seq, data)))
        return value

    def record_marker(self, name: str, details: Mapping[str, Any]) -> None:
        """Issue RECORD_MARKER ``name`` with ``details`` (replay matches it by name, in order)."""
        self.require_commands_allowed("workflow.record_marker")
        if not name or name in RESERVED_MARKERS:
            raise ValueError(f"record_marker: the marker name must be non-empty and not one of "
                             f"{sorted(RESERVED_MARKERS)}, got {name!r}")
        if not all(isinstance(key, str) and key for key in details):
            raise ValueError("record_marker: detail keys must be non-empty strings")
        self.add_command(CommandEntry(custom_marker_command(self._converter, name, dict(details))))

    def get_version(self, change_id: str, min_supported: int, max_supported: int) -> int:
        """The version of ``change_id`` for this run (recorded once per run in a Version marker)."""
        self.require_commands_allowed("workflow.get_version")
        if min_supported > max_supported:
            raise ValueError(f"get_version({change_id!r}): min_supported {min_supported} > max_supported {max_supported}")
        version = self._versions.get(change_id)
        if version is None:
            if self._replaying:
                version = self._task_markers.versions.get(change_id, DEFAULT_VERSION)
                record = change_id in self._task_markers.versions
            else:
                version, record = max_supported, True
            self._versions[change_id] = version
            if record:
                self.add_command(CommandEntry(version_command(self._converter, change_id, version)))
        if not min_supported <= version <= max_supported:
            origin = "recorded" if change_id in self._task_markers.versions else "default (no marker in history)"
            raise self.nondeterminism(
                f"nondeterministic workflow: change id {change_id!r} has {origin} version {version}, outside the "
                f"range [{min_supported}, {max_supported}] this code supports (workflow task started at event "
                f"{self._current_task_event_id})", self._current_task_event_id)
        return version

    def deprecate_patch(self, change_id: str) -> None:
        """Record the patch marker on new runs; accept replays with or without it."""
        self.require_commands_allowed("workflow.deprecate_patch")
        if change_id in self._versions:
            return
        if self._replaying and change_id not in self._task_markers.versions:
            self._versions[change_id] = DEFAULT_VERSION + 1
            return
        version = self._task_markers.versions.get(change_id, DEFAULT_VERSION + 1) if self._replaying else DEFAULT_VERSION + 1
        self._versions[change_id] = version
        self.add_command(CommandEntry(version_command(self._converter, change_id, version)))

    def upsert_search_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Issue UPSERT_WORKFLOW_SEARCH_ATTRIBUTES and update ``info().search_attributes``."""
        self.require_commands_allowed("workflow.upsert_search_attributes")
        sa = pb.SearchAttributes(indexed_fields={k: self._converter.to_payload(v) for k, v in attributes.items()})
        self.add_command(CommandEntry(pb.Command(
            command_type=pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
            upsert_workflow_search_attributes_command_attributes=pb.UpsertWorkflowSearchAttributesCommandAttributes(
                search_attributes=sa),
        )))
        self._search_attributes.update(attributes)

    @contextlib.contextmanager
    def mode(self, mode: str | None) -> Iterator[None]:
        """Run a block as a query, validator or eviction (commands refused)."""
        previous, self._mode = self._mode, mode
        try:
            yield
        finally:
            self._mode = previous

    def create_waiter(self) -> asyncio.Future[Any]:
        """A future on the workflow loop."""
        return self._loop.create_future()
