"""TLS credentials of the control plane's listeners and of member-to-member channels, from PEM files.

- :class:`ServerTLS` (``tls: {cert_file, key_file, client_ca_file}``): the public listener,
  and, with ``client_ca_file``, mutual TLS (every client must present a certificate signed
  by that CA; a client without one, or with one from another CA, is refused at the handshake).
- :class:`MemberTLS` (``internal: {tls: {cert_file, key_file, ca_file, server_name}}``): the
  cluster's internal listener and the channels members open to each other; both sides present
  a certificate from the cluster CA and verify the other's.

Both use grpcio's own SSL credentials. The files are checked when the configuration is
loaded (:meth:`ServerTLS.check`, with the standard library's ``ssl``: a wrong path, a file
that is not PEM, a key that does not belong to the certificate each get an error naming the
setting), because gRPC reports all of them as "Failed to bind". A certificate that has expired
or is not valid yet is refused the same way (every client would refuse it at the handshake,
with an error the operator of the server never sees).

Rotation: a server re-reads its files on a new connection's handshake when one of them
changed (checked at most once a second; connections already open keep their certificate),
so renewing a certificate needs no restart. A rotated set that does not load (say the
certificate was replaced but the key not yet) is logged and the previous one kept.
:meth:`MemberTLS.channel_credentials` likewise gives new credentials once the files change
(the cluster's ``Peers`` then opens new channels).
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time

from dataclasses import dataclass

import grpc

__all__ = ["MemberTLS", "ServerTLS", "TLSFileError", "add_port", "server_credentials"]

log = logging.getLogger("spindle.tls")

#: Seconds between two looks at the files' modification times (a look is one stat per file).
RELOAD_CHECK_INTERVAL = 1.0


class TLSFileError(ValueError):
    """A TLS file is missing, unreadable or not what its setting needs; the message names the setting."""


def _read(path: str, where: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TLSFileError(f"{where}: cannot read {path}: {e.strerror or e}") from None


def _check_pair(cert_file: str, key_file: str, where: str) -> None:
    for name, path in (("cert_file", cert_file), ("key_file", key_file)):
        _read(path, f"{where}.{name}")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        # password=b"": an encrypted key fails here instead of prompting on the terminal
        ctx.load_cert_chain(cert_file, key_file, password=b"")
    except ssl.SSLError as e:
        reason = e.reason or str(e)
        hint = {"KEY_VALUES_MISMATCH": "the key does not belong to the certificate",
                "BAD_DECRYPT": "the key is encrypted (give an unencrypted PEM key)"}.get(str(e.reason), "")
        raise TLSFileError(f"{where}: cannot use certificate {cert_file} with key {key_file}: "
                           f"{hint or 'not a PEM certificate and private key'} ({reason})") from None
    _check_validity(cert_file, where)


def _check_validity(cert_file: str, where: str, now: float | None = None) -> None:
    """Refuse a leaf certificate that has expired or is not valid yet (its notBefore/notAfter)."""
    # The standard library decodes a PEM certificate's dates only through this helper (no
    # cryptography dependency on the server); without it the check is skipped.
    decode = getattr(getattr(ssl, "_ssl", None), "_test_decode_cert", None)
    if decode is None:
        return
    try:
        info = decode(cert_file)
        not_before, not_after = ssl.cert_time_to_seconds(info["notBefore"]), ssl.cert_time_to_seconds(info["notAfter"])
    except (ssl.SSLError, OSError, KeyError, ValueError):
        return  # _check_pair reports a file that does not load
    now = time.time() if now is None else now
    if now >= not_after:
        raise TLSFileError(f"{where}.cert_file: the certificate in {cert_file} expired on {info['notAfter']}; "
                           "clients refuse it at the handshake: renew it")
    if now < not_before:
        raise TLSFileError(f"{where}.cert_file: the certificate in {cert_file} is not valid before "
                           f"{info['notBefore']}; clients refuse it at the handshake (check this machine's clock)")


def _check_ca(path: str, where: str) -> None:
    data = _read(path, where)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        ctx.load_verify_locations(cadata=data.decode("ascii", errors="replace"))
    except (ssl.SSLError, ValueError) as e:
        raise TLSFileError(f"{where}: {path} holds no PEM CA certificate ({getattr(e, 'reason', None) or e})") from None


class _Watched:
    """The contents of some files, re-read when one of them changes (modification time or size)."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        self.paths = paths
        self._stamp = self._stamps()
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def _stamps(self) -> tuple[tuple[int, int], ...]:
        out = []
        for p in self.paths:
            try:
                st = os.stat(p)
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((-1, -1))
        return tuple(out)

    def changed(self) -> bool:
        """True once after a file changed (looks at most every RELOAD_CHECK_INTERVAL seconds)."""
        now = time.monotonic()
        with self._lock:
            if now - self._checked < RELOAD_CHECK_INTERVAL:
                return False
            self._checked = now
            stamp = self._stamps()
            if stamp == self._stamp:
                return False
            self._stamp = stamp
            return True


@dataclass(frozen=True)
class ServerTLS:
    """A listener's certificate and key, and optionally the CA every client certificate must chain to.

    Attributes:
        cert_file: PEM certificate chain the server presents (leaf first).
        key_file: its unencrypted PEM private key.
        client_ca_file: PEM CA certificate(s); when set, clients must present a certificate
            signed by one of them (mutual TLS), and the server can read its subject
            (``spindle.controlplane._peer_identity.peer_certificate_subject``).
    """

    cert_file: str
    key_file: str
    client_ca_file: str | None = None

    @property
    def mutual(self) -> bool:
        """Whether clients must present a certificate."""
        return bool(self.client_ca_file)

    def check(self, where: str = "tls") -> None:
        """Raise :class:`TLSFileError` (naming ``where.<key>``) unless every file loads."""
        _check_pair(self.cert_file, self.key_file, where)
        if self.client_ca_file:
            _check_ca(self.client_ca_file, f"{where}.client_ca_file")

    def _configuration(self) -> grpc.ServerCertificateConfiguration:
        key = _read(self.key_file, "key_file")
        cert = _read(self.cert_file, "cert_file")
        roots = _read(self.client_ca_file, "client_ca_file") if self.client_ca_file else None
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=roots)


def server_credentials(tls: ServerTLS, where: str = "tls") -> grpc.ServerCredentials:
    """gRPC server credentials for ``tls`` that pick up rotated files (see the module docstring).

    Raises:
        TLSFileError: a file does not load (checked now, naming ``where.<key>``).
    """
    tls.check(where)
    watched = _Watched(tuple(p for p in (tls.cert_file, tls.key_file, tls.client_ca_file) if p))

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        # called by gRPC on each new connection's handshake; None keeps the current certificate
        try:
            if not watched.changed():
                return None
            tls.check(where)
            log.info("%s: certificate files changed: new connections use the new certificate", where)
            return tls._configuration()
        except Exception as e:  # noqa: BLE001 - a half-rotated set must not take the listener down
            log.warning("%s: certificate files changed but do not load (%s); keeping the previous certificate",
                        where, e)
            return None

    return grpc.dynamic_ssl_server_credentials(tls._configuration(), fetch,
                                               require_client_authentication=tls.mutual)


@dataclass(frozen=True)
class MemberTLS:
    """Mutual TLS between cluster members: this member's certificate and key, and the cluster CA.

    Attributes:
        cert_file: PEM certificate this member presents, as a server and as a client. It must
            be valid for the host of ``internal.advertise`` (or for ``server_name``).
        key_file: its unencrypted PEM private key.
        ca_file: the cluster CA: a peer's certificate must be signed by it. Use a CA that
            issues member certificates only (anyone holding a certificate from it can call
            the internal RPC).
        server_name: when set, the name peers check this member's certificate against
            (instead of the host they dial), so all members may share one name.
    """

    cert_file: str
    key_file: str
    ca_file: str
    server_name: str | None = None

    def check(self, where: str = "internal.tls") -> None:
        """Raise :class:`TLSFileError` (naming ``where.<key>``) unless every file loads."""
        _check_pair(self.cert_file, self.key_file, where)
        _check_ca(self.ca_file, f"{where}.ca_file")

    def server(self) -> ServerTLS:
        """The internal listener's side: this certificate, clients must chain to the cluster CA."""
        return ServerTLS(self.cert_file, self.key_file, client_ca_file=self.ca_file)

    def channel_options(self) -> list[tuple[str, str]]:
        """Channel options for dialling a peer (the name override, if any)."""
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Credentials for dialling a peer (read from the files now)."""
        return grpc.ssl_channel_credentials(root_certificates=_read(self.ca_file, "ca_file"),
                                            private_key=_read(self.key_file, "key_file"),
                                            certificate_chain=_read(self.cert_file, "cert_file"))

    def watcher(self) -> "_Watched":
        """Tells when the files changed (``changed()``), so callers can build new channel credentials."""
        return _Watched((self.cert_file, self.key_file, self.ca_file))


def add_port(server: grpc.aio.Server, address: str, tls: ServerTLS | None, where: str = "tls") -> int:
    """Bind ``address`` (``HOST:PORT``) on ``server``, with TLS when ``tls`` is given; the bound port (0: failed).

    Raises:
        TLSFileError: a TLS file does not load (the message names ``where.<key>``).
    """
    if tls is None:
        return server.add_insecure_port(address)
    return server.add_secure_port(address, server_credentials(tls, where))
