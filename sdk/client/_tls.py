"""TLS for client connections: :class:`TLSConfig` (Temporal's name and fields) and the channel it makes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

__all__ = ["ENV_VARS", "TLSConfig", "explain_connect_failure", "is_tls_refusal", "open_channel", "tls_from_env", "tls_from_files"]

#: Environment variables the CLI, ``spindle.envconfig`` and the Terraform provider read (same names everywhere).
ENV_VARS = {"tls": "SPINDLE_TLS", "ca_file": "SPINDLE_TLS_CA_FILE", "cert_file": "SPINDLE_TLS_CERT_FILE",
            "key_file": "SPINDLE_TLS_KEY_FILE", "server_name": "SPINDLE_TLS_SERVER_NAME"}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class TLSConfig:
    """TLS settings for :meth:`spindle.client.Client.connect` (``tls=TLSConfig(...)``), as ``temporalio.service.TLSConfig``.

    ``tls=True`` is ``TLSConfig()``: the server's certificate is checked against gRPC's
    default roots (the public web CAs; ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` points gRPC at
    another bundle) and the host being dialled.

    Attributes:
        server_root_ca_cert: PEM CA certificate(s) the server's certificate must chain to
            (instead of the default roots): for a server with a private CA.
        domain: the name the server's certificate is checked against (and the TLS SNI /
            HTTP/2 authority), instead of the host in the address.
        client_cert: PEM certificate chain this client presents (mutual TLS); needs
            ``client_private_key``.
        client_private_key: the client certificate's unencrypted PEM private key.
    """

    server_root_ca_cert: bytes | None = None
    domain: str | None = None
    client_cert: bytes | None = None
    client_private_key: bytes | None = None

    def __post_init__(self) -> None:
        for name in ("server_root_ca_cert", "client_cert", "client_private_key"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bytes):
                raise TypeError(f"TLSConfig.{name}: expected PEM bytes, got {type(value).__name__} "
                                "(read the file with Path(...).read_bytes())")
        if (self.client_cert is None) != (self.client_private_key is None):
            raise ValueError("TLSConfig: client_cert and client_private_key go together (mutual TLS needs both)")
        if self.domain is not None and (not isinstance(self.domain, str) or not self.domain):
            raise ValueError(f"TLSConfig.domain: expected a host name, got {self.domain!r}")

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """The gRPC channel credentials these settings describe."""
        return grpc.ssl_channel_credentials(root_certificates=self.server_root_ca_cert,
                                            private_key=self.client_private_key,
                                            certificate_chain=self.client_cert)


def as_tls_config(tls: bool | TLSConfig | None) -> TLSConfig | None:
    """``tls`` as Client.connect takes it -> the settings to use, or None for plaintext."""
    if tls is None or tls is False:
        return None
    if tls is True:
        return TLSConfig()
    if isinstance(tls, TLSConfig):
        return tls
    raise TypeError(f"tls: expected True, False, None or a spindle.service.TLSConfig, got {type(tls).__name__}")


def open_channel(target: str, tls: TLSConfig | None, options: Sequence[tuple[str, Any]]) -> grpc.aio.Channel:
    """An asyncio channel to ``target``: TLS with ``tls``, plaintext without."""
    if tls is None:
        return grpc.aio.insecure_channel(target, options=list(options))
    opts = list(options)
    if tls.domain:
        opts.append(("grpc.ssl_target_name_override", tls.domain))
    return grpc.aio.secure_channel(target, tls.channel_credentials(), options=opts)


def is_tls_refusal(details: str) -> bool:
    """Whether an UNAVAILABLE's details say the TLS handshake failed on this side (never transient)."""
    low = details.lower()
    return "handshake failed" in low or "verification check failed" in low


def explain_connect_failure(details: str, target: str, tls: TLSConfig | None) -> str | None:
    """A clearer message for a connection refused by TLS (None: not a TLS problem we recognise).

    Client-side handshake failures say "handshake failed" (an untrusted certificate, a name
    mismatch, a plaintext server); a server that refuses the client's certificate (or a
    TLS server reached in plaintext) just closes the connection.
    """
    low = details.lower()
    if "hostname verification" in low:
        return (f"cannot connect to {target} over TLS: the server's certificate is not valid for this host name "
                f"(TLSConfig(domain=...) checks it against another name) ({details})")
    if "handshake failed" in low:
        if "certificate has expired" in low or "certificate is not yet valid" in low:
            when = "has expired" if "expired" in low else "is not valid yet"
            why = (f"the server's certificate {when} (the server must renew it; if it looks valid, check this "
                   "machine's clock)")
        elif "certificate_verify_failed" in low or "unable to get local issuer" in low or "self signed" in low:
            why = ("the server's certificate is not trusted: pass its CA as "
                   "TLSConfig(server_root_ca_cert=...) (tls=True trusts only the default public roots)")
        elif "wrong_version_number" in low:
            why = "the server does not speak TLS on this port (connect without tls)"
        else:
            why = "the TLS handshake failed"
        return f"cannot connect to {target} over TLS: {why} ({details})"
    if "before receiving settings frame" in low or "connect() timed out" in low:
        return (f"cannot connect to {target}: no gRPC server answered in time (the host may drop the connection, "
                f"or another service, not Spindle's gRPC port, listens there): check the address and port ({details})")
    if "socket closed" in low or "connection reset" in low:
        if tls is None:
            return (f"cannot connect to {target}: the server closed the connection; if it serves TLS, connect with "
                    f"tls=True or tls=TLSConfig(...) ({details})")
        if tls.client_cert is None:
            return (f"cannot connect to {target}: the server closed the connection during the TLS handshake; it may "
                    "require a client certificate (mutual TLS): TLSConfig(client_cert=..., client_private_key=...) "
                    f"({details})")
        return (f"cannot connect to {target}: the server closed the connection during the TLS handshake; it may "
                "not accept this client certificate (it must be signed by the CA the server trusts for clients) "
                f"({details})")
    return None


def _read_pem(path: str, name: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ValueError(f"{name}: cannot read {path}: {e.strerror or e}") from None
    if b"-----BEGIN " not in data:
        raise ValueError(f"{name}: {path} is not a PEM file (no '-----BEGIN' line)")
    return data


def tls_from_files(*, enabled: bool | None, ca_file: str | None, cert_file: str | None, key_file: str | None,
                   server_name: str | None, names: dict[str, str]) -> bool | TLSConfig | None:
    """The ``tls`` argument of Client.connect from file settings (CLI flags or environment variables).

    Any file or server name turns TLS on; ``enabled`` alone means TLS with the default roots
    (True), plaintext (False) or not said (None); ``enabled=False`` with files is a conflict. ``names`` maps ``tls``, ``ca_file``,
    ``cert_file``, ``key_file``, ``server_name`` to what the user wrote (a flag or a
    variable), so errors name it.

    Raises:
        ValueError: a file cannot be read or is not PEM, a certificate without its key (or the
            reverse), or TLS turned off while files are given.
    """
    files = {"ca_file": ca_file, "cert_file": cert_file, "key_file": key_file, "server_name": server_name}
    given = [names[k] for k, v in files.items() if v]
    if not given:
        return enabled
    if enabled is False:
        raise ValueError(f"{names['tls']} turns TLS off, but {', '.join(given)} {'is' if len(given) == 1 else 'are'} set")
    if bool(cert_file) != bool(key_file):
        raise ValueError(f"{names['cert_file']} and {names['key_file']} go together (mutual TLS needs both)")
    return TLSConfig(server_root_ca_cert=_read_pem(ca_file, names["ca_file"]) if ca_file else None,
                     domain=server_name or None,
                     client_cert=_read_pem(cert_file, names["cert_file"]) if cert_file else None,
                     client_private_key=_read_pem(key_file, names["key_file"]) if key_file else None)


def env_bool(env: Any, name: str) -> bool | None:
    raw = env.get(name)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}: expected true or false, got {raw!r}")


def tls_from_env(env: Any) -> bool | TLSConfig | None:
    """``tls`` for Client.connect from ``SPINDLE_TLS``, ``SPINDLE_TLS_CA_FILE``, ``SPINDLE_TLS_CERT_FILE``,
    ``SPINDLE_TLS_KEY_FILE`` and ``SPINDLE_TLS_SERVER_NAME`` (None when none is set).

    Raises:
        ValueError: as :func:`tls_from_files`, naming the variable.
    """
    return tls_from_files(enabled=env_bool(env, ENV_VARS["tls"]), ca_file=env.get(ENV_VARS["ca_file"]) or None,
                          cert_file=env.get(ENV_VARS["cert_file"]) or None,
                          key_file=env.get(ENV_VARS["key_file"]) or None,
                          server_name=env.get(ENV_VARS["server_name"]) or None, names=ENV_VARS)
