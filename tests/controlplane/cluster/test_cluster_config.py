"""The cluster YAML: defaults, durations, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from spindle.controlplane.cluster import ConfigError, StartupError, load_config, parse_config, run_from_config
from spindle.controlplane.cli import main

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
