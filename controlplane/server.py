"""Assembling and serving the control plane: store + namespaces + history + frontend, over gRPC.

``run_dev`` runs the dev server of ``spindle server start-dev`` (one process on a SQLite file);
the command line (``spindle.cli.server``) parses the flags and calls it.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import sys

import grpc

from spindle.controlplane._connections import server_options
from spindle.controlplane._grpc_service import GRPC_OPTIONS, add_to_server, make_servicer
from spindle.controlplane._health import HealthReporter
from spindle.controlplane._long_polls import LongPollLimiter
from spindle.controlplane._metrics import ServerMetrics, instrument_store
from spindle.controlplane._metrics_http import MetricsAccess, MetricsAccessError, exposure_warning
from spindle.controlplane._tls import ServerTLS, add_port
from spindle.controlplane.auth import ApiKeys, Authorizer, AuthSettings, enable_audit_log
from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.erasure import erasure_runner
from spindle.controlplane.frontend import FrontendService
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import Store


class LockedError(RuntimeError):
    """Another process holds the database file."""


def create_private_db_file(path: str) -> None:
    """Create the SQLite file ``path`` empty with mode 600 if it does not exist yet.

    The file holds every payload, history and the store-kept task-token key; created by SQLite
    under the usual umask it would be readable by every user of the machine (644). SQLite gives
    its ``-wal`` and ``-shm`` files the mode of the database file. An existing file keeps the mode
    its owner chose; ``:memory:`` has no file.
    """
    if path == ":memory:":
        return
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


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
        #: Runs the erasure jobs (issue 26) from ``start`` to ``stop``.
        self.erasure = erasure_runner(self.frontend.erasure_jobs, self.frontend, self.engine, store, self.namespaces)

    async def start(self) -> None:
        await self.store.open(self.config.num_shards)
        await self.namespaces.load()
        if self.default_namespace:
            await self.namespaces.ensure(self.default_namespace, self.default_search_attributes)
        await self.engine.start()
        self.erasure.start()

    async def stop(self) -> None:
        await self.health.stop()
        await self.erasure.stop()
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


# ---------------------------------------------------------------------- the dev server (spindle server start-dev)
class DevServerError(Exception):
    """``run_dev`` cannot start; the message names the flag or file at fault (the CLI prints it, exit status 2)."""


def new_api_key_secret() -> str:
    """A fresh API key secret (``spk_...``), as ``spindle admin api-key new-secret`` prints it for
    ``auth.bootstrap_admin_key_file``; no server is involved."""
    from spindle.controlplane.auth import format_secret, new_secret

    return format_secret(new_secret())


def check_dev_tls(cert_file: str | None, key_file: str | None, client_ca_file: str | None) -> ServerTLS | None:
    """The ``ServerTLS`` of start-dev's ``--tls-*`` flags (None: plaintext).

    Raises:
        DevServerError: the flags do not go together, or a file cannot be read (naming the flag).
    """
    from spindle.controlplane._tls import TLSFileError

    if not (cert_file or key_file or client_ca_file):
        return None
    if not cert_file or not key_file:
        raise DevServerError("--tls-cert-file and --tls-key-file go together (and --tls-client-ca-file needs both)")
    tls = ServerTLS(cert_file, key_file, client_ca_file or None)
    try:
        tls.check("--tls")
    except TLSFileError as e:
        raise DevServerError(str(e).replace("--tls.cert_file", "--tls-cert-file").replace("--tls.key_file", "--tls-key-file")
                             .replace("--tls.client_ca_file", "--tls-client-ca-file")) from None
    return tls


def run_dev(db: str, config: ServerConfig, *, ip: str = "127.0.0.1", port: int = 7233, namespaces: tuple[str, ...] = (),
            log_level: str = "warning", log_format: str = "text", auth: bool = False, tls_cert_file: str | None = None,
            tls_key_file: str | None = None, tls_client_ca_file: str | None = None,
            metrics_port: int | None = None, metrics_token_file: str | None = None) -> int:
    """``spindle server start-dev``: serve the SQLite file ``db`` on ``ip:port`` until SIGINT/SIGTERM.

    The namespace 'default' (with the search attributes of Temporal's dev server) and
    ``namespaces`` are created at start. Prints the listening line (and, with ``auth``, the
    generated admin key, once) on stdout. Returns the exit status. ``metrics_port`` serves
    ``/metrics`` on ``ip``; ``metrics_token_file`` makes it ask for that bearer token.

    Raises:
        DevServerError: bad TLS files, the database is in use by another process, the store
            cannot open, the address or the metrics port cannot be listened on, the metrics
            token file cannot be read or is empty.
    """
    from spindle.controlplane._log_format import configure_logging

    tls = check_dev_tls(tls_cert_file, tls_key_file, tls_client_ca_file)  # refuse bad TLS flags before anything starts
    access = MetricsAccess(bearer_token_file=metrics_token_file or "")
    try:
        access.token("--metrics-bearer-token-file")
    except MetricsAccessError as e:
        raise DevServerError(str(e)) from None
    configure_logging(log_level, log_format)
    return asyncio.run(_run_dev(os.path.abspath(db), config, ip=ip, port=port, namespaces=namespaces, auth=auth, tls=tls,
                                metrics_port=metrics_port, metrics_access=access))


async def _run_dev(db: str, cfg: ServerConfig, *, ip: str, port: int, namespaces: tuple[str, ...], auth: bool,
                   tls: ServerTLS | None, metrics_port: int | None,
                   metrics_access: MetricsAccess | None = None) -> int:
    from spindle.controlplane._gc import settle_after_start
    from spindle.controlplane._metrics import serve_metrics
    from spindle.controlplane.auth import open_listener_warning
    from spindle.controlplane.namespaces import DEV_SEARCH_ATTRIBUTES
    from spindle.controlplane.store.sqlite import SqliteStore

    lock = FileLock(db)
    try:
        lock.acquire()
    except LockedError as e:
        raise DevServerError(str(e)) from None
    metrics = ServerMetrics(max_task_queue_labels=cfg.metrics_task_queue_labels_per_namespace,
                            ) if metrics_port is not None else None
    create_private_db_file(db)
    cp = ControlPlane(SqliteStore(db, max_batch=cfg.max_commit_batch), cfg,
                      default_search_attributes=DEV_SEARCH_ATTRIBUTES,
                      auth=AuthSettings(mode="api_keys" if auth else "none"), metrics=metrics)
    metrics_server = None
    try:
        try:
            await cp.start()
        except ValueError as e:
            raise DevServerError(str(e)) from None
        for ns in namespaces:
            await cp.namespaces.ensure(ns)
        try:
            server, bound = await serve(cp, ip, port, tls=tls)
        except (OSError, RuntimeError) as e:
            raise DevServerError(f"cannot listen on {ip}:{port}: {e}") from None
        metrics_note = ""
        if metrics is not None and metrics_port is not None:
            try:
                metrics_server, mport = serve_metrics(metrics, ip, metrics_port, metrics_access)
            except OSError as e:
                raise DevServerError(f"--metrics-port: cannot listen on {ip}:{metrics_port}: {e}") from None
            metrics_note = f", metrics at http://{ip}:{mport}/metrics"
            exposed = exposure_warning(ip, mport, metrics_access)
            if exposed:
                print(f"spindle: {exposed}", file=sys.stderr, flush=True)
        settle_after_start()
        if auth:
            print(await _dev_admin_key(cp), flush=True)
        else:
            warning = open_listener_warning(ip, bound)
            if warning:
                print(f"spindle: {warning}", file=sys.stderr, flush=True)
        secured = "" if tls is None else (", TLS with client certificates" if tls.mutual else ", TLS")
        print(f"spindle dev server listening on {ip}:{bound} (database {db}, namespace 'default'{secured}"
              f"{', API keys required' if auth else ''}{metrics_note})", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, stop.set)
        await stop.wait()
        await server.stop(grace=2)
        return 0
    finally:
        if metrics_server is not None:
            metrics_server.shutdown()
        await cp.stop()
        lock.release()


async def _dev_admin_key(cp: ControlPlane) -> str:
    """With --auth: a new system_admin key the first time (shown once), else where to find one."""
    active = [k for k in await cp.api_keys.list() if k.system_admin and cp.api_keys.is_active(k)]
    if active:
        return (f"spindle: API keys are required (--auth). This database already has a system_admin key "
                f"({', '.join(k.key_id for k in active)}): use it (--api-key, SPINDLE_API_KEY), or start once without "
                "--auth to create another with `spindle admin api-key create`.")
    row, secret = await cp.api_keys.create("start-dev admin", {}, system_admin=True, created_by="start-dev --auth")
    return ("spindle: API keys are required (--auth). A system_admin key was generated; it is shown this once:\n"
            f"    {secret}\n"
            f"  (id {row.key_id}) use it with --api-key or SPINDLE_API_KEY, or Client.connect(..., api_key=...)")
