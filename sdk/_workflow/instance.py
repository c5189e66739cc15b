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

import asyncio
import builtins
import collections
import contextlib
import contextvars
import functools
import logging
import random as _random

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.converter._data_converter import DataConverter
from spindle.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
    NonDeterminismError,
    QueryFailedError,
)
from spindle._workflow.statemachines._command import (
    COMMAND_EVENT_TYPES,
    CommandEntry,
    command_key,
    describe_command,
    describe_event,
    event_key,
)
from spindle._workflow.statemachines.markers import VERSION_MARKER, RecordedMarkers
from spindle._workflow.statemachines.update import accept_command, complete_command, reject_command
from spindle._interceptors.worker import (
    ExecuteWorkflowInput,
    HandleQueryInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from spindle._workflow.outbound import WorkflowOutboundImpl
from spindle._workflow.defn import CallableInfo, UpdateDefinition, WorkflowDefinition
from spindle._workflow.info import CURRENT_UPDATE, ParentInfo, UpdateInfo, WorkflowInfo
from spindle._workflow.loop import WorkflowEventLoop
from spindle._workflow.runtime import ContinueAsNewError, RuntimeServices

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


def is_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` reports a cancellation (directly or as an activity/child cause)."""
    if isinstance(exc, (asyncio.CancelledError, CancelledError)):
        return True
    if isinstance(exc, (ActivityError, ChildWorkflowError)):
        return isinstance(exc.cause, (asyncio.CancelledError, CancelledError))
    return False


class WorkflowInstance(RuntimeServices):
    """One workflow execution held by a worker (see the module docs for the contract)."""

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
        self._interceptors = tuple(interceptors)
        #: The run's outbound interceptor chain (workflow API calls go through it).
        self.outbound: WorkflowOutboundInterceptor = WorkflowOutboundImpl(self)
        self._converter = converter or DataConverter.default
        self._namespace = namespace
        self._workflow_id = workflow_id
        self._run_id = run_id
        self._task_queue = task_queue
        self._loop = WorkflowEventLoop(self)  # type: ignore[abstract]  # I/O methods are set on the class
        self._loop.instance = self
        self._info: WorkflowInfo | None = None
        self._now_ms = 0
        self._replaying = False
        self._suggest_can = False
        self._replay_only = False
        self._current_task_event_id = 0
        self._last_completed_event_id = 0
        self._mode: str | None = None
        self._commands: list[CommandEntry] = []
        self._unmatched: collections.deque[CommandEntry] = collections.deque()
        self._awaiting_live_ack = False
        self._failed_tasks = 0  # workflow tasks of this run that failed or timed out, seen so far
        #: The run's inbound interceptor chain (None without interceptors): signals, queries, updates go through it.
        self._inbound: WorkflowInboundInterceptor | None = None
        self._pending_events: list[pb.HistoryEvent] = []
        self._by_event_id: dict[int, Any] = {}
        self._timers: dict[str, Any] = {}
        self._task_markers = RecordedMarkers(self._converter)
        self._versions: dict[str, int] = {}
        self._fatal: BaseException | None = None
        self._counters: collections.Counter[str] = collections.Counter()
        self._random = _random.Random(run_id)
        self._search_attributes: dict[str, Any] = {}
        self._obj: Any = None
        self._run_task: asyncio.Task[Any] | None = None
        self._closing: pb.Command | None = None
        self._closing_emitted = False
        self._cancel_requested = False
        self._closed = False
        self._dynamic_signal_handlers: dict[str, Callable[..., Any]] = {}
        self._running_handlers: set[asyncio.Task[Any]] = set()
        self.signal_buffer: dict[str, collections.deque[pb.Payloads]] = {}
        #: The headers of buffered signals (by the id of their Payloads in ``signal_buffer``), when interceptors
        #: will want them; whoever takes a signal out of the buffer pops its entry.
        self.signal_buffer_headers: dict[int, Mapping[str, pb.Payload]] = {}
        self.signal_waiters: dict[str, collections.deque[asyncio.Future[pb.Payloads]]] = {}
        self.conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        #: Called as each workflow task of ``activate``/``replay`` begins (the worker's deadlock
        #: watchdog restarts its clock, so a long history replays as many short activations).
        self.on_activation: Callable[[], None] | None = None

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
        name = query.query_type
        qd = self.defn.queries.get(name)
        if qd is None:
            known = ", ".join(sorted(self.defn.queries)) or "none"
            raise QueryFailedError(f"workflow {self.defn.name!r} has no query handler {name!r} (known: {known})")
        if self._obj is None:
            raise QueryFailedError(f"query {name!r}: the workflow has not started yet")
        try:
            args = qd.handler.decode_args(self._converter, query.query_args, f"query {name!r}")
        except TypeError as e:
            raise QueryFailedError(str(e)) from e
        with self._on_loop(), self.mode("query"):
            try:
                if self._inbound is not None:
                    result = _run_to_end(self._inbound.handle_query(HandleQueryInput(
                        id="", query=name, args=args, headers=dict(query.header.fields))), f"query {name!r}")
                else:
                    result = qd.handler.fn(self._obj, *args)
            except Exception as e:
                raise QueryFailedError(f"query {name!r} failed: {type(e).__name__}: {e}") from e
        try:
            return self._converter.to_payloads([result])
        except TypeError as e:
            raise QueryFailedError(f"query {name!r} returned a value that cannot be converted: {e}") from e

    def close(self) -> None:
        """Evict: cancel every coroutine (they may run cleanup but cannot issue commands)."""
        if self._closed:
            return
        self._closed = True
        self._loop.set_exception_handler(lambda loop, ctx: None)
        tasks = [t for t in self._loop.tasks if not t.done()]
        with self._on_loop(), self.mode("evicting"):
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
            self._fatal = None
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
        if self._commands or self._unmatched or self._current_task_event_id:
            raise RuntimeError("replay() needs a fresh WorkflowInstance")
        self._replay_only = True
        self._process(list(events), live_started_event_id=None, updates=())
        # A history that ends with a WorkflowTaskStarted: that task's outcome is unknown.
        self._commands.clear()
        self._check_all_matched(None)

    def _process(self, events: list[pb.HistoryEvent], *, live_started_event_id: int | None,
                 updates: Sequence[pb.UpdateRequest]) -> None:
        n = len(events)
        for i, e in enumerate(events):
            t = e.event_type
            if t == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
                nxt = events[i + 1].event_type if i + 1 < n else None
                if nxt == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                    self._check_all_matched(e)
                    self._activation(e, replaying=True, lookahead=_task_command_events(events, i + 2), updates=())
                    self._send_commands(live=False)
                elif nxt is None and (live_started_event_id is None or e.event_id == live_started_event_id):
                    self._check_all_matched(e)
                    self._activation(e, replaying=self._replay_only, lookahead=[], updates=updates)
            elif t == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                self._awaiting_live_ack = False
                self._last_completed_event_id = e.event_id
            elif t in _TASK_FAILURES:
                self._failed_tasks += 1
                if self._awaiting_live_ack:
                    raise StaleWorkflowInstanceError(
                        f"workflow task {e.event_id - 1} answered by this cached instance failed or timed out "
                        f"on the server (event {e.event_id}); evict it and replay the full history")
            elif t in COMMAND_EVENT_TYPES:
                self._match(e)
            elif t != E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
                self._pending_events.append(e)

    def _send_commands(self, *, live: bool) -> list[pb.Command]:
        commands = self._commands
        self._commands = []
        for c in commands:
            c.sent = True
            if c.writes_event:
                self._unmatched.append(c)
        if live and commands:
            self._awaiting_live_ack = True
        return [c.command for c in commands]

    # ================================================================== matching

    def _match(self, event: pb.HistoryEvent) -> None:
        is_version_marker = (event.event_type == E.EVENT_TYPE_MARKER_RECORDED
                             and event.marker_recorded_event_attributes.marker_name == VERSION_MARKER)
        if not self._unmatched:
            if is_version_marker:
                return  # the code no longer calls get_version/patched here: allowed
            raise self.nondeterminism(
                f"nondeterministic workflow: history event {event.event_id} is {describe_event(event)} but the "
                f"workflow code produced no command for it (workflow task completed at event "
                f"{self._last_completed_event_id})", event.event_id)
        head = self._unmatched[0]
        if command_key(head.command) != event_key(event):
            if is_version_marker:
                return
            raise self.nondeterminism(
                f"nondeterministic workflow: history event {event.event_id} is {describe_event(event)} but the "
                f"workflow code produced {describe_command(head.command)}", event.event_id)
        self._unmatched.popleft()
        if head.on_recorded is not None:
            head.on_recorded(event)

    def _check_all_matched(self, at: pb.HistoryEvent | None) -> None:
        if not self._unmatched:
            return
        extra = ", ".join(describe_command(c.command) for c in self._unmatched)
        where = f"before event {at.event_id}" if at is not None else "at the end of the history"
        raise self.nondeterminism(
            f"nondeterministic workflow: the workflow code produced {extra} but the history has no matching event "
            f"{where}: the workflow task completed at event {self._last_completed_event_id} recorded fewer commands",
            self._last_completed_event_id)

    # ================================================================== one activation

    @contextlib.contextmanager
    def _on_loop(self) -> Iterator[None]:
        previous = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(self._loop)
        self._loop._running = True
        try:
            yield
        finally:
            self._loop._running = False
            asyncio.events._set_running_loop(previous)

    def _activation(self, started: pb.HistoryEvent, *, replaying: bool, lookahead: list[pb.HistoryEvent],
                    updates: Sequence[pb.UpdateRequest]) -> None:
        if self.on_activation is not None:
            self.on_activation()
        self._now_ms = max(self._now_ms, started.event_time_ms)
        self._current_task_event_id = started.event_id
        self._replaying = replaying
        self._task_markers = RecordedMarkers(self._converter, lookahead)
        self._suggest_can = started.workflow_task_started_event_attributes.suggest_continue_as_new
        events, self._pending_events = self._pending_events, []
        with self._on_loop():
            for e in events:
                self._apply(e)
                self._raise_fatal()
            if lookahead:
                for e in lookahead:
                    if e.event_type == E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
                        self._replay_update(e)
            else:
                for u in updates:
                    self._update_request(u)
            self._run_until_blocked()
        if self._closing is not None and not self._closing_emitted:
            self._closing_emitted = True
            self._commands.append(CommandEntry(self._closing))

    def _run_until_blocked(self) -> None:
        while True:
            self._loop.run_until_blocked()
            self._raise_fatal()
            if not self._check_conditions():
                return

    def _check_conditions(self) -> bool:
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

    def _raise_fatal(self) -> None:
        if self._fatal is not None:
            err, self._fatal = self._fatal, None
            raise err

    # ================================================================== applying events

    def _apply(self, e: pb.HistoryEvent) -> None:
        t = e.event_type
        if t == E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            self._start(e)
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
            self._deliver_signal(a.signal_name, a.input, a.header.fields)
        elif t == E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            self._cancel_requested = True
            if self._run_task is not None and not self._run_task.done():
                self._run_task.cancel()
        elif t in _INITIATED_RESULTS:
            machine = self._by_event_id.get(getattr(e, _INITIATED_RESULTS[t]).initiated_event_id)
            if machine is not None:
                machine.handle_event(e)

    def _start(self, e: pb.HistoryEvent) -> None:
        a = e.workflow_execution_started_event_attributes
        conv = self._converter
        parent = None
        if a.HasField("parent"):
            parent = ParentInfo(a.parent.namespace, a.parent.execution.workflow_id, a.parent.execution.run_id)
        self._search_attributes = {k: _decode_or_raw(conv, v) for k, v in a.search_attributes.indexed_fields.items()}

        def td(ms: int) -> timedelta | None:
            return timedelta(milliseconds=ms) if ms else None

        self._info = WorkflowInfo(
            namespace=self._namespace, workflow_id=self._workflow_id, run_id=self._run_id,
            workflow_type=a.workflow_type or self.defn.name, task_queue=a.task_queue or self._task_queue,
            attempt=a.attempt or 1, start_time=datetime.fromtimestamp(e.event_time_ms / 1000, tz=timezone.utc),
            parent=parent, continued_run_id=a.continued_execution_run_id or None,
            first_run_id=a.first_execution_run_id or self._run_id,
            search_attributes={}, memo={k: _decode_or_raw(conv, v) for k, v in a.memo.fields.items()},
            is_replaying=self._replaying,
            execution_timeout=td(a.execution_timeout_ms), run_timeout=td(a.run_timeout_ms),
            task_timeout=td(a.task_timeout_ms), _history_length=e.event_id,
        )
        run = self.defn.run
        try:
            args = run.decode_args(conv, a.input, f"workflow {self.defn.name!r}")
        except TypeError as err:
            coro = _raise_later(ApplicationError(str(err), type="InvalidArgument", non_retryable=True))
        else:
            if self.defn.cls is not None:
                self._obj = self.defn.cls(*args) if self.defn.init_takes_args else self.defn.cls()
                run_fn = functools.partial(run.fn, self._obj)
            else:
                run_fn = run.fn
            if self._interceptors:
                inbound = self._inbound = self._inbound_chain()
                coro = inbound.execute_workflow(ExecuteWorkflowInput(
                    type=self._info.workflow_type, run_fn=run_fn, args=args, headers=dict(a.header.fields)))
            else:
                coro = run_fn(*args)
        self._run_task = self._loop.create_task(coro, name=f"workflow {self.defn.name}")
        self._run_task.add_done_callback(self._run_done)

    def _inbound_chain(self) -> WorkflowInboundInterceptor:
        """Build the run's inbound chain (first interceptor outermost) and let it wrap the outbound one."""
        inbound: WorkflowInboundInterceptor = _WorkflowInboundImpl(self)
        classes = [i.workflow_interceptor_class(WorkflowInterceptorClassInput()) for i in self._interceptors]
        for cls in reversed(classes):
            if cls is not None:
                inbound = cls(inbound)
        inbound.init(WorkflowOutboundImpl(self))
        return inbound

    def _run_done(self, task: asyncio.Task[Any]) -> None:
        exc: BaseException | None
        exc = asyncio.CancelledError() if task.cancelled() else task.exception()
        if exc is None:
            try:
                payloads = self._converter.to_payloads([task.result()])
            except TypeError as e:
                self._fatal = self._fatal or e
                return
            self._set_closing(pb.Command(
                command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes(
                    result=payloads)))
        elif isinstance(exc, ContinueAsNewError):
            self._set_closing(pb.Command(command_type=pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
                                         continue_as_new_workflow_execution_command_attributes=exc.attrs))
        elif isinstance(exc, NonDeterminismError):
            self._fatal = self._fatal or exc
        elif self._cancel_requested and is_cancellation(exc):
            self._set_closing(pb.Command(command_type=pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
                                         cancel_workflow_execution_command_attributes=(
                                             pb.CancelWorkflowExecutionCommandAttributes())))
        elif isinstance(exc, (FailureError, builtins.TimeoutError, asyncio.CancelledError)):
            self._fail_workflow(exc)
        else:
            self._fatal = self._fatal or exc

    def _set_closing(self, command: pb.Command) -> None:
        if self._closing is None:
            self._closing = command

    def _fail_workflow(self, exc: BaseException) -> None:
        self._set_closing(pb.Command(
            command_type=pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
            fail_workflow_execution_command_attributes=pb.FailWorkflowExecutionCommandAttributes(
                failure=self._converter.to_failure(exc))))

    def _handler_failed(self, exc: BaseException, what: str) -> None:
        """A signal/update handler raised: FailureError fails the workflow, anything else the task."""
        if isinstance(exc, asyncio.CancelledError):
            return
        if isinstance(exc, (FailureError, builtins.TimeoutError)) and not isinstance(exc, NonDeterminismError):
            self._fail_workflow(exc)
        else:
            _log.debug("%s raised %r", what, exc)
            self._fatal = self._fatal or exc

    # ================================================================== signals

    def set_signal_handler(self, name: str, handler: Callable[..., Any] | None) -> None:
        """Register (or remove) a handler for ``name``; buffered signals are delivered to it now."""
        if handler is None:
            self._dynamic_signal_handlers.pop(name, None)
            return
        self._dynamic_signal_handlers[name] = handler
        buffered = self.signal_buffer.pop(name, None)
        while buffered:
            payloads = buffered.popleft()
            self._deliver_signal(name, payloads, self.signal_buffer_headers.pop(id(payloads), None))

    def _signal_handler(self, name: str) -> tuple[Callable[..., Any] | None, CallableInfo | None]:
        """The handler a signal ``name`` goes to now (dynamic ones first), or (None, None)."""
        if name in self._dynamic_signal_handlers:
            fn = self._dynamic_signal_handlers[name]
            return fn, CallableInfo(fn, skip_self=False)
        if name in self.defn.signals and self._obj is not None:
            info = self.defn.signals[name].handler
            return info.fn.__get__(self._obj), info
        return None, None

    def _deliver_signal(self, name: str, payloads: pb.Payloads,
                        headers: Mapping[str, pb.Payload] | None = None) -> None:
        fn, info = self._signal_handler(name)
        if fn is None or info is None:
            waiters = self.signal_waiters.get(name)
            while waiters:
                w = waiters.popleft()
                if not w.done():
                    w.set_result(payloads)
                    return
            self.signal_buffer.setdefault(name, collections.deque()).append(payloads)
            if headers and self._interceptors:
                self.signal_buffer_headers[id(payloads)] = dict(headers)
            return
        try:
            args = info.decode_args(self._converter, payloads, f"signal {name!r}")
        except TypeError as e:
            _log.warning("dropping signal %r for workflow %s: %s", name, self._workflow_id, e)
            return
        what = f"signal handler {name!r}"
        if self._inbound is not None:
            self._signal_through_chain(HandleSignalInput(signal=name, args=args, headers=dict(headers or {})),
                                       info.is_async, what)
            return
        if info.is_async:
            task = self._handler_task(fn(*args), what)

            def done(t: asyncio.Task[Any]) -> None:
                exc = None if t.cancelled() else t.exception()
                if exc is not None:
                    self._handler_failed(exc, what)

            task.add_done_callback(done)
        else:
            try:
                fn(*args)
            except Exception as e:
                self._handler_failed(e, what)

    def _signal_through_chain(self, input: HandleSignalInput, is_async: bool, what: str) -> None:
        """Deliver a signal through the inbound interceptors: an async handler as a task (as without
        interceptors), a sync one at once (so the order of effects does not change)."""
        assert self._inbound is not None

        def done(f: asyncio.Future[Any]) -> None:
            exc = None if f.cancelled() else f.exception()
            if exc is not None:
                self._handler_failed(exc, what)

        coro = self._inbound.handle_signal(input)
        if is_async:
            self._handler_task(coro, what).add_done_callback(done)
        else:
            self._run_eagerly(coro, what, done)

    def _run_eagerly(self, coro: Any, what: str, on_done: Callable[[asyncio.Future[Any]], None],
                     context: contextvars.Context | None = None) -> None:
        """Run ``coro`` now until it finishes or suspends; if it suspends, the rest runs as a handler task.

        ``on_done`` gets a done future with its outcome either way.
        """
        fut: asyncio.Future[Any] = self._loop.create_future()
        try:
            yielded = context.run(coro.send, None) if context is not None else coro.send(None)
        except StopIteration as stop:
            fut.set_result(stop.value)
            on_done(fut)
            return
        except Exception as e:
            fut.set_exception(e)
            on_done(fut)
            return
        self._handler_task(_resume(coro, yielded), what, context).add_done_callback(on_done)

    def _handler_task(self, coro: Any, name: str, context: contextvars.Context | None = None) -> asyncio.Task[Any]:
        """Run an async signal/update handler as a task, counted until it ends (all_handlers_finished)."""
        task = self._loop.create_task(coro, name=name, context=context)
        self._running_handlers.add(task)
        task.add_done_callback(self._running_handlers.discard)
        return task

    def all_handlers_finished(self) -> bool:
        """Whether no async signal or update handler is still running."""
        return not self._running_handlers

    # ================================================================== updates

    def _update_request(self, u: pb.UpdateRequest) -> None:
        ud = self.defn.updates.get(u.name)
        if ud is None or self._obj is None:
            known = ", ".join(sorted(self.defn.updates)) or "none"
            self._reject(u.update_id, ApplicationError(
                f"workflow {self.defn.name!r} has no update handler {u.name!r} (known: {known})",
                type="UnknownUpdate", non_retryable=True))
            return
        try:
            args = ud.handler.decode_args(self._converter, u.input, f"update {u.name!r}")
        except TypeError as e:
            self._reject(u.update_id, ApplicationError(str(e), type="InvalidArgument", non_retryable=True))
            return
        headers = dict(u.header.fields)
        if ud.validator is not None or self._inbound is not None:
            with self.mode("validator"):
                try:
                    if self._inbound is not None:
                        _update_context(u.update_id, ud.name).run(
                            self._inbound.handle_update_validator,
                            HandleUpdateInput(id=u.update_id, update=ud.name, args=args, headers=headers))
                    elif ud.validator is not None:
                        _update_context(u.update_id, ud.name).run(ud.validator.fn, self._obj, *args)
                except Exception as e:
                    self._reject(u.update_id, e)
                    return
        self._accept(u.update_id, ud, args, headers)

    def _replay_update(self, e: pb.HistoryEvent) -> None:
        a = e.workflow_execution_update_accepted_event_attributes
        ud = self.defn.updates.get(a.name)
        if ud is None or self._obj is None:
            raise self.nondeterminism(
                f"nondeterministic workflow: history event {e.event_id} is {describe_event(e)} but the workflow "
                f"code has no update handler {a.name!r}", e.event_id)
        self._accept(a.update_id, ud, ud.handler.decode_args(self._converter, a.input, f"update {a.name!r}"),
                     dict(a.header.fields))

    def _reject(self, update_id: str, exc: BaseException) -> None:
        self._commands.append(CommandEntry(reject_command(update_id, self._converter.to_failure(exc))))

    def _accept(self, update_id: str, ud: UpdateDefinition, args: list[Any],
                headers: Mapping[str, pb.Payload] | None = None) -> None:
        self._commands.append(CommandEntry(accept_command(update_id)))
        fn = ud.handler.fn.__get__(self._obj)
        context = _update_context(update_id, ud.name)
        if self._inbound is not None:
            coro = self._inbound.handle_update_handler(
                HandleUpdateInput(id=update_id, update=ud.name, args=args, headers=dict(headers or {})))
            if ud.handler.is_async:
                task = self._handler_task(coro, f"update {ud.name}", context)
                task.add_done_callback(lambda t: self._complete_update(update_id, ud.name, t))
            else:
                self._run_eagerly(coro, f"update {ud.name}",
                                  lambda f: self._complete_update(update_id, ud.name, f), context)
            return
        if ud.handler.is_async:
            task = self._handler_task(fn(*args), f"update {ud.name}", context)
            task.add_done_callback(lambda t: self._complete_update(update_id, ud.name, t))
        else:
            fut = self._loop.create_future()
            try:
                fut.set_result(context.run(fn, *args))
            except Exception as e:
                fut.set_exception(e)
            self._complete_update(update_id, ud.name, fut)

    def _complete_update(self, update_id: str, name: str, done: asyncio.Future[Any]) -> None:
        exc = asyncio.CancelledError() if done.cancelled() else done.exception()
        if exc is None:
            try:
                self._commands.append(CommandEntry(complete_command(
                    update_id, success=self._converter.to_payloads([done.result()]))))
            except TypeError as e:
                self._fatal = self._fatal or e
        elif isinstance(exc, (FailureError, builtins.TimeoutError, asyncio.CancelledError)) and not isinstance(
                exc, NonDeterminismError):
            self._commands.append(CommandEntry(complete_command(update_id, failure=self._converter.to_failure(exc))))
        else:
            self._handler_failed(exc, f"update handler {name!r}")


class _WorkflowInboundImpl(WorkflowInboundInterceptor):
    """The end of a run's inbound chain: runs the workflow's own code."""

    def __init__(self, inst: WorkflowInstance) -> None:  # noqa: D107 - no next: this is the end
        self._inst = inst

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        self._inst.outbound = outbound

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        return await input.run_fn(*input.args)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        fn, info = self._inst._signal_handler(input.signal)
        if fn is None or info is None:
            return  # its handler was removed meanwhile (an interceptor awaited)
        if info.is_async:
            await fn(*input.args)
        else:
            fn(*input.args)

    async def handle_query(self, input: HandleQueryInput) -> Any:
        qd = self._inst.defn.queries[input.query]
        return qd.handler.fn(self._inst._obj, *input.args)

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        ud = self._inst.defn.updates[input.update]
        if ud.validator is not None:
            ud.validator.fn(self._inst._obj, *input.args)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        ud = self._inst.defn.updates[input.update]
        result = ud.handler.fn(self._inst._obj, *input.args)
        return await result if ud.handler.is_async else result


def _run_to_end(coro: Any, what: str) -> Any:
    """Run ``coro`` to its end now; RuntimeError (and the coroutine closed) if it suspends."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(f"{what}: an inbound interceptor awaited something that suspends; a query is answered at once")


async def _resume(coro: Any, yielded: Any) -> Any:
    """Carry on a coroutine that was started by hand and suspended on ``yielded`` (as a Task would)."""
    while True:
        try:
            if yielded is not None and hasattr(yielded, "add_done_callback"):
                yielded._asyncio_future_blocking = False
                if not yielded.done():
                    waiter = asyncio.get_running_loop().create_future()
                    yielded.add_done_callback(lambda _f: waiter.done() or waiter.set_result(None))
                    await waiter
            else:
                await asyncio.sleep(0)
        except asyncio.CancelledError as e:
            try:
                yielded = coro.throw(e)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            yielded = coro.send(None)
        except StopIteration as stop:
            return stop.value


def _update_context(update_id: str, name: str) -> contextvars.Context:
    """A context in which ``workflow.current_update_info()`` names this update."""
    context = contextvars.copy_context()
    context.run(CURRENT_UPDATE.set, UpdateInfo(update_id, name))
    return context


def _task_command_events(events: list[pb.HistoryEvent], start: int) -> list[pb.HistoryEvent]:
    """The events of one completed task's command batch: from ``start`` to the next WorkflowTaskStarted."""
    out: list[pb.HistoryEvent] = []
    for e in events[start:]:
        if e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            break
        if e.event_type in COMMAND_EVENT_TYPES:
            out.append(e)
    return out


def _decode_or_raw(conv: Any, p: pb.Payload) -> Any:
    try:
        return conv.from_payload(p)
    except ValueError:
        return p


async def _raise_later(exc: BaseException) -> Any:
    raise exc
