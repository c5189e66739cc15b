"""Security issue 26, finding 5: /metrics listens on loopback by default, can ask for a bearer token or a
client certificate, and a worker inventing task-queue names cannot blow up its label values."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import urllib.error
import urllib.request

from pathlib import Path

import grpc
import pytest

from prometheus_client.parser import text_string_to_metric_families
from tls_certs import CertificateAuthority

from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane._metrics import OTHER, ServerMetrics, serve_metrics
from spindle.controlplane._metrics_http import MetricsAccess, MetricsAccessError, exposure_warning
from spindle.controlplane._tls import ServerTLS
from spindle.controlplane.cluster import ClusterConfig, ClusterNode, StoreConfig
from spindle.controlplane.cluster._config import DEFAULT_METRICS_LISTEN, ConfigError, parse_config


def base(tmp_path: Path) -> dict:
    return {"store": {"sqlite": {"path": str(tmp_path / "m.db")}}, "auth": {"mode": "none"}}


def get(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_server_start_serves_metrics_on_loopback_by_default(tmp_path: Path) -> None:
    assert DEFAULT_METRICS_LISTEN == "127.0.0.1:9090"
    cfg = parse_config(base(tmp_path))
    assert cfg.metrics_listen == "127.0.0.1:9090" and not cfg.metrics_access.protected
    assert exposure_warning("127.0.0.1", 9090, cfg.metrics_access) is None
    assert exposure_warning("::1", 9090, None) is None
    warning = exposure_warning("0.0.0.0", 9090, cfg.metrics_access)
    assert warning is not None and "0.0.0.0:9090" in warning and "bearer_token_file" in warning
    # protected: no warning wherever it listens
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    assert exposure_warning("0.0.0.0", 9090, MetricsAccess(bearer_token_file=str(token))) is None


def test_metrics_protection_is_checked_when_the_configuration_loads(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("  s3cret \n")
    cfg = parse_config({**base(tmp_path), "metrics": {"listen": "0.0.0.0:9090", "bearer_token_file": str(token)}})
    assert cfg.metrics_access.token() == b"s3cret" and cfg.metrics_access.protected
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match=r"metrics.bearer_token_file: .*empty is empty"):
        parse_config({**base(tmp_path), "metrics": {"bearer_token_file": str(empty)}})
    with pytest.raises(ConfigError, match=r"metrics.bearer_token_file: cannot read .*missing"):
        parse_config({**base(tmp_path), "metrics": {"bearer_token_file": str(tmp_path / "missing")}})
    with pytest.raises(ConfigError, match=r"metrics.tls.cert_file: cannot read"):
        parse_config({**base(tmp_path), "metrics": {"tls": {"cert_file": str(tmp_path / "x.crt"),
                                                            "key_file": str(tmp_path / "x.key")}}})
    with pytest.raises(ConfigError, match=r"metrics: expected \{listen: HOST:PORT, bearer_token_file"):
        parse_config({**base(tmp_path), "metrics": {"token": "inline"}})


def test_a_bearer_token_guards_metrics_over_real_http(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("the-right-token\n")
    http, port = serve_metrics(ServerMetrics(), "127.0.0.1", 0, MetricsAccess(bearer_token_file=str(token)))
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        status, body = get(url)
        assert status == 401 and "spindle_" not in body
        assert get(url, "the-wrong-token")[0] == 401
        assert get(url, "the-right-token-and-more")[0] == 401
        req = urllib.request.Request(url, headers={"Authorization": "Basic the-right-token"})
        with pytest.raises(urllib.error.HTTPError) as basic:
            urllib.request.urlopen(req, timeout=10)
        assert basic.value.code == 401
        status, body = get(url, "the-right-token")
        assert status == 200 and "spindle_shards_owned" in body
    finally:
        http.shutdown()
    with pytest.raises(MetricsAccessError, match="cannot read"):
        serve_metrics(ServerMetrics(), "127.0.0.1", 0, MetricsAccess(bearer_token_file=str(tmp_path / "nope")))


def test_client_certificates_guard_metrics_over_real_https(tmp_path: Path) -> None:
    ca, other = CertificateAuthority("Metrics CA"), CertificateAuthority("Unrelated CA")
    cert, key = ca.issue("localhost", dns_names=["localhost"], ip_addresses=["127.0.0.1"]).write(tmp_path, "server")
    ca_file = ca.write(tmp_path, "ca")
    tls = ServerTLS(str(cert), str(key), str(ca_file))
    http, port = serve_metrics(ServerMetrics(), "127.0.0.1", 0, MetricsAccess(tls=tls))
    try:
        url = f"https://127.0.0.1:{port}/metrics"

        def client(cert_key: tuple[Path, Path] | None) -> ssl.SSLContext:
            ctx = ssl.create_default_context(cafile=str(ca_file))
            if cert_key is not None:
                ctx.load_cert_chain(*map(str, cert_key))
            return ctx

        status, body = get(url, context=client(ca.issue("prometheus").write(tmp_path, "scraper")))
        assert status == 200 and "spindle_shards_owned" in body
        for refused in (None, other.issue("prometheus").write(tmp_path, "stranger")):
            with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
                get(url, context=client(refused))
        # a plain HTTP request on the TLS port gets nothing
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            get(f"http://127.0.0.1:{port}/metrics")
    finally:
        http.shutdown()
    assert exposure_warning("0.0.0.0", 1, MetricsAccess(tls=tls)) is None
    assert exposure_warning("0.0.0.0", 1, MetricsAccess(tls=ServerTLS(str(cert), str(key)))) is not None


async def test_invented_task_queue_names_leave_at_most_cap_plus_one_label_values(tmp_path: Path) -> None:
    """A member's metrics (wired from server.metrics_task_queue_labels_per_namespace) and 500 polled queue names."""
    cap = 20
    cfg = ClusterConfig(store=StoreConfig("sqlite", path=str(tmp_path / "m.db")), num_shards=2, listen="127.0.0.1:0",
                        member_id="solo", metrics_listen="127.0.0.1:0", namespaces=("default", "other-team"),
                        server={"metrics_task_queue_labels_per_namespace": cap})
    node = ClusterNode(cfg)
    await node.start()
    try:
        async with grpc.aio.insecure_channel(node.address) as ch:
            stub = service_pb2_grpc.WorkflowServiceStub(ch)

            async def poll(ns: str, queue: str) -> None:
                # nothing to do: the poll comes back empty (or at its deadline); the queue now exists
                with contextlib.suppress(grpc.aio.AioRpcError):
                    resp = await stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
                        namespace=ns, task_queue=queue, identity="w"), timeout=0.5)
                    assert not resp.task_token

            await poll("other-team", "real-queue")
            for batch in range(0, 500, 50):  # in batches: 500 at once miss their deadline on a loaded machine
                await asyncio.gather(*[poll("default", f"invented-{i}") for i in range(batch, batch + 50)])
        status, text = get(f"http://{node.metrics_address}/metrics")
        assert status == 200
        labels: dict[str, set[str]] = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if "task_queue" in s.labels:
                    labels.setdefault(s.labels["namespace"], set()).add(s.labels["task_queue"])
        assert len(labels["default"]) == cap + 1 and OTHER in labels["default"]
        assert labels["other-team"] == {"real-queue"}  # another namespace keeps its own labels
    finally:
        await node.stop()


def test_start_dev_metrics_ask_for_the_token_file_it_was_given(tmp_path: Path) -> None:
    import socket

    from spindle_procs import DevServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        mport = s.getsockname()[1]
    token = tmp_path / "token"
    token.write_text("dev-token\n")
    server = DevServer(tmp_path / "d.db", "--metrics-port", str(mport), "--metrics-bearer-token-file",
                       str(token)).start()
    try:
        url = f"http://127.0.0.1:{mport}/metrics"
        assert get(url)[0] == 401 and get(url, "other")[0] == 401
        status, body = get(url, "dev-token")
        assert status == 200 and "spindle_shards_owned" in body
    finally:
        server.stop()
