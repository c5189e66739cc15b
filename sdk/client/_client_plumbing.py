"""What :class:`spindle.client.Client` gives the modules that do its calls: one call path, history pages, codecs.

Every call of the client package goes through :meth:`ClientPlumbing._rpc` (``call_rpc``), so a call that is
safe to repeat is retried, and a gRPC error mapped, the same way wherever it is made; the modules'
Protocols (``_batch``, ``_schedule``, ``_namespaces``, ``_workflow_service`` ...) name these methods.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._rpc import call_rpc, history_page
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import decode_message, encode_message
from spindle.converter._serialization_context import WorkflowSerializationContext

__all__ = ["ClientPlumbing"]


class ClientPlumbing:
    """The client's call path and codec helpers; :class:`spindle.client.Client` sets the three attributes."""

    _stub: Any
    namespace: str
    codecs: tuple[PayloadCodec, ...]

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None, not_found: str = "workflow",
                   **options: Any) -> Any:
        """``call_rpc`` on the client's stub; ``options``: its ``stop_retrying``, ``retry`` and ``metadata``."""
        return await call_rpc(self._stub, method, request, timeout=timeout, not_found=not_found, **options)

    async def _history_page(self, execution: pb.WorkflowExecution, token: bytes = b"", *, wait: bool,
                            close_event_only: bool = False) -> svc.GetWorkflowExecutionHistoryResponse:
        return await history_page(self._rpc, self.namespace, execution, token, wait=wait,
                                  close_event_only=close_event_only)

    async def _encode(self, msg: Message, workflow_id: str = "",
                      context: WorkflowSerializationContext | None = None) -> None:
        """Encode ``msg``'s payloads; ``workflow_id`` (or ``context``) names the workflow where ``msg`` does not."""
        if self.codecs:
            await encode_message(self.codecs, msg,
                                 context=context or WorkflowSerializationContext(self.namespace, workflow_id))

    async def _decode(self, msg: Message, workflow_id: str = "") -> None:
        """Decode ``msg``'s payloads; ``workflow_id`` names the workflow where ``msg`` does not."""
        if self.codecs:
            await decode_message(self.codecs, msg, context=WorkflowSerializationContext(self.namespace, workflow_id))
