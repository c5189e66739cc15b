"""Object storage for archived histories and large payloads: one small interface, two backends.

An ``ObjectStore`` is a flat key -> bytes map (keys are ``/``-separated relative paths)
behind a URI:

* ``file:///abs/path`` - a local directory (``LocalObjectStore``). A write goes to a
  temporary file that is fsync'ed and renamed into place, then the directory is
  fsync'ed, so an acknowledged write survives a crash and a reader never sees half
  an object.
* ``gs://bucket/prefix`` - Google Cloud Storage (``GcsObjectStore``, needs the
  ``gcs`` extra: ``google-cloud-storage``). Credentials come from the environment
  (Application Default Credentials); ``STORAGE_EMULATOR_HOST`` points the client at
  an emulator such as fake-gcs-server.

Every method is a coroutine; blocking I/O runs in a worker thread. Failures raise
``ObjectStoreError`` (the caller decides whether to retry); a missing object is
``None`` from ``get``, not an error.
"""

from __future__ import annotations

import abc
import asyncio
import os
import tempfile
import urllib.parse

from typing import Any

__all__ = ["ObjectStore", "ObjectStoreError", "LocalObjectStore", "GcsObjectStore", "open_object_store"]


class ObjectStoreError(Exception):
    """An object could not be written, read or deleted (I/O error, network, permissions)."""


class ObjectStore(abc.ABC):
    """A durable key -> bytes map. Keys are relative ``/``-separated paths without ``..``."""

    #: The URI this store was opened from (``file:///...`` or ``gs://...``).
    uri: str = ""

    @abc.abstractmethod
    async def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        """Write ``data`` under ``key`` durably (replacing it unless ``if_absent``).

        With ``if_absent`` an existing object is left alone and the call succeeds
        (content-addressed writes: the same key always holds the same bytes).
        """

    @abc.abstractmethod
    async def get(self, key: str) -> bytes | None:
        """The object's bytes, or None when there is no such object."""

    @abc.abstractmethod
    async def exists(self, key: str) -> bool:
        """Whether an object is stored under ``key``."""

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Remove the object (no error if it does not exist)."""

    @abc.abstractmethod
    async def list_keys(self, prefix: str) -> list[str]:
        """Keys that start with ``prefix``, sorted."""


def check_key(key: str) -> str:
    """Reject keys that could escape the store's root (absolute, ``..``, empty parts)."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"invalid object key {key!r}")
    return key


class LocalObjectStore(ObjectStore):
    """Objects as files under a root directory (created on first write)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.uri = "file://" + self.root

    def _path(self, key: str) -> str:
        return os.path.join(self.root, *check_key(key).split("/"))

    async def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        await _in_thread(self._put_sync, self._path(key), data, if_absent)

    @staticmethod
    def _put_sync(path: str, data: bytes, if_absent: bool) -> None:
        if if_absent and os.path.exists(path):
            return
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    async def get(self, key: str) -> bytes | None:
        return await _in_thread(self._get_sync, self._path(key))

    @staticmethod
    def _get_sync(path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    async def exists(self, key: str) -> bool:
        return await _in_thread(os.path.exists, self._path(key))

    async def delete(self, key: str) -> None:
        await _in_thread(self._delete_sync, self._path(key))

    @staticmethod
    def _delete_sync(path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    async def list_keys(self, prefix: str) -> list[str]:
        return await _in_thread(self._list_sync, prefix)

    def _list_sync(self, prefix: str) -> list[str]:
        out: list[str] = []
        for dirpath, _dirs, files in os.walk(self.root):
            rel = os.path.relpath(dirpath, self.root)
            for name in files:
                if name.startswith(".tmp-"):
                    continue
                key = name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}"
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out)


class GcsObjectStore(ObjectStore):
    """Objects in a Cloud Storage bucket, under an optional prefix.

    Args:
        bucket: the bucket name (it must exist).
        prefix: a folder-like prefix inside the bucket ("" for the bucket root).
        timeout: seconds one request may take, retries included.
        client: a ``google.cloud.storage.Client`` (default: one made from the environment).
    """

    def __init__(self, bucket: str, prefix: str = "", *, timeout: float = 30.0, client: Any = None) -> None:
        try:
            from google.cloud import storage  # type: ignore[attr-defined]  # noqa: F401 - checked here for a clear error; google-cloud-storage ships no type information for the google.cloud namespace
        except ImportError as e:  # pragma: no cover - depends on the installation
            raise ObjectStoreError("gs:// URIs need google-cloud-storage (pip install 'spindle[gcs]')") from e
        self.bucket_name = bucket
        self.prefix = prefix.strip("/")
        self.timeout = timeout
        self.uri = f"gs://{bucket}/{self.prefix}".rstrip("/")
        self._client = client
        self._bucket: Any = None

    def _get_bucket(self) -> Any:
        if self._bucket is None:
            from google.cloud import storage  # type: ignore[attr-defined]  # google-cloud-storage ships no type information for the google.cloud namespace

            if self._client is None:
                if os.environ.get("STORAGE_EMULATOR_HOST"):
                    from google.auth.credentials import AnonymousCredentials

                    self._client = storage.Client(project="spindle", credentials=AnonymousCredentials())
                else:
                    self._client = storage.Client()
            self._bucket = self._client.bucket(self.bucket_name)
        return self._bucket

    def _name(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _retry(self) -> Any:
        from google.cloud.storage.retry import DEFAULT_RETRY

        return DEFAULT_RETRY.with_timeout(self.timeout)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        await _in_thread(self._put_sync, self._name(key), data, if_absent)

    def _put_sync(self, name: str, data: bytes, if_absent: bool) -> None:
        from google.api_core import exceptions as gexc

        blob = self._get_bucket().blob(name)
        try:
            if if_absent:
                # generation 0 = "must not exist"; the write is then idempotent, so retried.
                blob.upload_from_string(data, content_type="application/octet-stream", if_generation_match=0,
                                        timeout=self.timeout, retry=self._retry())
            else:
                # an overwrite of our own objects (same bytes on a retry) is idempotent too
                blob.upload_from_string(data, content_type="application/octet-stream", timeout=self.timeout,
                                        retry=self._retry())
        except gexc.PreconditionFailed:
            return  # already there (content-addressed: same bytes)

    async def get(self, key: str) -> bytes | None:
        return await _in_thread(self._get_sync, self._name(key))

    def _get_sync(self, name: str) -> bytes | None:
        from google.api_core import exceptions as gexc

        try:
            data: bytes = self._get_bucket().blob(name).download_as_bytes(timeout=self.timeout, retry=self._retry())
            return data
        except gexc.NotFound:
            return None

    async def exists(self, key: str) -> bool:
        name = self._name(key)
        return await _in_thread(lambda: bool(self._get_bucket().blob(name).exists(timeout=self.timeout,
                                                                                    retry=self._retry())))

    async def delete(self, key: str) -> None:
        await _in_thread(self._delete_sync, self._name(key))

    def _delete_sync(self, name: str) -> None:
        from google.api_core import exceptions as gexc

        try:
            self._get_bucket().blob(name).delete(timeout=self.timeout, retry=self._retry())
        except gexc.NotFound:
            pass

    async def list_keys(self, prefix: str) -> list[str]:
        return await _in_thread(self._list_sync, prefix)

    def _list_sync(self, prefix: str) -> list[str]:
        full = f"{self.prefix}/{prefix}" if self.prefix else prefix
        cut = len(self.prefix) + 1 if self.prefix else 0
        blobs = self._get_bucket().list_blobs(prefix=full, timeout=self.timeout, retry=self._retry())
        return sorted(b.name[cut:] for b in blobs)


async def _in_thread(fn: Any, *args: Any) -> Any:
    """Run blocking I/O in a thread; every failure becomes ObjectStoreError."""
    try:
        return await asyncio.to_thread(fn, *args)
    except ObjectStoreError:
        raise
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - OSError, google.api_core errors, requests errors, ...
        raise ObjectStoreError(f"{type(e).__name__}: {e}") from e


def open_object_store(uri: str, *, timeout: float = 30.0) -> ObjectStore:
    """The store behind ``uri``: ``file:///abs/dir`` or ``gs://bucket[/prefix]``.

    Raises:
        ValueError: the URI has another scheme or no path / bucket.
    """
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "file":
        path = urllib.parse.unquote(parsed.path)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"{uri!r}: a file URI needs an absolute path (file:///dir), not a host")
        if not path:
            raise ValueError(f"{uri!r}: a file URI needs a directory path")
        return LocalObjectStore(path)
    if parsed.scheme == "gs":
        if not parsed.netloc:
            raise ValueError(f"{uri!r}: a gs URI needs a bucket (gs://bucket/prefix)")
        return GcsObjectStore(parsed.netloc, parsed.path, timeout=timeout)
    raise ValueError(f"{uri!r}: unsupported object store URI (use file:///dir or gs://bucket/prefix)")
