"""Assembling and serving the control plane: store + namespaces + history + frontend, over gRPC."""

from __future__ import annotations

import fcntl
import os

import grpc

from spindle.controlplane._connections import server_options
from spindle.controlplane._grpc_service import GRPC_OPTIONS, add_to_server, make_servicer
from spindle.controlplane._health import HealthReporter
from spindle.controlplane._long_polls import LongPollLimiter
from spindle.controlplane._metrics import ServerMetrics, instrument_store
from spindle.controlplane._tls import ServerTLS, add_port
from spindle.controlplane.auth import ApiKeys, AuthSettings, Authorizer, enable_audit_log
from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.frontend import FrontendService
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import Store


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
    """One control-plane process: owns every shard of its store (SQLite) or those it leases (cluster).

    ``auth`` says how callers over the network are authenticated (default: not at all, as
    ``start-dev`` runs); its task-token keys apply either way. ``metrics`` (a
    :class:`ServerMetrics`, its own registry) makes it record the server metrics
    (docs/OBSERVABILITY.md); None (the default, and the embedded mode's) records none.
    """

    def __init__(self, store: Store, config: ServerConfig | None = None, clock: Clock | None = None,
                 default_namespace: str | None = "default",
                 default_search_attributes: dict[str, int] | None = None, auth: AuthSettings | None = None,
                 metrics: ServerMetrics | None = None) -> None:
        self.store = store
        #: The metrics this process records (None: none); ``serve_metrics`` exposes them over HTTP.
        self.metrics = metrics
        if metrics is not None:
            instrument_store(store, metrics)
        self.config = config or ServerConfig()
        self.clock = clock or Clock()
        self.auth = auth or AuthSettings()
        self.namespaces = NamespaceRegistry(store, default_retention_ms=int(self.config.default_retention_days * 86400_000),
                                            config=self.config)
        self.engine = HistoryEngine(store, self.config, self.clock, self.namespaces)
        if metrics is not None:
            self.engine.attach_metrics(metrics)
        self.engine.tokens.configure(self.auth.task_token_keys, use_store_key=self.auth.use_store_task_token_key)
        self.api_keys = ApiKeys(store, cache_ttl=self.auth.key_cache_ttl)
        self.frontend = FrontendService(store, self.config, self.namespaces, self.engine, api_keys=self.api_keys)
        #: Decides every call that comes over the network (``serve``).
        self.authorizer = Authorizer(self.auth, self.api_keys, self.namespaces, self.engine.tokens)
        self.default_namespace = default_namespace
        #: Registered in the default namespace at start (those it lacks): DEV_SEARCH_ATTRIBUTES for start-dev.
        self.default_search_attributes = default_search_attributes
        #: grpc.health.v1 of ``serve``: SERVING while this process owns shards and its store answers.
        self.health = HealthReporter(lambda: len(self.engine.shards), store.list_namespaces)

    async def start(self) -> None:
        await self.store.open(self.config.num_shards)
        await self.namespaces.load()
        if self.default_namespace:
            await self.namespaces.ensure(self.default_namespace, self.default_search_attributes)
        await self.engine.start()

    async def stop(self) -> None:
        await self.health.stop()
        await self.engine.stop()
        await self.store.close()


async def serve(cp: ControlPlane, host: str = "127.0.0.1", port: int = 7233,
                tls: ServerTLS | None = None) -> tuple[grpc.aio.Server, int]:
    """Start a gRPC server for ``cp`` (already started). Returns the server and the bound port.

    With ``tls`` the port speaks TLS only (and requires client certificates when
    ``tls.client_ca_file`` is set).
    """
    # connection cap, idle and keepalive timeouts, the raised open-files limit (docs/LIMITS.md)
    server = grpc.aio.server(options=server_options(cp.config, GRPC_OPTIONS))
    enable_audit_log()
    add_to_server(make_servicer(cp.frontend, cp.authorizer, LongPollLimiter.from_config(cp.config), cp.metrics),
                  server)  # malformed requests: INVALID_ARGUMENT
    await cp.health.add_to(server)  # grpc.health.v1: NOT_SERVING until the first check passes
    bound = add_port(server, f"{host}:{port}", tls)
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port} (is another server running there?)")
    await server.start()
    cp.health.start()
    return server, bound
