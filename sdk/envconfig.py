"""Client connection settings from the environment, shaped as ``temporalio.envconfig``.

Code ported from Temporal connects with::

    config = ClientConfig.load_client_connect_config()
    config.setdefault("target_host", "localhost:7233")
    client = await Client.connect(**config)

Spindle reads the same environment variables as its command line: ``SPINDLE_ADDRESS``
(-> ``target_host``), ``SPINDLE_NAMESPACE`` (-> ``namespace``), ``SPINDLE_API_KEY``
(-> ``api_key``) and the TLS settings
(-> ``tls``, a :class:`spindle.service.TLSConfig` or ``True``): ``SPINDLE_TLS`` (``true``: TLS with
the default roots; ``false``: off), ``SPINDLE_TLS_CA_FILE`` (the server's CA),
``SPINDLE_TLS_CERT_FILE`` + ``SPINDLE_TLS_KEY_FILE`` (a client certificate, mutual TLS) and
``SPINDLE_TLS_SERVER_NAME`` (the name the server's certificate is checked against); any of
the last four turns TLS on. The files are read when the config is loaded. Temporal's TOML
profiles (``temporal.toml``) and ``TEMPORAL_*`` variables are not read: a variable meant for
a Temporal cluster must not silently point a Spindle client at it.
"""

from __future__ import annotations

import os

from collections.abc import Mapping
from typing import TypedDict

from spindle.client._tls import TLSConfig, tls_from_env

__all__ = ["ClientConfig", "ClientConnectConfig"]


class ClientConnectConfig(TypedDict, total=False):
    """Keyword arguments for :meth:`spindle.client.Client.connect` (only the keys that were set)."""

    target_host: str
    namespace: str
    api_key: str
    tls: bool | TLSConfig


class ClientConfig:
    """Loads :class:`ClientConnectConfig` from the environment (see the module docstring)."""

    @staticmethod
    def load_client_connect_config(
        profile: str | None = None,
        *,
        config_file: str | None = None,
        disable_file: bool = False,
        disable_env: bool = False,
        config_file_strict: bool = False,
        override_env_vars: Mapping[str, str] | None = None,
    ) -> ClientConnectConfig:
        """The connect arguments the environment sets; keys that are not set are absent.

        Args:
            profile: accepted for Temporal compatibility; Spindle has no profiles, so it must be
                ``None`` or ``"default"``.
            config_file: not supported (Spindle has no client config file).
            disable_file: accepted and ignored (there is no file to read).
            disable_env: return an empty config without reading the environment.
            config_file_strict: accepted and ignored.
            override_env_vars: read these instead of ``os.environ``.

        Raises:
            ValueError: ``config_file`` or a profile other than the default was given, or a
                TLS variable is wrong (a file that cannot be read, a certificate without its
                key, ``SPINDLE_TLS=false`` with TLS files); the message names the variable.
        """
        if config_file is not None:
            raise ValueError(
                f"config_file={config_file!r}: Spindle reads no client config file; "
                "set SPINDLE_ADDRESS, SPINDLE_NAMESPACE and SPINDLE_API_KEY, or pass the arguments to Client.connect")
        if profile not in (None, "default"):
            raise ValueError(f"profile={profile!r}: Spindle has no client profiles (only the environment)")
        del disable_file, config_file_strict
        config: ClientConnectConfig = {}
        if disable_env:
            return config
        env = os.environ if override_env_vars is None else override_env_vars
        if env.get("SPINDLE_ADDRESS"):
            config["target_host"] = env["SPINDLE_ADDRESS"]
        if env.get("SPINDLE_NAMESPACE"):
            config["namespace"] = env["SPINDLE_NAMESPACE"]
        if env.get("SPINDLE_API_KEY"):
            config["api_key"] = env["SPINDLE_API_KEY"]
        tls = tls_from_env(env)
        if tls is not None:
            config["tls"] = tls
        return config
