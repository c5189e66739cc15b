"""Cluster membership and shard leases on Cloud Spanner (used by ``spindle.controlplane.cluster``).

Each function is the body of one read-write transaction (``fn(txn)``). A lease is
``Shards.Owner`` + ``Shards.LeaseExpiryMs``. Taking a shard from anyone (including
after our own lease lapsed) increments ``RangeId``, which fences every write the
previous holder may still attempt. Lease times are wall-clock milliseconds: a
skewed clock can only make leases overlap in time, never let a stale owner write,
because writes are checked against ``RangeId``, not against the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ShardLease:
    """A shard's lease as stored."""

    shard_id: int
    range_id: int
    owner: str
    expiry_ms: int


@dataclass(frozen=True)
class Member:
    """A control-plane process as registered in ``ClusterMembers``."""

    member_id: str
    address: str
    heartbeat_ms: int
    started_ms: int


def heartbeat(member_id: str, address: str, now_ms: int, started_ms: int) -> Callable[[Any], None]:
    """Register or refresh a member."""
    from google.cloud import spanner

    def run(txn: Any) -> None:
        txn.insert_or_update("ClusterMembers", ["MemberId", "Address", "HeartbeatMs", "StartedMs", "HeartbeatTime"],
                             [[member_id, address, now_ms, started_ms, spanner.COMMIT_TIMESTAMP]])

    return run


def leave(member_id: str) -> Callable[[Any], None]:
    """Remove a member (clean shutdown)."""
    from google.cloud.spanner_v1 import KeySet

    def run(txn: Any) -> None:
        txn.delete("ClusterMembers", KeySet(keys=[[member_id]]))

    return run


def claim(shard_id: int, member_id: str, now_ms: int, ttl_ms: int) -> Callable[[Any], int | None]:
    """Take a shard whose lease is free or expired: returns the new range id, or None if someone holds it."""
    from google.cloud import spanner
    from google.cloud.spanner_v1 import KeySet

    def run(txn: Any) -> int | None:
        rows = list(txn.read("Shards", ["RangeId", "Owner", "LeaseExpiryMs"], KeySet(keys=[[shard_id]])))
        if not rows:
            raise KeyError(f"no shard {shard_id}")
        range_id, owner, expiry = int(rows[0][0]), rows[0][1], int(rows[0][2])
        if owner and owner != member_id and expiry > now_ms:
            return None
        new_range = range_id + 1
        txn.update("Shards", ["ShardId", "RangeId", "Owner", "LeaseExpiryMs", "UpdateTime"],
                   [[shard_id, new_range, member_id, now_ms + ttl_ms, spanner.COMMIT_TIMESTAMP]])
        return new_range

    return run


def renew(member_id: str, held: Mapping[int, int], now_ms: int, ttl_ms: int) -> Callable[[Any], list[int]]:
    """Extend the leases of ``held`` (shard -> range id); returns the shards that were lost (fenced)."""
    from google.cloud import spanner
    from google.cloud.spanner_v1 import KeySet

    def run(txn: Any) -> list[int]:
        if not held:
            return []
        lost: list[int] = []
        keep: list[list[Any]] = []
        for sid, rid, owner in txn.read("Shards", ["ShardId", "RangeId", "Owner"], KeySet(keys=[[s] for s in held])):
            if int(rid) != held[int(sid)] or owner != member_id:
                lost.append(int(sid))
            else:
                keep.append([int(sid), now_ms + ttl_ms, spanner.COMMIT_TIMESTAMP])
        if keep:
            txn.update("Shards", ["ShardId", "LeaseExpiryMs", "UpdateTime"], keep)
        return sorted(lost)

    return run


def release(shard_id: int, member_id: str, range_id: int) -> Callable[[Any], bool]:
    """Give a shard up (its lease expires now) if we still hold it with ``range_id``."""
    from google.cloud import spanner
    from google.cloud.spanner_v1 import KeySet

    def run(txn: Any) -> bool:
        rows = list(txn.read("Shards", ["RangeId", "Owner"], KeySet(keys=[[shard_id]])))
        if not rows or int(rows[0][0]) != range_id or rows[0][1] != member_id:
            return False
        txn.update("Shards", ["ShardId", "Owner", "LeaseExpiryMs", "UpdateTime"],
                   [[shard_id, "", 0, spanner.COMMIT_TIMESTAMP]])
        return True

    return run


def read_members(snapshot: Any) -> list[Member]:
    """Every registered member."""
    rows = snapshot.execute_sql("SELECT MemberId, Address, HeartbeatMs, StartedMs FROM ClusterMembers ORDER BY MemberId")
    return [Member(r[0], r[1], int(r[2]), int(r[3])) for r in rows]


def read_leases(snapshot: Any) -> list[ShardLease]:
    """Every shard's lease."""
    rows = snapshot.execute_sql("SELECT ShardId, RangeId, Owner, LeaseExpiryMs FROM Shards ORDER BY ShardId")
    return [ShardLease(int(r[0]), int(r[1]), r[2], int(r[3])) for r in rows]


__all__ = ["Member", "ShardLease", "claim", "heartbeat", "leave", "read_leases", "read_members", "release", "renew"]
