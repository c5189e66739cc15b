"""The first admin key of a server started from a configuration file, and the warning for an open server.

``auth.bootstrap_admin_key_file`` names a file holding one API key secret. At start the
server makes sure that key exists as a ``system_admin`` key named ``bootstrap admin``
(every member does; the first one creates it). The file is read, never logged.

- Deployments that keep secrets elsewhere (the Terraform/GKE module reads it from
  Secret Manager and mounts it as a file) generate the secret once, e.g. with
  ``spindle admin api-key new-secret``, and store it there.
- If the file does not exist, the server generates a key, writes it there with mode
  0600 and says so on its output (never the secret itself): the operator reads it from
  the file.

The bootstrap key is meant to create the real admin keys and then be revoked
(``spindle admin api-key revoke ID``); a revoked bootstrap key stays revoked when the
server restarts with the same file.
"""

from __future__ import annotations

import os

from spindle.api._addresses import is_loopback_host

from ._keys import ApiKeys, format_secret, new_secret

BOOTSTRAP_KEY_NAME = "bootstrap admin"


async def bootstrap_admin_key(keys: ApiKeys, path: str) -> str:
    """Make sure the key in ``path`` exists (generating the file if missing). Returns a line for the operator.

    Raises:
        ValueError: the file does not hold a key, or its id is stored with another secret.
        OSError: the file cannot be read or created.
    """
    generated = False
    try:
        with open(path, encoding="utf-8") as f:
            secret = f.read().strip()
    except FileNotFoundError:
        secret = format_secret(new_secret())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secret + "\n")
        generated = True
    try:
        row, created = await keys.ensure(secret, BOOTSTRAP_KEY_NAME, created_by="bootstrap")
    except ValueError as e:
        raise ValueError(f"auth.bootstrap_admin_key_file {path}: {e}") from None
    if generated:
        return f"generated a system_admin API key (id {row.key_id}) into {path}: read it there"
    if row.revoke_time_ms:
        return f"the bootstrap admin key {row.key_id} from {path} is revoked (it stays revoked)"
    return f"bootstrap admin key {row.key_id} from {path} {'created' if created else 'present'}"


def open_listener_warning(host: str, port: int) -> str | None:
    """The warning to print when a server without authentication listens beyond this machine, else None."""
    if is_loopback_host(host):
        return None
    return (f"WARNING: authentication is OFF and the server listens on {host}:{port}, reachable from other machines: "
            "anyone who can reach this port can read, start, terminate and delete anything. Turn API keys on "
            "(start-dev --auth; or auth: {mode: api_keys} in the server configuration), or listen on 127.0.0.1.")


__all__ = ["BOOTSTRAP_KEY_NAME", "bootstrap_admin_key", "open_listener_warning"]
