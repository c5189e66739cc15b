"""The frontend's handlers of the visibility RPCs: ListWorkflowExecutions and CountWorkflowExecutions.

Each handler takes ``(request, ns, deadline)`` as :class:`~.service.FrontendService`'s
pipeline calls it: ``ns`` is the namespace the request names, already counted against its
``rps_limit``. The list query is compiled to the store's SQL dialect
(``spindle.controlplane.visibility``).
"""

from __future__ import annotations

import json

from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._paging import token_position
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.store import Store
from spindle.controlplane.visibility import STATUS_NAMES, QueryError, compile_query


class VisibilityCalls:
    """Listing and counting a namespace's runs with a visibility query."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._dialect = "sqlite" if store.name == "sqlite" else "spanner"

    def _compile(self, ns: Namespace, query: str) -> Any:
        try:
            return compile_query(query, search_attributes=ns.search_attribute_type_names, dialect=self._dialect)  # type: ignore[arg-type]  # self._dialect is the store's dialect, "sqlite" or "spanner"
        except QueryError as e:
            raise InvalidArgument(f"query: {e}") from e

    async def list(self, req: svc.ListWorkflowExecutionsRequest, ns: Namespace, deadline: float | None
                   ) -> svc.ListWorkflowExecutionsResponse:
        q = self._compile(ns, req.query)
        if q.group_by:
            raise InvalidArgument("query: GROUP BY is only for counting")
        offset = token_position(req.next_page_token, default=0, minimum=0)
        size = req.page_size or 100
        if size < 0 or size > 10_000:
            raise InvalidArgument(f"page_size: must be between 1 and 10000, got {req.page_size}")
        rows = await self.store.query_visibility(ns.id, q.where, q.params, q.order_by, size, offset)
        infos = []
        for r in rows:
            info = svc.WorkflowExecutionInfo(
                execution=pb.WorkflowExecution(workflow_id=r.workflow_id, run_id=r.run_id), workflow_type=r.workflow_type,
                task_queue=r.task_queue, status=r.status, start_time_ms=r.start_time_ms, close_time_ms=r.close_time_ms or 0,  # type: ignore[arg-type]  # protobuf enum fields are typed as their ValueType; the int is one of its values
                history_length=r.history_length)
            if r.memo:
                info.memo.ParseFromString(r.memo)
            _fill_search_attributes(info, r.search_attributes)
            if r.parent_workflow_id:
                info.parent_execution.workflow_id = r.parent_workflow_id
                info.parent_execution.run_id = r.parent_run_id
            infos.append(info)
        token = str(offset + len(rows)).encode() if len(rows) == size else b""
        return svc.ListWorkflowExecutionsResponse(executions=infos, next_page_token=token)

    async def count(self, req: svc.CountWorkflowExecutionsRequest, ns: Namespace, deadline: float | None
                    ) -> svc.CountWorkflowExecutionsResponse:
        q = self._compile(ns, req.query)
        rows = await self.store.count_visibility(ns.id, q.where, q.params, q.group_by_columns)
        resp = svc.CountWorkflowExecutionsResponse(count=sum(c for _, c in rows))
        if q.group_by:
            for values, count in rows:
                names = [STATUS_NAMES.get(v, str(v)) if f == "ExecutionStatus" else str(v)  # type: ignore[call-overload]
                         for f, v in zip(q.group_by, values)]
                resp.groups.append(svc.CountGroup(group_values=names, count=count))
        return resp


def _fill_search_attributes(info: svc.WorkflowExecutionInfo, raw: str) -> None:
    try:
        values = json.loads(raw) if raw else {}
    except ValueError:
        return
    for k, v in values.items():
        info.search_attributes.indexed_fields[k].metadata["encoding"] = b"json/plain"
        info.search_attributes.indexed_fields[k].data = json.dumps(v).encode()


__all__ = ["VisibilityCalls"]
