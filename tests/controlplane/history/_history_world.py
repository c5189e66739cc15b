"""A run driven through the history service's real state-machine code, with no store and no server.

``make_context`` builds a ``HistoryContext`` (a ``HistoryEngine`` that is never started: no
store is opened, so a code path that reached the store would fail loudly). ``Run`` holds one
run's ``MutableState`` and moves it the way the operations do: ``build_run`` for the start,
``workflow_task.start`` for a poller taking the task, and ``complete_task`` for a completed
task (what ``ops.workflow_task_completed.respond`` does between loading the run and
committing: validate the commands, write WorkflowTaskStarted/Completed, apply each command,
flush the buffered events, schedule the next task). Every ``Txn`` is kept in ``txns``.
"""

from __future__ import annotations

import asyncio

from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.controlplane.clock import VirtualClock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.history._context import HistoryContext
from spindle.controlplane.history._mutable_state import MutableState
from spindle.controlplane.history._pending import PendingUpdate, WorkflowTaskInfo
from spindle.controlplane.history._txn import Txn
from spindle.controlplane.history.ops import commands, workflow_task
from spindle.controlplane.history.ops._run import build_run, flush_buffered, schedule_workflow_task
from spindle.controlplane.namespaces import SA_TYPES_BY_NAME, Namespace, NamespaceRegistry

T0 = 1_800_000_000_000
NS_ID, NS = "ns-id", "default"
OTHER_ID, OTHER = "other-id", "other"
IDENTITY = "worker-1"


def make_context(**config: Any) -> HistoryContext:
    """A history context with namespaces ``default`` (CustomKeyword: Keyword, CustomInt: Int) and ``other`` (OtherKw)."""
    cfg = ServerConfig(num_shards=1, **config)
    registry = NamespaceRegistry(None, default_retention_ms=86_400_000)  # type: ignore[arg-type]  # never reaches the store
    registry._cache(Namespace(id=NS_ID, name=NS, retention_ms=3_600_000, search_attributes={
        "CustomKeyword": SA_TYPES_BY_NAME["Keyword"], "CustomInt": SA_TYPES_BY_NAME["Int"]}))
    registry._cache(Namespace(id=OTHER_ID, name=OTHER, search_attributes={"OtherKw": SA_TYPES_BY_NAME["Keyword"]}))
    engine = HistoryEngine(None, cfg, VirtualClock(T0), registry)  # type: ignore[arg-type]
    return engine.context


def keyword(value: str) -> pb.Payload:
    return pb.Payload(metadata={"encoding": b"json/plain"}, data=f'"{value}"'.encode())


def names(events: Any) -> list[str]:
    """The events' types without the ``EVENT_TYPE_`` prefix."""
    return [pb.EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in events]


def cmd(command_type: int, **attributes: Any) -> pb.Command:
    """A command of ``command_type`` with its attributes (as keyword arguments of the attributes message)."""
    h = commands.HANDLERS[command_type]
    c = pb.Command(command_type=command_type)
    getattr(c, h.attr).SetInParent()
    target = getattr(c, h.attr)
    for k, v in attributes.items():
        if hasattr(v, "DESCRIPTOR"):  # a message
            getattr(target, k).CopyFrom(v)
        elif isinstance(v, dict):  # a map of messages
            for key, value in v.items():
                getattr(target, k)[key].CopyFrom(value)
        else:
            setattr(target, k, v)
    return c


class Run:
    """One run's state, moved by the operations' own code (see the module docstring)."""

    def __init__(self, ctx: HistoryContext, *, workflow_id: str = "wf", run_id: str = "run-1", task_queue: str = "q",
                 **started: Any) -> None:
        self.ctx = ctx
        self.st = MutableState(NS_ID, NS, workflow_id, run_id, 0)
        attrs = pb.WorkflowExecutionStartedEventAttributes(workflow_type="Wf", task_queue=task_queue)
        for k, v in started.items():
            if hasattr(v, "DESCRIPTOR"):
                getattr(attrs, k).CopyFrom(v)
            else:
                setattr(attrs, k, v)
        self.txns: list[Txn] = [build_run(ctx, self.st, attrs, self.now)]

    @property
    def now(self) -> int:
        return self.ctx.clock.now_ms()

    def txn(self) -> Txn:
        t = Txn(self.st, self.now)
        self.txns.append(t)
        return t

    def start_task(self) -> WorkflowTaskInfo:
        """A poller takes the scheduled workflow task (scheduling one first if none is)."""
        st = self.st
        if st.workflow_task is None:
            schedule_workflow_task(self.ctx, self.txn())
        wt = st.workflow_task
        assert wt is not None and not wt.started
        workflow_task.start(self.ctx, st, wt, IDENTITY, sticky=False, txn=self.txn())
        return wt

    def completing(self) -> tuple[Txn, int]:
        """Start a task and write its WorkflowTaskStarted/Completed: the txn its commands are applied to, and ``wtc``."""
        wt = self.st.workflow_task if self.st.workflow_task is not None and self.st.workflow_task.started \
            else self.start_task()
        txn = self.txn()
        workflow_task.write_started(self.ctx, txn, wt)
        completed = txn.event(pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, "workflow_task_completed_event_attributes",
                              pb.WorkflowTaskCompletedEventAttributes(scheduled_event_id=wt.scheduled_event_id,
                                                                      started_event_id=wt.started_event_id,
                                                                      identity=IDENTITY))
        txn.wake = False
        return txn, completed.event_id

    def complete_task(self, *cmds: pb.Command) -> tuple[str | None, Txn]:
        """Complete a started (or start and complete the scheduled) workflow task with ``cmds``.

        Returns the validation error (the task then fails with BAD_COMMAND) or None, and the txn.
        A task that would close the run while signals or updates it has not seen wait fails
        with UNHANDLED_COMMAND instead (error None).
        """
        ctx, st = self.ctx, self.st
        wt = st.workflow_task if st.workflow_task is not None and st.workflow_task.started else self.start_task()
        error = commands.validate(ctx, st, list(cmds))
        if error is not None:
            txn = self.txn()
            workflow_task.fail(ctx, txn, wt, pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND,
                               pb.Failure(message=error, source="server"), IDENTITY)
            return error, txn
        closing = any(c.command_type in commands.CLOSE_COMMANDS for c in cmds)
        if closing and (any(e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in st.buffered)
                        or any(not pu.delivered for pu in st.pending_updates.values())):
            txn = self.txn()  # the workflow sees what arrived first
            workflow_task.fail(ctx, txn, wt, pb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
                               pb.Failure(message="new signals or updates arrived while the task ran; the workflow "
                                                  "sees them first", source="server"), IDENTITY)
            return None, txn
        txn, wtc = self.completing()
        for c in cmds:
            commands.apply(ctx, txn, c, wtc, IDENTITY)
        for uid in wt.delivered_updates:
            pu = st.pending_updates.get(uid)
            if pu is not None and uid not in st.accepted_updates:
                pu.delivered = False
                txn.wake = True
        if st.running:
            flush_buffered(txn)
            if (txn.wake or any(not pu.delivered for pu in st.pending_updates.values())) and st.workflow_task is None:
                schedule_workflow_task(ctx, txn)
        return None, txn

    def external(self, event_type: int, attr: str, attrs: Any) -> Txn:
        """An event from outside the workflow code (buffered while a task runs), and a task scheduled if none is."""
        txn = self.txn()
        txn.external(event_type, attr, attrs)
        if txn.wake and self.st.workflow_task is None:
            schedule_workflow_task(self.ctx, txn)
        return txn

    def add_update(self, update_id: str, *, delivered: bool = True,
                   loop: asyncio.AbstractEventLoop | None = None) -> PendingUpdate:
        """An update request waiting for the workflow (its future on ``loop``, by default the running one)."""
        pu = PendingUpdate(pb.UpdateRequest(update_id=update_id, name="upd", identity="client",
                                            input=pb.Payloads(payloads=[pb.Payload(data=b"in")])),
                           (loop or asyncio.get_running_loop()).create_future(), delivered=delivered)
        self.st.pending_updates[update_id] = pu
        return pu


__all__ = ["IDENTITY", "NS", "NS_ID", "OTHER", "OTHER_ID", "T0", "Run", "cmd", "keyword", "make_context", "names"]
