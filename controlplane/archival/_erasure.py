"""Erasure in the archive: deleting archived runs a data-subject request selects (issue 26).

The archive holds one object per run (``histories/<namespace id>/<workflow id>/<run id>.history.pb.gz``)
and a ``latest.json`` per workflow naming the archived run that closed last (format:
docs/ARCHIVAL.md; keys built by ``HistoryArchiver.history_key`` only). This module

* deletes one archived run and keeps ``latest.json`` right (``erase_archived_run``): the pointer
  is moved to the newest remaining run (or deleted) BEFORE the run's object is deleted, so a
  crash between the two leaves the object, which the next pass erases, and never a pointer to a
  deleted run;
* scans a namespace's archived runs in key order, page by page with a cursor, and deletes those a
  predicate accepts (``erase_archived_page``; the erasure job's archive phase);
* builds what a visibility row would say about an archived run (``ArchivedRun``, from the same
  code that answers DescribeWorkflowExecution from the archive) and evaluates a visibility query
  on it with the list-filter evaluator (``archived_run_matcher``).

Ids are recovered from the keys (percent-escaped, so exactly) except a workflow id longer than
the archive shortens (its escaped form over 180 characters): such a run's ``workflow_id`` is
unknown ("" here, NULL to a query), so a query on ``WorkflowId`` never selects it in a scan (an
erasure by its id, ``erase_archived_run``, still finds it).
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import urllib.parse

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError

from spindle.api import messages_pb2 as pb
from spindle.controlplane._search_attributes import search_attribute_values
from spindle.controlplane.namespaces import SA_TYPES_BY_NAME, SYSTEM_SEARCH_ATTRIBUTES, Namespace
from spindle.controlplane.visibility import matches, parse_query, validate_search_attributes

from ._archive import HistoryArchiver, escape_key_part
from ._objects import ObjectStore
from ._reads import describe_from_history

__all__ = ["ArchiveErasePage", "ArchivedRun", "archived_run_matcher", "erase_archived_page", "erase_archived_run"]

log = logging.getLogger("spindle.erasure")

_HISTORY_SUFFIX = ".history.pb.gz"
_POINTER = "latest.json"
_SHORTENED = re.compile(r"^.{115}-[0-9a-f]{64}$")  # escape_key_part's form for an id it shortened
#: How often the pointer is recomputed when runs of the workflow appear while it is rewritten.
_POINTER_ATTEMPTS = 3


@dataclass(frozen=True)
class ArchiveErasePage:
    """One page of an archive scan."""

    erased: list[tuple[str, str]]   # (workflow_id, run_id) deleted from the archive in this page
    cursor: str                     # pass back to continue; "" with done=True at the end
    done: bool


@dataclass(frozen=True)
class ArchivedRun:
    """What a visibility row would hold about a run that only the archive still has.

    ``workflow_id`` is "" when the archive key holds a shortened id (see the module docstring);
    ``close_time_ms`` is None for a history without a closing event (never archived by retention).
    ``search_attributes`` are the start's attributes with every upsert applied.
    """

    workflow_id: str
    run_id: str
    workflow_type: str
    status: int
    task_queue: str
    start_time_ms: int
    close_time_ms: int | None
    history_length: int
    search_attributes: pb.SearchAttributes
    memo: pb.Memo
    key: str = ""

    @classmethod
    def from_history(cls, workflow_id: str, run_id: str, history: pb.History, *, key: str = "") -> ArchivedRun:
        """Build the record from an archived history (through ``describe_from_history``)."""
        info = describe_from_history(workflow_id, run_id, history).workflow_execution_info
        return cls(workflow_id=workflow_id, run_id=run_id, workflow_type=info.workflow_type, status=int(info.status),
                   task_queue=info.task_queue, start_time_ms=info.start_time_ms,
                   close_time_ms=info.close_time_ms if info.status else None,
                   history_length=info.history_length, search_attributes=info.search_attributes, memo=info.memo, key=key)

    def visibility_record(self, search_attribute_types: Mapping[str, str]) -> dict[str, Any]:
        """The run as a visibility-table record (the form ``visibility.matches`` evaluates)."""
        ns = _types_namespace(search_attribute_types)
        closed = self.close_time_ms is not None
        return {
            "workflow_id": self.workflow_id or None, "run_id": self.run_id, "workflow_type": self.workflow_type,
            "status": self.status, "task_queue": self.task_queue, "start_time_ms": self.start_time_ms,
            "close_time_ms": self.close_time_ms,
            "execution_duration_ms": (self.close_time_ms or 0) - self.start_time_ms if closed else None,
            "history_length": self.history_length,
            "search_attributes": search_attribute_values(ns, self.search_attributes.indexed_fields),
        }


def _types_namespace(search_attribute_types: Mapping[str, str]) -> Namespace:
    """A namespace carrying only these attribute types, so search attributes read exactly as a visibility row's."""
    custom = {k: t for k, t in validate_search_attributes(
        {k: v for k, v in search_attribute_types.items() if k not in SYSTEM_SEARCH_ATTRIBUTES}).items()}
    return Namespace(id="", name="", search_attributes={k: SA_TYPES_BY_NAME[t.value] for k, t in custom.items()})


def archived_run_matcher(query: str, search_attribute_types: Mapping[str, str]) -> Callable[[ArchivedRun], bool]:
    """A predicate saying whether ``query`` (the visibility list-filter language) selects an archived run.

    ``search_attribute_types`` are the namespace's attribute types by name (``Namespace.search_attribute_type_names``):
    they decide how attributes compare (a Datetime as Unix ms), exactly as for the namespace's visibility rows.
    The semantics are the evaluator's (SQL NULLs: an attribute the run lacks never matches ``=`` nor ``!=``).

    Raises:
        QueryError: the query is malformed or does not type-check against the attributes.
        ValueError: ``search_attribute_types`` holds an invalid name or type.
    """
    ast = parse_query(query, search_attributes=search_attribute_types)
    types = dict(search_attribute_types)
    _types_namespace(types)  # validates now, not on the first run

    def match(run: ArchivedRun) -> bool:
        return matches(ast, run.visibility_record(types))

    return match


def _ids_from_key(key: str) -> tuple[str, str] | None:
    """(workflow id, run id) of a history key; the workflow id is "" when the key holds it shortened."""
    parts = key.split("/")
    if len(parts) != 4 or parts[0] != "histories" or not parts[3].endswith(_HISTORY_SUFFIX):
        return None
    wf_part, run_part = parts[2], parts[3][:-len(_HISTORY_SUFFIX)]
    workflow_id = "" if _SHORTENED.match(wf_part) else urllib.parse.unquote(wf_part)
    return workflow_id, urllib.parse.unquote(run_part)


def _parse_history(raw: bytes, key: str) -> pb.History:
    try:
        return pb.History.FromString(gzip.decompress(raw))
    except (OSError, EOFError, ValueError, DecodeError) as e:
        raise ValueError(f"archived history {key} is corrupt: {e}") from e


async def _read_pointer(archive: ObjectStore, key: str) -> dict[str, Any] | None:
    raw = await archive.get(key)
    if raw is None:
        return None
    try:
        d = json.loads(raw)
    except ValueError:
        return None
    return d if isinstance(d, dict) and "run_id" in d and "close_time_ms" in d else None


async def _newest_other_run(archive: ObjectStore, directory: str, erased_key: str) -> tuple[dict[str, Any] | None, set[str]]:
    """The pointer body for the newest archived run of the directory other than ``erased_key``, and the keys seen."""
    keys = {k for k in await archive.list_keys(directory + "/") if k.endswith(_HISTORY_SUFFIX) and k != erased_key}
    best: tuple[int, str] | None = None
    for k in keys:
        raw = await archive.get(k)
        ids = _ids_from_key(k)
        if raw is None or ids is None:
            continue
        try:
            events = _parse_history(raw, k).events
        except ValueError as e:
            log.warning("erasure: %s", e)
            continue
        if events:
            cand = (events[-1].event_time_ms, ids[1])
            best = cand if best is None or cand > best else best
    return ({"run_id": best[1], "close_time_ms": best[0]} if best else None), keys


async def erase_archived_run(archive: ObjectStore, namespace_id: str, workflow_id: str, run_id: str) -> bool:
    """Delete one archived run (and fix or delete its workflow's latest.json). True if it existed.

    When ``latest.json`` names the run, it is first moved to the remaining run that closed last
    (the order archiving uses: close time, then run id) or deleted when none remains; only then
    is the run's object deleted. Idempotent: erasing a run that is not archived returns False
    and still repairs a pointer that names it.

    Raises:
        ObjectStoreError: the archive could not be read or written (nothing is lost by retrying).
    """
    return await _erase_object(archive, HistoryArchiver(archive).history_key(namespace_id, workflow_id, run_id), run_id)


async def _erase_object(archive: ObjectStore, key: str, run_id: str) -> bool:
    directory = key.rsplit("/", 1)[0]
    pointer_key = f"{directory}/{_POINTER}"
    existed = await archive.exists(key)
    pointer = await _read_pointer(archive, pointer_key)
    if pointer is not None and str(pointer["run_id"]) == run_id:
        for _ in range(_POINTER_ATTEMPTS):
            body, seen = await _newest_other_run(archive, directory, key)
            if body is None:
                await archive.delete(pointer_key)
            else:
                await archive.put(pointer_key, json.dumps(body).encode())
            now = {k for k in await archive.list_keys(directory + "/") if k.endswith(_HISTORY_SUFFIX) and k != key}
            if now <= seen:  # no run was archived meanwhile: the pointer is right
                break
    if existed:
        await archive.delete(key)
    return existed


async def erase_archived_page(archive: ObjectStore, namespace_id: str, matches: Callable[[ArchivedRun], bool],
                              cursor: str = "", limit: int = 100) -> ArchiveErasePage:
    """Scan the namespace's archived runs in key order after `cursor`; delete those `matches` accepts.

    At most ``limit`` archived runs are read per call. The returned cursor is the last key read
    (store it durably and pass it back; a repeated page is harmless: erasing is idempotent). A
    corrupt object cannot be evaluated: it is logged and left. Deleted runs are listed in
    ``erased``.

    Raises:
        ObjectStoreError: the archive could not be listed, read or written (retry with the same cursor).
        ValueError: ``limit`` is not positive.
    """
    if limit < 1:
        raise ValueError(f"limit: must be at least 1, got {limit}")
    prefix = f"histories/{escape_key_part(namespace_id)}/"
    keys = [k for k in await archive.list_keys(prefix) if k.endswith(_HISTORY_SUFFIX) and k > cursor]
    page, rest = keys[:limit], keys[limit:]
    erased: list[tuple[str, str]] = []
    for k in page:
        ids = _ids_from_key(k)
        raw = await archive.get(k)
        if ids is None or raw is None:
            continue
        try:
            run = ArchivedRun.from_history(ids[0], ids[1], _parse_history(raw, k), key=k)
        except ValueError as e:
            log.warning("erasure: %s; left in the archive", e)
            continue
        if matches(run):
            if await _erase_object(archive, k, run.run_id):
                erased.append((run.workflow_id, run.run_id))
    if not rest:
        return ArchiveErasePage(erased=erased, cursor="", done=True)
    return ArchiveErasePage(erased=erased, cursor=page[-1], done=False)
