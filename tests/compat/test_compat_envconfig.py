"""``spindle.envconfig``: the connection lines every Temporal sample starts with."""

from __future__ import annotations

import pytest

from spindle.envconfig import ClientConfig


def test_reads_spindle_variables_only() -> None:
    env = {"SPINDLE_ADDRESS": "10.0.0.5:7233", "SPINDLE_NAMESPACE": "orders",
           "TEMPORAL_ADDRESS": "temporal.example:7233", "TEMPORAL_NAMESPACE": "other"}
    config = ClientConfig.load_client_connect_config(override_env_vars=env)
    assert config == {"target_host": "10.0.0.5:7233", "namespace": "orders"}


def test_the_api_key_comes_from_spindle_api_key_not_temporal_api_key() -> None:
    env = {"SPINDLE_API_KEY": "spk_0123456789abcdef_" + "a" * 43, "TEMPORAL_API_KEY": "temporal-secret"}
    config = ClientConfig.load_client_connect_config(override_env_vars=env)
    assert config == {"api_key": env["SPINDLE_API_KEY"]}


def test_unset_keys_are_absent_so_setdefault_works() -> None:
    config = ClientConfig.load_client_connect_config(override_env_vars={"TEMPORAL_ADDRESS": "x:1"})
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


@pytest.mark.parametrize("kwargs, message", [
    ({"config_file": "temporal.toml"}, "config_file='temporal.toml': Spindle reads no client config file"),
    ({"profile": "prod"}, "profile='prod': Spindle has no client profiles"),
])
def test_temporal_files_and_profiles_are_refused_clearly(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClientConfig.load_client_connect_config(**kwargs)
