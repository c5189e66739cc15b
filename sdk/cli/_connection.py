"""The connection flags of the client commands, and running a command body with a connected client.

Every client command talks to a server (``--address``, default 127.0.0.1:7233) or an
embedded database (``--address embedded:PATH``), in ``--namespace`` (``-n``, default
``default``), with an API key when the server requires keys.

The API key: ``--api-key-file PATH`` (the file's text, one trailing newline stripped) or
``$SPINDLE_API_KEY``; ``--api-key KEY`` still works but prints a one-line warning, since a
command line is readable by every user of the machine (``ps``, ``/proc/PID/cmdline``), while
a process's environment and a mode-600 file are not. :func:`resolve_connection_settings` is
the one place a command's connection settings are resolved from its flags and the
environment (flags win).

Client profiles: ``--profile NAME`` and ``--config-file PATH`` read the TOML profile file of
:mod:`spindle.envconfig` (the same file, keys and variables as ``ClientConfig.load_client_connect_config``).
Each setting comes from its flag, else the environment (``SPINDLE_ADDRESS``, ``SPINDLE_NAMESPACE``,
``SPINDLE_API_KEY``, the TLS variables; then their ``TEMPORAL_*`` names), else the profile, else the
default. TLS is taken as a whole: from the ``--tls*`` flags (each else its ``SPINDLE_TLS*`` variable)
when any is given, else from the profile's ``tls`` table with the TLS variables over it.

TLS: ``--tls`` (TLS with the default roots), ``--tls-ca FILE`` (the server's CA),
``--tls-cert FILE`` + ``--tls-key FILE`` (a client certificate: mutual TLS),
``--tls-server-name NAME``. Each defaults to its environment variable (``SPINDLE_TLS``,
``SPINDLE_TLS_CA_FILE``, ``SPINDLE_TLS_CERT_FILE``, ``SPINDLE_TLS_KEY_FILE``,
``SPINDLE_TLS_SERVER_NAME``: the names ``spindle.envconfig`` and the Terraform provider
read); a flag wins over its variable.

Commands that show payloads take ``--codec MODULE:FACTORY`` (repeatable, in encoding order):
the payload codecs the workers use, so that inputs are encoded as the workers expect and
results, queries, histories and descriptions are shown decoded (``FACTORY`` is a
``PayloadCodec``, or a callable returning one or a list of them).

A command's body runs through :meth:`Connection.run`, which maps what can go wrong onto the
exit codes of :mod:`spindle.cli._output`: a bad flag value (exit 2), the server's refusal,
an unreachable server or a payload that cannot be decoded (exit 1).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from spindle.cli._output import CommandFailed, fail
from spindle.cli._user_modules import UserModuleError, import_user_module

if TYPE_CHECKING:
    from spindle.client import Client
    from spindle.converter import PayloadCodec

__all__ = ["API_KEY_ENV", "Connection", "client_options", "connection_from_flags", "load_codecs", "read_api_key_file",
           "resolve_connection_settings", "tls_from_flags", "tls_options"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_ADDRESS = "127.0.0.1:7233"

#: The TLS flags, by the key ``spindle.client``'s TLS settings use.
TLS_FLAGS = {"tls": "--tls", "ca_file": "--tls-ca", "cert_file": "--tls-cert", "key_file": "--tls-key",
             "server_name": "--tls-server-name"}


#: The environment variable holding the API key (what ``spindle.envconfig`` and the Terraform provider read too).
API_KEY_ENV = "SPINDLE_API_KEY"

#: The warning ``--api-key KEY`` prints (stderr, one line).
LITERAL_KEY_WARNING = ("spindle: warning: --api-key puts the key on the command line, where any user of this machine "
                       f"can read it (ps, /proc/PID/cmdline); use --api-key-file PATH or ${API_KEY_ENV} instead")


def read_api_key_file(path: str) -> str:
    """The API key held in ``path``: its UTF-8 text without the trailing newline.

    A file that group or other users may read works, with a one-line warning on stderr (a
    Kubernetes secret volume is mode 644 by default; refusing it would push users back to
    ``--api-key``).

    Raises:
        CliError: the file is missing, unreadable, not UTF-8, empty, or holds more than one line
            (exit status 2; the message names ``--api-key-file`` and the path).
    """
    where = f"--api-key-file {path}"
    try:
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            raw = f.read(64 * 1024 + 1)
    except OSError as e:
        fail(f"{where}: cannot read the file: {e.strerror or e}")
    if len(raw) > 64 * 1024:
        fail(f"{where}: the file is over 64 KiB; it should hold one API key")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        fail(f"{where}: the file is not UTF-8 text")
    key = text[:-1] if text.endswith("\n") else text
    key = key[:-1] if key.endswith("\r") else key
    if not key.strip():
        fail(f"{where}: the file is empty; it should hold the API key (spk_...)")
    if "\n" in key or "\r" in key:
        fail(f"{where}: the file holds more than one line; it should hold only the API key")
    if mode & 0o077:
        click.echo(f"spindle: warning: {where} may be read by other users (mode {mode & 0o777:03o}); "
                   "chmod 600 it", err=True)
    return key


def resolve_connection_settings(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A command's connection flags with the values it connects with: flags first, then the environment.

    ``flags`` holds the parsed flag values (``api_key``, ``api_key_file``, and any other
    connection flag, passed through). The result has ``api_key`` resolved (``--api-key-file``,
    else ``--api-key`` with a warning, else ``$SPINDLE_API_KEY``; an empty value counts as
    unset) and no ``api_key_file``.

    Raises:
        CliError: ``--api-key`` and ``--api-key-file`` both given, or a key file that cannot be
            used (:func:`read_api_key_file`); exit status 2.
    """
    env = os.environ if env is None else env
    out = dict(flags)
    literal, path = out.pop("api_key", None) or None, out.pop("api_key_file", None)
    if literal is not None and path is not None:
        fail("--api-key and --api-key-file exclude each other: give one (prefer --api-key-file)")
    if path is not None:
        out["api_key"] = read_api_key_file(path)
    elif literal is not None:
        click.echo(LITERAL_KEY_WARNING, err=True)
        out["api_key"] = literal
    else:
        out["api_key"] = env.get(API_KEY_ENV) or None
    return out


def api_key_option(f: F) -> F:
    """``--api-key-file PATH`` and ``--api-key KEY`` (default ``$SPINDLE_API_KEY``), as the parameter ``api_key``.

    The command receives the resolved key (:func:`resolve_connection_settings`), never the file name.
    """

    @functools.wraps(f)
    def command(**params: Any) -> Any:
        resolved = resolve_connection_settings({"api_key": params.pop("api_key", None),
                                                "api_key_file": params.pop("api_key_file", None)})
        return f(api_key=resolved["api_key"], **params)

    wrapped: Any = click.option("--api-key-file", metavar="PATH", default=None,
                                help="read the API key from this file (one line; keep it mode 600)")(command)
    wrapped = click.option("--api-key", default=None, metavar="KEY", show_default=False,
                           help=f"API key, spk_... (default: ${API_KEY_ENV}); visible to other users in ps: "
                                "prefer --api-key-file or the variable")(wrapped)
    return wrapped


def tls_options(f: F) -> F:
    """The TLS flags (module docstring), as parameters ``tls``, ``tls_ca``, ``tls_cert``, ``tls_key``, ``tls_server_name``."""
    for option in reversed([
        click.option("--tls", is_flag=True, default=False,
                     help="connect with TLS (implied by any other --tls-* flag; env SPINDLE_TLS)"),
        click.option("--tls-ca", metavar="FILE", default=None,
                     help="PEM CA the server's certificate must chain to (env SPINDLE_TLS_CA_FILE)"),
        click.option("--tls-cert", metavar="FILE", default=None,
                     help="PEM client certificate for mutual TLS; needs --tls-key (env SPINDLE_TLS_CERT_FILE)"),
        click.option("--tls-key", metavar="FILE", default=None,
                     help="PEM private key of --tls-cert (env SPINDLE_TLS_KEY_FILE)"),
        click.option("--tls-server-name", metavar="NAME", default=None,
                     help="name the server's certificate is checked against (env SPINDLE_TLS_SERVER_NAME)"),
    ]):
        f = option(f)
    return f


def codec_option(f: F) -> F:
    """``--codec MODULE:FACTORY`` (repeatable), as the parameter ``codec`` (a tuple)."""
    return click.option("--codec", multiple=True, metavar="MODULE:FACTORY",
                        help="a payload codec the workers use, e.g. myapp.codecs:make_codec (a PayloadCodec or a "
                             "callable returning one or a list); repeat for a chain, in encoding order")(f)


def tls_from_flags(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Any:
    """``tls`` for ``Client.connect`` from the TLS flags' values (``tls``, ``tls_ca``, ...), each else its variable.

    Returns None (not said: plaintext), True (the default roots), False (off) or a
    ``TLSConfig``.

    Raises:
        ValueError: a file cannot be read or is not PEM, a certificate without its key, TLS
            turned off (``SPINDLE_TLS=false``) with files; the message names the flag or variable.
    """
    # No public function merges flags with the environment and names the flag in errors:
    # this is the one the SDK's own environment loader uses (spindle.envconfig).
    from spindle.client._tls import ENV_VARS, env_bool, tls_from_files

    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    for key, flag in TLS_FLAGS.items():
        value = flags.get(flag[2:].replace("-", "_"))
        if key == "tls" and not value:
            value = None  # a bare flag: absent means "not said", so SPINDLE_TLS still counts
        if value is None:  # not on the command line: its variable (named in errors only when it is set)
            value = env_bool(env, ENV_VARS[key]) if key == "tls" else env.get(ENV_VARS[key]) or None
            names[key] = ENV_VARS[key] if value is not None else flag
        else:
            names[key] = flag
        values[key] = value
    return tls_from_files(enabled=values["tls"], ca_file=values["ca_file"], cert_file=values["cert_file"],
                          key_file=values["key_file"], server_name=values["server_name"], names=names)


def load_codecs(specs: Sequence[str]) -> list[PayloadCodec]:
    """The codecs named by ``--codec MODULE:FACTORY`` values, in order.

    Raises:
        CliError: a malformed value, a module that cannot be imported, a missing attribute,
            a factory that fails, or something that is not a ``PayloadCodec`` (exit status 2).
    """
    from spindle.converter import PayloadCodec

    codecs: list[PayloadCodec] = []
    for spec in specs:
        flag = f"--codec {spec!r}"
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            fail(f"{flag}: expected MODULE:FACTORY, e.g. myapp.codecs:make_codec")
        try:
            obj: Any = import_user_module(module_name, flag)
        except UserModuleError as e:
            fail(str(e))
        for part in attr.split("."):
            if not hasattr(obj, part):
                fail(f"{flag}: {module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
        if not isinstance(obj, PayloadCodec):
            if not callable(obj):
                fail(f"{flag}: {attr!r} is a {type(obj).__name__}, not a PayloadCodec or a factory")
            try:
                obj = obj()
            except Exception as e:  # noqa: BLE001 - the user's factory: report, do not crash
                fail(f"{flag}: calling {attr}() failed: {type(e).__name__}: {e}")
        made = list(obj) if isinstance(obj, (list, tuple)) else [obj]
        for codec in made:
            if not isinstance(codec, PayloadCodec):
                fail(f"{flag}: {attr} gave a {type(codec).__name__}, not a PayloadCodec")
        codecs.extend(made)
    return codecs


@dataclasses.dataclass(frozen=True)
class Connection:
    """Where and how a client command connects (the values of :func:`client_options`)."""

    address: str = DEFAULT_ADDRESS
    namespace: str = "default"
    api_key: str | None = None
    tls_flags: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    codecs: Sequence[str] = ()
    #: The client profile's TLS settings (file + environment), used when no --tls* flag is given.
    profile_tls: Any = None

    def run(self, body: Callable[[Client], Awaitable[int | None]]) -> int:
        """Connect, run ``body(client)``, close; return its exit status (None: 0).

        Raises:
            CliError: exit 2 for a bad TLS flag or codec or address; CommandFailed (exit 1) when the server
                refuses (an RPC error, a failed workflow, query or update), cannot be
                reached, or a payload cannot be decoded.
        """
        from spindle import exceptions as E
        from spindle.client import Client

        async def main() -> int:
            try:
                tls = (tls_from_flags(self.tls_flags) if any(self.tls_flags.values()) or self.profile_tls is None
                       else self.profile_tls.to_connect_tls_config())
            except ValueError as e:
                fail(str(e))
            codecs = load_codecs(self.codecs)
            try:
                client = await Client.connect(self.address, namespace=self.namespace, api_key=self.api_key, tls=tls,
                                              codecs=codecs)
            except ValueError as e:
                fail(str(e))
            try:
                return int(await body(client) or 0)
            finally:
                await client.close()

        try:
            return asyncio.run(main())
        except (E.RPCError, E.WorkflowFailureError, E.QueryFailedError, E.UpdateFailedError) as e:
            raise CommandFailed(str(e)) from None
        except OSError as e:
            raise CommandFailed(f"cannot reach {self.address}: {e}") from None
        except ValueError as e:  # a payload the codecs (or the converter) cannot decode
            raise CommandFailed(str(e)) from None


_CONNECTION_PARAMS = ("address", "namespace", "api_key", "tls", "tls_ca", "tls_cert", "tls_key", "tls_server_name",
                      "codec", "profile", "config_file")


def connection_from_flags(given: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Connection:
    """The :class:`Connection` of a command: each setting from its flag, else the environment, else the client
    profile (``--profile`` / ``--config-file``, read by :mod:`spindle.envconfig`), else the default.

    Raises:
        CliError: the profile file cannot be read or parsed, a key has the wrong type, the profile is not in
            the file, or a variable is wrong (exit 2; the message names the file, profile and key).
    """
    from pathlib import Path

    from spindle.envconfig import ClientConfigProfile

    config_file = given.get("config_file")
    try:
        profile = ClientConfigProfile.load(given.get("profile"),
                                           config_source=Path(config_file) if config_file else None,
                                           override_env_vars=os.environ if env is None else env)
    except ValueError as e:
        fail(str(e))
    return Connection(address=given.get("address") or profile.address or DEFAULT_ADDRESS,
                      namespace=given.get("namespace") or profile.namespace or "default",
                      api_key=given.get("api_key") or profile.api_key,
                      tls_flags={k: v for k, v in given.items() if k.startswith("tls")},
                      codecs=tuple(given.get("codec", ())), profile_tls=profile.tls)


def client_options(*, codec: bool = True) -> Callable[[F], F]:
    """The connection flags (and ``--codec`` unless ``codec=False``), handed to the command as ``conn``.

    The decorated function takes a :class:`Connection` as its first argument instead of
    the separate flag values.
    """

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def command(**params: Any) -> Any:
            given = {name: params.pop(name) for name in _CONNECTION_PARAMS if name in params}
            return f(connection_from_flags(given), **params)

        wrapped: Any = command
        if codec:
            wrapped = codec_option(wrapped)
        wrapped = tls_options(wrapped)
        wrapped = api_key_option(wrapped)
        wrapped = click.option("--config-file", metavar="PATH", default=None,
                               help="client profile file, TOML (default $SPINDLE_CONFIG_FILE, $TEMPORAL_CONFIG_FILE, "
                                    "~/.config/spindle/spindle.toml)")(wrapped)
        wrapped = click.option("--profile", metavar="NAME", default=None,
                               help="profile of the config file (default $SPINDLE_PROFILE, $TEMPORAL_PROFILE, "
                                    "'default')")(wrapped)
        wrapped = click.option("--namespace", "-n", default=None,
                               help="namespace (default $SPINDLE_NAMESPACE, the profile's, 'default')")(wrapped)
        wrapped = click.option("--address", default=None,
                               help="server address, or embedded:PATH (default $SPINDLE_ADDRESS, the profile's, "
                                    "127.0.0.1:7233)")(wrapped)
        return wrapped

    return decorate
