"""Legacy cron (``start_workflow(..., cron_schedule="0 6 * * *")``): a chain of runs, one per tick.

Temporal's semantics: the first run's first workflow task waits for the first tick after the
start (a workflow-task backoff, as a start delay); when a run completes or fails, its closing
event names a new run (``new_execution_run_id``), created in the same transaction, whose first
workflow task waits for the next tick after the close. The new run has the same input, the
chain's ``cron_schedule``, ``last_completion_result`` (the last successful run's result) and,
after a failure, ``continued_failure``. Cancel, terminate and a timeout end the chain; a run
that continues as new keeps it. Ticks are read in UTC.
"""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from spindle.api import messages_pb2 as pb
from spindle.controlplane.schedules._cron import check_cron_expression, cron_times

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._txn import Txn
from ._run import build_run, new_run_id

_UTC = ZoneInfo("UTC")


def backoff_ms(cron_schedule: str, now_ms: int) -> int:
    """Milliseconds from ``now_ms`` to the schedule's next tick (checked by the frontend, so it has one)."""
    five = check_cron_expression(cron_schedule)
    after = datetime.fromtimestamp(now_ms / 1000, timezone.utc)
    nxt = next(iter(cron_times(five, _UTC, after)), None)
    if nxt is None:  # pragma: no cover - the expression was checked to match within 50 years
        return 0
    return max(0, int(nxt.timestamp() * 1000) - now_ms)


def next_run_id(st: MutableState) -> str:
    """A run id for the chain's next run if the run belongs to a cron chain, else ''."""
    return new_run_id() if st.started is not None and st.started.cron_schedule else ""


def start_next(ctx: HistoryContext, txn: Txn, rid: str, *, result: pb.Payloads | None = None,
               failure: pb.Failure | None = None) -> None:
    """Create the chain's next run ``rid`` in ``txn`` (after the closing event, which names it)."""
    st = txn.state
    old = st.started
    assert old is not None
    delay = backoff_ms(old.cron_schedule, txn.now_ms)
    attrs = pb.WorkflowExecutionStartedEventAttributes(
        workflow_type=old.workflow_type, task_queue=old.task_queue, input=old.input,
        execution_timeout_ms=old.execution_timeout_ms, run_timeout_ms=old.run_timeout_ms,
        task_timeout_ms=old.task_timeout_ms, continued_execution_run_id=st.run_id,
        first_execution_run_id=old.first_execution_run_id or st.run_id, original_execution_run_id=rid,
        memo=old.memo, search_attributes=pb.SearchAttributes(indexed_fields=st.search_attributes),
        identity=old.identity, attempt=1, execution_expiration_time_ms=old.execution_expiration_time_ms,
        first_workflow_task_backoff_ms=delay, header=old.header, cron_schedule=old.cron_schedule)
    if result is not None:
        attrs.last_completion_result.CopyFrom(result)
    elif old.HasField("last_completion_result"):
        attrs.last_completion_result.CopyFrom(old.last_completion_result)
    if failure is not None:
        attrs.continued_failure.CopyFrom(failure)
    if old.HasField("parent"):
        attrs.parent.CopyFrom(old.parent)
    nst = MutableState(st.namespace_id, st.namespace, st.workflow_id, rid, st.shard_id)
    ntxn = build_run(ctx, nst, attrs, txn.now_ms, start_delay_ms=delay)
    txn.new_run = (nst, ntxn.events, ntxn.transfer, ntxn.timers)
    txn.after_commit.extend(ntxn.after_commit)  # the new run's first workflow task counts in start admission


__all__ = ["backoff_ms", "next_run_id", "start_next"]
