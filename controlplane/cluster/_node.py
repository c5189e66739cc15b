"""One control-plane process of a cluster: store, engine, leases, frontend and gRPC server.

``spindle server start --config FILE`` runs ``run_from_config(FILE)``. On a
Spanner store the process joins the cluster (membership, shard leases, routing);
on a SQLite store it is the only member and owns every shard.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import uuid

from typing import Any

import grpc

from spindle.controlplane._connections import server_options
from spindle.controlplane._gc import settle_after_start
from spindle.controlplane._grpc_service import GRPC_OPTIONS, add_to_server, make_servicer
from spindle.controlplane._health import HealthReporter
from spindle.controlplane._log_format import configure_logging
from spindle.controlplane._long_polls import LongPollLimiter
from spindle.controlplane._metrics import ServerMetrics, instrument_store, parse_listen, serve_metrics
from spindle.controlplane._metrics_http import exposure_warning
from spindle.controlplane._tls import add_port
from spindle.controlplane.auth import ApiKeys, Authorizer, bootstrap_admin_key, enable_audit_log, open_listener_warning
from spindle.controlplane.clock import Clock
from spindle.controlplane.erasure import ErasureRunner, erasure_runner
from spindle.controlplane.errors import AlreadyExists
from spindle.controlplane.frontend import FrontendService
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import Store

from ._config import ClusterConfig, ConfigError, StoreConfig, is_loopback_host, load_config
from ._engine import ClusterCrossShard, Router
from ._frontend import ClusterFrontend
from ._internal import InternalService
from ._leases import LeaseManager
from ._peers import Peers, member_token

log = logging.getLogger("spindle.cluster")


class StartupError(Exception):
    """A member could not start: its configuration file is invalid or it cannot serve where told.

    The message is one line for the operator (the ``spindle`` command prints it and exits
    with status 2).
    """


def make_store(cfg: StoreConfig) -> Store:
    """The store a configuration names."""
    if cfg.kind == "spanner":
        from spindle.controlplane.store.spanner import SpannerStore

        return SpannerStore(cfg.project, cfg.instance, cfg.database, auto_setup=cfg.auto_setup)
    from spindle.controlplane.store.sqlite import SqliteStore

    return SqliteStore(cfg.path)


def _bind(server: grpc.aio.Server, address: str, config: ClusterConfig, where: str) -> int:
    """Bind the public listener (TLS per ``config.tls``); the bound port. OSError when it cannot listen."""
    try:
        port = add_port(server, address, config.tls, where)
    except RuntimeError as e:
        raise OSError(f"cannot listen on {address}: {e}") from None
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    return port


def _split(hostport: str) -> tuple[str, int]:
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{hostport!r} is not HOST:PORT")
    return host, int(port)


class ClusterNode:
    """A cluster member. ``start()`` serves; ``stop()`` hands its shards over and leaves."""

    def __init__(self, config: ClusterConfig, store: Store | None = None, clock: Clock | None = None) -> None:
        self.config = config
        self.server_config = config.server_config()
        self.store = store or make_store(config.store)
        self.clock = clock or Clock()
        self.namespaces = NamespaceRegistry(self.store,
                                            default_retention_ms=int(self.server_config.default_retention_days * 86400_000),
                                            config=self.server_config)
        self.engine = HistoryEngine(self.store, self.server_config, self.clock, self.namespaces)
        # a routing change made on another member reaches this one's matching within a second
        self.engine.deployments.refresh_interval = 1.0
        #: The metrics this member records (``metrics.listen`` set), served at ``metrics_address``/metrics.
        self.metrics = ServerMetrics(
            max_task_queue_labels=self.server_config.metrics_task_queue_labels_per_namespace,
        ) if config.metrics_listen else None
        if self.metrics is not None:
            instrument_store(self.store, self.metrics)
            self.engine.attach_metrics(self.metrics)
        self.metrics_address = ""
        self._metrics_http: Any = None
        #: grpc.health.v1 on the public port: SERVING while this member owns shards and its store answers.
        self.health = HealthReporter(lambda: len(self.engine.shards), self.store.list_namespaces)
        auth = config.auth
        self.engine.tokens.configure(auth.task_token_keys, use_store_key=auth.use_store_task_token_key)
        self.api_keys = ApiKeys(self.store, cache_ttl=auth.key_cache_ttl)
        self.inner = FrontendService(self.store, self.server_config, self.namespaces, self.engine, api_keys=self.api_keys)
        #: Decides every call of the public service (the internal one is for members only).
        self.authorizer = Authorizer(auth, self.api_keys, self.namespaces, self.engine.tokens)
        #: Lines for the operator about authentication, printed once the member serves.
        self.auth_notes: list[str] = []
        self.peers = Peers(tls=config.internal.tls)
        self.member_id = config.member_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.engine.identity = self.member_id
        self.clustered = hasattr(self.store, "claim_shard")
        self.leases: LeaseManager | None = None
        self.server: grpc.aio.Server | None = None
        self.port = 0
        #: Where clients reach this member (the public listener).
        self.address = ""
        #: The internal listener (members only; a clustered member only).
        self.internal_server: grpc.aio.Server | None = None
        #: Where peers reach this member (``internal.advertise``): what the membership row holds.
        self.internal_address = ""
        self._ns_refresh: asyncio.Task[None] | None = None
        self.erasure: ErasureRunner | None = None

    async def start(self) -> None:
        """Open the store, bind the server, join the cluster (claims a share of the shards) and serve."""
        await self.store.open(self.config.num_shards)
        await self.namespaces.load()
        for name in self.config.namespaces:
            try:
                await self.namespaces.ensure(name)
            except AlreadyExists:  # another member created it just now
                await self.namespaces.load()
        if self.config.auth.bootstrap_admin_key_file:
            self.auth_notes.append(await bootstrap_admin_key(self.api_keys, self.config.auth.bootstrap_admin_key_file))
        await self.engine.start(() if self.clustered else None)
        if self.clustered:  # every member reads (the first one creates) the token members show each other
            self.peers.token = await member_token(self.store)
        internal = InternalService(self.inner, self.engine, self.member_id, self.stats,
                                   require_token=self.peers.token if self.config.internal.tls is None else b"")
        self.server = grpc.aio.server(options=server_options(self.server_config, GRPC_OPTIONS))
        host, port = _split(self.config.listen)
        self.port = _bind(self.server, f"{host}:{port}", self.config, "tls")
        adv = self.config.advertise or f"{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{self.port}"
        if adv.endswith(":0"):
            adv = f"{adv[:-2]}:{self.port}"
        self.address = adv
        if self.clustered:
            self.internal_address = self._bind_internal(internal)
            self.leases = LeaseManager(self.store, self.member_id, self.internal_address, self.config.num_shards,  # type: ignore[arg-type]
                                       ttl=self.config.lease_ttl, renew_interval=self.config.lease_renew_interval,
                                       on_acquire=self.engine.add_shard, on_release=self.engine.remove_shard)
            self.engine.shard_lost_hook = self.leases.shard_lost
            self.leases.metrics = self.metrics
            router = Router(self.engine, self.leases, self.peers)
            self.engine.cross_shard = ClusterCrossShard(router, self.engine.local_cross_shard)
            frontend: Any = ClusterFrontend(self.inner, router, internal)
        else:
            frontend = self.inner
        #: Runs the erasure jobs (issue 26) whose job id hashes to a shard this member owns.
        self.erasure = erasure_runner(self.inner.erasure_jobs, frontend, self.engine, self.store, self.namespaces)
        self.erasure.start()
        enable_audit_log()
        if not self.config.auth.enabled:
            warning = open_listener_warning(host, self.port)
            if warning:
                log.warning("%s", warning)
                self.auth_notes.append(warning)
        # The public listener serves the WorkflowService only: the internal RPC is on its own listener.
        add_to_server(make_servicer(frontend, self.authorizer, LongPollLimiter.from_config(self.server_config),
                                    self.metrics), self.server)  # malformed requests: INVALID_ARGUMENT
        await self.health.add_to(self.server)  # NOT_SERVING until it owns shards and the store answers
        if self.metrics is not None:
            mhost, mport = parse_listen(self.config.metrics_listen, "metrics.listen")
            self._metrics_http, bound = serve_metrics(self.metrics, mhost, mport, self.config.metrics_access)
            self.metrics_address = f"{mhost}:{bound}"
            exposed = exposure_warning(mhost, bound, self.config.metrics_access)
            if exposed:
                log.warning("%s", exposed)
                self.auth_notes.append(exposed)
        if self.internal_server is not None:
            await self.internal_server.start()
        await self.server.start()
        if self.leases is not None:
            await self.leases.start()
            self._ns_refresh = asyncio.create_task(self._refresh_namespaces(), name="spindle-namespaces")
        self.health.start()

    def _bind_internal(self, internal: InternalService) -> str:
        """Bind the internal listener (mutual TLS with ``internal.tls``, else loopback only); its advertised address."""
        cfg = self.config.internal
        host, port = _split(cfg.listen)
        if cfg.tls is None and not is_loopback_host(host):
            raise ValueError(f"internal.listen: {cfg.listen} is not a loopback address and internal.tls is not set: "
                             "members talking over the network must use mutual TLS")
        self.internal_server = grpc.aio.server(options=GRPC_OPTIONS)
        self.internal_server.add_generic_rpc_handlers((internal.handler(),))
        tls = cfg.tls.server() if cfg.tls is not None else None
        try:
            bound = add_port(self.internal_server, f"{host}:{port}", tls, "internal.tls")
        except RuntimeError as e:
            raise OSError(f"cannot listen on internal.listen {cfg.listen}: {e}") from None
        if bound == 0:
            raise OSError(f"cannot listen on internal.listen {cfg.listen}")
        adv = cfg.advertise or f"{host}:{bound}"
        if adv.endswith(":0"):
            adv = f"{adv[:-2]}:{bound}"
        return adv

    async def _refresh_namespaces(self) -> None:
        """Pick up namespaces created or changed by other members."""
        while True:
            await asyncio.sleep(max(1.0, self.config.lease_renew_interval * 2))
            try:
                await self.namespaces.load()
            except Exception as e:  # noqa: BLE001 - try again next round
                log.warning("namespace refresh failed: %s", e)

    def stats(self) -> dict[str, Any]:
        """What this member holds and has seen (served by the internal ``stats`` operation)."""
        leases = self.leases
        return {"member_id": self.member_id, "address": self.address, "internal_address": self.internal_address,
                "shards": {str(s): sh.range_id for s, sh in self.engine.shards.items()},
                "held": {str(s): r for s, r in (leases.held.items() if leases else [])},
                "lease_stats": dict(leases.stats) if leases else {}}

    async def stop(self) -> None:
        """Hand every shard over (others take them at once), stop serving and close the store."""
        await self.health.stop()  # draining: load balancers stop sending new calls
        if self._metrics_http is not None:
            self._metrics_http.shutdown()
            self._metrics_http = None
        if self._ns_refresh is not None:
            self._ns_refresh.cancel()
        if self.leases is not None:
            await self.leases.stop(release=True)
        if self.erasure is not None:
            await self.erasure.stop()
        if self.server is not None:
            await self.server.stop(grace=1.0)
        if self.internal_server is not None:
            await self.internal_server.stop(grace=1.0)
        await self.engine.stop()
        await self.peers.close()
        await self.store.close()


async def serve_until_signalled(node: ClusterNode) -> None:
    """Start ``node``, print where it listens, and stop it on SIGINT/SIGTERM."""
    await node.start()
    settle_after_start()
    for note in node.auth_notes:
        print(f"spindle: {note}", flush=True)
    internal = f"internal {node.internal_address}, " if node.internal_address else ""
    public_tls = "" if node.config.tls is None else ("TLS with client certificates, " if node.config.tls.mutual
                                                        else "TLS, ")
    print(f"spindle cluster member {node.member_id} listening on {node.address} "
          f"({public_tls}{internal}store {node.store.name}, {node.config.num_shards} shards, "
          f"{'API keys required' if node.config.auth.enabled else 'authentication OFF'}"
          f"{', metrics at http://' + node.metrics_address + '/metrics' if node.metrics_address else ''})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, stop.set)
    try:
        await stop.wait()
    finally:
        await node.stop()


def run_from_config(path: str, *, log_format: str = "text") -> int:
    """``spindle server start --config FILE``: run one member until SIGINT/SIGTERM. Returns the exit status.

    Raises:
        StartupError: the file is not a valid cluster configuration, or the member cannot
            start serving (a ValueError or OSError while starting: a bad listen address, a port in use).
    """
    try:
        cfg = load_config(path)
    except ConfigError as e:
        raise StartupError(str(e)) from None
    try:
        configure_logging(cfg.log_level if cfg.log_level in ("debug", "info", "warning", "error") else "warning",
                          log_format)
    except ValueError as e:
        raise StartupError(f"--log-format: {e}") from None
    try:
        asyncio.run(serve_until_signalled(ClusterNode(cfg)))
    except (ValueError, OSError) as e:
        raise StartupError(str(e)) from None
    return 0


__all__ = ["ClusterNode", "StartupError", "make_store", "run_from_config", "serve_until_signalled"]
