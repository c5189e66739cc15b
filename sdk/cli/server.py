"""``spindle server start-dev`` and ``spindle server start``: run the control plane.

``start-dev`` runs one process on a SQLite file (``spindle.controlplane.server.run_dev``);
``start`` runs a cluster member from a YAML file (``spindle.controlplane.cluster.run_from_config``).
The control plane is imported only when one of them runs.
"""

from __future__ import annotations

import os

from typing import Any

import click

from spindle.cli import new_group
from spindle.cli._output import fail

__all__ = ["group"]

group = new_group("server", "run the control plane")


def _default_shards() -> int:
    from spindle.controlplane.config import ServerConfig

    return ServerConfig.num_shards


@group.command("start-dev", short_help="one process on a SQLite file (127.0.0.1:7233, namespace 'default')",
               help="One control-plane process on a SQLite file. The namespace 'default' is created with the search "
                    "attributes Temporal's dev server registers: CustomKeywordField, CustomStringField, "
                    "CustomTextField, CustomIntField, CustomDoubleField, CustomBoolField, CustomDatetimeField, "
                    "CustomKeywordListField. Namespaces may set an archival_uri under the database's folder (the "
                    "archival_allowed_roots setting of --config replaces that).")
@click.option("--db", default="spindle.db", help="SQLite file (created if missing; default ./spindle.db)")
@click.option("--port", type=int, default=7233, help="gRPC port (default 7233; 0 picks a free one)")
@click.option("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
@click.option("--namespace", "namespaces", multiple=True, help="extra namespace(s) to create at start")
@click.option("--shards", type=int, default=_default_shards, show_default=False,
              help="history shards (fixed per database)")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              help="stderr log lines: text (default) or json (one object per line: time, level, logger, message, "
                   "and namespace/workflow_id/run_id where known)")
@click.option("--config", default=None,
              help="YAML file of ServerConfig settings (controlplane/config.py), e.g. long_poll_timeout: 30")
@click.option("--blob-dir", default=None,
              help="folder for payloads over 256 KiB (default: DB.blobs next to the database; '' = none)")
@click.option("--archive-uri", default="",
              help="archive closed runs here at retention (file:///dir or gs://bucket/prefix) for namespaces without "
                   "their own archival_uri (default: delete without archiving)")
@click.option("--auth", is_flag=True,
              help="require API keys (off by default: the dev server listens on 127.0.0.1 only). The first start "
                   "prints a generated system_admin key, once")
@click.option("--tls-cert-file", default=None, help="serve TLS with this PEM certificate (needs --tls-key-file)")
@click.option("--tls-key-file", default=None, help="PEM private key of --tls-cert-file")
@click.option("--tls-client-ca-file", default=None,
              help="require client certificates signed by this PEM CA (mutual TLS; needs --tls-cert-file)")
@click.option("--metrics-port", type=int, default=None,
              help="serve Prometheus metrics at http://IP:PORT/metrics (same --ip; off by default; 0 picks a free "
                   "port)")
@click.option("--metrics-bearer-token-file", default=None,
              help="with --metrics-port: /metrics answers only requests with 'Authorization: Bearer <this file's "
                   "content>' (others get 401)")
def start_dev(db: str, port: int, ip: str, namespaces: tuple[str, ...], shards: int, log_level: str, log_format: str,
              config: str | None, blob_dir: str | None, archive_uri: str, auth: bool, tls_cert_file: str | None,
              tls_key_file: str | None, tls_client_ca_file: str | None, metrics_port: int | None,
              metrics_bearer_token_file: str | None) -> int:
    if port < 0 or port > 65535:
        fail(f"--port: {port} is not a port number (0-65535)")
    if shards < 1:
        fail(f"--shards: must be at least 1, got {shards}")
    if metrics_port is not None and not 0 <= metrics_port <= 65535:
        fail(f"--metrics-port: {metrics_port} is not a port number (0-65535)")
    if metrics_bearer_token_file and metrics_port is None:
        fail("--metrics-bearer-token-file: needs --metrics-port (metrics are off without it)")
    if archive_uri and not archive_uri.startswith(("file:///", "gs://")):
        fail(f"--archive-uri: {archive_uri!r} must be file:///abs/dir or gs://bucket/prefix")
    from spindle.controlplane.config import ServerConfig
    from spindle.controlplane.server import DevServerError, run_dev

    db = os.path.abspath(db)
    blobs = db + ".blobs" if blob_dir is None else blob_dir
    settings = _load_settings(config) if config else {}
    settings.setdefault("num_shards", shards)
    settings.setdefault("archive_uri", archive_uri)
    settings.setdefault("blob_store_uri", "file://" + os.path.abspath(blobs) if blobs else "")
    # namespaces of a dev server may archive under the database's folder (a server config chooses its own)
    settings.setdefault("archival_allowed_roots", ["file://" + os.path.dirname(db)])
    try:
        cfg = ServerConfig.from_dict(settings, where=config or "config")
    except (TypeError, ValueError) as e:
        fail(str(e))
    try:
        return run_dev(db, cfg, ip=ip, port=port, namespaces=namespaces, log_level=log_level, log_format=log_format,
                       auth=auth, tls_cert_file=tls_cert_file, tls_key_file=tls_key_file,
                       tls_client_ca_file=tls_client_ca_file, metrics_port=metrics_port,
                       metrics_token_file=metrics_bearer_token_file)
    except DevServerError as e:
        fail(str(e))


def _load_settings(path: str) -> dict[str, Any]:
    """The ServerConfig settings of ``--config FILE`` (a YAML mapping)."""
    import yaml

    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except OSError as e:
        fail(f"--config: cannot read {path}: {e.strerror}")
    except yaml.YAMLError as e:
        fail(f"--config: {path} is not valid YAML: {e}")
    if not isinstance(data, dict):
        fail(f"--config: {path} must hold a mapping of setting names to values")
    return data


@group.command("start", help="a cluster member: --config FILE (store, shards, addresses)")
@click.option("--config", required=True, help="YAML configuration file")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              help="stderr log lines: text (default) or json (one object per line)")
def start(config: str, log_format: str) -> int:
    try:
        from spindle.controlplane.cluster import StartupError, run_from_config
    except ImportError:
        fail("cluster mode (Cloud Spanner) is not available in this build")
    try:
        return int(run_from_config(config, log_format=log_format))
    except StartupError as e:
        fail(str(e))
