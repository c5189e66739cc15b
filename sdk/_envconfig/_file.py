"""Reading the client profile file (TOML): where it is, and checking each key's type.

One rule for the file's shape (``PROFILE_KEYS`` / ``TLS_KEYS``), used by :mod:`spindle.envconfig`
and, through it, by the ``spindle`` command line.
"""

from __future__ import annotations

import os
import tomllib

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["PROFILE_KEYS", "TLS_KEYS", "ProfileFileError", "default_config_file", "read_profiles", "check_profile"]

#: Keys of ``[profile.NAME]`` and the Python type each holds (tables are checked separately).
PROFILE_KEYS: dict[str, type] = {"address": str, "namespace": str, "api_key": str}
#: Keys of ``[profile.NAME.tls]``.
TLS_KEYS: dict[str, type] = {"disabled": bool, "server_name": str, "server_ca_cert_path": str, "server_ca_cert_data": str,
                             "client_cert_path": str, "client_cert_data": str, "client_key_path": str,
                             "client_key_data": str}
#: Tables Temporal's file may hold that Spindle reads but does not use (so a Temporal file loads).
_IGNORED_TABLES = ("codec",)


class ProfileFileError(ValueError):
    """The profile file cannot be read, is not TOML, or a key has the wrong type; the message names
    the file, the profile and the key."""


def default_config_file(env: Mapping[str, str]) -> Path | None:
    """``$SPINDLE_CONFIG_FILE``, else ``$TEMPORAL_CONFIG_FILE``, else ``$XDG_CONFIG_HOME/spindle/spindle.toml``
    (``~/.config/spindle/spindle.toml``) when that file exists, else None."""
    for name in ("SPINDLE_CONFIG_FILE", "TEMPORAL_CONFIG_FILE"):
        if env.get(name):
            return Path(env[name])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = Path(base) / "spindle" / "spindle.toml"
    return path if path.is_file() else None


def read_profiles(source: Path | str | bytes, *, strict: bool) -> dict[str, dict[str, Any]]:
    """The checked ``[profile.*]`` tables of a file (``Path``) or of TOML text (``str`` / ``bytes``).

    Raises:
        ProfileFileError: the file cannot be read, is not TOML, ``profile`` is not a table of
            tables, or a key has the wrong type (or, with ``strict``, is unknown).
    """
    where = str(source) if isinstance(source, Path) else "<config data>"
    if isinstance(source, Path):
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as e:
            raise ProfileFileError(f"{where}: cannot read the client config file: {e.strerror or e}") from None
    else:
        text = source.decode("utf-8") if isinstance(source, bytes) else source
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileFileError(f"{where}: not valid TOML: {e}") from None
    extra = sorted(set(data) - {"profile"})
    if strict and extra:
        raise ProfileFileError(f"{where}: unknown top-level key {extra[0]!r} (only [profile.NAME] tables)")
    profiles = data.get("profile", {})
    if not isinstance(profiles, dict):
        raise ProfileFileError(f"{where}: 'profile' must be a table of [profile.NAME] tables")
    out: dict[str, dict[str, Any]] = {}
    for name, table in profiles.items():
        if not isinstance(table, dict):
            raise ProfileFileError(f"{where}: profile {name!r} must be a table ([profile.{name}])")
        out[name] = check_profile(table, where=where, profile=name, strict=strict)
    return out


def check_profile(table: Mapping[str, Any], *, where: str, profile: str, strict: bool) -> dict[str, Any]:
    """``table`` with every known key type-checked; unknown keys raise with ``strict``, else are dropped.

    Raises:
        ProfileFileError: naming ``where``, the profile and the key.
    """
    out: dict[str, Any] = {}
    for key, value in table.items():
        at = f"{where}: [profile.{profile}] {key}"
        if key in PROFILE_KEYS:
            _check_type(at, value, PROFILE_KEYS[key])
            out[key] = value
        elif key == "tls":
            if not isinstance(value, dict):
                raise ProfileFileError(f"{at}: must be a table ([profile.{profile}.tls])")
            out[key] = _check_table(value, TLS_KEYS, f"{where}: [profile.{profile}.tls]", strict)
        elif key == "grpc_meta":
            if not isinstance(value, dict):
                raise ProfileFileError(f"{at}: must be a table ([profile.{profile}.grpc_meta])")
            for meta_key, meta_value in value.items():
                _check_type(f"{where}: [profile.{profile}.grpc_meta] {meta_key}", meta_value, str)
            out[key] = dict(value)
        elif key in _IGNORED_TABLES:
            continue
        elif strict:
            raise ProfileFileError(f"{at}: unknown key (known: {', '.join([*PROFILE_KEYS, 'tls', 'grpc_meta'])})")
    return out


def _check_table(table: Mapping[str, Any], keys: Mapping[str, type], at: str, strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in keys:
            if strict:
                raise ProfileFileError(f"{at} {key}: unknown key (known: {', '.join(keys)})")
            continue
        _check_type(f"{at} {key}", value, keys[key])
        out[key] = value
    return out


def _check_type(at: str, value: Any, expected: type) -> None:
    if not isinstance(value, expected):
        want = "true or false" if expected is bool else "a string"
        raise ProfileFileError(f"{at}: expected {want}, got {type(value).__name__} {value!r}")
