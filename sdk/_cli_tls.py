"""The TLS flags every client command of the ``spindle`` CLI takes, and the ``tls`` they make.

``--tls`` (TLS with the default roots), ``--tls-ca FILE`` (the server's CA), ``--tls-cert FILE``
+ ``--tls-key FILE`` (a client certificate: mutual TLS), ``--tls-server-name NAME``. Each
defaults to its environment variable (``SPINDLE_TLS``, ``SPINDLE_TLS_CA_FILE``,
``SPINDLE_TLS_CERT_FILE``, ``SPINDLE_TLS_KEY_FILE``, ``SPINDLE_TLS_SERVER_NAME``: the names
``spindle.envconfig`` and the Terraform provider read); a flag wins over its variable.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from spindle.client._tls import ENV_VARS, TLSConfig, env_bool, tls_from_files

__all__ = ["add_tls_arguments", "tls_from_args"]

_FLAGS = {"tls": "--tls", "ca_file": "--tls-ca", "cert_file": "--tls-cert", "key_file": "--tls-key",
          "server_name": "--tls-server-name"}


def add_tls_arguments(p: argparse.ArgumentParser) -> None:
    """Add the TLS flags to a client command's parser."""
    g = p.add_argument_group("TLS (defaults from SPINDLE_TLS* environment variables)")
    g.add_argument("--tls", action="store_true", default=None,
                   help="connect with TLS (implied by any other --tls-* flag; env SPINDLE_TLS)")
    g.add_argument("--tls-ca", metavar="FILE", default=None,
                   help="PEM CA the server's certificate must chain to (env SPINDLE_TLS_CA_FILE)")
    g.add_argument("--tls-cert", metavar="FILE", default=None,
                   help="PEM client certificate for mutual TLS; needs --tls-key (env SPINDLE_TLS_CERT_FILE)")
    g.add_argument("--tls-key", metavar="FILE", default=None,
                   help="PEM private key of --tls-cert (env SPINDLE_TLS_KEY_FILE)")
    g.add_argument("--tls-server-name", metavar="NAME", default=None,
                   help="name the server's certificate is checked against (env SPINDLE_TLS_SERVER_NAME)")


def tls_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> bool | TLSConfig | None:
    """``tls`` for Client.connect: each flag, else its environment variable.

    Raises:
        ValueError: a file cannot be read or is not PEM, a certificate without its key, TLS
            turned off (``SPINDLE_TLS=false``) with files; the message names the flag or variable.
    """
    env = os.environ if env is None else env
    values: dict[str, object] = {}
    names: dict[str, str] = {}
    for key, flag in _FLAGS.items():
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value is None:  # not on the command line: its variable (named in errors only when it is set)
            value = env_bool(env, ENV_VARS[key]) if key == "tls" else env.get(ENV_VARS[key]) or None
            names[key] = ENV_VARS[key] if value is not None else flag
        else:
            names[key] = flag
        values[key] = value
    return tls_from_files(enabled=values["tls"], ca_file=values["ca_file"], cert_file=values["cert_file"],  # type: ignore[arg-type]
                          key_file=values["key_file"], server_name=values["server_name"], names=names)  # type: ignore[arg-type]
