"""Creating runs (start, continue-as-new, child start) and closing them."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

from spindle.controlplane._search_attributes import search_attribute_values
from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.store import VisibilityRow

from ._mutable_state import MutableState
from ._tasks import T_CLOSE, T_VISIBILITY, T_WORKFLOW_TASK, TM_WORKFLOW_RUN_TIMEOUT, TM_WORKFLOW_TASK_BACKOFF, Task
from ._txn import Txn

if TYPE_CHECKING:
    from ._core import EngineCore


def new_run_id() -> str:
    return str(uuid.uuid4())


class RunsMixin:
    """Run creation, workflow-task scheduling and closing, shared by many operations."""

    def schedule_workflow_task(self: "EngineCore", txn: Txn, *, attempt: int = 1, backoff_ms: int = 0,
                               inline: bool = False) -> None:
        """Append WorkflowTaskScheduled and the task that dispatches it (after ``backoff_ms``)."""
        st = txn.state
        assert st.started is not None
        timeout = st.started.task_timeout_ms or int(self.config.default_workflow_task_timeout * 1000)
        e = txn.event(
            pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
            "workflow_task_scheduled_event_attributes",
            pb.WorkflowTaskScheduledEventAttributes(task_queue=st.task_queue, start_to_close_timeout_ms=timeout, attempt=attempt),
        )
        key = (st.namespace_id, st.workflow_id, st.run_id, e.event_id)
        txn.after_commit.append(lambda: self.workflow_task_scheduled(key))
        if backoff_ms > 0:
            self.new_timer(txn, TM_WORKFLOW_TASK_BACKOFF, txn.now_ms + backoff_ms, event_id=e.event_id, attempt=attempt)
        elif inline:
            txn.inline_workflow_task = True  # the caller starts it before committing (start_inline_tasks)
        else:
            txn.transfer.append(Task(T_WORKFLOW_TASK, st.namespace_id, st.workflow_id, st.run_id, e.event_id, attempt,
                                     extra={"q": st.task_queue}))

    def build_run(self: "EngineCore", state: MutableState, attrs: pb.WorkflowExecutionStartedEventAttributes, now_ms: int,
                  *, start_delay_ms: int = 0) -> Txn:
        """A new run's first events and tasks (not yet committed)."""
        txn = Txn(state, now_ms)
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, "workflow_execution_started_event_attributes", attrs)
        if start_delay_ms > 0:
            self.new_timer(txn, TM_WORKFLOW_TASK_BACKOFF, now_ms + start_delay_ms, event_id=0, attempt=1)
        else:
            self.schedule_workflow_task(txn)
        deadline = 0
        if attrs.run_timeout_ms:
            deadline = now_ms + start_delay_ms + attrs.run_timeout_ms
        if attrs.execution_expiration_time_ms:
            deadline = min(deadline, attrs.execution_expiration_time_ms) if deadline else attrs.execution_expiration_time_ms
        if deadline:
            state.run_timer = self.new_timer(txn, TM_WORKFLOW_RUN_TIMEOUT, deadline)
        self.visibility_task(txn)
        return txn

    def visibility_task(self: "EngineCore", txn: Txn) -> None:
        """Queue the run's visibility record (written from the transfer queue)."""
        st = txn.state
        row = self.visibility_row(st)
        txn.transfer.append(Task(T_VISIBILITY, st.namespace_id, st.workflow_id, st.run_id, extra={"row": row_to_json(row)}))

    def visibility_row(self: "EngineCore", st: MutableState) -> VisibilityRow:
        closed = not st.running
        parent = st.started.parent if st.started is not None and st.started.HasField("parent") else None
        return VisibilityRow(
            namespace_id=st.namespace_id, workflow_id=st.workflow_id, run_id=st.run_id, workflow_type=st.workflow_type,
            status=st.status, task_queue=st.task_queue, start_time_ms=st.start_time_ms,
            close_time_ms=st.close_time_ms if closed else None,
            execution_duration_ms=(st.close_time_ms - st.start_time_ms) if closed else None,
            history_length=st.next_event_id - 1,
            search_attributes=json.dumps(search_attribute_values(self.namespaces.by_id(st.namespace_id), st.search_attributes),
                                         sort_keys=True),
            memo=pb.Memo(fields=st.memo).SerializeToString(),
            parent_workflow_id=parent.execution.workflow_id if parent else "",
            parent_run_id=parent.execution.run_id if parent else "",
        )

    def abandon_running_tasks(self: "EngineCore", txn: Txn) -> None:
        """Before the run is closed from outside (terminate, run timeout): drop the workflow task
        in flight (its late completion gets NOT_FOUND) and flush buffered events into history."""
        st = txn.state
        wt = st.workflow_task
        if wt is not None:
            key = (st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id)
            txn.after_commit.append(lambda: self.workflow_task_done(key))
        if wt is not None and wt.started and wt.timeout_timer is not None:
            txn.delete_timer(wt.timeout_timer)
        st.workflow_task = None
        self.flush_buffered(txn)
        for info in st.activities.values():
            info.started = False  # their late answers get NOT_FOUND; close_run stops counting them

    def close_run(self: "EngineCore", txn: Txn) -> None:
        """Bookkeeping after a closing event: current pointer, visibility, parent and children."""
        st = txn.state
        txn.current_status = st.status
        wt = st.workflow_task
        if wt is not None:
            key = (st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id)
            txn.after_commit.append(lambda: self.workflow_task_done(key))
        if txn.buffered or st.buffered:
            txn.clear_buffered = True
            st.buffered.clear()
        if st.run_timer is not None and st.run_timer.task_id:
            txn.timer_delete.append((st.run_timer.fire_time_ms, st.run_timer.task_id))
        txn.transfer.append(Task(T_CLOSE, st.namespace_id, st.workflow_id, st.run_id))
        # Tasks of the run still with workers (an activity that ignores its cancellation, a
        # workflow task of a run terminated meanwhile) no longer count as work in progress.
        run = (st.namespace_id, st.workflow_id, st.run_id)
        txn.after_commit.append(lambda: self.outstanding.discard_run(run))
        self.visibility_task(txn)
        self.arm_retention(txn)  # type: ignore[attr-defined]  # RetentionMixin
        pending = list(st.pending_updates.values())
        st.pending_updates.clear()

        def fail_pending() -> None:
            from spindle.controlplane.api import service_pb2 as svc

            for pu in pending:
                if not pu.future.done():
                    pu.future.set_result(svc.UpdateWorkflowExecutionResponse(
                        failure=pb.Failure(message="the workflow execution closed before the update completed",
                                           source="server"), run_id=st.run_id))

        txn.after_commit.append(fail_pending)


def row_to_json(row: VisibilityRow) -> dict[str, object]:
    d = dict(row.__dict__)
    d["memo"] = row.memo.hex()
    return d


def row_from_json(d: dict[str, object]) -> VisibilityRow:
    d = dict(d)
    d["memo"] = bytes.fromhex(str(d["memo"]))
    return VisibilityRow(**d)  # type: ignore[arg-type]
