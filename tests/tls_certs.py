"""Certificates for TLS tests, made on the spot with ``cryptography`` (no files checked in).

::

    ca = CertificateAuthority("Spindle Test CA")
    server = ca.issue("localhost", dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    worker = ca.issue("worker-a", organization="Acme")          # a client certificate
    paths = server.write(tmp_path, "server")                     # (cert_file, key_file)
    other = CertificateAuthority("Unrelated CA")                 # for "refused at the handshake"

Keys are ECDSA P-256 (fast to make, supported by gRPC's BoringSSL). Certificates are valid
from five minutes ago for a day. ``CertKey.subject`` is the certificate's subject as
``cryptography`` writes it in RFC 4514 (``CN=worker-a,O=Acme``), the form
``spindle.controlplane.peer_certificate_subject`` reports.
"""

from __future__ import annotations

import datetime
import ipaddress

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertKey", "CertificateAuthority", "server_and_client"]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str, organization: str | None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


@dataclass(frozen=True)
class CertKey:
    """A PEM certificate and its PEM private key."""

    cert: bytes
    key: bytes

    @property
    def subject(self) -> str:
        """The certificate's subject, RFC 4514 (``CN=...,O=...``)."""
        return x509.load_pem_x509_certificate(self.cert).subject.rfc4514_string()

    def write(self, folder: Path, name: str) -> tuple[Path, Path]:
        """Write ``NAME.crt`` and ``NAME.key`` into ``folder``; their paths."""
        folder.mkdir(parents=True, exist_ok=True)
        cert, key = folder / f"{name}.crt", folder / f"{name}.key"
        cert.write_bytes(self.cert)
        key.write_bytes(self.key)
        key.chmod(0o600)
        return cert, key


class CertificateAuthority:
    """A self-signed CA that issues server and client certificates."""

    def __init__(self, common_name: str = "Spindle Test CA", organization: str | None = None) -> None:
        self._key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        self.name = _name(common_name, organization)
        self._cert = (
            x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        #: The CA certificate (PEM): what a server or client trusts.
        self.cert_pem = self._cert.public_bytes(serialization.Encoding.PEM)

    def write(self, folder: Path, name: str = "ca") -> Path:
        """Write the CA certificate as ``NAME.crt``; its path."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.crt"
        path.write_bytes(self.cert_pem)
        return path

    def issue(self, common_name: str, *, organization: str | None = None, dns_names: Sequence[str] = (),
              ip_addresses: Sequence[str] = (), valid_for: datetime.timedelta = datetime.timedelta(days=1)) -> CertKey:
        """A leaf certificate for ``common_name``, usable by a server and a client (both extended key usages).

        ``dns_names`` / ``ip_addresses`` go into the subject alternative name (what a client
        checks the server's name against).
        """
        key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder().subject_name(_name(common_name, organization)).issuer_name(self.name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + valid_for)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
        )
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return CertKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def issue_server(self, common_name: str = "localhost") -> CertKey:
        """A server certificate valid for ``localhost`` and ``127.0.0.1``."""
        return self.issue(common_name, dns_names=["localhost"], ip_addresses=["127.0.0.1"])


def server_and_client(ca: CertificateAuthority | None = None) -> tuple[CertificateAuthority, CertKey, CertKey]:
    """A CA, a server certificate for localhost/127.0.0.1 and a client certificate ``CN=client``, all from it."""
    ca = ca or CertificateAuthority()
    return ca, ca.issue_server(), ca.issue("client")
