"""The control plane's archival and large-payload services, built from ``ServerConfig``."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import NotFound, Unavailable
from spindle.controlplane.namespaces import Namespace

from ._archive import HistoryArchiver
from ._blobs import BlobStore, PayloadOffloader
from ._objects import ObjectStoreError, open_object_store
from ._reads import describe_from_history, history_page

__all__ = ["Archival"]


class Archival:
    """Archive writers per URI, the blob store and the payload offloader of one control plane.

    * ``archiver_for(ns)``: the archive of a namespace (its ``archival_uri``, else
      ``config.archive_uri``), or None when neither is set (retention then deletes
      without archiving).
    * ``payloads``: offloads large payloads on the way in and expands them on the
      way out (a no-op without ``config.blob_store_uri``).
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._archivers: dict[str, HistoryArchiver] = {}
        blobs = None
        if config.blob_store_uri:
            blobs = BlobStore(open_object_store(config.blob_store_uri, timeout=config.object_store_timeout))
        self.blobs = blobs
        self.payloads = PayloadOffloader(blobs, threshold=config.large_payload_threshold_bytes,
                                         max_offloaded=config.max_offloaded_payload_bytes)

    def archive_uri(self, ns: Namespace) -> str:
        """Where a namespace's closed runs are archived ("" = not archived)."""
        return ns.archival_uri or self.config.archive_uri

    def archiver_for(self, ns: Namespace) -> HistoryArchiver | None:
        uri = self.archive_uri(ns)
        if not uri:
            return None
        arch = self._archivers.get(uri)
        if arch is None:
            arch = HistoryArchiver(open_object_store(uri, timeout=self.config.object_store_timeout))
            self._archivers[uri] = arch
        return arch

    async def _find(self, ns: Namespace, execution: pb.WorkflowExecution) -> tuple[str, pb.History]:
        """The archived history of ``execution`` (latest archived run when run_id is empty).

        Raises NotFound (not archived, or no archive) and Unavailable (archive unreadable).
        """
        arch = self.archiver_for(ns)
        what = f"workflow {execution.workflow_id!r}" + (f" run {execution.run_id!r}" if execution.run_id else "")
        if arch is None:
            raise NotFound(f"workflow_execution: {what} not found")
        try:
            run_id = execution.run_id or await arch.latest_run_id(ns.id, execution.workflow_id)
            hist = await arch.read(ns.id, execution.workflow_id, run_id) if run_id else None
        except (ObjectStoreError, ValueError) as e:
            raise Unavailable(f"workflow_execution: {what} is not in the store and the archive could not be read: {e}") from e
        if hist is None or run_id is None:
            raise NotFound(f"workflow_execution: {what} not found (neither in the store nor in the archive)")
        return run_id, hist

    async def read_history(self, ns: Namespace, req: svc.GetWorkflowExecutionHistoryRequest
                           ) -> svc.GetWorkflowExecutionHistoryResponse:
        """GetWorkflowExecutionHistory for a run retention removed from the store (``archived`` is set)."""
        _, hist = await self._find(ns, req.execution)
        return history_page(hist, req, max_bytes=self.config.history_page_max_bytes)

    async def describe(self, ns: Namespace, execution: pb.WorkflowExecution) -> svc.DescribeWorkflowExecutionResponse:
        """DescribeWorkflowExecution for a run retention removed from the store."""
        run_id, hist = await self._find(ns, execution)
        return describe_from_history(execution.workflow_id, run_id, hist)
