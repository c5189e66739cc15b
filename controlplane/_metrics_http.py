"""The HTTP listener of ``/metrics``, and who may read it: a bearer token, client certificates, or the loopback only.

``/metrics`` names every namespace and task queue of the server, so it is not for everyone
who can reach the port. Three ways to keep it to the scraper (docs/OBSERVABILITY.md):

- listen on a loopback address (the default: ``127.0.0.1:9090``), and scrape from this
  machine (or through ``kubectl port-forward``, a sidecar);
- a bearer token (``bearer_token_file``): every request must carry ``Authorization: Bearer
  <the file's content>`` (compared in constant time); any other gets 401. Prometheus sends
  it with ``authorization: {credentials_file: ...}`` in the scrape config;
- TLS (``tls: {cert_file, key_file, client_ca_file}``): HTTPS, and with ``client_ca_file``
  every client must present a certificate signed by that CA (mutual TLS), refused at the
  handshake otherwise. Prometheus: ``scheme: https`` and ``tls_config``.

The token file is read once at start (a new token needs a restart); an empty or unreadable
one is refused at start, naming the setting. A listener that is not loopback and has no
token and no client certificates gets a warning at start (:func:`exposure_warning`): it is
allowed, because a network policy may be what keeps it private, but the operator is told.
TLS handshakes and requests run on the request's own thread with a timeout, so a client
that connects and says nothing holds no one else up.
"""

from __future__ import annotations

import hmac
import socket
import ssl
import threading

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from spindle.api._addresses import is_loopback_host
from spindle.controlplane._tls import ServerTLS

__all__ = ["MetricsAccess", "MetricsAccessError", "exposure_warning", "serve_registry"]

#: Seconds a metrics connection may take for its TLS handshake and its request.
REQUEST_TIMEOUT = 10.0


class MetricsAccessError(ValueError):
    """The metrics listener's protection is misconfigured; the message names the setting."""


@dataclass(frozen=True)
class MetricsAccess:
    """Who may read ``/metrics``.

    Attributes:
        bearer_token_file: a file holding the token every request must send as
            ``Authorization: Bearer <token>`` ("" = no token asked).
        tls: serve HTTPS with this certificate; with ``tls.client_ca_file``, clients must
            present a certificate from that CA.
    """

    bearer_token_file: str = ""
    tls: ServerTLS | None = None

    @property
    def protected(self) -> bool:
        """Whether a reader must prove who it is (a token or a client certificate)."""
        return bool(self.bearer_token_file) or (self.tls is not None and self.tls.mutual)

    def token(self, where: str = "metrics.bearer_token_file") -> bytes | None:
        """The token (the file's content without surrounding whitespace), None when none is asked.

        Raises:
            MetricsAccessError: the file cannot be read, or holds no token.
        """
        if not self.bearer_token_file:
            return None
        try:
            with open(self.bearer_token_file, "rb") as f:
                token = f.read().strip()
        except OSError as e:
            raise MetricsAccessError(f"{where}: cannot read {self.bearer_token_file}: {e.strerror or e}") from None
        if not token:
            raise MetricsAccessError(f"{where}: {self.bearer_token_file} is empty (it must hold the token)")
        return token

    def check(self, where: str = "metrics") -> None:
        """Raise :class:`MetricsAccessError` (naming ``where.<key>``) unless the token and TLS files load."""
        self.token(f"{where}.bearer_token_file")
        if self.tls is not None:
            try:
                self.tls.check(f"{where}.tls")
            except ValueError as e:
                raise MetricsAccessError(str(e)) from None


def exposure_warning(host: str, port: int, access: MetricsAccess | None) -> str | None:
    """The warning to log when ``/metrics`` is reachable from other machines without a token or client certificate."""
    if is_loopback_host(host) or (access is not None and access.protected):
        return None
    return (f"WARNING: /metrics listens on {host}:{port}, reachable from other machines, without a bearer token or "
            "client certificates: anyone who can reach this port reads every namespace and task-queue name of the "
            "server. Set metrics.bearer_token_file (or metrics.tls with client_ca_file; start-dev: "
            "--metrics-bearer-token-file), listen on 127.0.0.1, or make sure a network policy keeps the port private.")


_Start = Callable[[str, list[tuple[str, str]]], Any]
_DENIED = b"401 Unauthorized: this metrics endpoint needs 'Authorization: Bearer <token>'\n"


def _guarded(app: Callable[[dict[str, Any], _Start], Iterable[bytes]], token: bytes
             ) -> Callable[[dict[str, Any], _Start], Iterable[bytes]]:
    """``app`` behind a bearer token: a request without it, or with another, gets 401."""

    def guarded(environ: dict[str, Any], start_response: _Start) -> Iterable[bytes]:
        scheme, _, secret = str(environ.get("HTTP_AUTHORIZATION", "")).strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(secret.strip().encode(), token):
            start_response("401 Unauthorized", [("Content-Type", "text/plain; charset=utf-8"),
                                                ("WWW-Authenticate", 'Bearer realm="spindle metrics"')])
            return [_DENIED]
        return app(environ, start_response)

    return guarded


class _QuietHandler(WSGIRequestHandler):
    """No line per request on stderr; a connection that stalls (handshake or request) is dropped after a timeout."""

    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


def _ssl_context(tls: ServerTLS) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.client_ca_file:
        ctx.load_verify_locations(tls.client_ca_file)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def serve_registry(registry: CollectorRegistry, host: str, port: int, access: MetricsAccess | None = None
                   ) -> tuple[Any, int]:
    """Serve ``registry`` at ``http(s)://host:port/metrics`` on a daemon thread. Returns (server, bound port).

    Stop with ``server.shutdown()``.

    Raises:
        OSError: the address cannot be bound.
        MetricsAccessError: the token or TLS files do not load.
    """
    access = access or MetricsAccess()
    access.check()
    app: Any = make_wsgi_app(registry)
    token = access.token()
    if token is not None:
        app = _guarded(app, token)

    bare = host.strip("[]")

    class Server(ThreadingWSGIServer):
        address_family = socket.AF_INET6 if ":" in bare else socket.AF_INET

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a refused handshake, a client that went away: nothing for the server's log

    httpd = make_server(bare, port, app, Server, handler_class=_QuietHandler)
    if access.tls is not None:
        # the handshake happens on the request's thread (first read), not in the accept loop
        httpd.socket = _ssl_context(access.tls).wrap_socket(httpd.socket, server_side=True,
                                                            do_handshake_on_connect=False)
    thread = threading.Thread(target=httpd.serve_forever, name="spindle-metrics", daemon=True)
    thread.start()
    return httpd, httpd.server_address[1]
