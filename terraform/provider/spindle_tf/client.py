"""The provider's gRPC connection to a Spindle frontend.

The stubs come from ``spindle.api`` as generated for *this* environment's
protobuf (5.x) by ``spindle terraform install-provider`` into its ``gen/`` folder,
which the launcher puts on ``PYTHONPATH``. The modules committed in the repository
were generated for protobuf 7 and refuse to load under protobuf 5.
"""

from __future__ import annotations

import re
import socket
import ssl

from dataclasses import dataclass
from typing import Any

import grpc

try:
    from spindle.api import service_pb2 as svc
    from spindle.api import service_pb2_grpc as svc_grpc
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "the Spindle gRPC stubs for the provider are missing or were generated for another protobuf version "
        f"({e}); run `spindle terraform install-provider` again"
    ) from e

__all__ = ["ConnectionSettings", "SpindleConnection", "SpindleError", "svc"]

_FIELD_RE = re.compile(r"^([a-z_]+): ")

#: Server field names (as they lead error messages) -> Terraform attribute names.
SERVER_FIELD_TO_ATTRIBUTE = {
    "name": "name",
    "description": "description",
    "owner_email": "owner_email",
    "retention_ms": "retention_days",
    "retention": "retention_days",
    "search_attributes": "search_attributes",
    "archival_uri": "archival_uri",
    "rps_limit": "rps_limit",
}


class SpindleError(Exception):
    """A failed call: the gRPC status code, the server's message and the attribute it names (if any)."""

    def __init__(self, code: grpc.StatusCode, message: str, address: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.address = address
        m = _FIELD_RE.match(message)
        self.attribute: str | None = SERVER_FIELD_TO_ATTRIBUTE.get(m.group(1)) if m else None

    @property
    def unreachable(self) -> bool:
        """The server could not be reached (or did not answer in time)."""
        return self.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

    def describe(self) -> str:
        """One line for a diagnostic's detail."""
        if self.code == grpc.StatusCode.UNAVAILABLE:
            return (f"Cannot reach the Spindle server at {self.address}: {self.message} (UNAVAILABLE). Check the "
                    "provider's address (or SPINDLE_ADDRESS) and that the server is running.")
        if self.code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return (f"The Spindle server at {self.address} did not answer in time (DEADLINE_EXCEEDED): {self.message}. "
                    "Raise the provider's timeout_seconds if the server is slow.")
        if self.code == grpc.StatusCode.UNAUTHENTICATED:
            return f"The Spindle server at {self.address} refused the credentials (UNAUTHENTICATED): {self.message}."
        return f"{self.message} ({self.code.name})"


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect; built from the provider block and SPINDLE_* environment variables."""

    address: str = "127.0.0.1:7233"
    api_key: str | None = None
    tls: bool = False
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_server_name: str | None = None
    tls_insecure_skip_verify: bool = False
    timeout_seconds: float = 10.0

    @property
    def uses_tls(self) -> bool:
        """TLS is on when asked for, or when any TLS file or option is given."""
        return bool(self.tls or self.tls_ca_file or self.tls_cert_file or self.tls_server_name
                    or self.tls_insecure_skip_verify)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def fetch_server_certificate(address: str, timeout: float) -> tuple[bytes, str | None]:
    """The PEM certificate the server presents and a name it is valid for (for tls_insecure_skip_verify).

    The certificate is then trusted as its own root: this covers self-signed development
    certificates, which is what skipping verification is for.
    """
    host, port = _split_address(address)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    with socket.create_connection((host, port), timeout=timeout) as sock:
        with ctx.wrap_socket(sock, server_hostname=host) as tls_sock:
            der = tls_sock.getpeercert(binary_form=True)
    if der is None:  # pragma: no cover - a TLS server always presents one
        raise ssl.SSLError("the server presented no certificate")
    pem = ssl.DER_cert_to_PEM_cert(der).encode()
    name: str | None = None
    try:
        from cryptography import x509

        cert = x509.load_der_x509_certificate(der)
        try:
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns = sans.get_values_for_type(x509.DNSName)
            name = dns[0] if dns else None
        except x509.ExtensionNotFound:
            pass
        if name is None:
            cns = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
            name = str(cns[0].value) if cns else None
    except Exception:  # noqa: BLE001 - the name is only a hint for the target-name override
        name = None
    return pem, name


class SpindleConnection:
    """A synchronous channel and stub, with the API key sent as ``authorization: Bearer KEY``."""

    def __init__(self, settings: ConnectionSettings) -> None:
        self.settings = settings
        self.address = settings.address
        options: list[tuple[str, Any]] = []
        if settings.uses_tls:
            root: bytes | None = _read(settings.tls_ca_file) if settings.tls_ca_file else None
            server_name = settings.tls_server_name
            if settings.tls_insecure_skip_verify:
                root, presented_name = fetch_server_certificate(settings.address, settings.timeout_seconds)
                server_name = server_name or presented_name
            key = _read(settings.tls_key_file) if settings.tls_key_file else None
            chain = _read(settings.tls_cert_file) if settings.tls_cert_file else None
            creds = grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=chain)
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            self.channel = grpc.secure_channel(settings.address, creds, options=options)
        else:
            self.channel = grpc.insecure_channel(settings.address, options=options)
        self.stub = svc_grpc.WorkflowServiceStub(self.channel)
        self.metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {settings.api_key}"),) if settings.api_key else ()
        )

    def call(self, method: str, request: Any) -> Any:
        """Call ``WorkflowService.<method>``; raises :class:`SpindleError` with the status and message."""
        try:
            return getattr(self.stub, method)(request, timeout=self.settings.timeout_seconds, metadata=self.metadata)
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
            details = (e.details() if hasattr(e, "details") else None) or str(e)
            raise SpindleError(code, details, self.address) from None

    def check(self) -> Any:
        """Two cheap calls to fail fast on an unreachable server or missing or bad credentials.

        GetSystemInfo answers without credentials, so a server that requires API keys is
        asked for one namespace too (any valid key may list the namespaces it holds).
        """
        info = self.call("GetSystemInfo", svc.GetSystemInfoRequest())
        self.call("ListNamespaces", svc.ListNamespacesRequest(page_size=1))
        return info

    def describe_namespace(self, name: str) -> Any:
        """``NamespaceInfo`` for ``name``; raises SpindleError(NOT_FOUND) when there is none."""
        return self.call("DescribeNamespace", svc.DescribeNamespaceRequest(name=name)).namespace_info

    def list_namespaces(self) -> list[Any]:
        """Every registered namespace (all pages)."""
        out: list[Any] = []
        token = b""
        while True:
            resp = self.call("ListNamespaces", svc.ListNamespacesRequest(page_size=100, next_page_token=token))
            out.extend(resp.namespaces)
            token = resp.next_page_token
            if not token:
                return out

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()
