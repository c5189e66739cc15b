"""Where ``spindle_api_key`` can put a new key's secret instead of Terraform's state: a file only its owner reads.

Terraform keeps every attribute a resource returns in its state (plain JSON, wherever
the backend stores it). ``secret_file`` keeps the secret out of there: the provider writes
it to the file when the key is created (mode 0600, written to a temporary file in the same
directory and renamed, so no reader sees half a secret) and leaves the ``secret``
attribute null. Destroying the key removes the file if it still holds that key's secret.

Why not a write-only argument or an ephemeral resource (Terraform 1.10/1.11): the
provider speaks plugin protocol 6 through the ``tf`` framework, whose protocol definition
predates both (no ``write_only`` schema flag, no ephemeral-resource RPCs), so Terraform
would never offer them to this provider.

Imports neither ``tf`` nor protobuf (unit-tested in the project's environment).
"""

from __future__ import annotations

import os
import tempfile


def secret_file_problem(path: object) -> str | None:
    """Why ``path`` cannot be a ``secret_file`` (None: it can): it must be an absolute path, not a directory."""
    if not isinstance(path, str) or not path:
        return "secret_file: a file path (absolute), e.g. abspath(\"${path.root}/worker.key\")"
    if not os.path.isabs(path):
        return f"secret_file: {path!r} is not an absolute path (use abspath(...)): the provider's working directory " \
               "is not necessarily the configuration's"
    if path.endswith(os.sep) or os.path.isdir(path):
        return f"secret_file: {path!r} is a directory; name the file the secret goes to"
    return None


def write_secret(path: str, secret: str) -> None:
    """Write ``secret`` and a newline to ``path`` (mode 0600; missing parent directories are made with mode 0700).

    Raises:
        OSError: the file cannot be written (the caller reports it).
    """
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".spindle-key-", dir=directory)  # created 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secret + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_secret(path: str, key_id: str) -> bool:
    """Remove ``path`` if it holds the secret of key ``key_id`` (``spk_<id>_...``); whether it did."""
    try:
        with open(path) as f:
            held = f.read().strip()
    except OSError:
        return False
    if not held.startswith(f"spk_{key_id}_"):
        return False  # another key's secret now (create_before_destroy wrote the new one first)
    os.unlink(path)
    return True


__all__ = ["remove_secret", "secret_file_problem", "write_secret"]
