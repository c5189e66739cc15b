"""Assembling and serving the control plane: store + namespaces + history + frontend, over gRPC."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from typing import Any

import grpc

from spindle.controlplane.api import service_pb2_grpc
from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import ServiceError
from spindle.controlplane.frontend import RPC_NAMES, FrontendService
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import Store

log = logging.getLogger("spindle.server")

GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.so_reuseport", 0),
    # gRPC core cancels calls that wait unaccepted beyond 1,000 by default; thousands of
    # concurrent long polls (workers, handle.result()) are normal here.
    ("grpc.server.max_pending_requests", 20_000),
    ("grpc.server.max_pending_requests_hard_limit", 40_000),
]


#: Longest error message sent (UTF-8 bytes). Messages quote the offending value; a 300 KB name
#: would go out whole in the grpc-message trailer, which clients refuse beyond 16 KiB of
#: metadata (they see RESOURCE_EXHAUSTED "received metadata size exceeds hard limit"
#: instead of the real status).
MAX_DETAILS_BYTES = 2048


def clip_details(message: str) -> str:
    """``message`` cut to MAX_DETAILS_BYTES of UTF-8 (on a character boundary), saying how much was cut."""
    raw = message.encode()
    if len(raw) <= MAX_DETAILS_BYTES:
        return message
    head = raw[:MAX_DETAILS_BYTES].decode(errors="ignore")
    return f"{head}... ({len(message) - len(head)} more characters)"


class LockedError(RuntimeError):
    """Another process holds the database file."""


class FileLock:
    """An exclusive lock on ``PATH.lock`` so that one process at a time serves a SQLite file."""

    def __init__(self, db_path: str) -> None:
        self.path = os.path.abspath(db_path) + ".lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            try:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            raise LockedError(
                f"{self.path[:-5]} is in use by another process{f' (pid {holder})' if holder else ''}. One process at a "
                "time can own a SQLite file: connect to that process instead (e.g. run `spindle server start-dev --db "
                f"{self.path[:-5]}` once and use Client.connect('127.0.0.1:7233')), or use another file."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class ControlPlane:
    """One control-plane process: owns every shard of its store (SQLite) or those it leases (cluster)."""

    def __init__(self, store: Store, config: ServerConfig | None = None, clock: Clock | None = None,
                 default_namespace: str | None = "default",
                 default_search_attributes: dict[str, int] | None = None) -> None:
        self.store = store
        self.config = config or ServerConfig()
        self.clock = clock or Clock()
        self.namespaces = NamespaceRegistry(store, default_retention_ms=int(self.config.default_retention_days * 86400_000))
        self.engine = HistoryEngine(store, self.config, self.clock, self.namespaces)
        self.frontend = FrontendService(store, self.config, self.namespaces, self.engine)
        self.default_namespace = default_namespace
        #: Registered in the default namespace at start (those it lacks): DEV_SEARCH_ATTRIBUTES for start-dev.
        self.default_search_attributes = default_search_attributes

    async def start(self) -> None:
        await self.store.open(self.config.num_shards)
        await self.namespaces.load()
        if self.default_namespace:
            await self.namespaces.ensure(self.default_namespace, self.default_search_attributes)
        await self.engine.start()

    async def stop(self) -> None:
        await self.engine.stop()
        await self.store.close()


def make_servicer(frontend: FrontendService) -> service_pb2_grpc.WorkflowServiceServicer:
    """A gRPC servicer whose every RPC calls the frontend and maps ServiceError to its status."""

    class Servicer(service_pb2_grpc.WorkflowServiceServicer):
        pass

    for name in RPC_NAMES:
        method = getattr(frontend, name)

        async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext, _m: Any = method,
                          _name: str = name) -> Any:
            remaining = context.time_remaining()
            loop = asyncio.get_running_loop()
            started = loop.time()
            deadline = loop.time() + remaining if remaining is not None else None
            try:
                return await _m(request, deadline)
            except ServiceError as e:
                await context.abort(e.code, clip_details(e.message), trailing_metadata=e.trailing_metadata())
            except asyncio.CancelledError:
                log.info("%s cancelled after %.2f s (client went away or its deadline passed)", _name,
                         loop.time() - started)
                raise
            except Exception as e:  # noqa: BLE001 - reported as INTERNAL, logged with its stack
                log.exception("%s failed", _name)
                await context.abort(grpc.StatusCode.INTERNAL, clip_details(f"{_name}: internal error: {type(e).__name__}: {e}"))

        setattr(Servicer, name, handler)
    return Servicer()


async def serve(cp: ControlPlane, host: str = "127.0.0.1", port: int = 7233) -> tuple[grpc.aio.Server, int]:
    """Start a gRPC server for ``cp`` (already started). Returns the server and the bound port."""
    server = grpc.aio.server(options=GRPC_OPTIONS)
    service_pb2_grpc.add_WorkflowServiceServicer_to_server(make_servicer(cp.frontend), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port} (is another server running there?)")
    await server.start()
    return server, bound
