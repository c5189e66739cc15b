"""The services workflow code calls through ``spindle.workflow``: :class:`WorkflowRuntime`.

One per run, owned by its :class:`~spindle._workflow.instance.WorkflowInstance`, which
gives it its collaborators: the converter, the run's
:class:`~spindle._workflow.commands.CommandBuffer` (where commands go, refused inside a
query handler or an update validator), the :class:`~spindle._workflow.fatal.Fatal` slot
for nondeterminism, and the registries of timers and of machines by event id that the
instance's event application reads. The instance tells it where the run is
(:meth:`WorkflowRuntime.begin_task`, :meth:`WorkflowRuntime.set_run_info`). It creates the
run's event loop and is its :class:`~spindle._workflow.loop.LoopHost` (workflow time,
durable timers).

Every method here runs on the workflow's event loop during an activation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random as _random_mod
import uuid as _uuid

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from spindle._workflow.commands import CommandBuffer
from spindle._workflow.defn import handler_name
from spindle._workflow.fatal import Fatal
from spindle._workflow.info import WorkflowInfo
from spindle._workflow.loop import DurableTimerHandle, WorkflowEventLoop
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
from spindle.api import messages_pb2 as pb
from spindle.exceptions import WorkflowContextError

__all__ = ["WorkflowRuntime", "DEFAULT_VERSION"]

DEFAULT_VERSION = 1


class WorkflowRuntime:
    """Command-issuing and read-only services for workflow code (see the module docs).

    Args:
        converter: the run's data converter.
        commands: where the commands go.
        fatal: where a nondeterminism is recorded as well as raised.
        timers: the run's timers by id (the instance fires them on TimerFired).
        by_event_id: the machines by the event id of their initiating command event
            (the instance hands them their result events).
        run_id: seeds the run's deterministic random.

    Attributes:
        loop: the run's event loop (this runtime is its host).
        converter: the run's data converter (for what the workflow API encodes and decodes).
        info: the run's info as of its start (``None`` until WorkflowExecutionStarted was
            applied); :attr:`workflow_info` is the current view.
        conditions: the pending ``workflow.wait_condition`` predicates and their futures.
    """

    def __init__(self, converter: Any, commands: CommandBuffer, fatal: Fatal, *,
                 timers: dict[str, TimerMachine], by_event_id: dict[int, Any], run_id: str) -> None:
        self.loop = WorkflowEventLoop(self)  # type: ignore[abstract]  # I/O methods are set on the class
        self.converter = converter
        self._commands = commands
        self._fatal = fatal
        self._timers = timers
        self._by_event_id = by_event_id
        self.info: WorkflowInfo | None = None
        self._search_attributes: dict[str, Any] = {}
        self._now_ms = 0
        self._replaying = False
        self._suggest_can = False
        self._current_task_event_id = 0
        self._task_markers = RecordedMarkers(converter)
        self._versions: dict[str, int] = {}
        self._random = _random_mod.Random(run_id)
        self.conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []

    # ------------------------------------------------------------------ where the run is (set by the instance)

    def begin_task(self, started: pb.HistoryEvent, *, replaying: bool, lookahead: Sequence[pb.HistoryEvent]) -> None:
        """Enter the workflow task of ``started``: its time, whether it replays, the markers it recorded."""
        self._now_ms = max(self._now_ms, started.event_time_ms)
        self._current_task_event_id = started.event_id
        self._replaying = replaying
        self._task_markers = RecordedMarkers(self.converter, lookahead)
        self._suggest_can = started.workflow_task_started_event_attributes.suggest_continue_as_new

    def set_run_info(self, info: WorkflowInfo, search_attributes: dict[str, Any]) -> None:
        """Record the started run's info and its initial search attributes."""
        self._search_attributes = search_attributes
        self.info = info

    def check_conditions(self) -> bool:
        """Resolve the ``wait_condition`` futures whose predicate is now true (or raised); return whether any was."""
        resolved = False
        remaining: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        for fn, fut in self.conditions:
            if fut.done():
                continue
            try:
                ok = fn()
            except Exception as e:
                fut.set_exception(e)
                resolved = True
                continue
            if ok:
                fut.set_result(None)
                resolved = True
            else:
                remaining.append((fn, fut))
        self.conditions = remaining
        return resolved

    # ------------------------------------------------------------------ reading

    @property
    def workflow_info(self) -> WorkflowInfo:
        """The current run's info (replaying flag and history length as of now).

        Raises:
            WorkflowContextError: the run has not started yet.
        """
        if self.info is None:
            raise WorkflowContextError("the workflow has not started yet")
        return dataclasses.replace(self.info, is_replaying=self._replaying,
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

    def require_commands_allowed(self, api: str) -> None:
        """Raise WorkflowContextError (naming ``api``) inside a query handler, update validator or eviction."""
        self._commands.require_allowed(api)

    def create_waiter(self) -> asyncio.Future[Any]:
        """A future on the workflow loop."""
        return self.loop.create_future()

    # ------------------------------------------------------------------ timers (LoopHost)

    def start_durable_timer(self, handle: DurableTimerHandle, delay_ms: int) -> None:
        """Start a timer for a ``call_later`` handle (``asyncio.sleep``, ``wait_for``, ...)."""
        commands = self._commands
        commands.require_allowed("asyncio.sleep / a timeout")
        timer_id = str(commands.next_seq("timer"))
        handle.timer_id = timer_id
        loop = self.loop
        self._timers[timer_id] = TimerMachine(commands, timer_id, delay_ms, lambda: loop.fire_timer(handle))

    def cancel_durable_timer(self, handle: DurableTimerHandle) -> None:
        """Cancel the timer of a ``call_later`` handle (no-op once fired)."""
        machine = self._timers.get(handle.timer_id)
        if machine is not None and not machine.fired and not machine.cancelled:
            if self._commands.mode == "evicting":
                machine.cancelled = True
                return
            machine.cancel()

    # ------------------------------------------------------------------ activities

    def schedule_activity(self, attrs: pb.ScheduleActivityTaskCommandAttributes, result_type: Any,
                          cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
                          ) -> ActivityMachine:
        """Issue SCHEDULE_ACTIVITY_TASK; assigns the next sequential activity id when none is given.

        Raises:
            WorkflowContextError: in a query handler or an update validator.
        """
        commands = self._commands
        commands.require_allowed("workflow.start_activity")
        seq = commands.next_seq("activity")
        if not attrs.activity_id:
            attrs.activity_id = str(seq)
        return ActivityMachine(
            commands, self.loop, attrs,
            decode_result=lambda p: self._decode_single(p, result_type),
            decode_failure=self.converter.from_failure,
            on_scheduled=self._by_event_id.__setitem__,
            cancellation_type=cancellation_type,
        )

    def _decode_single(self, payloads: pb.Payloads, type_hint: Any) -> Any:
        values = self.converter.from_payloads(payloads, [type_hint] if type_hint is not None else None)
        return values[0] if values else None

    # ------------------------------------------------------------------ children and external workflows

    def start_child(self, attrs: pb.StartChildWorkflowExecutionCommandAttributes, result_type: Any
                    ) -> ChildWorkflowMachine:
        """Issue START_CHILD_WORKFLOW_EXECUTION (a default id is derived from this run).

        Raises:
            WorkflowContextError: in a query handler or an update validator.
        """
        commands = self._commands
        commands.require_allowed("workflow.start_child_workflow")
        seq = commands.next_seq("child")
        if not attrs.workflow_id:
            info = self.workflow_info
            attrs.workflow_id = f"{info.workflow_id}/{info.run_id}/child-{seq}"
        return ChildWorkflowMachine(
            commands, self.loop, attrs,
            decode_result=lambda p: self._decode_single(p, result_type),
            decode_failure=self.converter.from_failure,
            on_initiated=self._by_event_id.__setitem__,
            send_signal=lambda m, sig, args: self.signal_external(
                m.workflow_id, m.run_id, sig, args, namespace=m.namespace, child_workflow_only=True).future,
            send_cancel=lambda m: self.cancel_external(m.workflow_id, m.run_id, namespace=m.namespace,
                                                       child_workflow_only=True),
        )

    def signal_external(self, workflow_id: str, run_id: str | None, signal: Any, args: Sequence[Any], *,
                        namespace: str = "", child_workflow_only: bool = False) -> ExternalRequestMachine:
        """Issue SIGNAL_EXTERNAL_WORKFLOW_EXECUTION.

        Raises:
            WorkflowContextError: in a query handler or an update validator.
        """
        self._commands.require_allowed("signal to another workflow")
        name = handler_name(signal)
        cmd = pb.Command(
            command_type=pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
            signal_external_workflow_execution_command_attributes=pb.SignalExternalWorkflowExecutionCommandAttributes(
                namespace=namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
                signal_name=name, input=self.converter.to_payloads(list(args)),
                child_workflow_only=child_workflow_only),
        )
        return ExternalRequestMachine(self._commands, self.loop, cmd, on_initiated=self._by_event_id.__setitem__,
                                      what=f"signal {name!r} to workflow {workflow_id!r}")

    def cancel_external(self, workflow_id: str, run_id: str | None, *, namespace: str = "",
                        child_workflow_only: bool = False) -> ExternalRequestMachine:
        """Issue REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION.

        Raises:
            WorkflowContextError: in a query handler or an update validator.
        """
        self._commands.require_allowed("cancelling another workflow")
        cmd = pb.Command(
            command_type=pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION,
            request_cancel_external_workflow_execution_command_attributes=(
                pb.RequestCancelExternalWorkflowExecutionCommandAttributes(
                    namespace=namespace, workflow_id=workflow_id, run_id=run_id or "",
                    child_workflow_only=child_workflow_only)),
        )
        return ExternalRequestMachine(self._commands, self.loop, cmd, on_initiated=self._by_event_id.__setitem__,
                                      what=f"cancel request to workflow {workflow_id!r}")

    # ------------------------------------------------------------------ markers and search attributes

    def side_effect(self, fn: Callable[[], Any], type_hint: Any) -> Any:
        """Run ``fn`` once and record its value; on replay return the recorded value.

        Raises:
            NonDeterminismError: replaying and this task recorded no value for it.
            WorkflowContextError: in a query handler or an update validator.
        """
        commands = self._commands
        commands.require_allowed("workflow.side_effect")
        seq = commands.next_seq("side_effect")
        if self._replaying:
            data = self._task_markers.side_effects.get(seq)
            if data is None:
                raise self._fatal.nondeterminism(
                    f"nondeterministic workflow: side_effect #{seq} has no recorded SideEffect marker in the "
                    f"workflow task started at event {self._current_task_event_id}", self._current_task_event_id)
            value = self._decode_single(data, type_hint)
        else:
            from spindle._workflow.guard import suspended

            with suspended():  # side effects are the one place non-deterministic calls belong
                value = fn()
            data = self.converter.to_payloads([value])
        commands.add_command(CommandEntry(side_effect_command(self.converter, seq, data)))
        return value

    def record_marker(self, name: str, details: Mapping[str, Any]) -> None:
        """Issue RECORD_MARKER ``name`` with ``details`` (replay matches it by name, in order).

        Raises:
            ValueError: a reserved or empty name, or a detail key that is not a non-empty string.
            WorkflowContextError: in a query handler or an update validator.
        """
        self._commands.require_allowed("workflow.record_marker")
        if not name or name in RESERVED_MARKERS:
            raise ValueError(f"record_marker: the marker name must be non-empty and not one of "
                             f"{sorted(RESERVED_MARKERS)}, got {name!r}")
        if not all(isinstance(key, str) and key for key in details):
            raise ValueError("record_marker: detail keys must be non-empty strings")
        self._commands.add_command(CommandEntry(custom_marker_command(self.converter, name, dict(details))))

    def get_version(self, change_id: str, min_supported: int, max_supported: int) -> int:
        """The version of ``change_id`` for this run (recorded once per run in a Version marker).

        Raises:
            ValueError: ``min_supported`` > ``max_supported``.
            NonDeterminismError: the recorded (or default) version is outside the range.
            WorkflowContextError: in a query handler or an update validator.
        """
        commands = self._commands
        commands.require_allowed("workflow.get_version")
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
                commands.add_command(CommandEntry(version_command(self.converter, change_id, version)))
        if not min_supported <= version <= max_supported:
            origin = "recorded" if change_id in self._task_markers.versions else "default (no marker in history)"
            raise self._fatal.nondeterminism(
                f"nondeterministic workflow: change id {change_id!r} has {origin} version {version}, outside the "
                f"range [{min_supported}, {max_supported}] this code supports (workflow task started at event "
                f"{self._current_task_event_id})", self._current_task_event_id)
        return version

    def deprecate_patch(self, change_id: str) -> None:
        """Record the patch marker on new runs; accept replays with or without it.

        Raises:
            WorkflowContextError: in a query handler or an update validator.
        """
        self._commands.require_allowed("workflow.deprecate_patch")
        if change_id in self._versions:
            return
        if self._replaying and change_id not in self._task_markers.versions:
            self._versions[change_id] = DEFAULT_VERSION + 1
            return
        version = self._task_markers.versions.get(change_id, DEFAULT_VERSION + 1) if self._replaying else DEFAULT_VERSION + 1
        self._versions[change_id] = version
        self._commands.add_command(CommandEntry(version_command(self.converter, change_id, version)))

    def upsert_search_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Issue UPSERT_WORKFLOW_SEARCH_ATTRIBUTES and update ``info().search_attributes``.

        Raises:
            WorkflowContextError: in a query handler or an update validator.
        """
        self._commands.require_allowed("workflow.upsert_search_attributes")
        sa = pb.SearchAttributes(indexed_fields={k: self.converter.to_payload(v) for k, v in attributes.items()})
        self._commands.add_command(CommandEntry(pb.Command(
            command_type=pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
            upsert_workflow_search_attributes_command_attributes=pb.UpsertWorkflowSearchAttributesCommandAttributes(
                search_attributes=sa),
        )))
        self._search_attributes.update(attributes)
