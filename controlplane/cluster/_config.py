"""The YAML configuration of ``spindle server start --config FILE``.

Example::

    store:
      spanner: {project: my-project, instance: spindle, database: spindle}
      # or: sqlite: {path: ./spindle.db}     (a single member: no leases)
    num_shards: 16
    listen: 0.0.0.0:7233            # port 0 picks a free port
    advertise: 10.0.0.5:7233        # how peers reach this process (default: listen, with its real port)
    lease: {ttl: 10s, renew_interval: 2s}
    namespaces: [default]
    server: {long_poll_timeout: 60}  # any ServerConfig field
    archival: {uri: gs://bucket/prefix, blob_store_uri: gs://bucket/blobs}   # ServerConfig archive_uri, blob_store_uri
    # and allowed_roots: [gs://bucket/tenants, file:///srv/archives]: where namespaces may set their own
    # archival_uri (ServerConfig archival_allowed_roots; default: nowhere)
    auth: {mode: api_keys, bootstrap_admin_key_file: /run/secrets/spindle-admin-key}   # required; see below
    tls: {cert_file: server.crt, key_file: server.key, client_ca_file: clients-ca.crt}  # optional; the CA: mTLS
    internal:                       # the members' own listener (Spanner store only)
      listen: 0.0.0.0:7234
      advertise: 10.0.0.5:7234      # what peers dial (stored in the membership row)
      tls: {cert_file: member.crt, key_file: member.key, ca_file: cluster-ca.crt, server_name: spindle-member}
    metrics:                        # Prometheus metrics at http://HOST:PORT/metrics (listen "": off)
      listen: 127.0.0.1:9090        # the default: this machine only
      bearer_token_file: /run/secrets/metrics-token   # optional: scrapes must send Authorization: Bearer <token>
      tls: {cert_file: metrics.crt, key_file: metrics.key, client_ca_file: scrapers-ca.crt}  # optional: HTTPS, mTLS

``auth:`` is required (secure by default): ``{mode: api_keys, ...}`` makes every call
present an API key or a known client certificate; ``{mode: none}`` must be written out to
run open. Its keys are in ``spindle.controlplane.auth._settings`` and docs/SECURITY.md.

Without ``internal.tls`` the internal listener must be a loopback address (members on one
machine: tests, development); it defaults to ``127.0.0.1:0`` when ``internal`` is absent,
which is refused when ``listen``/``advertise`` are not loopback (members are then expected
on other machines, and they must talk over mutual TLS).

Durations are seconds (numbers) or strings with a unit (``500ms``, ``10s``, ``1m``).
"""

from __future__ import annotations

import re
import ssl

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spindle.api._addresses import is_loopback_host
from spindle.controlplane._metrics import parse_listen
from spindle.controlplane._metrics_http import MetricsAccess, MetricsAccessError
from spindle.controlplane._tls import MemberTLS, ServerTLS, TLSFileError
from spindle.controlplane._uri_roots import archival_root_problem
from spindle.controlplane.auth import AuthSettings, parse_auth_section
from spindle.controlplane.config import ServerConfig

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class ConfigError(ValueError):
    """The configuration file is invalid; the message names the key."""


#: Where ``server start`` serves Prometheus metrics when the file has no ``metrics:`` section.
DEFAULT_METRICS_LISTEN = "127.0.0.1:9090"


@dataclass(frozen=True)
class StoreConfig:
    """Where the cluster keeps its state: a Spanner database, or one SQLite file (single member)."""

    kind: str  # "spanner" | "sqlite"
    project: str = ""
    instance: str = ""
    database: str = ""
    path: str = ""
    auto_setup: bool = False


@dataclass(frozen=True)
class InternalConfig:
    """The listener members call each other on (``spindle.cluster.v1.Internal``), never the public one.

    ``listen`` is ``HOST:PORT`` (port 0: any free port); ``advertise`` is what peers dial
    (default: ``listen`` with the bound port). With ``tls`` both sides present a certificate
    from the cluster CA (mutual TLS); without it ``listen`` must be a loopback address.
    """

    listen: str = "127.0.0.1:0"
    advertise: str = ""
    tls: MemberTLS | None = None


@dataclass(frozen=True)
class ClusterConfig:
    """Everything one control-plane process needs to join a cluster."""

    store: StoreConfig
    num_shards: int = 16
    listen: str = "127.0.0.1:7233"
    advertise: str = ""
    member_id: str = ""
    lease_ttl: float = 10.0
    lease_renew_interval: float = 2.0
    namespaces: tuple[str, ...] = ("default",)
    server: dict[str, Any] = field(default_factory=dict)
    archival: dict[str, Any] = field(default_factory=dict)
    log_level: str = "warning"
    #: How callers are authenticated. Required in a configuration file; a config built in
    #: code (tests) is open unless it says otherwise.
    auth: AuthSettings = field(default_factory=AuthSettings)
    #: TLS on the public listener (``tls:``); None: plaintext.
    tls: ServerTLS | None = None
    #: The internal listener (``internal:``); the default is loopback-only, port chosen at start.
    internal: InternalConfig = field(default_factory=InternalConfig)
    #: Where Prometheus metrics are served (``metrics: {listen: HOST:PORT}``); "" = not recorded nor served.
    #: A configuration file without ``metrics:`` gets ``DEFAULT_METRICS_LISTEN`` (``server start`` serves
    #: metrics by default); code that builds a ``ClusterConfig`` itself (tests, embedding) gets none.
    metrics_listen: str = ""
    #: Who may read ``/metrics`` (``metrics: {bearer_token_file, tls}``): ``spindle.controlplane._metrics_http``.
    metrics_access: MetricsAccess = field(default_factory=MetricsAccess)

    def server_config(self) -> ServerConfig:
        """The control plane's tunables (``server:`` section, ``num_shards`` and the ``archival:`` URIs)."""
        extra: dict[str, Any] = {"num_shards": self.num_shards}
        if self.archival.get("uri"):
            extra["archive_uri"] = str(self.archival["uri"])
        if self.archival.get("blob_store_uri"):
            extra["blob_store_uri"] = str(self.archival["blob_store_uri"])
        if self.archival.get("allowed_roots") is not None:
            extra["archival_allowed_roots"] = self.archival["allowed_roots"]
        return ServerConfig.from_dict({**self.server, **extra}, where="server")


def parse_duration(value: object, where: str) -> float:
    """Seconds from a number or a string like ``500ms``/``10s``/``2m``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _DURATION.match(str(value))
    if m is None:
        raise ConfigError(f"{where}: {value!r} is not a duration (e.g. 10s, 500ms)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _store(raw: object) -> StoreConfig:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ConfigError("store: expected exactly one of 'spanner: {project, instance, database}' or 'sqlite: {path}'")
    (kind, body), = raw.items()
    if not isinstance(body, dict):
        raise ConfigError(f"store.{kind}: expected a mapping")
    if kind == "spanner":
        missing = [k for k in ("project", "instance", "database") if not body.get(k)]
        if missing:
            raise ConfigError(f"store.spanner: missing {', '.join(missing)}")
        unknown = set(body) - {"project", "instance", "database", "auto_setup"}
        if unknown:
            raise ConfigError(f"store.spanner: unknown key(s) {', '.join(sorted(unknown))}")
        return StoreConfig("spanner", project=str(body["project"]), instance=str(body["instance"]),
                           database=str(body["database"]), auto_setup=bool(body.get("auto_setup", False)))
    if kind == "sqlite":
        if not body.get("path"):
            raise ConfigError("store.sqlite: missing path")
        return StoreConfig("sqlite", path=str(body["path"]))
    raise ConfigError(f"store: unknown kind {kind!r} (spanner or sqlite)")


def _host(hostport: str, where: str) -> str:
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"{where}: {hostport!r} is not HOST:PORT")
    return host


def _mapping(raw: object, where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with {', '.join(required + optional)}")
    unknown = set(raw) - set(required) - set(optional)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                          f"(known: {', '.join(required + optional)})")
    missing = [k for k in required if not raw.get(k)]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(f'{where}.{k}' for k in missing)}")
    for k, v in raw.items():
        if v is not None and not isinstance(v, str):
            raise ConfigError(f"{where}.{k}: expected a file path (a string), got {v!r}")
    return {k: v for k, v in raw.items() if v}


def _public_tls(raw: object) -> ServerTLS:
    body = _mapping(raw, "tls", ("cert_file", "key_file"), ("client_ca_file",))
    tls = ServerTLS(body["cert_file"], body["key_file"], body.get("client_ca_file"))
    try:
        tls.check("tls")
    except TLSFileError as e:
        raise ConfigError(str(e)) from None
    return tls


_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


def _ca_certificates(path: str) -> set[bytes]:
    """The certificates of a PEM bundle, each as DER (so that two bundles sharing one CA are found out)."""
    return {ssl.PEM_cert_to_DER_cert(m.group(0).decode("ascii"))
            for m in _PEM_CERTIFICATE.finditer(Path(path).read_bytes())}


def _internal(raw: object, public_tls: ServerTLS | None) -> InternalConfig:
    body = raw if raw is not None else {}
    if not isinstance(body, dict) or set(body) - {"listen", "advertise", "tls"}:
        raise ConfigError("internal: expected a mapping with listen, advertise, tls "
                          "{cert_file, key_file, ca_file, server_name}")
    tls: MemberTLS | None = None
    if body.get("tls") is not None:
        t = _mapping(body["tls"], "internal.tls", ("cert_file", "key_file", "ca_file"), ("server_name",))
        tls = MemberTLS(t["cert_file"], t["key_file"], t["ca_file"], t.get("server_name"))
        try:
            tls.check("internal.tls")
        except TLSFileError as e:
            raise ConfigError(str(e)) from None
        if public_tls is not None and public_tls.client_ca_file and \
                _ca_certificates(public_tls.client_ca_file) & _ca_certificates(tls.ca_file):
            raise ConfigError("internal.tls.ca_file: the same CA as tls.client_ca_file (a CA certificate both files "
                              "hold): every client certificate it signs would also be a member certificate (and "
                              "could call the internal RPC); give members a CA of their own")
    listen = str(body.get("listen") or ("0.0.0.0:7234" if tls else "127.0.0.1:0"))
    advertise = str(body.get("advertise") or "")
    host = _host(listen, "internal.listen")
    if advertise:
        _host(advertise, "internal.advertise")
    if tls is None and not is_loopback_host(host):
        raise ConfigError(f"internal.listen: {listen} is reachable from other machines, but internal.tls is not set: "
                          "members talking over the network must use mutual TLS (internal.tls: {cert_file, "
                          "key_file, ca_file}); without it the internal listener must be a loopback address")
    if tls is not None and host in ("0.0.0.0", "::", "[::]") and not advertise:
        raise ConfigError(f"internal.advertise: required when internal.listen ({listen}) binds every interface: "
                          "the HOST:PORT other members dial")
    return InternalConfig(listen=listen, advertise=advertise, tls=tls)


def _metrics(raw: object) -> tuple[str, MetricsAccess]:
    """``metrics: {listen, bearer_token_file, tls}``: where metrics are served and who may read them."""
    if not isinstance(raw, dict) or set(raw) - {"listen", "bearer_token_file", "tls"}:
        raise ConfigError("metrics: expected {listen: HOST:PORT, bearer_token_file: PATH, tls: {cert_file, key_file, "
                          "client_ca_file}} (listen \"\" turns metrics off)")
    listen = str(raw.get("listen", DEFAULT_METRICS_LISTEN) or "")
    if listen:
        try:
            parse_listen(listen, "metrics.listen")
        except ValueError as e:
            raise ConfigError(str(e)) from None
    token_file = raw.get("bearer_token_file") or ""
    if not isinstance(token_file, str):
        raise ConfigError(f"metrics.bearer_token_file: expected a file path (a string), got {token_file!r}")
    tls = None
    if raw.get("tls") is not None:
        body = _mapping(raw["tls"], "metrics.tls", ("cert_file", "key_file"), ("client_ca_file",))
        tls = ServerTLS(body["cert_file"], body["key_file"], body.get("client_ca_file"))
    access = MetricsAccess(bearer_token_file=token_file, tls=tls)
    try:
        access.check("metrics")
    except MetricsAccessError as e:
        raise ConfigError(str(e)) from None
    return listen, access


def parse_config(data: object) -> ClusterConfig:
    """Validate a parsed YAML document."""
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a mapping")
    known = {"store", "num_shards", "listen", "advertise", "member_id", "lease", "namespaces", "server", "archival",
             "log_level", "auth", "tls", "internal", "metrics"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    if "store" not in data:
        raise ConfigError("store: required")
    lease = data.get("lease") or {}
    if not isinstance(lease, dict) or set(lease) - {"ttl", "renew_interval"}:
        raise ConfigError("lease: expected {ttl, renew_interval}")
    ttl = parse_duration(lease.get("ttl", 10.0), "lease.ttl")
    renew = parse_duration(lease.get("renew_interval", min(2.0, ttl / 4)), "lease.renew_interval")
    if renew <= 0 or ttl <= 2 * renew:
        raise ConfigError(f"lease: ttl ({ttl}s) must be more than twice renew_interval ({renew}s)")
    shards = data.get("num_shards", 16)
    if not isinstance(shards, int) or shards < 1:
        raise ConfigError(f"num_shards: expected a positive integer, got {shards!r}")
    namespaces = data.get("namespaces", ["default"])
    if not isinstance(namespaces, list) or not all(isinstance(n, str) for n in namespaces):
        raise ConfigError("namespaces: expected a list of names")
    server = data.get("server") or {}
    archival = data.get("archival") or {}
    if not isinstance(server, dict) or not isinstance(archival, dict):
        raise ConfigError("server and archival: expected mappings")
    archival_keys = {"uri", "blob_store_uri", "allowed_roots"}
    if set(archival) - archival_keys:
        raise ConfigError(f"archival: unknown key(s) {', '.join(sorted(set(archival) - archival_keys))} "
                          "(known: allowed_roots, blob_store_uri, uri)")
    roots = archival.get("allowed_roots")
    if roots is not None and (not isinstance(roots, list) or not all(isinstance(r, str) for r in roots)):
        raise ConfigError("archival.allowed_roots: expected a list of file:///dir or gs://bucket[/prefix] URIs")
    for root in roots or ():
        problem = archival_root_problem(root)
        if problem:
            raise ConfigError(f"archival.allowed_roots: {problem}")
    for key in ("uri", "blob_store_uri"):
        value = archival.get(key)
        if value and not str(value).startswith(("file:///", "gs://")):
            raise ConfigError(f"archival.{key}: {value!r} must be file:///abs/dir or gs://bucket/prefix")
    store = _store(data["store"])
    if "auth" not in data:
        raise ConfigError(
            "auth: required. Write 'auth: {mode: api_keys, bootstrap_admin_key_file: PATH}' to require API keys "
            "(recommended; see docs/SECURITY.md), or 'auth: {mode: none}' to run without authentication (anyone who "
            "can reach the port can do anything)")
    try:
        auth = parse_auth_section(data["auth"], seconds=parse_duration)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    listen = str(data.get("listen", "127.0.0.1:7233"))
    advertise = str(data.get("advertise", ""))
    public_tls = _public_tls(data["tls"]) if data.get("tls") is not None else None
    if store.kind != "spanner":
        if data.get("internal") is not None:
            raise ConfigError("internal: only for a Spanner store (a SQLite store has a single member, no peers)")
        internal = InternalConfig()
    else:
        if data.get("internal") is None and not all(is_loopback_host(_host(a, k)) for k, a in
                                                    (("listen", listen), ("advertise", advertise)) if a):
            raise ConfigError(
                f"internal: required when the member is reachable from other machines (listen {listen}"
                f"{', advertise ' + advertise if advertise else ''}): members call each other on a separate "
                "listener with mutual TLS, e.g. internal: {listen: 0.0.0.0:7234, advertise: HOST:7234, "
                "tls: {cert_file, key_file, ca_file}} (see controlplane/cluster/README.md)")
        internal = _internal(data.get("internal"), public_tls)
    metrics_listen, metrics_access = _metrics(data.get("metrics", {"listen": DEFAULT_METRICS_LISTEN}))
    cfg = ClusterConfig(store=store, num_shards=shards, listen=listen, metrics_listen=metrics_listen,
                        metrics_access=metrics_access,
                        advertise=advertise, member_id=str(data.get("member_id", "")),
                        lease_ttl=ttl, lease_renew_interval=renew, namespaces=tuple(namespaces), server=dict(server),
                        archival=dict(archival), log_level=str(data.get("log_level", "warning")), auth=auth,
                        tls=public_tls, internal=internal)
    try:
        cfg.server_config()
    except ValueError as e:
        raise ConfigError(str(e)) from e
    return cfg


def load_config(path: str | Path) -> ClusterConfig:
    """Read and validate a YAML configuration file."""
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    try:
        return parse_config(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e


__all__ = ["ClusterConfig", "ConfigError", "InternalConfig", "StoreConfig", "is_loopback_host", "load_config",
           "parse_config", "parse_duration"]
