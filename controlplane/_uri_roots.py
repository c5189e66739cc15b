"""Which archival URIs a namespace may set: only those under the roots the server config allows.

A namespace's ``archival_uri`` decides where the server writes (and then deletes from
the store) every closed run of that namespace, with the server's own file-system and
cloud credentials. So a namespace may only point it inside what the operator allowed
(``ServerConfig.archival_allowed_roots``):

- ``file:///abs/dir`` allows that directory and everything below it. Both sides are
  compared after percent-decoding and resolving ``..`` and symbolic links
  (``os.path.realpath``), so ``file:///allowed/../etc`` is not under ``file:///allowed``.
- ``gs://bucket`` allows any prefix of that bucket; ``gs://bucket/team-a`` allows
  ``gs://bucket/team-a`` and ``gs://bucket/team-a/...`` (whole path segments:
  ``gs://bucket/team-ab`` is not under it).

URIs are parsed the way ``archival._objects.open_object_store`` opens them.
"""

from __future__ import annotations

import os
import urllib.parse

from collections.abc import Sequence

__all__ = ["archival_root_problem", "archival_uri_problem"]


def _parse(uri: str) -> tuple[str, str, tuple[str, ...]] | str:
    """(scheme, location, path parts), or a problem description."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            return f"{uri!r}: a file URI needs an absolute path (file:///dir), not a host"
        path = urllib.parse.unquote(parsed.path)
        if not path.startswith("/"):
            return f"{uri!r}: a file URI needs an absolute directory path (file:///dir)"
        real = os.path.realpath(path)
        return "file", "", tuple(p for p in real.split(os.sep) if p)
    if parsed.scheme == "gs":
        if not parsed.netloc:
            return f"{uri!r}: a gs URI needs a bucket (gs://bucket/prefix)"
        return "gs", parsed.netloc, tuple(p for p in parsed.path.split("/") if p)
    return f"{uri!r}: unsupported URI (use file:///dir or gs://bucket/prefix)"


def archival_root_problem(root: str) -> str | None:
    """What is wrong with ``root`` as an allowed archival root, or None."""
    if not isinstance(root, str) or not root:
        return f"{root!r}: expected a file:///dir or gs://bucket[/prefix] URI"
    got = _parse(root)
    return got if isinstance(got, str) else None


def archival_uri_problem(uri: str, roots: Sequence[str], field: str = "archival_uri") -> str | None:
    """Why a namespace may not archive to ``uri`` (a message naming ``field``), or None when it may."""
    got = _parse(uri)
    if isinstance(got, str):
        return f"{field}: {got}"
    if not roots:
        return (f"{field}: this server allows no namespace archival URIs (its archival_allowed_roots setting is "
                "empty); ask the operator to allow a root, or leave archival_uri empty to use the server's archive")
    scheme, location, parts = got
    for root in roots:
        allowed = _parse(root)
        if isinstance(allowed, str):
            continue
        r_scheme, r_location, r_parts = allowed
        if scheme == r_scheme and location == r_location and parts[:len(r_parts)] == r_parts:
            return None
    return (f"{field}: {uri!r} is not under a root this server allows for archives "
            f"({', '.join(roots)}); see the archival_allowed_roots setting")
