"""The provider's TLS attributes against a Spindle server that itself requires mutual TLS.

``spindle server start-dev --tls-cert-file ... --tls-client-ca-file ...`` (no gateway in
between), certificates made by the test (tests/tls_certs.py). The provider must use
``tls_ca_file`` to trust the server, and present ``tls_cert_file``/``tls_key_file``; without
a client certificate, or with one from another CA, the server refuses the handshake and the
plan fails on the connection. Effects are checked with a TLS ``spindle.client.Client``.
"""

from __future__ import annotations

import asyncio

from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest

from _tf_harness import MS_PER_DAY, DevServer, Terraform, provider_block
from tls_certs import CertificateAuthority, CertKey

from spindle.client import Client
from spindle.exceptions import RPCError
from spindle.service import TLSConfig

pytestmark = pytest.mark.timeout(240)

MakeTf = Callable[..., Terraform]
RESOURCE = 'resource "spindle_namespace" "m" {\n  name = "tf-mtls"\n  retention_days = 3\n}\n'


class Pki:
    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self.ca = CertificateAuthority("Spindle Test CA")
        self.ca_file = self.ca.write(folder, "ca")
        self.server_files = self.ca.issue_server().write(folder, "server")
        self.client: CertKey = self.ca.issue("terraform", organization="Ops")
        self.client_files = self.client.write(folder, "client")
        self.intruder_files = CertificateAuthority("Unrelated CA").issue("terraform", organization="Ops").write(
            folder, "intruder")

    def client_tls(self) -> TLSConfig:
        return TLSConfig(server_root_ca_cert=self.ca.cert_pem, client_cert=self.client.cert,
                         client_private_key=self.client.key)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("tf-pki"))


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[DevServer]:
    (cert, key) = pki.server_files
    server = DevServer(tmp_path_factory.mktemp("mtls-server") / "spindle.db", "--tls-cert-file", str(cert),
                       "--tls-key-file", str(key), "--tls-client-ca-file", str(pki.ca_file)).start()
    try:
        yield server
    finally:
        server.stop()


def retention_ms(address: str, tls: TLSConfig, name: str) -> int | None:
    """The namespace's retention through a TLS client; None when there is no such namespace."""
    async def go() -> int | None:
        client = await Client.connect(address, tls=tls)
        try:
            desc = await client.describe_namespace(name)
        except RPCError as e:
            if e.status == "NOT_FOUND":
                return None
            raise
        finally:
            await client.close()
        return int(desc.retention.total_seconds() * 1000) if desc.retention is not None else 0

    return asyncio.run(go())


def tls_block(pki: Pki, cert_key: tuple[Path, Path] | None) -> str:
    out = f'  tls_ca_file = "{pki.ca_file}"\n'
    if cert_key is not None:
        out += f'  tls_cert_file = "{cert_key[0]}"\n  tls_key_file = "{cert_key[1]}"\n'
    return out


def test_the_provider_connects_with_its_client_certificate(make_tf: MakeTf, mtls_server: DevServer,
                                                           pki: Pki) -> None:
    addr = mtls_server.address
    tf = make_tf("mtls")
    tf.write(provider_block(addr, extra=tls_block(pki, pki.client_files)) + RESOURCE)
    tf.run("init")
    tf.run("apply", "-auto-approve")
    assert retention_ms(addr, pki.client_tls(), "tf-mtls") == 3 * MS_PER_DAY

    # the same settings from the environment (SPINDLE_TLS_*), none in the provider block
    tf.write(provider_block(addr) + RESOURCE)
    env = {"SPINDLE_TLS_CA_FILE": str(pki.ca_file), "SPINDLE_TLS_CERT_FILE": str(pki.client_files[0]),
           "SPINDLE_TLS_KEY_FILE": str(pki.client_files[1])}
    tf.run("plan", "-detailed-exitcode", expect=0, extra_env=env)

    # refused at the handshake: plaintext, no client certificate, a certificate from another CA
    for what, extra in (("plaintext", ""), ("no client certificate", tls_block(pki, None)),
                        ("another CA's certificate", tls_block(pki, pki.intruder_files))):
        tf.write(provider_block(addr, extra=extra) + RESOURCE)
        res = tf.run("plan", expect=1)
        assert f"Cannot connect to Spindle at {addr}" in res.flat, what

    tf.write(provider_block(addr, extra=tls_block(pki, pki.client_files)) + RESOURCE)
    tf.run("destroy", "-auto-approve")
    assert retention_ms(addr, pki.client_tls(), "tf-mtls") is None
