"""TLS and mutual TLS on the public listener, with certificates made by the test (tests/tls_certs.py).

A real control plane served by grpcio with its SSL credentials; real ``Client.connect``
calls and raw gRPC channels. The CA that signs the server is private, so ``tls=True``
(default roots) must fail; a second, unrelated CA stands for an attacker's certificates.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle_procs import SPINDLE, DevServer
from tls_certs import CertificateAuthority, CertKey

from spindle import activity, workflow
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.client import Client
from spindle.controlplane._peer_identity import peer_certificate_subject
from spindle.controlplane._tls import ServerTLS, TLSFileError, server_credentials
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore
from spindle.exceptions import RPCError
from spindle.service import TLSConfig
from spindle.service import TLSConfig as ServiceTLSConfig
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)


@dataclass
class Pki:
    """A CA with a server certificate (localhost, 127.0.0.1) and a client certificate; an unrelated CA."""

    dir: Path
    ca: CertificateAuthority
    server: CertKey
    client: CertKey
    other_ca: CertificateAuthority
    intruder: CertKey  # a client certificate from the unrelated CA, same subject as ``client``

    @property
    def ca_file(self) -> Path:
        return self.dir / "ca.crt"

    def server_tls(self, *, mutual: bool) -> ServerTLS:
        cert, key = self.server.write(self.dir, "server")
        return ServerTLS(str(cert), str(key), str(self.ca_file) if mutual else None)

    def client_tls(self, who: CertKey | None = None) -> TLSConfig:
        return TLSConfig(server_root_ca_cert=self.ca.cert_pem, client_cert=who.cert if who else None,
                         client_private_key=who.key if who else None)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority("Spindle Test CA")
    ca.write(d)
    other = CertificateAuthority("Unrelated CA")
    return Pki(d, ca, ca.issue_server(), ca.issue("worker-a", organization="Acme"), other,
               other.issue("worker-a", organization="Acme"))


async def _control_plane(tmp_path: Path, tls: ServerTLS) -> AsyncIterator[tuple[str, ControlPlane]]:
    cp = ControlPlane(SqliteStore(str(tmp_path / f"tls-{uuid.uuid4().hex[:6]}.db")))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0, tls=tls)
    try:
        yield f"127.0.0.1:{port}", cp
    finally:
        await server.stop(None)
        await cp.stop()


@pytest.fixture
async def tls_server(pki: Pki, tmp_path: Path) -> AsyncIterator[tuple[str, ControlPlane]]:
    async for x in _control_plane(tmp_path, pki.server_tls(mutual=False)):
        yield x


@pytest.fixture
async def mtls_server(pki: Pki, tmp_path: Path) -> AsyncIterator[tuple[str, ControlPlane]]:
    async for x in _control_plane(tmp_path, pki.server_tls(mutual=True)):
        yield x


@activity.defn
async def greet(name: str) -> str:
    return f"hello {name}"


@workflow.defn
class Greeter:
    @workflow.run
    async def run(self, name: str) -> str:
        from datetime import timedelta

        return await workflow.execute_activity(greet, name, start_to_close_timeout=timedelta(seconds=10))


async def _expect_handshake_refused(address: str, creds: grpc.ChannelCredentials) -> str:
    """A raw call over ``creds`` fails with UNAVAILABLE before any RPC is served; its details."""
    async with grpc.aio.secure_channel(address, creds) as ch:
        stub = service_pb2_grpc.WorkflowServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.GetSystemInfo(svc.GetSystemInfoRequest(), timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value
    return err.value.details() or ""


# ---------------------------------------------------------------------------------------------- TLS
async def test_a_workflow_runs_over_tls(pki: Pki, tls_server: tuple[str, ControlPlane]) -> None:
    address, _ = tls_server
    assert ServiceTLSConfig is TLSConfig  # from spindle.service import TLSConfig, as in temporalio
    client = await Client.connect(address, tls=TLSConfig(server_root_ca_cert=pki.ca.cert_pem))
    try:
        tq = f"tls-{uuid.uuid4().hex[:6]}"
        async with Worker(client, task_queue=tq, workflows=[Greeter], activities=[greet]):
            assert await client.execute_workflow(Greeter.run, "tls", id=f"g-{tq}", task_queue=tq) == "hello tls"
    finally:
        await client.close()


async def test_the_tls_port_refuses_plaintext(tls_server: tuple[str, ControlPlane]) -> None:
    address, _ = tls_server
    t0 = time.monotonic()
    with pytest.raises(RPCError) as err:
        await Client.connect(address)
    assert err.value.status == "UNAVAILABLE"
    assert "if it serves TLS, connect with tls=True" in err.value.message
    assert time.monotonic() - t0 < 10  # not the whole 15 s retry budget


async def test_tls_true_against_a_private_ca_fails_clearly(tls_server: tuple[str, ControlPlane]) -> None:
    address, _ = tls_server
    t0 = time.monotonic()
    with pytest.raises(RPCError) as err:
        await Client.connect(address, tls=True)  # gRPC's default roots do not include the test CA
    assert err.value.status == "UNAVAILABLE"
    assert "server's certificate is not trusted" in err.value.message
    assert "server_root_ca_cert" in err.value.message and "CERTIFICATE_VERIFY_FAILED" in err.value.message
    assert time.monotonic() - t0 < 10  # a failed handshake is not retried


async def test_the_server_name_is_checked_and_domain_overrides_it(pki: Pki, tmp_path: Path) -> None:
    named = pki.ca.issue("spindle.internal", dns_names=["spindle.internal"])  # not valid for 127.0.0.1
    cert, key = named.write(tmp_path, "named")
    async for address, _ in _control_plane(tmp_path, ServerTLS(str(cert), str(key))):
        with pytest.raises(RPCError) as err:
            await Client.connect(address, tls=TLSConfig(server_root_ca_cert=pki.ca.cert_pem))
        assert err.value.status == "UNAVAILABLE" and "over TLS" in err.value.message
        client = await Client.connect(address, tls=TLSConfig(server_root_ca_cert=pki.ca.cert_pem,
                                                             domain="spindle.internal"))
        await client.close()


async def test_tls_settings_are_checked_before_connecting(pki: Pki) -> None:
    with pytest.raises(ValueError, match="client_cert and client_private_key go together"):
        TLSConfig(client_cert=pki.client.cert)
    with pytest.raises(TypeError, match="server_root_ca_cert: expected PEM bytes"):
        TLSConfig(server_root_ca_cert=str(pki.ca_file))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tls: expected True, False, None or a spindle.service.TLSConfig"):
        await Client.connect("127.0.0.1:1", tls="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no connection to secure"):
        await Client.connect("embedded::memory:", tls=True)


# ---------------------------------------------------------------------------------------------- mutual TLS
async def test_mtls_a_client_certificate_from_the_configured_ca_connects(
        pki: Pki, mtls_server: tuple[str, ControlPlane]) -> None:
    address, _ = mtls_server
    client = await Client.connect(address, tls=pki.client_tls(pki.client))
    try:
        tq = f"mtls-{uuid.uuid4().hex[:6]}"
        async with Worker(client, task_queue=tq, workflows=[Greeter], activities=[greet]):
            assert await client.execute_workflow(Greeter.run, "m", id=f"g-{tq}", task_queue=tq) == "hello m"
    finally:
        await client.close()


async def test_mtls_a_certificate_from_another_ca_is_refused_at_the_handshake(
        pki: Pki, mtls_server: tuple[str, ControlPlane]) -> None:
    address, cp = mtls_server
    before = [n.name for n in cp.namespaces.all()]
    creds = grpc.ssl_channel_credentials(pki.ca.cert_pem, pki.intruder.key, pki.intruder.cert)
    details = await _expect_handshake_refused(address, creds)
    assert "Socket closed" in details or "handshake" in details.lower(), details
    # a write is refused just the same, and changes nothing
    async with grpc.aio.secure_channel(address, creds) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await service_pb2_grpc.WorkflowServiceStub(ch).CreateNamespace(
                svc.CreateNamespaceRequest(name="intruders", retention_ms=86_400_000), timeout=5)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert [n.name for n in cp.namespaces.all()] == before
    t0 = time.monotonic()
    with pytest.raises(RPCError) as rpc_err:
        await Client.connect(address, tls=pki.client_tls(pki.intruder))
    assert "may not accept this client certificate" in rpc_err.value.message
    assert time.monotonic() - t0 < 10


async def test_mtls_a_client_without_a_certificate_is_refused(pki: Pki, mtls_server: tuple[str, ControlPlane]) -> None:
    address, _ = mtls_server
    await _expect_handshake_refused(address, grpc.ssl_channel_credentials(pki.ca.cert_pem))
    with pytest.raises(RPCError) as err:
        await Client.connect(address, tls=pki.client_tls())
    assert err.value.status == "UNAVAILABLE"
    assert "it may require a client certificate (mutual TLS)" in err.value.message


# ---------------------------------------------------------------------------------------------- the peer's subject
async def _subject_server(tls: ServerTLS) -> tuple[grpc.aio.Server, int, list[str | None]]:
    """A gRPC server on ``tls`` whose one method records ``peer_certificate_subject`` of each call."""
    seen: list[str | None] = []

    async def who(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        subject = peer_certificate_subject(context)
        seen.append(subject)
        return (subject or "").encode()

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "test.Who", {"Am": grpc.unary_unary_rpc_method_handler(who)}),))
    port = server.add_secure_port("127.0.0.1:0", server_credentials(tls))
    await server.start()
    return server, port, seen


@pytest.mark.parametrize("common_name, organization", [
    ("worker-a", "Acme"),
    ("worker, \"b\"+c", "Acme; Ltd"),     # characters RFC 4514 escapes
    ("wörker-ü", "Zürich AG"),            # UTF-8 text
])
async def test_the_client_certificate_subject_reaches_the_handler(pki: Pki, common_name: str,
                                                                  organization: str) -> None:
    who = pki.ca.issue(common_name, organization=organization)
    server, port, seen = await _subject_server(pki.server_tls(mutual=True))
    try:
        async with grpc.aio.secure_channel(f"127.0.0.1:{port}",
                                           grpc.ssl_channel_credentials(pki.ca.cert_pem, who.key, who.cert)) as ch:
            answer = await ch.unary_unary("/test.Who/Am")(b"", timeout=5)
    finally:
        await server.stop(None)
    assert seen == [who.subject]  # RFC 4514, as cryptography writes it
    assert answer.decode() == who.subject
    if common_name == "worker-a":
        assert who.subject == "CN=worker-a,O=Acme"


async def test_no_subject_without_mutual_tls(pki: Pki) -> None:
    server, port, seen = await _subject_server(pki.server_tls(mutual=False))
    try:
        creds = grpc.ssl_channel_credentials(pki.ca.cert_pem, pki.client.key, pki.client.cert)
        async with grpc.aio.secure_channel(f"127.0.0.1:{port}", creds) as ch:
            await ch.unary_unary("/test.Who/Am")(b"", timeout=5)
    finally:
        await server.stop(None)
    assert seen == [None]  # the server did not ask for (or verify) the certificate: no identity from it

    class NoAuth:  # an in-process caller (the embedded stub's context has no auth_context)
        pass

    assert peer_certificate_subject(NoAuth()) is None


# ---------------------------------------------------------------------------------------------- rotation
async def test_rotated_certificate_files_are_used_by_new_connections(pki: Pki, tmp_path: Path) -> None:
    cert, key = pki.server.write(tmp_path, "rotating")
    tls = ServerTLS(str(cert), str(key))
    async for address, _ in _control_plane(tmp_path, tls):
        first = await Client.connect(address, tls=TLSConfig(server_root_ca_cert=pki.ca.cert_pem))
        await first.close()
        new_ca = CertificateAuthority("Rotated CA")
        new_ca.issue_server().write(tmp_path, "rotating")  # the operator renews the certificate in place
        deadline = time.monotonic() + 15
        while True:  # the server looks at the files at most once a second
            try:
                second = await Client.connect(address, tls=TLSConfig(server_root_ca_cert=new_ca.cert_pem))
                break
            except RPCError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.3)
        await second.close()
        with pytest.raises(RPCError, match="not trusted"):
            await Client.connect(address, tls=TLSConfig(server_root_ca_cert=pki.ca.cert_pem))


# ---------------------------------------------------------------------------------------------- bad files
def test_bad_tls_files_are_reported_with_the_setting(pki: Pki, tmp_path: Path) -> None:
    cert, key = pki.server.write(tmp_path, "good")
    _, other_key = pki.client.write(tmp_path, "other")
    (tmp_path / "garbage.pem").write_text("not a certificate")
    with pytest.raises(TLSFileError, match=r"tls\.cert_file: cannot read .*missing\.crt"):
        ServerTLS(str(tmp_path / "missing.crt"), str(key)).check()
    with pytest.raises(TLSFileError, match="the key does not belong to the certificate"):
        ServerTLS(str(cert), str(other_key)).check()
    with pytest.raises(TLSFileError, match="not a PEM certificate and private key"):
        ServerTLS(str(tmp_path / "garbage.pem"), str(key)).check()
    with pytest.raises(TLSFileError, match=r"tls\.client_ca_file: .*garbage\.pem holds no PEM CA certificate"):
        ServerTLS(str(cert), str(key), str(tmp_path / "garbage.pem")).check()


# ---------------------------------------------------------------------------------------------- start-dev and the CLI
def test_start_dev_serves_mutual_tls_and_the_cli_connects_with_its_flags(pki: Pki, tmp_path: Path) -> None:
    server_tls = pki.server_tls(mutual=True)
    ccert, ckey = pki.client.write(tmp_path, "cli")
    server = DevServer(tmp_path / "dev.db", "--tls-cert-file", server_tls.cert_file, "--tls-key-file",
                       server_tls.key_file, "--tls-client-ca-file", str(pki.ca_file)).start()
    try:
        base = [SPINDLE, "namespace", "list", "--address", server.address]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPINDLE_TLS")}
        ok = subprocess.run(base + ["--tls-ca", str(pki.ca_file), "--tls-cert", str(ccert), "--tls-key", str(ckey)],
                            capture_output=True, text=True, timeout=60, env=env)
        assert ok.returncode == 0, ok.stderr
        assert "default" in [n["name"] for n in json.loads(ok.stdout)]
        # the same through the environment variables (the names the Terraform provider reads)
        by_env = subprocess.run(base, capture_output=True, text=True, timeout=60,
                                env={**env, "SPINDLE_TLS_CA_FILE": str(pki.ca_file), "SPINDLE_TLS_CERT_FILE": str(ccert),
                                     "SPINDLE_TLS_KEY_FILE": str(ckey)})
        assert by_env.returncode == 0, by_env.stderr
        no_cert = subprocess.run(base + ["--tls-ca", str(pki.ca_file)], capture_output=True, text=True, timeout=60,
                                 env=env)
        assert no_cert.returncode == 1 and "require a client certificate" in no_cert.stderr
        half = subprocess.run(base + ["--tls-cert", str(ccert)], capture_output=True, text=True, timeout=60, env=env)
        assert half.returncode == 2 and "--tls-cert and --tls-key go together" in half.stderr
    finally:
        server.stop()


def test_start_dev_refuses_bad_tls_flags(tmp_path: Path, pki: Pki) -> None:
    cert, _ = pki.server.write(tmp_path, "s")
    run = [SPINDLE, "server", "start-dev", "--db", str(tmp_path / "x.db"), "--port", "0"]
    half = subprocess.run(run + ["--tls-cert-file", str(cert)], capture_output=True, text=True, timeout=60)
    assert half.returncode == 2 and "--tls-cert-file and --tls-key-file go together" in half.stderr
    missing = subprocess.run(run + ["--tls-cert-file", str(cert), "--tls-key-file", str(tmp_path / "nope.key")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "--tls-key-file: cannot read" in missing.stderr
    assert not (tmp_path / "x.db").exists()  # refused before anything was created


def test_envconfig_reads_the_tls_variables(pki: Pki, tmp_path: Path) -> None:
    from spindle.envconfig import ClientConfig

    ccert, ckey = pki.client.write(tmp_path, "env")
    load = ClientConfig.load_client_connect_config
    assert load(override_env_vars={"SPINDLE_TLS": "true"}) == {"tls": True}
    assert load(override_env_vars={"SPINDLE_TLS": "false"}) == {"tls": False}
    assert "tls" not in load(override_env_vars={"SPINDLE_ADDRESS": "h:1"})
    cfg = load(override_env_vars={"SPINDLE_TLS_CA_FILE": str(pki.ca_file), "SPINDLE_TLS_CERT_FILE": str(ccert),
                                  "SPINDLE_TLS_KEY_FILE": str(ckey), "SPINDLE_TLS_SERVER_NAME": "spindle.test"})
    assert cfg["tls"] == TLSConfig(server_root_ca_cert=pki.ca.cert_pem, client_cert=pki.client.cert,
                                   client_private_key=pki.client.key, domain="spindle.test")
    with pytest.raises(ValueError, match="SPINDLE_TLS_CERT_FILE and SPINDLE_TLS_KEY_FILE go together"):
        load(override_env_vars={"SPINDLE_TLS_CERT_FILE": str(ccert)})
    with pytest.raises(ValueError, match="SPINDLE_TLS_CA_FILE: cannot read"):
        load(override_env_vars={"SPINDLE_TLS_CA_FILE": str(tmp_path / "nope.crt")})
    with pytest.raises(ValueError, match="SPINDLE_TLS turns TLS off, but SPINDLE_TLS_CA_FILE is set"):
        load(override_env_vars={"SPINDLE_TLS": "no", "SPINDLE_TLS_CA_FILE": str(pki.ca_file)})
    with pytest.raises(ValueError, match="SPINDLE_TLS: expected true or false"):
        load(override_env_vars={"SPINDLE_TLS": "maybe"})


async def test_envconfig_connects(pki: Pki, mtls_server: tuple[str, ControlPlane], tmp_path: Path) -> None:
    from spindle.envconfig import ClientConfig

    address, _ = mtls_server
    ccert, ckey = pki.client.write(tmp_path, "envc")
    config: Any = ClientConfig.load_client_connect_config(override_env_vars={
        "SPINDLE_ADDRESS": address, "SPINDLE_TLS_CA_FILE": str(pki.ca_file), "SPINDLE_TLS_CERT_FILE": str(ccert),
        "SPINDLE_TLS_KEY_FILE": str(ckey)})
    client = await Client.connect(**config)
    await client.close()
