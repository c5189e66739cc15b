"""Applying ``Mutation``s in Cloud Spanner read-write transactions (with group commit).

One transaction applies a *batch* of independent mutations: a read phase fetches,
for the whole batch at once, the shards' range ids, the execution versions, the
current-run pointers and the buffered-event sequence numbers; then each mutation is
checked (fence, optimistic version, current run) against what was read, and only
the writes of mutations that pass are buffered. A mutation that fails a check is
reported to its caller alone and changes nothing; the others commit together.

Two mutations of one batch never touch the same execution or current-run row (the
batcher cuts the batch before such a mutation), so checking each against the
batch's start state is the same as applying them one after the other. If the
commit itself fails for a reason other than an abort (say, an insert hits an
existing row), the batch is retried one mutation per transaction so the error
reaches only the mutation that caused it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ._model import ConditionFailedError, Mutation, ShardOwnershipLostError
from ._spanner_codec import EXEC_COLUMNS, VIS_COLUMNS, enc, exec_values, vis_values

ExecKey = tuple[int, str, str, str]
RunKey = tuple[str, str, str]  # (namespace_id, workflow_id, run_id): located through ExecutionsByRun


def flatten(m: Mutation) -> Iterator[Mutation]:
    """``m`` and, recursively, the mutations in its ``also`` list (the order they are applied in)."""
    yield m
    for sub in m.also:
        yield from flatten(sub)


def conflict_keys(m: Mutation) -> set[tuple[Any, ...]]:
    """Rows whose check or write depends on earlier writes: two mutations sharing one go in separate transactions."""
    keys: set[tuple[Any, ...]] = set()
    for part in flatten(m):
        ex = part.execution
        if ex is not None:
            keys.add(("x", ex.namespace_id, ex.workflow_id, ex.run_id))
        if part.current is not None:
            keys.add(("c", part.current.namespace_id, part.current.workflow_id))
        if part.delete_execution is not None:
            ns, wid, rid = part.delete_execution
            keys.add(("x", ns, wid, rid))
            keys.add(("c", ns, wid))
        if part.schedule is not None:
            keys.add(("s", part.schedule.namespace_id, part.schedule.schedule_id))
        if part.schedule_delete is not None:
            keys.add(("s", part.schedule_delete[0], part.schedule_delete[1]))
    return keys


class _Reads:
    """What the read phase of one batch saw."""

    def __init__(self) -> None:
        self.ranges: dict[int, int] = {}
        self.versions: dict[ExecKey, int] = {}
        self.currents: dict[tuple[str, str], str] = {}
        self.buffered_max: dict[ExecKey, int] = {}
        self.located: dict[RunKey, int] = {}
        self.vis_lengths: dict[tuple[str, str], int] = {}  # (namespace_id, run_id) -> history_length
        self.schedule_versions: dict[tuple[str, str], int] = {}  # (namespace_id, schedule_id) -> Version


def _exec_key(m: Mutation) -> ExecKey | None:
    ex = m.execution
    return None if ex is None else (ex.shard_id, ex.namespace_id, ex.workflow_id, ex.run_id)


def read_phase(txn: Any, batch: Iterable[Mutation]) -> _Reads:
    """Fetch everything the checks of ``batch`` need, a few batched reads for the whole batch."""
    from google.cloud.spanner_v1 import KeyRange, KeySet

    parts = [p for m in batch for p in flatten(m)]
    out = _Reads()
    shard_ids = sorted({p.shard_id for p in parts})
    if shard_ids:
        for sid, rid in txn.read("Shards", ["ShardId", "RangeId"], KeySet(keys=[[s] for s in shard_ids])):
            out.ranges[int(sid)] = int(rid)
    exec_keys = sorted({k for p in parts if (k := _exec_key(p)) is not None})
    if exec_keys:
        for s, ns, wid, rid, ver in txn.read("Executions", ["ShardId", "NamespaceId", "WorkflowId", "RunId", "DbVersion"],
                                             KeySet(keys=[list(k) for k in exec_keys])):
            out.versions[(int(s), ns, wid, rid)] = int(ver)
    cur_keys = {(p.current.namespace_id, p.current.workflow_id) for p in parts
                if p.current is not None and p.current_expect is not None}
    cur_keys |= {(p.delete_execution[0], p.delete_execution[1]) for p in parts if p.delete_execution is not None}
    if cur_keys:
        for ns, wid, rid in txn.read("CurrentExecutions", ["NamespaceId", "WorkflowId", "RunId"],
                                     KeySet(keys=[list(k) for k in sorted(cur_keys)])):
            out.currents[(ns, wid)] = rid
    buf_keys = sorted({k for p in parts if p.add_buffered and not p.clear_buffered and (k := _exec_key(p)) is not None})
    if buf_keys:
        ranges = [KeyRange(start_closed=list(k), end_closed=list(k)) for k in buf_keys]
        for s, ns, wid, rid, seq in txn.read("BufferedEvents", ["ShardId", "NamespaceId", "WorkflowId", "RunId", "Seq"],
                                             KeySet(ranges=ranges)):
            key = (int(s), ns, wid, rid)
            out.buffered_max[key] = max(out.buffered_max.get(key, 0), int(seq))
    vis_keys = sorted({(ns, rid) for p in parts for ns, rid, _ in p.visibility_history_length})
    if vis_keys:
        for ns, rid, length in txn.read("Visibility", ["namespace_id", "run_id", "history_length"],
                                        KeySet(keys=[list(k) for k in vis_keys])):
            out.vis_lengths[(ns, rid)] = int(length)
    sched_keys = sorted({(p.schedule.namespace_id, p.schedule.schedule_id) for p in parts if p.schedule is not None}
                        | {p.schedule_delete[:2] for p in parts if p.schedule_delete is not None})
    if sched_keys:
        for ns, sid, ver in txn.read("Schedules", ["NamespaceId", "ScheduleId", "Version"],
                                     KeySet(keys=[list(k) for k in sched_keys])):
            out.schedule_versions[(ns, sid)] = int(ver)
    run_keys = sorted({p.delete_execution for p in parts if p.delete_execution is not None})
    if run_keys:
        for s, ns, wid, rid in txn.read("Executions", ["ShardId", "NamespaceId", "WorkflowId", "RunId"],
                                        KeySet(keys=[list(k) for k in run_keys]), index="ExecutionsByRun"):
            out.located[(ns, wid, rid)] = int(s)
    return out


def check(m: Mutation, reads: _Reads) -> None:
    """Raise ShardOwnershipLostError or ConditionFailedError if ``m`` (with its ``also``) may not be applied."""
    for part in flatten(m):
        have = reads.ranges.get(part.shard_id)
        if have != part.range_id:
            raise ShardOwnershipLostError(f"shard {part.shard_id}: range_id {part.range_id} is stale (now {have})")
        key = _exec_key(part)
        if key is not None:
            seen = reads.versions.get(key)
            if part.expected_version is None and seen is not None:
                raise ConditionFailedError(f"execution {key[2]}/{key[3]} already exists")
            if part.expected_version is not None and seen != part.expected_version:
                raise ConditionFailedError(f"execution {key[2]}/{key[3]}: version {part.expected_version} is stale")
        elif part.events or part.add_buffered or part.clear_buffered:
            raise ConditionFailedError("events or buffered events without an execution row")
        cur = part.current
        if cur is not None and part.current_expect is not None:
            existing = reads.currents.get((cur.namespace_id, cur.workflow_id))
            if part.current_expect == "" and existing is not None:
                raise ConditionFailedError(f"workflow id {cur.workflow_id!r} already has a current run")
            if part.current_expect != "" and existing != part.current_expect:
                raise ConditionFailedError(f"workflow id {cur.workflow_id!r}: current run changed")
        sched = part.schedule
        if sched is not None:
            seen = reads.schedule_versions.get((sched.namespace_id, sched.schedule_id))
            if part.schedule_expected_version is None and seen is not None:
                raise ConditionFailedError(f"schedule {sched.schedule_id!r} already exists")
            if part.schedule_expected_version is not None and seen != part.schedule_expected_version:
                raise ConditionFailedError(f"schedule {sched.schedule_id!r}: version {part.schedule_expected_version} "
                                           "is stale or the schedule is gone")
        if part.schedule_delete is not None:
            ns, sid, version = part.schedule_delete
            if reads.schedule_versions.get((ns, sid)) != version:
                raise ConditionFailedError(f"schedule {sid!r}: version {version} is stale or the schedule is gone")


def write(txn: Any, m: Mutation, reads: _Reads) -> None:
    """Buffer every write of ``m`` (already checked) in ``txn``, parents before interleaved children."""
    from google.cloud import spanner
    from google.cloud.spanner_v1 import KeyRange, KeySet

    ts = spanner.COMMIT_TIMESTAMP
    for part in flatten(m):
        ex = part.execution
        if ex is not None:
            if part.expected_version is None:
                txn.insert("Executions", [*EXEC_COLUMNS, "UpdateTime"], [[*exec_values(ex), ts]])
            else:
                txn.update("Executions", ["ShardId", "NamespaceId", "WorkflowId", "RunId", "Status", "NextEventId",
                                          "DbVersion", "CloseTimeMs", "ActivityState", "UpdateTime"],
                           [[ex.shard_id, ex.namespace_id, ex.workflow_id, ex.run_id, ex.status, ex.next_event_id,
                             ex.db_version, ex.close_time_ms, enc(ex.activity_state), ts]])
        cur = part.current
        if cur is not None:
            txn.insert_or_update("CurrentExecutions", ["NamespaceId", "WorkflowId", "RunId", "Status", "StartRequestId"],
                                 [[cur.namespace_id, cur.workflow_id, cur.run_id, cur.status, cur.start_request_id]])
        key = _exec_key(part)
        if part.events and key is not None:
            txn.insert("Events", ["ShardId", "NamespaceId", "WorkflowId", "RunId", "EventId", "Data", "WriteTime"],
                       [[*key, eid, enc(data), ts] for eid, data in part.events])
        if part.clear_buffered and key is not None:
            txn.delete("BufferedEvents", KeySet(ranges=[KeyRange(start_closed=list(key), end_closed=list(key))]))
        if part.add_buffered and key is not None:
            base = 0 if part.clear_buffered else reads.buffered_max.get(key, 0)
            txn.insert("BufferedEvents", ["ShardId", "NamespaceId", "WorkflowId", "RunId", "Seq", "Data", "WriteTime"],
                       [[*key, base + i + 1, enc(d), ts] for i, d in enumerate(part.add_buffered)])
            reads.buffered_max[key] = base + len(part.add_buffered)
        sid = part.shard_id
        if part.transfer_insert:
            txn.insert("TransferTasks", ["ShardId", "TaskId", "Data", "CreateTime"],
                       [[sid, t.task_id, t.data, ts] for t in part.transfer_insert])
        if part.transfer_delete:
            txn.delete("TransferTasks", KeySet(keys=[[sid, t] for t in part.transfer_delete]))
        if part.timer_insert:
            txn.insert("TimerTasks", ["ShardId", "FireTimeMs", "TaskId", "Data", "CreateTime"],
                       [[sid, t.fire_time_ms, t.task_id, t.data, ts] for t in part.timer_insert])
        if part.timer_delete:
            txn.delete("TimerTasks", KeySet(keys=[[sid, f, t] for f, t in part.timer_delete]))
        if part.backlog_insert:
            txn.insert("TaskBacklog", ["NamespaceId", "TaskQueue", "Kind", "ShardId", "TaskId", "Data", "CreateTime"],
                       [[b.namespace_id, b.task_queue, b.kind, b.shard_id, b.task_id, b.data, ts]
                        for b in part.backlog_insert])
        if part.backlog_delete:
            txn.delete("TaskBacklog", KeySet(keys=[list(k) for k in part.backlog_delete]))
        if part.visibility:
            txn.insert_or_update("Visibility", list(VIS_COLUMNS), [vis_values(v) for v in part.visibility])
        if part.visibility_history_length:
            # an update on a missing row would fail the commit: only rows that exist (read, or written just
            # above), and only upwards
            have = dict(reads.vis_lengths)
            have.update({(v.namespace_id, v.run_id): v.history_length for v in part.visibility})
            raised = [[ns, rid, n] for ns, rid, n in part.visibility_history_length
                      if (ns, rid) in have and n > have[(ns, rid)]]
            if raised:
                txn.update("Visibility", ["namespace_id", "run_id", "history_length"], raised)
        if part.visibility_delete:
            txn.delete("Visibility", KeySet(keys=[list(k) for k in part.visibility_delete]))
        if part.blob_refs:
            txn.insert_or_update("BlobRefs", ["NamespaceId", "WorkflowId", "RunId", "BlobKey"],
                                 [list(r) for r in part.blob_refs])
        if part.schedule is not None:
            sc = part.schedule
            values = [[sc.namespace_id, sc.schedule_id, sc.shard_id, sc.version, enc(sc.data), ts]]
            columns = ["NamespaceId", "ScheduleId", "ShardId", "Version", "Data", "UpdateTime"]
            if part.schedule_expected_version is None:
                txn.insert("Schedules", columns, values)
            else:
                txn.update("Schedules", columns, values)
        if part.schedule_delete is not None:
            txn.delete("Schedules", KeySet(keys=[list(part.schedule_delete[:2])]))
        if part.delete_execution is not None:
            ns, wid, rid = part.delete_execution
            txn.delete("BlobRefs", KeySet(ranges=[KeyRange(start_closed=[ns, wid, rid], end_closed=[ns, wid, rid])]))
            shard = reads.located.get((ns, wid, rid))
            if shard is not None:
                txn.delete("Executions", KeySet(keys=[[shard, ns, wid, rid]]))  # events cascade
            if reads.currents.get((ns, wid)) == rid:
                txn.delete("CurrentExecutions", KeySet(keys=[[ns, wid]]))


def apply_batch(txn: Any, batch: list[Mutation]) -> list[BaseException | None]:
    """The body of one read-write transaction: check every mutation, buffer the writes of those that pass."""
    reads = read_phase(txn, batch)
    results: list[BaseException | None] = []
    for m in batch:
        try:
            check(m, reads)
        except (ShardOwnershipLostError, ConditionFailedError) as e:
            results.append(e)
            continue
        write(txn, m, reads)
        results.append(None)
    return results


__all__ = ["apply_batch", "check", "conflict_keys", "flatten", "read_phase", "write"]
