"""The ``spindle`` command line.

``spindle server start-dev`` runs the control plane on a SQLite file. Other command
groups (``workflow``, ``namespace``, ``dsl``, ``replay``, ...) are contributed by the
SDK and other packages through the ``spindle.cli`` entry-point group, so that this
package does not depend on them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from importlib.metadata import entry_points
from typing import Any, Callable

from spindle.controlplane._log_format import configure_logging
from spindle.controlplane.config import ServerConfig


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def _add_server(sub: Any) -> None:
    server = sub.add_parser("server", help="run the control plane")
    ssub = server.add_subparsers(dest="server_cmd", required=True, metavar="COMMAND")
    dev = ssub.add_parser(
        "start-dev", help="one process on a SQLite file (127.0.0.1:7233, namespace 'default')",
        description="One control-plane process on a SQLite file. The namespace 'default' is created with the "
                    "search attributes Temporal's dev server registers: CustomKeywordField, CustomStringField, "
                    "CustomTextField, CustomIntField, CustomDoubleField, CustomBoolField, CustomDatetimeField, "
                    "CustomKeywordListField. Namespaces may set an archival_uri under the database's folder (the "
                    "archival_allowed_roots setting of --config replaces that).")
    dev.add_argument("--db", default="spindle.db", help="SQLite file (created if missing; default ./spindle.db)")
    dev.add_argument("--port", type=int, default=7233, help="gRPC port (default 7233; 0 picks a free one)")
    dev.add_argument("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    dev.add_argument("--namespace", action="append", default=[], help="extra namespace(s) to create at start")
    dev.add_argument("--shards", type=int, default=ServerConfig.num_shards, help="history shards (fixed per database)")
    dev.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    dev.add_argument("--log-format", default="text", choices=["text", "json"],
                     help="stderr log lines: text (default) or json (one object per line: time, level, logger, "
                          "message, and namespace/workflow_id/run_id where known)")
    dev.add_argument("--config", default=None,
                     help="YAML file of ServerConfig settings (controlplane/config.py), e.g. long_poll_timeout: 30")
    dev.add_argument("--blob-dir", default=None,
                     help="folder for payloads over 256 KiB (default: DB.blobs next to the database; '' = none)")
    dev.add_argument("--archive-uri", default="",
                     help="archive closed runs here at retention (file:///dir or gs://bucket/prefix) for namespaces "
                          "without their own archival_uri (default: delete without archiving)")
    dev.add_argument("--auth", action="store_true",
                     help="require API keys (off by default: the dev server listens on 127.0.0.1 only). The first "
                          "start prints a generated system_admin key, once")
    dev.add_argument("--tls-cert-file", default=None, help="serve TLS with this PEM certificate (needs --tls-key-file)")
    dev.add_argument("--tls-key-file", default=None, help="PEM private key of --tls-cert-file")
    dev.add_argument("--tls-client-ca-file", default=None,
                     help="require client certificates signed by this PEM CA (mutual TLS; needs --tls-cert-file)")
    dev.add_argument("--metrics-port", type=int, default=None,
                     help="serve Prometheus metrics at http://IP:PORT/metrics (same --ip; off by default; 0 picks a "
                          "free port)")
    dev.set_defaults(func=_start_dev)
    start = ssub.add_parser("start", help="a cluster member: --config FILE (store, shards, addresses)")
    start.add_argument("--config", required=True, help="YAML configuration file")
    start.add_argument("--log-format", default="text", choices=["text", "json"],
                       help="stderr log lines: text (default) or json (one object per line)")
    start.set_defaults(func=_start_cluster)


def _start_dev(args: argparse.Namespace) -> int:
    if args.port < 0 or args.port > 65535:
        raise CliError(f"--port: {args.port} is not a port number (0-65535)")
    if args.shards < 1:
        raise CliError(f"--shards: must be at least 1, got {args.shards}")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise CliError(f"--metrics-port: {args.metrics_port} is not a port number (0-65535)")
    _dev_tls(args)  # refuse bad TLS flags before anything starts
    configure_logging(args.log_level, args.log_format)
    return asyncio.run(_run_dev(args))


async def _run_dev(args: argparse.Namespace) -> int:
    from spindle.controlplane._gc import settle_after_start
    from spindle.controlplane._metrics import ServerMetrics, serve_metrics
    from spindle.controlplane.auth import AuthSettings, open_listener_warning
    from spindle.controlplane.namespaces import DEV_SEARCH_ATTRIBUTES
    from spindle.controlplane.server import ControlPlane, FileLock, LockedError, serve
    from spindle.controlplane.store.sqlite import SqliteStore

    db = os.path.abspath(args.db)
    blob_dir = db + ".blobs" if args.blob_dir is None else args.blob_dir
    if args.archive_uri and not args.archive_uri.startswith(("file:///", "gs://")):
        raise CliError(f"--archive-uri: {args.archive_uri!r} must be file:///abs/dir or gs://bucket/prefix")
    settings: dict[str, object] = {}
    if args.config:
        settings = _load_settings(args.config)
    settings.setdefault("num_shards", args.shards)
    settings.setdefault("archive_uri", args.archive_uri)
    settings.setdefault("blob_store_uri", "file://" + os.path.abspath(blob_dir) if blob_dir else "")
    # namespaces of a dev server may archive under the database's folder (a server config chooses its own)
    settings.setdefault("archival_allowed_roots", ["file://" + os.path.dirname(db)])
    try:
        cfg = ServerConfig.from_dict(settings, where=args.config or "config")
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None
    lock = FileLock(db)
    try:
        lock.acquire()
    except LockedError as e:
        raise CliError(str(e)) from None
    metrics = ServerMetrics() if args.metrics_port is not None else None
    cp = ControlPlane(SqliteStore(db, max_batch=cfg.max_commit_batch), cfg,
                      default_search_attributes=DEV_SEARCH_ATTRIBUTES,
                      auth=AuthSettings(mode="api_keys" if args.auth else "none"), metrics=metrics)
    metrics_server = None
    try:
        try:
            await cp.start()
        except ValueError as e:
            raise CliError(str(e)) from None
        for ns in args.namespace:
            await cp.namespaces.ensure(ns)
        tls = _dev_tls(args)
        try:
            server, port = await serve(cp, args.ip, args.port, tls=tls)
        except (OSError, RuntimeError) as e:
            raise CliError(f"cannot listen on {args.ip}:{args.port}: {e}") from None
        metrics_note = ""
        if metrics is not None:
            try:
                metrics_server, mport = serve_metrics(metrics, args.ip, args.metrics_port)
            except OSError as e:
                raise CliError(f"--metrics-port: cannot listen on {args.ip}:{args.metrics_port}: {e}") from None
            metrics_note = f", metrics at http://{args.ip}:{mport}/metrics"
        settle_after_start()
        if args.auth:
            print(await _dev_admin_key(cp), flush=True)
        else:
            warning = open_listener_warning(args.ip, port)
            if warning:
                print(f"spindle: {warning}", file=sys.stderr, flush=True)
        secured = "" if tls is None else (", TLS with client certificates" if tls.mutual else ", TLS")
        print(f"spindle dev server listening on {args.ip}:{port} (database {db}, namespace 'default'{secured}"
              f"{', API keys required' if args.auth else ''}{metrics_note})", flush=True)
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


async def _dev_admin_key(cp: Any) -> str:
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
def _dev_tls(args: argparse.Namespace) -> Any:
    """The ``ServerTLS`` of start-dev's ``--tls-*`` flags (None: plaintext); CliError naming the flag."""
    from spindle.controlplane._tls import ServerTLS, TLSFileError

    if not (args.tls_cert_file or args.tls_key_file or args.tls_client_ca_file):
        return None
    if not args.tls_cert_file or not args.tls_key_file:
        raise CliError("--tls-cert-file and --tls-key-file go together (and --tls-client-ca-file needs both)")
    tls = ServerTLS(args.tls_cert_file, args.tls_key_file, args.tls_client_ca_file or None)
    try:
        tls.check("--tls")
    except TLSFileError as e:
        raise CliError(str(e).replace("--tls.cert_file", "--tls-cert-file").replace("--tls.key_file", "--tls-key-file")
                       .replace("--tls.client_ca_file", "--tls-client-ca-file")) from None
    return tls


def _load_settings(path: str) -> dict[str, object]:
    import yaml

    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except OSError as e:
        raise CliError(f"--config: cannot read {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise CliError(f"--config: {path} is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise CliError(f"--config: {path} must hold a mapping of setting names to values")
    return data


def _start_cluster(args: argparse.Namespace) -> int:
    try:
        from spindle.controlplane.cluster import StartupError, run_from_config  # type: ignore[import-not-found]
    except ImportError:
        raise CliError("cluster mode (Cloud Spanner) is not available in this build") from None
    try:
        return int(run_from_config(args.config, log_format=args.log_format))
    except StartupError as e:
        raise CliError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spindle", description="Spindle: durable workflows for Python.")
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    _add_server(sub)
    for ep in sorted(entry_points(group="spindle.cli"), key=lambda e: e.name):
        try:
            register: Callable[[Any], None] = ep.load()
        except Exception as e:  # noqa: BLE001 - a broken plugin must not break the whole CLI
            print(f"spindle: warning: command group {ep.name!r} failed to load: {e}", file=sys.stderr)
            continue
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"spindle: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
