"""Membership heartbeats and shard leases, balanced across the live processes.

Every ``renew_interval`` (on a thread of its own) a member (1) refreshes its
heartbeat row, (2) renews the leases it holds (the renewal checks ``RangeId`` and ``Owner``: a shard someone
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
import threading
import time

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from spindle.controlplane.store._spanner_leases import Member, ShardLease

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

    The lease work runs on a thread of its own with its own event loop, so that a
    member whose main loop is saturated by requests still renews its leases on
    time. Renewal (heartbeat + renew, every ``renew_interval``) and rebalancing
    (hand over, claim) are separate tasks there: a slow shard start never delays the
    renewal of the other shards. ``on_acquire``/``on_release`` run on the main loop.

    Args:
        store: the lease store (its lease methods may be awaited from any event loop).
        member_id: this process's unique id.
        address: where peers reach this process (host:port).
        num_shards: shards of the database.
        ttl: lease lifetime, seconds.
        renew_interval: seconds between renewals.
        on_acquire: called with (shard_id, range_id) after a shard is claimed; the
            shard is served once it returns.
        on_release: called with a shard id when the shard must no longer be served
            (lost, or handed over); awaited before a handed-over lease is cleared.
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
        self._main: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._lock: asyncio.Lock | None = None
        self._stopping = False
        #: Counters: shards claimed, lost (fenced), handed over, renewal rounds.
        self.stats = {"claimed": 0, "lost": 0, "handed_over": 0, "ticks": 0}
        #: Counts renewals and lost shards (a ``ServerMetrics``, thread-safe), or None.
        self.metrics: Any = None

    # ------------------------------------------------------------------ threads and loops
    async def start(self) -> None:
        """Join the cluster, take a first share of the shards and keep renewing in the background."""
        self._main = asyncio.get_running_loop()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"spindle-leases-{self.member_id}",
                                        daemon=True)
        self._thread.start()
        await self._in_lease_loop(self._first_round())

    async def _first_round(self) -> None:
        self._lock = asyncio.Lock()
        await self.renew()
        await self.rebalance()
        self._tasks = [asyncio.create_task(self._every(self.renew), name="spindle-lease-renew"),
                       asyncio.create_task(self._every(self.rebalance), name="spindle-lease-balance")]

    async def _in_lease_loop(self, coro: Awaitable[Any]) -> Any:
        assert self._loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))  # type: ignore[arg-type]

    async def _in_main_loop(self, coro: Awaitable[Any]) -> Any:
        assert self._main is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._main))  # type: ignore[arg-type]

    async def stop(self, *, release: bool = True) -> None:
        """Stop renewing; with ``release``, stop serving every shard and clear its lease (clean shutdown)."""
        self._stopping = True
        if self._loop is None:
            return
        await self._in_lease_loop(self._shutdown(release))
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
        self._loop.close()
        self._loop = None

    async def _shutdown(self, release: bool) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
                pass
        if not release or self._lock is None:
            return
        async with self._lock:
            for sid in sorted(self.held):
                await self._hand_over(sid)
        try:
            await self.store.leave_cluster(self.member_id)
        except Exception as e:  # noqa: BLE001 - best effort: the heartbeat expires anyway
            log.warning("could not leave the cluster cleanly: %s", e)

    async def _every(self, step: Callable[[], Awaitable[None]]) -> None:
        while not self._stopping:
            await asyncio.sleep(self.interval)
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep going; a store outage shows up as lost leases later
                log.exception("lease round failed")

    # ------------------------------------------------------------------ renewal
    async def renew(self) -> None:
        """Heartbeat and extend every held lease; shards found taken are dropped at once."""
        self.stats["ticks"] += 1
        now = now_ms()
        try:
            await self.store.heartbeat_member(self.member_id, self.address, now, self.started_ms)
            lost = await self.store.renew_leases(self.member_id, dict(self.held), now, self.ttl_ms)
        except Exception:
            if self.metrics is not None:
                self.metrics.lease_renewal(False)
            raise
        if self.metrics is not None:
            self.metrics.lease_renewal(True)
        self.last_renewed_ms = now
        for sid in lost:
            await self._drop(sid)

    def shard_lost(self, shard_id: int) -> None:
        """A write found the shard fenced (engine hook, main loop): stop serving it without waiting for a renewal."""
        if shard_id in self.held and not self._stopping and self._loop is not None:
            loop = self._loop
            loop.call_soon_threadsafe(lambda: loop.create_task(self._drop(shard_id)))

    async def _drop(self, shard_id: int) -> None:
        if self.held.pop(shard_id, None) is None:
            return
        self.stats["lost"] += 1
        if self.metrics is not None:
            self.metrics.shard_ownership("lost")
        log.warning("%s lost shard %s (another member took it)", self.member_id, shard_id)
        try:
            await self._in_main_loop(self.on_release(shard_id))
        except Exception:  # noqa: BLE001 - its writes are fenced anyway
            log.exception("stopping lost shard %s failed", shard_id)

    # ------------------------------------------------------------------ balance
    async def refresh_view(self) -> ClusterView:
        """Re-read members and leases (routing calls this, from any loop, when an owner is unknown or wrong)."""
        members, leases = await asyncio.gather(self.store.list_members(), self.store.list_leases())
        self.view = ClusterView({m.member_id: m for m in members}, {le.shard_id: le for le in leases}, now_ms())
        return self.view

    async def rebalance(self) -> None:
        """Hand over shards the plan gives to others; claim free or expired shards the plan gives to us."""
        assert self._lock is not None
        view = await self.refresh_view()
        now = now_ms()
        live = sorted(m.member_id for m in view.members.values()
                      if now - m.heartbeat_ms < self.ttl_ms or m.member_id == self.member_id)
        plan = assign_shards(self.num_shards, live)
        claimed: list[tuple[int, int]] = []
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
                claimed.append((sid, range_id))
                self.stats["claimed"] += 1
                log.info("%s claimed shard %s (range %s)", self.member_id, sid, range_id)
            # claim everything first (a few ms each), then start serving (loads queues and timers)
            for sid, range_id in claimed:
                try:
                    await self._in_main_loop(self.on_acquire(sid, range_id))
                except Exception:  # noqa: BLE001 - give it back so someone can serve it
                    log.exception("could not start serving shard %s; releasing it", sid)
                    await self._hand_over(sid)
        await self.refresh_view()

    async def tick(self) -> None:
        """One renewal and one rebalancing round (tests drive the manager with this)."""
        await self.renew()
        await self.rebalance()

    async def _hand_over(self, shard_id: int) -> None:
        range_id = self.held.pop(shard_id, None)
        if range_id is None:
            return
        try:
            await self._in_main_loop(self.on_release(shard_id))
        except Exception:  # noqa: BLE001 - its writes are fenced anyway once someone takes it
            log.exception("stopping shard %s failed", shard_id)
        try:
            await self.store.release_shard(shard_id, self.member_id, range_id)
        except Exception as e:  # noqa: BLE001 - the lease then simply expires
            log.warning("could not release shard %s: %s", shard_id, e)
        self.stats["handed_over"] += 1


__all__ = ["ClusterView", "LeaseManager", "LeaseStore", "assign_shards", "rendezvous_owner"]
