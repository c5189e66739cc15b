"""Converting between the store's rows and Cloud Spanner values.

The Python client sends ``bytes`` as-is where Spanner expects base64 text, and
returns BYTES columns as base64 text (docs/STORAGE.md, Cloud Spanner): every BYTES
value goes through ``enc``/``dec`` here, never anywhere else.
"""

from __future__ import annotations

import base64
import json

from typing import Any

from ._model import ApiKeyRow, CurrentRow, ExecutionRow, NamespaceRow, VisibilityRow

EXEC_COLUMNS = ("ShardId", "NamespaceId", "WorkflowId", "RunId", "Status", "NextEventId", "DbVersion", "WorkflowType",
                "TaskQueue", "StartTimeMs", "CloseTimeMs", "ActivityState")
CURRENT_COLUMNS = ("NamespaceId", "WorkflowId", "RunId", "Status", "StartRequestId")
NAMESPACE_COLUMNS = ("Id", "Name", "Data", "State", "Version")
API_KEY_COLUMNS = ("KeyId", "Name", "SecretHash", "Grants", "SystemAdmin", "CreateTimeMs", "ExpireTimeMs", "RevokeTimeMs",
                   "CreatedBy", "TaskQueues")
VIS_COLUMNS = ("namespace_id", "workflow_id", "run_id", "workflow_type", "status", "task_queue", "start_time_ms",
               "close_time_ms", "execution_duration_ms", "history_length", "search_attributes", "memo",
               "parent_workflow_id", "parent_run_id")


def enc(raw: bytes) -> bytes:
    """A value for a BYTES column or parameter."""
    return base64.b64encode(raw)


def dec(value: bytes | str | None) -> bytes:
    """Raw bytes from a BYTES column as the client returns it."""
    if value is None:
        return b""
    return base64.b64decode(value)


def exec_from_row(r: list[Any]) -> ExecutionRow:
    """An ``ExecutionRow`` from the values of ``EXEC_COLUMNS`` (in that order)."""
    shard, ns, wid, rid, status, nxt, ver, wtype, tq, start, close, activity_state = r
    return ExecutionRow(namespace_id=ns, workflow_id=wid, run_id=rid, shard_id=int(shard), status=int(status),
                        next_event_id=int(nxt), db_version=int(ver), workflow_type=wtype, task_queue=tq,
                        start_time_ms=int(start), close_time_ms=int(close), activity_state=dec(activity_state))


def exec_values(ex: ExecutionRow) -> list[Any]:
    """The values of ``EXEC_COLUMNS`` for ``ex``."""
    return [ex.shard_id, ex.namespace_id, ex.workflow_id, ex.run_id, ex.status, ex.next_event_id, ex.db_version,
            ex.workflow_type, ex.task_queue, ex.start_time_ms, ex.close_time_ms, enc(ex.activity_state)]


def current_from_row(r: list[Any]) -> CurrentRow:
    """A ``CurrentRow`` from the values of ``CURRENT_COLUMNS``."""
    return CurrentRow(r[0], r[1], r[2], int(r[3]), r[4])


def namespace_from_row(r: list[Any]) -> NamespaceRow:
    """A ``NamespaceRow`` from the values of ``NAMESPACE_COLUMNS``."""
    return NamespaceRow(id=r[0], name=r[1], data=r[2], state=r[3], version=int(r[4]))


def vis_values(v: VisibilityRow) -> list[Any]:
    """The values of ``VIS_COLUMNS`` for ``v`` (search attributes as a JSON object, memo base64)."""
    from google.cloud.spanner_v1.data_types import JsonObject

    attrs = json.loads(v.search_attributes) if v.search_attributes else {}
    return [v.namespace_id, v.workflow_id, v.run_id, v.workflow_type, v.status, v.task_queue, v.start_time_ms,
            v.close_time_ms, v.execution_duration_ms, v.history_length, JsonObject(attrs), enc(v.memo),
            v.parent_workflow_id, v.parent_run_id]


def vis_from_row(r: list[Any]) -> VisibilityRow:
    """A ``VisibilityRow`` from the values of ``VIS_COLUMNS``."""
    attrs = r[10]
    if attrs is None:
        sa = "{}"
    elif isinstance(attrs, str):
        sa = attrs
    else:
        sa = json.dumps(attrs if isinstance(attrs, dict) else dict(attrs), separators=(",", ":"), sort_keys=True)
    return VisibilityRow(namespace_id=r[0], workflow_id=r[1], run_id=r[2], workflow_type=r[3], status=int(r[4]),
                         task_queue=r[5], start_time_ms=int(r[6]),
                         close_time_ms=None if r[7] is None else int(r[7]),
                         execution_duration_ms=None if r[8] is None else int(r[8]), history_length=int(r[9]),
                         search_attributes=sa, memo=dec(r[11]), parent_workflow_id=r[12], parent_run_id=r[13])




def api_key_from_row(r: list[Any]) -> ApiKeyRow:
    """An ``ApiKeyRow`` from the values of ``API_KEY_COLUMNS``."""
    kid, name, secret_hash, grants, system_admin, created, expires, revoked, created_by, task_queues = r
    return ApiKeyRow(key_id=kid, name=name, secret_hash=dec(secret_hash), grants=grants, system_admin=bool(system_admin),
                     create_time_ms=int(created), expire_time_ms=int(expires), revoke_time_ms=int(revoked),
                     created_by=created_by, task_queues=task_queues or "")


def api_key_values(row: ApiKeyRow) -> list[Any]:
    """The values of ``API_KEY_COLUMNS`` for ``row``."""
    return [row.key_id, row.name, enc(row.secret_hash), row.grants, row.system_admin, row.create_time_ms,
            row.expire_time_ms, row.revoke_time_ms, row.created_by, row.task_queues or None]


__all__ = ["API_KEY_COLUMNS", "CURRENT_COLUMNS", "EXEC_COLUMNS", "NAMESPACE_COLUMNS", "VIS_COLUMNS", "api_key_from_row",
           "api_key_values", "current_from_row", "dec", "enc", "exec_from_row", "exec_values", "namespace_from_row",
           "vis_from_row", "vis_values"]
