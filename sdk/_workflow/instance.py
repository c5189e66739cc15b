"""``WorkflowInstance``: one workflow execution replayed and advanced on a deterministic loop.

The worker's side of the seam (docs/INTERNAL_CONTRACTS.md)::

    inst = WorkflowInstance(defn, converter=..., namespace=..., workflow_id=..., run_id=..., task_queue=...)
    commands = inst.activate(new_events, updates=task.updates, started_event_id=task.started_event_id)
    payloads = inst.query(pb.WorkflowQuery)        # raises QueryFailedError
    inst.close()                                   # eviction: cancel coroutines, no commands

How events drive the code: every ``WorkflowTaskStarted`` followed by
``WorkflowTaskCompleted`` is a *replayed* activation; the final
``WorkflowTaskStarted`` (``started_event_id``) is the live one whose commands are
returned. Started-but-failed/timed-out tasks are skipped (their commands never
happened). At each activation the non-command events since the previous one
(activity results, timer fires, signals, cancel requests, ...) are applied in
history order, then updates, then the loop runs until every coroutine is blocked.
The commands of a replayed activation must match, in order, the command events
written after its ``WorkflowTaskCompleted``; any difference raises
:class:`~spindle.exceptions.NonDeterminismError` naming the event and the command.
"""

from __future__ import annotations

import logging

from collections.abc import Callable, Sequence
from typing import Any

from spindle._interceptors.worker import Interceptor, WorkflowOutboundInterceptor
from spindle._workflow.commands import CommandBuffer, task_command_events
from spindle._workflow.defn import WorkflowDefinition
from spindle._workflow.fatal import Fatal
from spindle._workflow.handlers import Handlers
from spindle._workflow.info import WorkflowInfo
from spindle._workflow.outbound import WorkflowOutboundImpl
from spindle._workflow.run import WorkflowRun
from spindle._workflow.runtime import WorkflowRuntime
from spindle._workflow.statemachines._command import COMMAND_EVENT_TYPES
from spindle._workflow.statemachines.timer import TimerMachine
from spindle.api import messages_pb2 as pb
from spindle.converter._data_converter import DataConverter

__all__ = ["WorkflowInstance", "StaleWorkflowInstanceError"]

E = pb  # E.EVENT_TYPE_*: plain module constants (the EventType wrapper resolves attributes slowly)
_log = logging.getLogger("spindle.workflow.instance")

_ACTIVITY_RESULTS = frozenset({E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, E.EVENT_TYPE_ACTIVITY_TASK_FAILED,
                               E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, E.EVENT_TYPE_ACTIVITY_TASK_CANCELED})
_INITIATED_RESULTS: dict[int, str] = {
    E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED: "start_child_workflow_execution_failed_event_attributes",
    E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED: "child_workflow_execution_started_event_attributes",
    E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: "child_workflow_execution_completed_event_attributes",
    E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: "child_workflow_execution_failed_event_attributes",
    E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED: "child_workflow_execution_canceled_event_attributes",
    E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: "child_workflow_execution_timed_out_event_attributes",
    E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED: "child_workflow_execution_terminated_event_attributes",
    E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: "signal_external_workflow_execution_failed_event_attributes",
    E.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED: "external_workflow_execution_signaled_event_attributes",
    E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
        "request_cancel_external_workflow_execution_failed_event_attributes",
    E.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
        "external_workflow_execution_cancel_requested_event_attributes",
}
_TASK_FAILURES = frozenset({E.EVENT_TYPE_WORKFLOW_TASK_FAILED, E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT})


class StaleWorkflowInstanceError(RuntimeError):
    """The last workflow task this (cached) instance answered failed or timed out on the server.

    Its commands never happened but the instance already ran past them: evict it and
    replay the full history in a new instance.
    """


class WorkflowInstance:
    """One workflow execution held by a worker (see the module docs for the contract).

    It owns the run's parts and gives each its collaborators explicitly: the
    :class:`~spindle._workflow.commands.CommandBuffer` (commands produced and awaiting their
    events), the :class:`~spindle._workflow.runtime.WorkflowRuntime` (what workflow code
    calls; it creates the event loop), the :class:`~spindle._workflow.handlers.Handlers`
    (signals, queries, updates) and the :class:`~spindle._workflow.run.WorkflowRun` (the run
    method and the closing command). The instance itself drives them: it walks the history,
    applies events and runs the loop until every coroutine is blocked.

    Attributes:
        defn: the workflow's definition.
        runtime: the services ``spindle.workflow`` calls for this run.
        handlers: the run's signal, query and update handlers.
        outbound: the run's outbound interceptor chain (workflow API calls go through it).
        on_activation: called as each workflow task of ``activate``/``replay`` begins (the
            worker's deadlock watchdog restarts its clock, so a long history replays as many
            short activations).
    """

    def __init__(
        self,
        defn: Any,
        *,
        converter: DataConverter | None = None,
        namespace: str = "default",
        workflow_id: str = "",
        run_id: str = "",
        task_queue: str = "",
        interceptors: Sequence[Interceptor] = (),
    ) -> None:
        self.defn: WorkflowDefinition = WorkflowDefinition.from_target(defn)
        converter = converter or DataConverter.default
        interceptors = tuple(interceptors)
        self._fatal = Fatal()
        self._commands = CommandBuffer(self._fatal)
        #: Machines by the event id of their initiating command event, and timers by id: their result
        #: events are applied to them. The runtime registers them as they are recorded or started.
        self._by_event_id: dict[int, Any] = {}
        self._timers: dict[str, TimerMachine] = {}
        self.runtime = WorkflowRuntime(converter, self._commands, self._fatal, timers=self._timers,
                                       by_event_id=self._by_event_id, run_id=run_id)
        self._loop = self.runtime.loop
        self._loop.instance = self
        self.outbound: WorkflowOutboundInterceptor = WorkflowOutboundImpl(self.runtime)
        self.handlers = Handlers(self.defn, converter, self._loop, self._commands, self._fatal,
                                 workflow_id=workflow_id, keep_signal_headers=bool(interceptors))
        self._run = WorkflowRun(self.defn, converter, self._loop, self.runtime, self._commands, self._fatal,
                                self.handlers, interceptors=interceptors, namespace=namespace,
                                workflow_id=workflow_id, run_id=run_id, task_queue=task_queue,
                                use_outbound=self._use_outbound)
        self._replay_only = False
        self._awaiting_live_ack = False
        self._failed_tasks = 0  # workflow tasks of this run that failed or timed out, seen so far
        self._pending_events: list[pb.HistoryEvent] = []
        self._closed = False
        self.on_activation: Callable[[], None] | None = None

    def _use_outbound(self, outbound: WorkflowOutboundInterceptor) -> None:
        self.outbound = outbound

    # ================================================================== the seam

    def activate(
        self,
        new_events: Sequence[pb.HistoryEvent],
        *,
        updates: Sequence[pb.UpdateRequest] = (),
        started_event_id: int = 0,
    ) -> list[pb.Command]:
        """Apply the events not yet seen and run the workflow until it blocks.

        ``new_events`` must end with the ``WorkflowTaskStarted`` event whose id is
        ``started_event_id`` (0: take the last event's id). Returns the live task's
        commands, in order (a closing command, if any, is last).

        Raises:
            NonDeterminismError: the code did not reproduce the recorded commands.
            StaleWorkflowInstanceError: the previous task of this cached instance
                failed on the server; evict and replay.
            ValueError: ``new_events`` does not end with that WorkflowTaskStarted.
            Exception: any other error raised by workflow code (a bug: fail the task).
        """
        if self._closed:
            raise RuntimeError("this WorkflowInstance was closed (evicted); create a new one")
        events = list(new_events)
        if not events or events[-1].event_type != E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            raise ValueError("new_events must end with the WorkflowTaskStarted event of the task to run")
        if started_event_id and events[-1].event_id != started_event_id:
            raise ValueError(f"new_events ends with event {events[-1].event_id} but started_event_id is "
                             f"{started_event_id}")
        self._process(events, live_started_event_id=events[-1].event_id, updates=updates)
        return self._send_commands(live=True)

    def query(self, query: pb.WorkflowQuery) -> pb.Payloads:
        """Answer a query from the current state, without issuing commands.

        Raises:
            QueryFailedError: unknown query name, undecodable arguments, or the handler
                raised (including ``WorkflowContextError`` for a command-issuing call).
        """
        return self.handlers.query(query)

    def close(self) -> None:
        """Evict: cancel every coroutine (they may run cleanup but cannot issue commands)."""
        if self._closed:
            return
        self._closed = True
        self._loop.set_exception_handler(lambda loop, ctx: None)
        tasks = [t for t in self._loop.tasks if not t.done()]
        with self._loop.as_running_loop(), self._commands.in_mode("evicting"):
            for t in tasks:
                try:
                    t.cancel()
                except Exception:  # cleanup must not stop the eviction
                    _log.debug("cancelling %r on eviction failed", t, exc_info=True)
            budget = 10_000
            while self._loop.has_ready() and budget:
                budget -= 1
                handle = self._loop._ready.popleft()
                if not handle._cancelled:
                    handle._run()
            self._fatal.clear()
        for t in tasks:
            t._log_destroy_pending = False  # type: ignore[attr-defined]
        self._loop.close()

    @property
    def earlier_task_failed(self) -> bool:
        """Whether a workflow task of this run failed or timed out before the current one.

        The worker that ran it ran the workflow code live up to that point (and emitted whatever
        side output it makes while not replaying, e.g. a tracing span), though nothing it
        decided was recorded. Tracing uses it so that a retried first task does not emit the
        run's span again.
        """
        return self._failed_tasks > 0

    @property
    def is_replaying(self) -> bool:
        """Whether the current (or last) activation re-ran a recorded workflow task."""
        return self.runtime.is_replaying

    @property
    def workflow_info(self) -> WorkflowInfo:
        """The run's info as of the current (or last) activation.

        Raises:
            WorkflowContextError: the run has not started yet.
        """
        return self.runtime.workflow_info

    # ================================================================== replay driver

    def replay(self, events: Sequence[pb.HistoryEvent]) -> None:
        """Replay a whole recorded history into this fresh instance (nothing is live).

        Afterwards the instance holds the state as of the last recorded event, so it can
        answer :meth:`query` (use this instead of :meth:`activate` for queries on runs
        that are not cached). All commands must match the recorded command events.

        Raises:
            NonDeterminismError: see :func:`spindle._workflow.replay.replay`.
            Exception: an error raised by the workflow code.
        """
        if self._commands.produced_any or self.runtime.current_history_length:
            raise RuntimeError("replay() needs a fresh WorkflowInstance")
        self._replay_only = True
        self._process(list(events), live_started_event_id=None, updates=())
        # A history that ends with a WorkflowTaskStarted: that task's outcome is unknown.
        self._commands.discard_pending()
        self._commands.check_all_matched(None)

    def _process(self, events: list[pb.HistoryEvent], *, live_started_event_id: int | None,
                 updates: Sequence[pb.UpdateRequest]) -> None:
        commands = self._commands
        n = len(events)
        for i, e in enumerate(events):
            t = e.event_type
            if t == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
                nxt = events[i + 1].event_type if i + 1 < n else None
                if nxt == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                    commands.check_all_matched(e)
                    self._activation(e, replaying=True, lookahead=task_command_events(events, i + 2), updates=())
                    self._send_commands(live=False)
                elif nxt is None and (live_started_event_id is None or e.event_id == live_started_event_id):
                    commands.check_all_matched(e)
                    self._activation(e, replaying=self._replay_only, lookahead=[], updates=updates)
            elif t == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                self._awaiting_live_ack = False
                commands.task_completed(e.event_id)
            elif t in _TASK_FAILURES:
                self._failed_tasks += 1
                if self._awaiting_live_ack:
                    raise StaleWorkflowInstanceError(
                        f"workflow task {e.event_id - 1} answered by this cached instance failed or timed out "
                        f"on the server (event {e.event_id}); evict it and replay the full history")
            elif t in COMMAND_EVENT_TYPES:
                commands.match(e)
            elif t != E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
                self._pending_events.append(e)

    def _send_commands(self, *, live: bool) -> list[pb.Command]:
        commands = self._commands.send()
        if live and commands:
            self._awaiting_live_ack = True
        return commands

    # ================================================================== one activation

    def _activation(self, started: pb.HistoryEvent, *, replaying: bool, lookahead: list[pb.HistoryEvent],
                    updates: Sequence[pb.UpdateRequest]) -> None:
        if self.on_activation is not None:
            self.on_activation()
        self.runtime.begin_task(started, replaying=replaying, lookahead=lookahead)
        events, self._pending_events = self._pending_events, []
        with self._loop.as_running_loop():
            for e in events:
                self._apply(e)
                self._fatal.raise_pending()
            if lookahead:
                for e in lookahead:
                    if e.event_type == E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
                        self.handlers.replay_update(e)
            else:
                for u in updates:
                    self.handlers.update_request(u)
            self._run_until_blocked()
        self._commands.emit_closing()

    def _run_until_blocked(self) -> None:
        loop, fatal, runtime = self._loop, self._fatal, self.runtime
        while True:
            loop.run_until_blocked()
            fatal.raise_pending()
            if not runtime.check_conditions():
                return

    # ================================================================== applying events

    def _apply(self, e: pb.HistoryEvent) -> None:
        t = e.event_type
        if t == E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            self._run.start(e)
        elif t in _ACTIVITY_RESULTS:
            attrs = getattr(e, e.WhichOneof("attributes"))
            machine = self._by_event_id.get(attrs.scheduled_event_id)
            if machine is not None:
                machine.handle_event(e)
        elif t == E.EVENT_TYPE_TIMER_FIRED:
            timer = self._timers.get(e.timer_fired_event_attributes.timer_id)
            if timer is not None:
                timer.on_fired()
        elif t == E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            a = e.workflow_execution_signaled_event_attributes
            self.handlers.deliver_signal(a.signal_name, a.input, a.header.fields)
        elif t == E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            self._run.request_cancel()
        elif t in _INITIATED_RESULTS:
            machine = self._by_event_id.get(getattr(e, _INITIATED_RESULTS[t]).initiated_event_id)
            if machine is not None:
                machine.handle_event(e)
