"""Membership heartbeats and shard leases, balanced across the live processes.

Every ``renew_interval`` a member (1) refreshes its heartbeat row, (2) renews the
leases it holds (the renewal checks ``RangeId`` and ``Owner``: a shard someone
else took is reported lost and dropped at once), (3) computes which shards it
*should* own: an exactly balanced assignment of shard ids to the members whose
heartbeat is younger than the lease TTL (``assign_shards``, rendezvous-hash
preferences with capacities, the same result on every member), (4) hands over shards that now belong to another live
member (stop serving, then clear the lease so the new owner need not wait for it
to expire) and (5) claims the shards it should own whose lease is free or expired.
Claiming increments the shard's ``RangeId``, which fences the old owner's writes.

A process killed with ``kill -9`` stops heartbeating; after ``ttl`` it is no longer
live, the others' assignment gives its shards to them, and they claim each
one as soon as its lease has expired, that is within ``ttl + renew_interval``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from controlplane.store._spanner_leases import Member, ShardLease

log = logging.getLogger("spindle.cluster.leases")


class LeaseStore(Protocol):
    """What the lease manager needs from the store (``SpannerStore`` provides it)."""

    async def heartbeat_member(self, member_id: str, address: str, now_ms: int, started_ms: int) -> None: ...
    async def leave_cluster(self, member_id: str) -> None: ...
    async def claim_shard(self, shard_id: int, member_id: str, now_ms: int, ttl_ms: int) -> int | None: ...
    async def renew_leases(self, member_id: str, held: dict[int, int], now_ms: int, ttl_ms: int) -> list[int]: ...
    async def release_shard(self, shard_id: int, member_id: str, range_id: int) -> bool: ...
    async def list_members(self) -> list[Member]: ...
    async def list_leases(self) -> list[ShardLease]: ...


def _weight(member: str, shard_id: int) -> bytes:
    return hashlib.blake2b(f"{member}/{shard_id}".encode(), digest_size=8).digest()


def rendezvous_owner(shard_id: int, members: Iterable[str]) -> str | None:
    """The member that prefers ``shard_id`` most: highest hash of (member, shard); stable as members come and go."""
    ranked = sorted(members, key=lambda m: _weight(m, shard_id), reverse=True)
    return ranked[0] if ranked else None


def assign_shards(num_shards: int, members: Iterable[str]) -> dict[int, str]:
    """Which live member should own each shard: exactly balanced, and the same on every member.

    Each member gets ``num_shards // n`` or one more. Shards are handed out in
    order, each to the member ranking it highest (rendezvous hashing) that still
    has room, so most shards stay put when a member joins or leaves.
    """
    live = sorted(set(members))
    if not live:
        return {}
    base, extra = divmod(num_shards, len(live))
    room = {m: base + (1 if i < extra else 0) for i, m in enumerate(live)}
    out: dict[int, str] = {}
    for sid in range(num_shards):
        for m in sorted(live, key=lambda m: _weight(m, sid), reverse=True):
            if room[m] > 0:
                room[m] -= 1
                out[sid] = m
                break
    return out


@dataclass
class ClusterView:
    """The latest known members and leases (for routing requests to shard owners)."""

    members: dict[str, Member]
    leases: dict[int, ShardLease]
    read_at_ms: int

    def owner_address(self, shard_id: int, now_ms: int) -> tuple[str, str] | None:
        """(member id, address) of the shard's current lease holder, or None when nobody holds it."""
        lease = self.leases.get(shard_id)
        if lease is None or not lease.owner or lease.expiry_ms <= now_ms:
            return None
        member = self.members.get(lease.owner)
        return None if member is None else (member.member_id, member.address)


def now_ms() -> int:
    return int(time.time() * 1000)


class LeaseManager:
    """Holds this member's shard leases and keeps the cluster balanced.

    Args:
        store: the lease store.
        member_id: this process's unique id.
        address: where peers reach this process (host:port).
        num_shards: shards of the database.
        ttl: lease lifetime, seconds.
        renew_interval: seconds between renewals.
        on_acquire: called with (shard_id, range_id) after a shard is claimed; the
            shard is served once it returns.
        on_release: called with a shard id when the shard must no longer be served
            (lost, or handed over); awaited before the lease is cleared.
    """

    def __init__(self, store: LeaseStore, member_id: str, address: str, num_shards: int, *, ttl: float,
                 renew_interval: float, on_acquire: Callable[[int, int], Awaitable[None]],
                 on_release: Callable[[int], Awaitable[None]]) -> None:
        self.store = store
        self.member_id = member_id
        self.address = address
        self.num_shards = num_shards
        self.ttl_ms = int(ttl * 1000)
        self.interval = renew_interval
        self.on_acquire = on_acquire
        self.on_release = on_release
        self.held: dict[int, int] = {}
        self.view = ClusterView({}, {}, 0)
        self.started_ms = now_ms()
        self.last_renewed_ms = 0
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._stopping = False
        #: Counters: shards claimed, lost (fenced), handed over.
        self.stats = {"claimed": 0, "lost": 0, "handed_over": 0, "ticks": 0}

    async def start(self) -> None:
        """Join the cluster, take a first share of the shards and keep renewing in the background."""
        await self.tick()
        self._task = asyncio.create_task(self._loop(), name="spindle-leases")

    async def stop(self, *, release: bool = True) -> None:
        """Stop renewing; with ``release``, stop serving every shard and clear its lease (clean shutdown)."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
                pass
        if release:
            async with self._lock:
                for sid in sorted(self.held):
                    await self._hand_over(sid)
            try:
                await self.store.leave_cluster(self.member_id)
            except Exception as e:  # noqa: BLE001 - best effort: the heartbeat expires anyway
                log.warning("could not leave the cluster cleanly: %s", e)

    async def _loop(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.interval)
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep renewing; a store outage shows up as lost leases later
                log.exception("lease tick failed")

    def shard_lost(self, shard_id: int) -> None:
        """A write found the shard fenced (engine hook): stop serving it without waiting for the next tick."""
        if shard_id in self.held and not self._stopping:
            asyncio.get_running_loop().create_task(self._drop_lost([shard_id]))

    async def _drop_lost(self, shard_ids: list[int]) -> None:
        async with self._lock:
            for sid in shard_ids:
                if self.held.pop(sid, None) is not None:
                    self.stats["lost"] += 1
                    log.warning("%s lost shard %s (another member took it)", self.member_id, sid)
                    await self.on_release(sid)

    async def refresh_view(self) -> ClusterView:
        """Re-read members and leases (routing calls this when a peer says it is not the owner)."""
        members, leases = await asyncio.gather(self.store.list_members(), self.store.list_leases())
        self.view = ClusterView({m.member_id: m for m in members}, {le.shard_id: le for le in leases}, now_ms())
        return self.view

    async def tick(self) -> None:
        """One round: heartbeat, renew, rebalance (see the module docstring)."""
        self.stats["ticks"] += 1
        now = now_ms()
        await self.store.heartbeat_member(self.member_id, self.address, now, self.started_ms)
        lost = await self.store.renew_leases(self.member_id, dict(self.held), now, self.ttl_ms)
        if lost:
            await self._drop_lost(lost)
        self.last_renewed_ms = now
        view = await self.refresh_view()
        live = sorted(m.member_id for m in view.members.values()
                      if now - m.heartbeat_ms < self.ttl_ms or m.member_id == self.member_id)
        plan = assign_shards(self.num_shards, live)
        async with self._lock:
            for sid in sorted(self.held):
                if plan.get(sid) != self.member_id:
                    await self._hand_over(sid)
            for sid in range(self.num_shards):
                if sid in self.held or plan.get(sid) != self.member_id:
                    continue
                lease = view.leases.get(sid)
                if lease is not None and lease.owner and lease.owner != self.member_id and lease.expiry_ms > now:
                    continue  # still held by someone: wait for its handover or expiry
                range_id = await self.store.claim_shard(sid, self.member_id, now_ms(), self.ttl_ms)
                if range_id is None:
                    continue
                self.held[sid] = range_id
                self.stats["claimed"] += 1
                log.info("%s claimed shard %s (range %s)", self.member_id, sid, range_id)
                try:
                    await self.on_acquire(sid, range_id)
                except Exception:  # noqa: BLE001 - give it back so someone can serve it
                    log.exception("could not start serving shard %s; releasing it", sid)
                    await self._hand_over(sid)
        if any(sid in self.held for sid in range(self.num_shards)):
            await self.refresh_view()

    async def _hand_over(self, shard_id: int) -> None:
        range_id = self.held.pop(shard_id, None)
        if range_id is None:
            return
        await self.on_release(shard_id)
        try:
            await self.store.release_shard(shard_id, self.member_id, range_id)
        except Exception as e:  # noqa: BLE001 - the lease then simply expires
            log.warning("could not release shard %s: %s", shard_id, e)
        self.stats["handed_over"] += 1


__all__ = ["ClusterView", "LeaseManager", "LeaseStore", "assign_shards", "rendezvous_owner"]
