"""``spindle.envconfig``: the connection lines every Temporal sample starts with."""

from __future__ import annotations

import re

from pathlib import Path

import pytest

from spindle.client import Client
from spindle.envconfig import ClientConfig, ClientConfigProfile, ClientConfigTLS, ProfileFileError
from spindle.exceptions import RPCError
from spindle.service import TLSConfig


def test_spindle_variables_win_over_temporal_ones() -> None:
    env = {"SPINDLE_ADDRESS": "10.0.0.5:7233", "SPINDLE_NAMESPACE": "orders",
           "TEMPORAL_ADDRESS": "temporal.example:7233", "TEMPORAL_NAMESPACE": "other"}
    config = ClientConfig.load_client_connect_config(override_env_vars=env)
    assert config == {"target_host": "10.0.0.5:7233", "namespace": "orders"}


def test_temporal_variables_are_read_when_no_spindle_one_is_set() -> None:
    env = {"TEMPORAL_ADDRESS": "temporal.example:7233", "TEMPORAL_API_KEY": "temporal-secret"}
    config = ClientConfig.load_client_connect_config(override_env_vars=env)
    assert config == {"target_host": "temporal.example:7233", "api_key": "temporal-secret"}


def test_unset_keys_are_absent_so_setdefault_works() -> None:
    config = ClientConfig.load_client_connect_config(override_env_vars={"SPINDLE_NAMESPACE": ""})
    assert config == {}
    config.setdefault("target_host", "localhost:7233")
    assert config == {"target_host": "localhost:7233"}
    assert ClientConfig.load_client_connect_config(disable_env=True,
                                                   override_env_vars={"SPINDLE_ADDRESS": "a:1"}) == {}


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPINDLE_ADDRESS", "127.0.0.1:9999")
    monkeypatch.delenv("SPINDLE_NAMESPACE", raising=False)
    monkeypatch.delenv("SPINDLE_API_KEY", raising=False)
    assert ClientConfig.load_client_connect_config() == {"target_host": "127.0.0.1:9999"}


def test_unknown_profile_is_refused_naming_file_and_profile(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[profile.default]\naddress = "a:1"\n[profile.staging]\naddress = "b:1"\n')
    with pytest.raises(ProfileFileError, match=rf"{f}: no profile 'prod' \(profiles in the file: default, staging\)"):
        ClientConfig.load_client_connect_config(profile="prod", config_file=str(f), override_env_vars={})


# --- profile files, as the env_config samples use them -----------------------------------------------------

_SAMPLE = """
[profile.default]
address = "localhost:7233"
namespace = "default"
[profile.default.grpc_meta]
my-custom-header = "development-value"

[profile.staging]
address = "localhost:9999"
namespace = "staging"

[profile.prod]
address = "prod.example:7233"
namespace = "prod-ns"
api_key = "k-123"
[profile.prod.tls]
server_name = "spindle.internal"
[profile.prod.codec]
endpoint = "http://codec"
"""


def _file(tmp_path: Path, text: str = _SAMPLE) -> Path:
    f = tmp_path / "config.toml"
    f.write_text(text)
    return f


def test_load_from_file_reads_the_default_profile(tmp_path: Path) -> None:
    config = ClientConfig.load_client_connect_config(config_file=str(_file(tmp_path)), override_env_vars={})
    assert config == {"target_host": "localhost:7233", "namespace": "default"}


def test_load_profile_then_override_programmatically(tmp_path: Path) -> None:
    config = ClientConfig.load_client_connect_config(profile="staging", config_file=str(_file(tmp_path)),
                                                     override_env_vars={})
    config["target_host"] = "localhost:7233"
    assert config == {"target_host": "localhost:7233", "namespace": "staging"}


def test_profile_tls_table_and_api_key(tmp_path: Path) -> None:
    config = ClientConfig.load_client_connect_config(profile="prod", config_file=str(_file(tmp_path)),
                                                     override_env_vars={})
    assert config == {"target_host": "prod.example:7233", "namespace": "prod-ns", "api_key": "k-123",
                      "tls": TLSConfig(domain="spindle.internal")}


def test_client_config_load_lists_every_profile(tmp_path: Path) -> None:
    cfg = ClientConfig.load(config_source=_file(tmp_path))
    assert set(cfg.profiles) == {"default", "staging", "prod"}
    assert cfg.profiles["default"].grpc_meta == {"my-custom-header": "development-value"}
    assert cfg.profiles["prod"].tls == ClientConfigTLS(server_name="spindle.internal")
    # TOML text (str) works as well as a Path
    assert ClientConfig.load(config_source='[profile.x]\naddress = "h:1"\n').profiles == {
        "x": ClientConfigProfile(address="h:1")}


def test_profile_and_file_from_environment_and_env_overrides_the_file(tmp_path: Path) -> None:
    f = _file(tmp_path)
    env = {"TEMPORAL_CONFIG_FILE": str(f), "TEMPORAL_PROFILE": "staging", "SPINDLE_NAMESPACE": "from-env"}
    assert ClientConfig.load_client_connect_config(override_env_vars=env) == {
        "target_host": "localhost:9999", "namespace": "from-env"}
    env = {"SPINDLE_CONFIG_FILE": str(f), "SPINDLE_PROFILE": "prod", "TEMPORAL_PROFILE": "staging"}
    assert ClientConfig.load_client_connect_config(override_env_vars=env)["namespace"] == "prod-ns"
    profile = ClientConfigProfile.load(config_source=f, override_env_vars={"TEMPORAL_ADDRESS": "t:1"})
    assert profile.address == "t:1" and profile.namespace == "default"


def test_default_file_location_is_under_xdg_config_home(tmp_path: Path) -> None:
    (tmp_path / "spindle").mkdir()
    (tmp_path / "spindle" / "spindle.toml").write_text('[profile.default]\nnamespace = "xdg"\n')
    assert ClientConfig.load_client_connect_config(override_env_vars={"XDG_CONFIG_HOME": str(tmp_path)}) == {
        "namespace": "xdg"}
    assert ClientConfig.load_client_connect_config(disable_file=True,
                                                   override_env_vars={"XDG_CONFIG_HOME": str(tmp_path)}) == {}


@pytest.mark.parametrize("text, message", [
    ('[profile.default\naddress = "x"', r"not valid TOML"),
    ('[profile.prod]\naddress = 7233\n', r"\[profile.prod\] address: expected a string, got int 7233"),
    ('[profile.prod.tls]\ndisabled = "no"\n', r"\[profile.prod.tls\] disabled: expected true or false, got str 'no'"),
    ('[profile.prod]\ntls = "yes"\n', r"\[profile.prod\] tls: must be a table"),
])
def test_bad_file_gives_an_error_naming_file_profile_and_key(tmp_path: Path, text: str, message: str) -> None:
    f = _file(tmp_path, text)
    with pytest.raises(ProfileFileError, match=re.escape(str(f)) + ".*" + message):
        ClientConfig.load_client_connect_config(profile="prod", config_file=str(f), override_env_vars={})


def test_unknown_keys_are_errors_only_when_strict(tmp_path: Path) -> None:
    f = _file(tmp_path, '[profile.default]\nadress = "typo:1"\n')
    assert ClientConfig.load_client_connect_config(config_file=str(f), override_env_vars={}) == {}
    with pytest.raises(ProfileFileError, match=r"\[profile.default\] adress: unknown key"):
        ClientConfig.load_client_connect_config(config_file=str(f), config_file_strict=True, override_env_vars={})


def test_tls_disabled_with_certificates_is_refused(tmp_path: Path) -> None:
    f = _file(tmp_path, '[profile.default.tls]\ndisabled = true\nserver_name = "x"\n')
    with pytest.raises(ValueError, match=r"\[profile.default.tls\] disabled turns TLS off, but server_name is set"):
        ClientConfig.load_client_connect_config(config_file=str(f), override_env_vars={})
    f.write_text('[profile.default.tls]\ndisabled = true\n')
    assert ClientConfig.load_client_connect_config(config_file=str(f), override_env_vars={}) == {"tls": False}


def test_unreadable_certificate_file_is_named(tmp_path: Path) -> None:
    f = _file(tmp_path, f'[profile.default.tls]\nserver_ca_cert_path = "{tmp_path}/missing.pem"\n')
    with pytest.raises(ValueError, match=r"\[profile.default.tls\] server_ca_cert_path: cannot read .*missing.pem"):
        ClientConfig.load_client_connect_config(config_file=str(f), override_env_vars={})


async def test_a_profile_with_mutual_tls_connects_to_a_tls_server(tmp_path: Path) -> None:
    from tls_certs import CertificateAuthority

    from spindle.controlplane._tls import ServerTLS
    from spindle.controlplane.server import ControlPlane, serve
    from spindle.controlplane.store.sqlite import SqliteStore

    ca = CertificateAuthority("Spindle Test CA")
    ca_file = ca.write(tmp_path)
    server_cert, server_key = ca.issue_server().write(tmp_path, "server")
    client_cert, client_key = ca.issue("worker-a", organization="Acme").write(tmp_path, "client")
    cp = ControlPlane(SqliteStore(str(tmp_path / "tls.db")))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0, tls=ServerTLS(str(server_cert), str(server_key), str(ca_file)))
    try:
        f = _file(tmp_path, f"""
[profile.secure]
address = "127.0.0.1:{port}"
[profile.secure.tls]
server_ca_cert_path = "{ca_file}"
client_cert_path = "{client_cert}"
client_key_path = "{client_key}"
""")
        config = ClientConfig.load_client_connect_config(profile="secure", config_file=str(f), override_env_vars={})
        client = await Client.connect(**config)
        assert await client.count_workflows() == 0
        # the same profile without the client certificate is refused by the mutual-TLS server
        f.write_text(f.read_text().replace(f'client_cert_path = "{client_cert}"\n', "").replace(
            f'client_key_path = "{client_key}"\n', ""))
        bare = ClientConfig.load_client_connect_config(profile="secure", config_file=str(f), override_env_vars={})
        with pytest.raises(RPCError):
            c2 = await Client.connect(**bare)
            await c2.count_workflows()
    finally:
        await server.stop(None)
        await cp.stop()


def test_a_certificate_without_its_key_is_named_once(tmp_path: Path) -> None:
    f = _file(tmp_path, f'[profile.default.tls]\nclient_cert_path = "{tmp_path}/c.pem"\n')
    with pytest.raises(ValueError, match=re.escape(f"{f}: [profile.default.tls] client_cert_path and client_key_path "
                                                   "go together")):
        ClientConfig.load_client_connect_config(config_file=str(f), override_env_vars={})
