"""``Payload``, ``Payloads`` and friends, where Temporal's payload codecs import them from.

A codec written for Temporal (``from temporalio.api.common.v1 import Payload``) builds
``Payload(metadata={...}, data=...)``: Spindle's message has the same two fields, so the
codec runs unchanged after the import rename.
"""

from spindle.api.messages_pb2 import Header, Memo, Payload, Payloads, SearchAttributes, WorkflowExecution

__all__ = ["Header", "Memo", "Payload", "Payloads", "SearchAttributes", "WorkflowExecution"]
