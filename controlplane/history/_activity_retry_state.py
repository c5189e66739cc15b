"""The retry state of a run's pending activities, kept on its execution row.

A retried activity attempt writes no event (the history shows an activity's outcome, not
its attempts), so how far its retries went (attempt, when it is due, the last failure and
worker) is not in the history. It is written with every write of the execution row
(``MutableState.activity_retry_state``) and put back after the history is replayed
(``MutableState.rebuild``).
"""

from __future__ import annotations

from collections.abc import Mapping

from spindle.api import messages_pb2 as pb

from ._pending import ActivityInfo


def encode_retry_state(activities: Mapping[int, ActivityInfo]) -> bytes:
    """The retry state of the pending activities past their first attempt (b"" when none)."""
    retrying = [a for a in activities.values() if a.attempt > 1]
    if not retrying:
        return b""
    out = pb.ActivityRetryState()
    for a in retrying:
        item = out.activities.add(scheduled_event_id=a.scheduled_event_id, attempt=a.attempt,
                                  attempt_scheduled_time_ms=a.attempt_scheduled_time_ms,
                                  last_worker_identity=a.last_worker_identity)
        if a.last_failure is not None:
            item.last_failure.CopyFrom(a.last_failure)
    data: bytes = out.SerializeToString()
    return data


def restore_retry_state(activities: Mapping[int, ActivityInfo], raw: bytes) -> None:
    """Put back what ``encode_retry_state`` saved into the replayed ``activities``.

    Histories written before retried attempts stopped writing events carry the count in
    their IN_PROGRESS failure events; the row's state, when later, wins. An activity no
    longer pending is skipped.
    """
    if not raw:
        return
    state = pb.ActivityRetryState()
    state.ParseFromString(raw)
    for item in state.activities:
        info = activities.get(item.scheduled_event_id)
        if info is None or item.attempt < info.attempt:
            continue
        info.attempt = item.attempt
        info.attempt_scheduled_time_ms = item.attempt_scheduled_time_ms
        info.last_worker_identity = item.last_worker_identity
        info.last_failure = item.last_failure if item.HasField("last_failure") else None


__all__ = ["encode_retry_state", "restore_retry_state"]
