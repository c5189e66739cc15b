"""The frontend's handlers of the erasure RPCs (issue 26): DeleteWorkflowExecution and the batch-job calls
(StartBatchOperation, DescribeBatchOperation, ListBatchOperations).

Each handler takes ``(request, ns, deadline)`` as :class:`~.service.FrontendService`'s pipeline
calls it: the request passed the field rules, ``ns`` is the namespace it names, already counted
against its ``rps_limit``. Who may call them (namespace admins erase, readers look) is the
servicer's (``auth._rpc_policy``). Everything a request says is checked before anything is
written: a StartBatchOperation with a bad query creates no job.
"""

from __future__ import annotations

from spindle.api import service_pb2 as svc
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.erasure import ErasureJobs
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.visibility import QueryError, parse_query

from ._validate import check_name, check_text, require_id


class ErasureCalls:
    """Erasing one run, and starting and reading erasure jobs (run by ``spindle.controlplane.erasure``)."""

    def __init__(self, config: ServerConfig, engine: HistoryEngine, jobs: ErasureJobs) -> None:
        self.config = config
        self.engine = engine
        self.jobs = jobs

    async def delete(self, req: svc.DeleteWorkflowExecutionRequest, ns: Namespace, deadline: float | None
                     ) -> svc.DeleteWorkflowExecutionResponse:
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        check_name(req.workflow_execution.run_id, "workflow_execution.run_id", self.config)
        check_name(req.identity, "identity", self.config)
        check_text(req.reason, "reason")
        await self.engine.erase(ns, req.workflow_execution.workflow_id, req.workflow_execution.run_id, req.reason,
                                req.identity)
        return svc.DeleteWorkflowExecutionResponse()

    async def start_batch(self, req: svc.StartBatchOperationRequest, ns: Namespace, deadline: float | None
                          ) -> svc.StartBatchOperationResponse:
        require_id(req.job_id, "job_id", self.config)
        check_text(req.reason, "reason")
        check_name(req.deletion_operation.identity, "deletion_operation.identity", self.config)
        if not req.HasField("deletion_operation"):
            raise InvalidArgument("deletion_operation: required: the server runs only deletion (erasure) jobs; "
                                  "terminate, cancel, signal and reset batches run in the client")
        if not req.visibility_query.strip():
            raise InvalidArgument("visibility_query: required: an erasure job deletes what its query selects "
                                  "(an empty query would select every execution of the namespace)")
        try:
            q = parse_query(req.visibility_query, search_attributes=ns.search_attribute_type_names)
        except QueryError as e:
            raise InvalidArgument(f"visibility_query: {e}") from e
        if q.group_by:
            raise InvalidArgument("visibility_query: GROUP BY is only for counting")
        await self.jobs.start(ns, req)
        return svc.StartBatchOperationResponse()

    async def describe_batch(self, req: svc.DescribeBatchOperationRequest, ns: Namespace, deadline: float | None
                             ) -> svc.DescribeBatchOperationResponse:
        require_id(req.job_id, "job_id", self.config)
        job = await self.jobs.get(ns, req.job_id)
        return job.progress

    async def list_batches(self, req: svc.ListBatchOperationsRequest, ns: Namespace, deadline: float | None
                           ) -> svc.ListBatchOperationsResponse:
        return svc.ListBatchOperationsResponse(operation_info=[j.progress for j in await self.jobs.list_jobs(ns)])


__all__ = ["ErasureCalls"]
