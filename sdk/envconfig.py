"""Client connection settings from a TOML profile file and the environment, as ``temporalio.envconfig``.

Code ported from Temporal connects with::

    config = ClientConfig.load_client_connect_config()           # or (profile="prod", config_file="x.toml")
    config.setdefault("target_host", "localhost:7233")
    client = await Client.connect(**config)

**The file** (TOML, Temporal's keys)::

    [profile.default]
    address = "localhost:7233"
    namespace = "default"
    api_key = "spk_..."
    [profile.default.tls]            # any key here turns TLS on; disabled = true turns it off
    server_ca_cert_path = "ca.pem"   # or server_ca_cert_data = "-----BEGIN ..."
    client_cert_path = "client.pem"  # + client_key_path (mutual TLS); or *_data
    server_name = "spindle.internal"
    [profile.default.grpc_meta]      # read (ClientConfigProfile.grpc_meta) but not sent: see below

The file is ``config_file`` if given, else ``$SPINDLE_CONFIG_FILE``, else ``$TEMPORAL_CONFIG_FILE``,
else ``~/.config/spindle/spindle.toml`` (under ``$XDG_CONFIG_HOME`` when set) if it exists.
Temporal's own default file (``~/.config/temporalio/temporal.toml``) is not read unless named.
The profile is ``profile`` if given, else ``$SPINDLE_PROFILE``, else ``$TEMPORAL_PROFILE``, else
``default``; a profile that was named but is not in the file is an error, a missing ``default``
is an empty profile.

**The environment** overrides the file, key by key; for each setting the ``SPINDLE_*`` variable
wins over the ``TEMPORAL_*`` one: address ``SPINDLE_ADDRESS`` / ``TEMPORAL_ADDRESS``, namespace
``SPINDLE_NAMESPACE`` / ``TEMPORAL_NAMESPACE``, API key ``SPINDLE_API_KEY`` / ``TEMPORAL_API_KEY``,
TLS on/off ``SPINDLE_TLS`` / ``TEMPORAL_TLS``, CA ``SPINDLE_TLS_CA_FILE`` /
``TEMPORAL_TLS_SERVER_CA_CERT_PATH``, client certificate ``SPINDLE_TLS_CERT_FILE`` /
``TEMPORAL_TLS_CLIENT_CERT_PATH``, its key ``SPINDLE_TLS_KEY_FILE`` / ``TEMPORAL_TLS_CLIENT_KEY_PATH``,
server name ``SPINDLE_TLS_SERVER_NAME`` / ``TEMPORAL_TLS_SERVER_NAME``. So: arguments you pass to
``Client.connect`` > ``SPINDLE_*`` > ``TEMPORAL_*`` > the profile > Client.connect's defaults.

Differences from Temporal: an API key alone does not turn TLS on (a Spindle server may take
keys over plaintext on a private network; set ``tls`` to use it); ``grpc_meta`` is kept on the
profile but not put into the connect arguments (``Client.connect`` takes no extra metadata);
``[profile.*.codec]`` is accepted and ignored (Spindle's CLI takes ``--codec``). Files named in
TLS settings are read when the connect config is made.
"""

from __future__ import annotations

import os

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from spindle._envconfig._file import ProfileFileError, default_config_file, read_profiles
from spindle.client._tls import TLSConfig, env_bool
from spindle.client._tls import _read_pem as read_pem

__all__ = ["ClientConfig", "ClientConfigProfile", "ClientConfigTLS", "ClientConnectConfig", "DataSource",
           "ProfileFileError"]

#: A certificate or key: a :class:`~pathlib.Path` is a file to read, ``str`` / ``bytes`` is the PEM itself.
DataSource = Path | str | bytes

# setting -> (Spindle variable, Temporal variable); the Spindle one wins.
_ENV = {"address": ("SPINDLE_ADDRESS", "TEMPORAL_ADDRESS"), "namespace": ("SPINDLE_NAMESPACE", "TEMPORAL_NAMESPACE"),
        "api_key": ("SPINDLE_API_KEY", "TEMPORAL_API_KEY"), "tls": ("SPINDLE_TLS", "TEMPORAL_TLS"),
        "ca_file": ("SPINDLE_TLS_CA_FILE", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"),
        "cert_file": ("SPINDLE_TLS_CERT_FILE", "TEMPORAL_TLS_CLIENT_CERT_PATH"),
        "key_file": ("SPINDLE_TLS_KEY_FILE", "TEMPORAL_TLS_CLIENT_KEY_PATH"),
        "server_name": ("SPINDLE_TLS_SERVER_NAME", "TEMPORAL_TLS_SERVER_NAME")}


class ClientConnectConfig(TypedDict, total=False):
    """Keyword arguments for :meth:`spindle.client.Client.connect` (only the keys that were set)."""

    target_host: str
    namespace: str
    api_key: str
    tls: bool | TLSConfig


@dataclass(frozen=True)
class ClientConfigTLS:
    """A profile's ``tls`` table. Any certificate or ``server_name`` turns TLS on; ``disabled=True`` turns it off."""

    disabled: bool | None = None
    server_name: str | None = None
    server_root_ca_cert: DataSource | None = None
    client_cert: DataSource | None = None
    client_private_key: DataSource | None = None

    def to_connect_tls_config(self) -> bool | TLSConfig:
        """``tls`` for Client.connect: False when disabled, else a :class:`TLSConfig` (True when nothing is set).

        Raises:
            ValueError: a file cannot be read or is not PEM, a certificate without its key (or the reverse),
                or ``disabled`` with certificates.
        """
        return _tls_config(self, where="tls")

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> ClientConfigTLS:
        """From the TOML keys (``server_ca_cert_path`` / ``_data``, ``client_cert_*``, ``client_key_*``, ...)."""
        def source(stem: str) -> DataSource | None:
            if d.get(f"{stem}_path"):
                return Path(d[f"{stem}_path"])
            return d.get(f"{stem}_data") or None
        return ClientConfigTLS(disabled=d.get("disabled"), server_name=d.get("server_name"),
                               server_root_ca_cert=source("server_ca_cert"), client_cert=source("client_cert"),
                               client_private_key=source("client_key"))


@dataclass(frozen=True)
class ClientConfigProfile:
    """One ``[profile.NAME]`` of the file, after the environment's overrides when made by :meth:`load`."""

    address: str | None = None
    namespace: str | None = None
    api_key: str | None = None
    tls: ClientConfigTLS | None = None
    grpc_meta: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> ClientConfigProfile:
        """From a checked profile table (see :meth:`ClientConfig.load`)."""
        return ClientConfigProfile(address=d.get("address"), namespace=d.get("namespace"), api_key=d.get("api_key"),
                                   tls=ClientConfigTLS.from_dict(d["tls"]) if "tls" in d else None,
                                   grpc_meta=dict(d.get("grpc_meta", {})))

    def to_client_connect_config(self) -> ClientConnectConfig:
        """The connect arguments this profile sets; unset ones are absent (so ``setdefault`` works).

        Raises:
            ValueError: as :meth:`ClientConfigTLS.to_connect_tls_config`.
        """
        config: ClientConnectConfig = {}
        if self.address:
            config["target_host"] = self.address
        if self.namespace:
            config["namespace"] = self.namespace
        if self.api_key:
            config["api_key"] = self.api_key
        if self.tls is not None:
            config["tls"] = _tls_config(self.tls, where=getattr(self, "_where", "tls"))
        return config

    @staticmethod
    def load(profile: str | None = None, *, config_source: DataSource | None = None, disable_file: bool = False,
             disable_env: bool = False, config_file_strict: bool = False,
             override_env_vars: Mapping[str, str] | None = None) -> ClientConfigProfile:
        """The profile from the file (see the module docstring for which file and profile), then the environment's overrides.

        Raises:
            ProfileFileError: the file cannot be read or parsed, a key has the wrong type, or ``profile``
                (or ``$SPINDLE_PROFILE`` / ``$TEMPORAL_PROFILE``) is not in the file; the message names
                the file, the profile and the key.
            ValueError: an environment variable has a bad value (named).
        """
        env: Mapping[str, str] = {} if disable_env else (os.environ if override_env_vars is None else override_env_vars)
        name = profile or env.get("SPINDLE_PROFILE") or env.get("TEMPORAL_PROFILE") or None
        table: dict[str, Any] = {}
        where = "tls"
        if not disable_file:
            source = config_source if config_source is not None else default_config_file(env)
            if isinstance(source, str) and config_source is None:
                source = Path(source)
            if source is not None:
                profiles = read_profiles(source, strict=config_file_strict)
                label = str(source) if isinstance(source, Path) else "<config data>"
                if name is not None and name not in profiles:
                    known = ", ".join(sorted(profiles)) or "none"
                    raise ProfileFileError(f"{label}: no profile {name!r} (profiles in the file: {known})")
                table = profiles.get(name or "default", {})
                where = f"{label}: [profile.{name or 'default'}.tls]"
        elif name not in (None, "default"):
            raise ProfileFileError(f"profile {name!r} was asked for, but the config file is disabled")
        loaded = ClientConfigProfile.from_dict(table)
        result = _apply_env(loaded, env) if env else loaded
        object.__setattr__(result, "_where", where)
        return result


@dataclass(frozen=True)
class ClientConfig:
    """All the profiles of a file."""

    profiles: Mapping[str, ClientConfigProfile]

    @staticmethod
    def load(*, config_source: DataSource | None = None, config_file_strict: bool = False,
             override_env_vars: Mapping[str, str] | None = None) -> ClientConfig:
        """Every profile of ``config_source`` (a ``Path`` is a file, ``str`` / ``bytes`` TOML text), or of the
        default file (module docstring) when None; no file gives no profiles. The environment is not applied.

        Raises:
            ProfileFileError: the file cannot be read or parsed, or a key has the wrong type (naming file, profile, key).
        """
        env = os.environ if override_env_vars is None else override_env_vars
        source = config_source if config_source is not None else default_config_file(env)
        if source is None:
            return ClientConfig(profiles={})
        profiles = read_profiles(source, strict=config_file_strict)
        return ClientConfig(profiles={k: ClientConfigProfile.from_dict(v) for k, v in profiles.items()})

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
        """The connect arguments the profile and the environment set; keys that are not set are absent.

        Args:
            profile: the profile to read (default ``$SPINDLE_PROFILE``, ``$TEMPORAL_PROFILE``, ``default``).
            config_file: the TOML file (default: see the module docstring).
            disable_file: read no file (only the environment).
            disable_env: read no environment variable (only the file).
            config_file_strict: unknown keys in the file are errors (they are ignored otherwise).
            override_env_vars: read these instead of ``os.environ``.

        Raises:
            ProfileFileError: as :meth:`ClientConfigProfile.load`.
            ValueError: a variable or TLS setting is wrong (a file that cannot be read, a certificate
                without its key, TLS turned off with certificates); the message names it.
        """
        return ClientConfigProfile.load(
            profile, config_source=Path(config_file) if config_file is not None else None, disable_file=disable_file,
            disable_env=disable_env, config_file_strict=config_file_strict,
            override_env_vars=override_env_vars).to_client_connect_config()


def _env(env: Mapping[str, str], setting: str) -> tuple[str, str] | None:
    for var in _ENV[setting]:
        if env.get(var):
            return var, env[var]
    return None


def _apply_env(p: ClientConfigProfile, env: Mapping[str, str]) -> ClientConfigProfile:
    values: dict[str, Any] = {}
    for setting in ("address", "namespace", "api_key"):
        found = _env(env, setting)
        if found:
            values[setting] = found[1]
    tls = p.tls
    tls_env = {s: _env(env, s) for s in ("tls", "ca_file", "cert_file", "key_file", "server_name")}
    if any(tls_env.values()):
        base = tls or ClientConfigTLS()
        switch = tls_env["tls"]
        disabled = (not env_bool(env, switch[0])) if switch else base.disabled
        tls = ClientConfigTLS(
            disabled=disabled,
            server_name=tls_env["server_name"][1] if tls_env["server_name"] else base.server_name,
            server_root_ca_cert=Path(tls_env["ca_file"][1]) if tls_env["ca_file"] else base.server_root_ca_cert,
            client_cert=Path(tls_env["cert_file"][1]) if tls_env["cert_file"] else base.client_cert,
            client_private_key=Path(tls_env["key_file"][1]) if tls_env["key_file"] else base.client_private_key)
        keys = {"tls": "disabled", "ca_file": "server_ca_cert", "cert_file": "client_cert", "key_file": "client_key",
                "server_name": "server_name"}
        family = 1 if all(found is None or found[0].startswith("TEMPORAL_") for found in tls_env.values()) else 0
        # a setting from the environment is named by its variable; so is one missing from both (the variable to set)
        unset = {"tls": base.disabled is None, "ca_file": base.server_root_ca_cert is None,
                 "cert_file": base.client_cert is None, "key_file": base.client_private_key is None,
                 "server_name": base.server_name is None}
        object.__setattr__(tls, "_env_names", {keys[s]: found[0] if found else _ENV[s][family]
                                               for s, found in tls_env.items() if found or unset[s]})
    return ClientConfigProfile(address=values.get("address", p.address), namespace=values.get("namespace", p.namespace),
                               api_key=values.get("api_key", p.api_key), tls=tls, grpc_meta=p.grpc_meta)


def _tls_config(tls: ClientConfigTLS, *, where: str) -> bool | TLSConfig:
    env_names: Mapping[str, str] = getattr(tls, "_env_names", {})

    def name(key: str, value: Any = None) -> str:
        if key in env_names:
            return env_names[key]
        suffix = "" if value is None else ("_path" if isinstance(value, Path) else "_data")
        return f"{where} {key}{suffix}"

    def pem(value: DataSource | None, key: str) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, Path):
            return read_pem(str(value), name(key, value))
        return value.encode() if isinstance(value, str) else value

    fields = (("server_ca_cert", tls.server_root_ca_cert), ("client_cert", tls.client_cert),
              ("client_key", tls.client_private_key), ("server_name", tls.server_name))
    given = [name(k, v if k != "server_name" else None).removeprefix(f"{where} ") for k, v in fields if v]
    if tls.disabled:
        if given:
            raise ValueError(f"{name('disabled')} turns TLS off, but {', '.join(given)} {'is' if len(given) == 1 else 'are'} set")
        return False
    if bool(tls.client_cert) != bool(tls.client_private_key):
        second = name("client_key", tls.client_private_key or tls.client_cert).removeprefix(f"{where} ")
        raise ValueError(f"{name('client_cert', tls.client_cert or tls.client_private_key)} and {second} go together "
                         "(mutual TLS needs both)")
    if not given:
        return True
    return TLSConfig(server_root_ca_cert=pem(tls.server_root_ca_cert, "server_ca_cert"), domain=tls.server_name or None,
                     client_cert=pem(tls.client_cert, "client_cert"),
                     client_private_key=pem(tls.client_private_key, "client_key"))
