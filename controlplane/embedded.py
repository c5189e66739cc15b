"""The control plane in-process: what ``Client.connect("embedded:PATH")`` and the test environments use.

``start(path)`` opens (or creates) a SQLite file, or an in-memory database for
``":memory:"``, and returns an ``EmbeddedControlPlane`` whose ``stub`` has the same
async methods as ``service_pb2_grpc.WorkflowServiceStub`` but calls the frontend
directly (no network, no serialization). Errors are ``grpc.aio.AioRpcError`` with
the same status codes a remote server would send.

With the wire API (``spindle.api``) this is the SDK's only way into the
control plane, so it also exports what ``start`` takes (``ServerConfig``, ``Clock``,
``VirtualClock``): callers such as ``spindle.testing`` need nothing else of it.
"""

from __future__ import annotations

import asyncio

from typing import Any, Callable

import grpc

from spindle.controlplane.clock import Clock, VirtualClock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import ServiceError
from spindle.controlplane.frontend import RPC_NAMES, FrontendService
from spindle.controlplane.namespaces import DEV_SEARCH_ATTRIBUTES
from spindle.controlplane.server import ControlPlane, FileLock, LockedError, create_private_db_file
from spindle.controlplane.store.sqlite import SqliteStore

__all__ = ["Clock", "EmbeddedControlPlane", "EmbeddedStub", "LockedError", "ServerConfig", "VirtualClock", "WrongEventLoopError",
           "start"]


class WrongEventLoopError(RuntimeError):
    """An in-process control plane was called from another event loop than the one it runs on."""


class EmbeddedStub:
    """Calls the frontend in-process with the WorkflowServiceStub calling convention.

    The control plane's background work (timers, transfer queue, acks) runs on the event
    loop it was started on; a call from another loop would be served while none of that
    ever runs (timers never fire), so it raises :class:`WrongEventLoopError` instead.
    """

    def __init__(self, frontend: FrontendService, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        for name in RPC_NAMES:
            setattr(self, name, self._method(getattr(frontend, name), name, loop))

    @staticmethod
    def _method(fn: Callable[..., Any], name: str, home: asyncio.AbstractEventLoop) -> Callable[..., Any]:
        async def call(request: Any, *, timeout: float | None = None, metadata: Any = None, **_: Any) -> Any:
            loop = asyncio.get_running_loop()
            if loop is not home:
                raise WrongEventLoopError(
                    f"{name}: this in-process control plane runs on another event loop than the caller's, so its "
                    "timers and background work would never run here. Start it (Client.connect('embedded:...'), "
                    "WorkflowEnvironment.start_*) on the loop that uses it; with pytest-asyncio, give a "
                    "session-scoped environment fixture and the tests that use it the same loop_scope")
            deadline = loop.time() + timeout if timeout is not None else None
            try:
                return await fn(request, deadline)
            except ServiceError as e:
                raise grpc.aio.AioRpcError(e.code, grpc.aio.Metadata(), grpc.aio.Metadata(*e.trailing_metadata()),
                                           details=e.message) from None

        call.__name__ = name
        return call


class EmbeddedControlPlane:
    """A running in-process control plane; ``stop()`` shuts it down and releases the file."""

    def __init__(self, cp: ControlPlane, lock: FileLock | None) -> None:
        self.control_plane = cp
        self.stub = EmbeddedStub(cp.frontend, asyncio.get_running_loop())
        self._lock = lock

    @property
    def clock(self) -> Clock:
        return self.control_plane.clock

    async def stop(self) -> None:
        try:
            await self.control_plane.stop()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None


async def start(path: str, *, clock: Clock | None = None, config: ServerConfig | None = None,
                namespace: str = "default", dev_search_attributes: bool = False) -> EmbeddedControlPlane:
    """Start a control plane on ``path`` (a SQLite file, or ":memory:") in this process.

    A new file is created with mode 600 (only this user may read the histories it holds).

    ``namespace`` is created if missing; with ``dev_search_attributes`` it also gets the search
    attributes Temporal's dev server registers (``CustomKeywordField``, ``CustomIntField``, ...:
    ``spindle.controlplane.namespaces.DEV_SEARCH_ATTRIBUTES``), as ``spindle server start-dev`` does.

    Raises:
        LockedError: another process serves this file (connect to it instead).
        ValueError: the file was created with another shard count.
    """
    lock = None
    if path != ":memory:":
        lock = FileLock(path)
        lock.acquire()
    try:
        cfg = config or ServerConfig()
        create_private_db_file(path)  # mode 600: the file holds every payload
        cp = ControlPlane(SqliteStore(path, max_batch=cfg.max_commit_batch), cfg, clock, default_namespace=namespace,
                          default_search_attributes=DEV_SEARCH_ATTRIBUTES if dev_search_attributes else None)
        await cp.start()
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return EmbeddedControlPlane(cp, lock)
