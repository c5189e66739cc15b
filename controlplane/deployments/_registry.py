"""``Deployments``: this process's view of the namespaces' worker deployments, and the writes that change them.

Pollers that name a build (``WorkerDeploymentOptions`` with ``use_worker_versioning``) make
the deployment, the version and its task queue known (:meth:`Deployments.saw_poller`: in
memory at once, written to the store in the background, and again at most once a minute for
the version's last-poll time). Matching asks :meth:`Deployments.target` where a task goes;
the frontend's deployment RPCs read and change the routing (:meth:`set_current`,
:meth:`set_ramping`). Every write is an optimistic update of the deployment's one row
(``Store.put_deployment``); a lost race is read again and retried.

In a cluster each member has its own ``Deployments``: with ``refresh_interval`` > 0 it reloads
the deployments of the namespaces that have any every that many seconds, so a routing change made
on one member reaches the others' matching within that time.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from collections.abc import Callable
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.controlplane.clock import Clock
from spindle.controlplane.errors import FailedPrecondition, NotFound
from spindle.controlplane.store import ConditionFailedError, DeploymentRow, Store, StoreError

from ._document import DeploymentDoc, VersionState, check_version, version_key

log = logging.getLogger("spindle.deployments")

#: A version's last-poll time is written again when it is older than this (ms).
LAST_POLL_WRITE_MS = 60_000
#: Listing a namespace's deployments reads at most this many.
MAX_DEPLOYMENTS = 1000


def _not_found(name: str) -> NotFound:
    return NotFound(f"deployment_name: no worker deployment {name!r} in this namespace (no poller has named it)")


def _add_polls(polls: set[tuple[str, str]], now: int, doc: DeploymentDoc) -> None:
    for build, qkey in polls:
        v = doc.versions.setdefault(build, VersionState(created_ms=now))
        if qkey not in v.task_queues:
            v.task_queues.append(qkey)
        v.last_poll_ms = max(v.last_poll_ms, now)


class Deployments:
    """Worker deployments of every namespace, as this process knows them (see the module docstring)."""

    def __init__(self, store: Store, clock: Clock, *, refresh_interval: float = 0.0) -> None:
        self._store = store
        self._clock = clock
        self.refresh_interval = refresh_interval
        #: (namespace id, deployment name) -> (document, row version)
        self._docs: dict[tuple[str, str], tuple[DeploymentDoc, int]] = {}
        #: (namespace id, "<kind>:<queue>") -> deployment name
        self._queues: dict[tuple[str, str], str] = {}
        self._loaded: set[str] = set()  # namespaces whose rows were read
        self._pending: dict[tuple[str, str], set[tuple[str, str]]] = {}  # (ns, deployment) -> {(build, queue)} to write
        self._writers: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._refresher: asyncio.Task[None] | None = None
        #: Called with a namespace id when a routing change may send queued tasks elsewhere (matching re-matches).
        self.on_routing_change: Callable[[str], None] | None = None

    # ------------------------------------------------------------------ matching's side (sync, hot)
    def deployment_of(self, namespace_id: str, queue: str, kind: int) -> DeploymentDoc | None:
        """The deployment whose versions poll ``queue`` (None: the queue is not versioned)."""
        name = self._queues.get((namespace_id, f"{kind}:{queue}"))
        if name is None:
            return None
        entry = self._docs.get((namespace_id, name))
        return entry[0] if entry is not None else None

    def target(self, namespace_id: str, queue: str, kind: int, workflow_id: str, pin: str) -> str | None:
        """The version key a task must go to; "" = unversioned pollers; None = any poller (the queue is not versioned)."""
        doc = self.deployment_of(namespace_id, queue, kind)
        if doc is None:
            return pin or None
        return pin or doc.target(workflow_id)

    def saw_poller(self, namespace_id: str, queue: str, kind: int, deployment: str, build: str) -> bool:
        """A poller of ``deployment``/``build`` polled ``queue``: remember it; True if the queue just became versioned."""
        qkey = f"{kind}:{queue}"
        new_queue = (namespace_id, qkey) not in self._queues
        self._queues[(namespace_id, qkey)] = deployment
        entry = self._docs.get((namespace_id, deployment))
        now = self._clock.now_ms()
        if entry is not None:
            v = entry[0].versions.get(build)
            if v is not None and qkey in v.task_queues and now - v.last_poll_ms < LAST_POLL_WRITE_MS:
                return new_queue
        else:  # not known here yet: an in-memory document until the write lands
            self._docs[(namespace_id, deployment)] = (DeploymentDoc(deployment, created_ms=now), 0)
        doc = self._docs[(namespace_id, deployment)][0]
        v = doc.versions.setdefault(build, VersionState(created_ms=now))
        if qkey not in v.task_queues:
            v.task_queues.append(qkey)
        v.last_poll_ms = now
        self._pending.setdefault((namespace_id, deployment), set()).add((build, qkey))
        key = (namespace_id, deployment)
        if key not in self._writers:
            try:
                self._writers[key] = asyncio.get_running_loop().create_task(self._write_polls(key))
            except RuntimeError:  # no loop (a synchronous test): the next call writes
                pass
        return new_queue

    async def _write_polls(self, key: tuple[str, str]) -> None:
        ns_id, name = key
        try:
            for _ in range(20):
                polls = self._pending.pop(key, set())
                if not polls:
                    return
                try:
                    await self._update(ns_id, name, functools.partial(_add_polls, polls, self._clock.now_ms()),
                                       create=True)
                except StoreError as e:  # a poll is seen again: the next one writes it
                    log.warning("could not record the pollers of deployment %r: %s", name, e)
                    return
        finally:
            self._writers.pop(key, None)

    # ------------------------------------------------------------------ reads and writes
    async def poller(self, namespace_id: str, opts: pb.WorkerDeploymentOptions, path: str) -> tuple[str, str]:
        """A poller's (deployment, build), ("", "") for an unversioned one (InvalidArgument naming ``path`` for a
        bad version); the namespace's deployments are known here afterwards (read once per process)."""
        if namespace_id not in self._loaded:
            await self.load(namespace_id)
        if not opts.use_worker_versioning:
            return "", ""
        v = opts.version
        check_version(v.deployment_name, v.build_id, path)
        return v.deployment_name, v.build_id

    async def load(self, namespace_id: str, *, force: bool = False) -> None:
        """Read the namespace's deployments from the store (once, or again with ``force``)."""
        if namespace_id in self._loaded and not force:
            return
        rows: list[DeploymentRow] = []
        after = ""
        while True:
            page = await self._store.list_deployments(namespace_id, after, 200)
            rows.extend(page)
            if len(page) < 200 or len(rows) >= MAX_DEPLOYMENTS:
                break
            after = page[-1].name
        changed = False
        for r in rows:
            changed |= self._remember(namespace_id, DeploymentDoc.from_json(r.name, r.doc), r.version)
        self._loaded.add(namespace_id)
        if changed and self.on_routing_change is not None:
            self.on_routing_change(namespace_id)
        if self.refresh_interval > 0 and self._refresher is None:
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_loop())

    def _remember(self, namespace_id: str, doc: DeploymentDoc, version: int) -> bool:
        """Keep a document read or written; whether its routing changed (or it is new)."""
        old = self._docs.get((namespace_id, doc.name))
        if old is not None and old[1] > version:
            return False
        if old is not None and old[1] == 0:  # in-memory pollers not yet written: keep them
            for build, v in old[0].versions.items():
                doc.versions.setdefault(build, v)
        self._docs[(namespace_id, doc.name)] = (doc, version)
        for q in doc.queues():
            self._queues[(namespace_id, q)] = doc.name
        if old is None:
            return True
        o = old[0]
        return (o.current, o.ramping, o.ramp_pct) != (doc.current, doc.ramping, doc.ramp_pct)

    async def _refresh_loop(self) -> None:
        """Reload the namespaces that have deployments here (a namespace without any learns of its first one
        from its pollers: a poll reaches every member)."""
        while True:
            await asyncio.sleep(self.refresh_interval)
            for ns_id in sorted({ns for ns, _ in self._docs}):
                try:
                    await self.load(ns_id, force=True)
                except StoreError as e:
                    log.debug("deployments of namespace %s not refreshed: %s", ns_id, e)

    async def get(self, namespace_id: str, name: str) -> tuple[DeploymentDoc, int]:
        """The deployment as stored (NotFound naming it if no poller ever named it)."""
        row = await self._store.get_deployment(namespace_id, name)
        if row is None:
            raise _not_found(name)
        doc = DeploymentDoc.from_json(row.name, row.doc)
        self._remember(namespace_id, doc, row.version)
        return doc, row.version

    async def list(self, namespace_id: str, after: str, limit: int) -> list[tuple[DeploymentDoc, int]]:
        rows = await self._store.list_deployments(namespace_id, after, limit)
        return [(DeploymentDoc.from_json(r.name, r.doc), r.version) for r in rows]

    async def _update(self, namespace_id: str, name: str, change: Callable[[DeploymentDoc], Any], *,
                      create: bool = False, expected: int | None = None) -> tuple[int, Any]:
        """Read, change and write the deployment's row, again on a lost race (not when ``expected`` is given);
        the row's new version and what ``change`` returned."""
        for _ in range(10):
            row = await self._store.get_deployment(namespace_id, name)
            if row is None:
                if not create:
                    raise _not_found(name)
                doc, version = DeploymentDoc(name, created_ms=self._clock.now_ms()), 0
            else:
                doc, version = DeploymentDoc.from_json(row.name, row.doc), row.version
            if expected is not None and expected != version:
                raise FailedPrecondition(f"conflict_token: deployment {name!r} changed since it was read "
                                         f"(version {version}, the token names {expected}): describe it again")
            result = change(doc)
            new = DeploymentRow(namespace_id, name, version, doc.to_json())
            try:
                await self._store.put_deployment(new, version)
            except ConditionFailedError:
                if expected is not None:
                    raise FailedPrecondition(f"conflict_token: deployment {name!r} changed meanwhile: "
                                             "describe it again") from None
                continue
            routing = self._remember(namespace_id, doc, new.version)
            if routing and self.on_routing_change is not None:
                self.on_routing_change(namespace_id)
            return new.version, result
        raise FailedPrecondition(f"deployment {name!r} is being changed by others: try again")

    def _activate(self, doc: DeploymentDoc, build: str, allow_no_pollers: bool) -> None:
        """``build`` becomes current or ramping: refused if no poller named it (unless allowed); never INACTIVE again."""
        if not build:
            return
        if build not in doc.versions and not allow_no_pollers:
            raise FailedPrecondition(
                f"build_id: no poller of version {version_key(doc.name, build)!r} has been seen, so no worker "
                "would take its tasks; start its workers first (or set allow_no_pollers)")
        doc.versions.setdefault(build, VersionState(created_ms=self._clock.now_ms())).was_active = True

    async def set_current(self, namespace_id: str, name: str, build: str, *, identity: str,
                          expected: int | None, allow_no_pollers: bool) -> tuple[int, str]:
        """Make ``build`` the current version ("" = unversioned workers); the row's new version and the previous build."""
        def change(doc: DeploymentDoc) -> str:
            prev = doc.current
            self._activate(doc, build, allow_no_pollers)
            if build != doc.current:
                doc.current = build
                doc.current_changed_ms = self._clock.now_ms()
            if doc.ramping == build and build:
                doc.ramping, doc.ramp_pct, doc.ramping_changed_ms = "", 0.0, self._clock.now_ms()
            doc.modifier = identity
            return prev

        version, prev = await self._update(namespace_id, name, change, create=allow_no_pollers, expected=expected)
        return version, str(prev)

    async def set_ramping(self, namespace_id: str, name: str, build: str, pct: float, *, identity: str,
                          expected: int | None, allow_no_pollers: bool) -> tuple[int, tuple[str, float]]:
        """Ramp ``pct`` percent (0..100: the field rule) of new and auto-upgrade executions to ``build``
        ("" / 0: stop ramping); the row's new version and the previous (build, percentage)."""
        def change(doc: DeploymentDoc) -> tuple[str, float]:
            prev = (doc.ramping, doc.ramp_pct)
            if build and build == doc.current:
                raise FailedPrecondition(f"build_id: {version_key(name, build)!r} is the current version already")
            self._activate(doc, build, allow_no_pollers)
            new = (build, pct if build else 0.0)
            if new != prev:
                doc.ramping, doc.ramp_pct = new
                doc.ramping_changed_ms = self._clock.now_ms()
            doc.modifier = identity
            return prev

        version, prev = await self._update(namespace_id, name, change, create=allow_no_pollers, expected=expected)
        return version, prev

    async def close(self) -> None:
        tasks = [t for t in (self._refresher, *self._writers.values()) if t is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["Deployments"]
