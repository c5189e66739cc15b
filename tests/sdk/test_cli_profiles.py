"""The ``spindle`` CLI's client profiles: ``--profile`` / ``--config-file``, the variables, and their precedence
(flags > environment > profile > defaults), with errors naming the file, the profile and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from click.testing import CliRunner

from spindle.cli import cli
from spindle.exceptions import RPCError
from spindle.service import TLSConfig

_VARS = ("SPINDLE_ADDRESS", "SPINDLE_NAMESPACE", "SPINDLE_API_KEY", "SPINDLE_PROFILE", "SPINDLE_CONFIG_FILE",
         "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE",
         "SPINDLE_TLS", "SPINDLE_TLS_CA_FILE", "SPINDLE_TLS_CERT_FILE", "SPINDLE_TLS_KEY_FILE",
         "SPINDLE_TLS_SERVER_NAME", "TEMPORAL_TLS", "TEMPORAL_TLS_SERVER_NAME")


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Every ``Client.connect`` the CLI makes (target and keyword arguments); each is then refused (exit 1)."""
    from spindle.client import Client

    seen: list[dict[str, Any]] = []

    async def fake_connect(target: str, **kw: Any) -> Any:
        seen.append({"target": target, **kw})
        raise RPCError("stop here", status="UNAVAILABLE")

    monkeypatch.setattr(Client, "connect", staticmethod(fake_connect))
    for name in _VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no default file unless a test writes one
    return seen


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["workflow", "list", *args], env=env)


_FILE = """
[profile.default]
address = "file-default:7233"
namespace = "file-ns"

[profile.prod]
address = "prod:7233"
namespace = "prod-ns"
api_key = "key-from-file"
[profile.prod.tls]
server_name = "prod.internal"
"""


def _file(tmp_path: Path, text: str = _FILE) -> str:
    f = tmp_path / "spindle.toml"
    f.write_text(text)
    return str(f)


def test_defaults_without_profile_or_variables(connects: list[dict[str, Any]]) -> None:
    assert run().exit_code == 1
    assert connects[-1]["target"] == "127.0.0.1:7233" and connects[-1]["namespace"] == "default"
    assert connects[-1]["tls"] is None and connects[-1]["api_key"] is None


def test_profile_flag_reads_the_file(tmp_path: Path, connects: list[dict[str, Any]]) -> None:
    r = run("--config-file", _file(tmp_path), "--profile", "prod")
    assert r.exit_code == 1, r.output
    assert connects[-1]["target"] == "prod:7233" and connects[-1]["namespace"] == "prod-ns"
    assert connects[-1]["api_key"] == "key-from-file" and connects[-1]["tls"] == TLSConfig(domain="prod.internal")


def test_default_file_and_default_profile(tmp_path: Path, connects: list[dict[str, Any]]) -> None:
    (tmp_path / "xdg" / "spindle").mkdir(parents=True)
    (tmp_path / "xdg" / "spindle" / "spindle.toml").write_text(_FILE)
    assert run().exit_code == 1
    assert connects[-1]["target"] == "file-default:7233" and connects[-1]["namespace"] == "file-ns"


def test_precedence_flags_then_environment_then_profile(tmp_path: Path, connects: list[dict[str, Any]]) -> None:
    f = _file(tmp_path)
    env = {"SPINDLE_CONFIG_FILE": f, "SPINDLE_PROFILE": "prod", "SPINDLE_NAMESPACE": "env-ns",
           "TEMPORAL_NAMESPACE": "temporal-ns", "TEMPORAL_ADDRESS": "temporal:7233"}
    assert run(env=env).exit_code == 1
    assert (connects[-1]["target"], connects[-1]["namespace"]) == ("temporal:7233", "env-ns")
    assert run("--address", "flag:1", "-n", "flag-ns", env=env).exit_code == 1
    assert (connects[-1]["target"], connects[-1]["namespace"]) == ("flag:1", "flag-ns")
    # an env API key wins over the file's, a --tls flag replaces the profile's TLS settings
    assert run("--tls", env={**env, "SPINDLE_API_KEY": "env-key"}).exit_code == 1
    assert connects[-1]["api_key"] == "env-key" and connects[-1]["tls"] is True


def test_tls_variable_overrides_the_profile_tls_field(tmp_path: Path, connects: list[dict[str, Any]]) -> None:
    env = {"TEMPORAL_TLS_SERVER_NAME": "other.internal"}
    assert run("--config-file", _file(tmp_path), "--profile", "prod", env=env).exit_code == 1
    assert connects[-1]["tls"] == TLSConfig(domain="other.internal")


@pytest.mark.parametrize("text, args, message", [
    ("[profile.prod\n", ("--profile", "prod"), "not valid TOML"),
    ('[profile.prod]\nnamespace = 1\n', ("--profile", "prod"), "[profile.prod] namespace: expected a string, got int 1"),
    (_FILE, ("--profile", "staging"), "no profile 'staging' (profiles in the file: default, prod)"),
])
def test_bad_profile_file_exits_2_naming_file_profile_and_key(tmp_path: Path, connects: list[dict[str, Any]],
                                                              text: str, args: tuple[str, ...], message: str) -> None:
    f = _file(tmp_path, text)
    r = run("--config-file", f, *args)
    assert r.exit_code == 2, r.output
    assert f in r.output and message in r.output
    assert connects == []  # refused before connecting


def test_missing_config_file_is_named(tmp_path: Path, connects: list[dict[str, Any]]) -> None:
    r = run("--config-file", str(tmp_path / "nope.toml"))
    assert r.exit_code == 2 and f"{tmp_path / 'nope.toml'}: cannot read the client config file" in r.output
    assert connects == []
