"""Archival of closed runs and a blob store for large payloads, on a local folder or Cloud Storage.

* ``ObjectStore`` (``open_object_store(uri)``): ``file:///dir`` or ``gs://bucket/prefix``.
* ``HistoryArchiver``: writes / reads ``gzip(spindle.v1.History)`` per run.
* ``BlobStore`` / ``PayloadOffloader``: payloads above the threshold are stored as
  content-addressed blobs and replaced by ``spindle/blob-ref`` reference payloads.
* ``Archival``: the three above, built from ``ServerConfig`` for one control plane.
* Erasure (data-subject requests): ``erase_archived_run``, ``erase_archived_page``, ``archived_run_matcher``.

How retention, archival and large payloads behave end to end: docs/ARCHIVAL.md.
"""

from ._archive import HistoryArchiver, escape_key_part
from ._blobs import (
                     BLOB_REF_ENCODING,
                     BlobError,
                     BlobStore,
                     PayloadOffloader,
                     PreparedIntake,
                     blob_keys_in,
                     is_blob_ref,
                     ref_expanded_size,
)
from ._erasure import ArchivedRun, ArchiveErasePage, archived_run_matcher, erase_archived_page, erase_archived_run
from ._objects import GcsObjectStore, LocalObjectStore, ObjectStore, ObjectStoreError, open_object_store
from ._pages import event_page_size, fitting_prefix, fitting_suffix
from ._reads import describe_from_history, history_page
from ._service import Archival

__all__ = [
    "ArchiveErasePage",
    "ArchivedRun",
    "Archival",
    "archived_run_matcher",
    "erase_archived_page",
    "erase_archived_run",
    "BLOB_REF_ENCODING",
    "BlobError",
    "BlobStore",
    "GcsObjectStore",
    "HistoryArchiver",
    "LocalObjectStore",
    "ObjectStore",
    "ObjectStoreError",
    "PayloadOffloader",
    "PreparedIntake",
    "blob_keys_in",
    "ref_expanded_size",
    "describe_from_history",
    "escape_key_part",
    "event_page_size",
    "fitting_prefix",
    "fitting_suffix",
    "history_page",
    "is_blob_ref",
    "open_object_store",
]
