"""The cluster YAML: defaults, durations, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from spindle.cli import main
from spindle.controlplane.cluster import ConfigError, StartupError, load_config, parse_config, run_from_config

SPANNER = {"spanner": {"project": "p", "instance": "i", "database": "d"}}
OPEN = {"mode": "none"}


def test_defaults_and_durations() -> None:
    cfg = parse_config({"store": SPANNER, "lease": {"ttl": "5s", "renew_interval": "500ms"}, "num_shards": 8,
                        "server": {"long_poll_timeout": 20}, "auth": OPEN})
    assert (cfg.store.kind, cfg.store.project, cfg.store.database) == ("spanner", "p", "d")
    assert cfg.lease_ttl == 5.0 and cfg.lease_renew_interval == 0.5
    sc = cfg.server_config()
    assert sc.num_shards == 8 and sc.long_poll_timeout == 20
    assert parse_config({"store": {"sqlite": {"path": "x.db"}}, "auth": OPEN}).store.path == "x.db"
    arch = parse_config({"store": SPANNER, "archival": {"uri": "gs://b/a", "blob_store_uri": "file:///tmp/b"}, "auth": OPEN})
    assert (arch.server_config().archive_uri, arch.server_config().blob_store_uri) == ("gs://b/a", "file:///tmp/b")
    assert arch.server_config().archival_allowed_roots == ()  # namespaces may not set their own by default
    roots = parse_config({"store": SPANNER, "archival": {"allowed_roots": ["gs://b/tenants", "file:///srv/a"]}, "auth": OPEN})
    assert roots.server_config().archival_allowed_roots == ("gs://b/tenants", "file:///srv/a")


@pytest.mark.parametrize("data, needle", [
    ({}, "store: required"),
    ({"store": {"spanner": {"project": "p"}}}, "store.spanner: missing instance, database"),
    ({"store": {"mysql": {}}}, "unknown kind 'mysql'"),
    ({"store": SPANNER, "shards": 3}, "unknown key(s) shards"),
    ({"store": SPANNER, "num_shards": 0}, "num_shards"),
    ({"store": SPANNER, "lease": {"ttl": "1s", "renew_interval": "1s"}}, "more than twice renew_interval"),
    ({"store": SPANNER, "lease": {"ttl": "soon"}}, "lease.ttl: 'soon' is not a duration"),
    ({"store": SPANNER, "server": {"nope": 1}}, "unknown setting(s) nope"),
    ({"store": SPANNER, "archival": {"uri": "s3://x"}}, "archival.uri: 's3://x' must be"),
    ({"store": SPANNER, "archival": {"bucket": "x"}}, "archival: unknown key(s) bucket"),
    ({"store": SPANNER, "archival": {"allowed_roots": "gs://b"}}, "archival.allowed_roots: expected a list"),
    ({"store": SPANNER, "archival": {"allowed_roots": ["s3://b"]}}, "archival.allowed_roots: 's3://b': unsupported"),
    ({"store": SPANNER, "archival": {"allowed_roots": ["file://host/x"]}}, "needs an absolute path"),
])
def test_errors_name_the_key(data: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config({"auth": OPEN, **data} if "store" in data else data)
    assert needle in str(ei.value)


def test_cli_reports_a_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("store: {spanner: {project: p}}\n")
    assert main(["server", "start", "--config", str(bad)]) == 2
    assert "store.spanner: missing instance, database" in capsys.readouterr().err
    assert main(["admin", "setup-schema", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        load_config(tmp_path / "missing.yaml")


def test_a_member_that_cannot_start_raises_startup_error_which_the_cli_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The cluster layer raises its own error (it does not know the CLI); `spindle` prints it, exit status 2.
    bad = tmp_path / "c.yaml"
    bad.write_text("store: {spanner: {project: p}}\n")
    with pytest.raises(StartupError, match="store.spanner: missing instance, database"):
        run_from_config(str(bad))
    unservable = tmp_path / "listen.yaml"
    unservable.write_text(f"store: {{sqlite: {{path: '{tmp_path / 'c.db'}'}}}}\nlisten: nowhere\nauth: {{mode: none}}\n")
    with pytest.raises(StartupError, match="'nowhere' is not HOST:PORT"):
        run_from_config(str(unservable))
    assert main(["server", "start", "--config", str(unservable)]) == 2
    assert "spindle: error: 'nowhere' is not HOST:PORT" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- tls and internal
@pytest.fixture
def certs(tmp_path: Path) -> dict[str, str]:
    from tls_certs import CertificateAuthority

    cluster_ca, client_ca = CertificateAuthority("Cluster CA"), CertificateAuthority("Client CA")
    mcert, mkey = cluster_ca.issue("member", dns_names=["spindle-member"]).write(tmp_path, "member")
    scert, skey = client_ca.issue_server().write(tmp_path, "server")
    return {"member_cert": str(mcert), "member_key": str(mkey), "cluster_ca": str(cluster_ca.write(tmp_path, "cca")),
            "server_cert": str(scert), "server_key": str(skey), "client_ca": str(client_ca.write(tmp_path, "lca"))}


def test_tls_and_internal_sections(certs: dict[str, str]) -> None:
    cfg = parse_config({
        "store": SPANNER, "auth": OPEN, "listen": "0.0.0.0:7233", "advertise": "10.0.0.5:7233",
        "tls": {"cert_file": certs["server_cert"], "key_file": certs["server_key"], "client_ca_file": certs["client_ca"]},
        "internal": {"listen": "0.0.0.0:7234", "advertise": "10.0.0.5:7234",
                     "tls": {"cert_file": certs["member_cert"], "key_file": certs["member_key"],
                             "ca_file": certs["cluster_ca"], "server_name": "spindle-member"}}})
    assert cfg.tls is not None and cfg.tls.mutual and cfg.tls.client_ca_file == certs["client_ca"]
    assert (cfg.internal.listen, cfg.internal.advertise) == ("0.0.0.0:7234", "10.0.0.5:7234")
    assert cfg.internal.tls is not None and cfg.internal.tls.server_name == "spindle-member"
    # with member TLS the internal listener defaults to every interface, port 7234
    dflt = parse_config({"store": SPANNER, "auth": OPEN, "internal": {"advertise": "10.0.0.5:7234", "tls": {
        "cert_file": certs["member_cert"], "key_file": certs["member_key"], "ca_file": certs["cluster_ca"]}}})
    assert dflt.internal.listen == "0.0.0.0:7234"
    # on loopback (one machine: tests, development) no section is needed: loopback, any free port
    local = parse_config({"store": SPANNER, "auth": OPEN, "listen": "127.0.0.1:0"})
    assert (local.internal.listen, local.internal.tls, local.tls) == ("127.0.0.1:0", None, None)


@pytest.mark.parametrize("data, needle", [
    ({"store": SPANNER, "listen": "0.0.0.0:7233"},
     "internal: required when the member is reachable from other machines (listen 0.0.0.0:7233)"),
    ({"store": SPANNER, "advertise": "10.0.0.5:7233"}, "internal: required"),
    ({"store": SPANNER, "internal": {"listen": "0.0.0.0:7234"}},
     "internal.listen: 0.0.0.0:7234 is reachable from other machines, but internal.tls is not set"),
    ({"store": SPANNER, "internal": {"listen": "10.0.0.5:7234"}}, "must use mutual TLS"),
    ({"store": SPANNER, "internal": {"port": 1}}, "internal: expected a mapping with listen, advertise, tls"),
    ({"store": SPANNER, "internal": {"tls": {"cert_file": "MEMBER_CERT", "key_file": "MEMBER_KEY"}}},
     "internal.tls: missing internal.tls.ca_file"),
    ({"store": SPANNER, "internal": {"tls": {"cert_file": "MEMBER_CERT", "key_file": "MEMBER_KEY",
                                             "ca_file": "CLUSTER_CA"}}},
     "internal.advertise: required when internal.listen (0.0.0.0:7234) binds every interface"),
    ({"store": {"sqlite": {"path": "x.db"}}, "internal": {"listen": "127.0.0.1:0"}},
     "internal: only for a Spanner store"),
    ({"store": SPANNER, "tls": {"cert_file": "SERVER_CERT"}}, "tls: missing tls.key_file"),
    ({"store": SPANNER, "tls": {"cert_file": "SERVER_CERT", "key_file": "SERVER_KEY", "ca": "x"}},
     "tls: unknown key(s) ca (known: cert_file, key_file, client_ca_file)"),
    ({"store": SPANNER, "tls": {"cert_file": "/nope/server.crt", "key_file": "SERVER_KEY"}},
     "tls.cert_file: cannot read /nope/server.crt"),
    ({"store": SPANNER, "tls": {"cert_file": "SERVER_CERT", "key_file": "MEMBER_KEY"}},
     "the key does not belong to the certificate"),
    ({"store": SPANNER, "tls": {"cert_file": "SERVER_CERT", "key_file": "SERVER_KEY", "client_ca_file": "SERVER_KEY"}},
     "tls.client_ca_file"),
    ({"store": SPANNER, "tls": {"cert_file": "SERVER_CERT", "key_file": "SERVER_KEY", "client_ca_file": "CLIENT_CA"},
      "internal": {"advertise": "10.0.0.5:7234", "tls": {"cert_file": "MEMBER_CERT", "key_file": "MEMBER_KEY",
                                                          "ca_file": "CLIENT_CA"}}},
     "internal.tls.ca_file: the same CA as tls.client_ca_file"),
])
def test_tls_and_internal_errors_name_the_key(certs: dict[str, str], data: dict[str, object], needle: str) -> None:
    def fill(v: object) -> object:
        if isinstance(v, dict):
            return {k: fill(x) for k, x in v.items()}
        return certs.get(str(v).lower(), v) if isinstance(v, str) else v

    with pytest.raises(ConfigError) as ei:
        parse_config({"auth": OPEN, **fill(data)})  # type: ignore[dict-item]
    assert needle in str(ei.value)
