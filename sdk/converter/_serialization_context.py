"""What a payload belongs to, for the codecs that ask (Temporal's serialization context).

The client and worker know, for each payload they encode or decode, its namespace,
workflow and role; a codec that implements :class:`WithSerializationContext` is given
that :class:`WorkflowSerializationContext` (see :func:`spindle.converter._payload_codec.encode_payloads`);
plain codecs never see it.
"""

from __future__ import annotations

import dataclasses

from typing import Any

__all__ = ["SerializationContext", "WorkflowSerializationContext", "WithSerializationContext"]


class SerializationContext:
    """What a payload belongs to, given to codecs that ask for it (Temporal's base class)."""

    __slots__ = ()


@dataclasses.dataclass(frozen=True)
class WorkflowSerializationContext(SerializationContext):
    """The workflow a payload belongs to and what it is (Temporal's class, plus ``field``).

    ``workflow_id`` is the workflow of which the payload is an input or output: for a
    child workflow's input and result, or a signal sent to another workflow, that is the
    child's or the signalled workflow's id. ``field`` is the payload's role, the same at
    every hop (``"workflow.input"``, ``"signal.input"``, ``"activity.result"``,
    ``"failure"``, ``"memo.<key>"``, ... : see :mod:`spindle.converter._payload_visitor`). Either may be
    empty when the sender does not know it (an activity completed by task token: use
    ``AsyncActivityHandle.with_context``).
    """

    namespace: str
    workflow_id: str
    field: str = ""

    def describe(self) -> str:
        """``'signal.input of workflow "order-1" in namespace "default"'``, for error messages."""
        what = self.field or "a payload"
        return f"{what} of workflow {self.workflow_id!r} in namespace {self.namespace!r}"


class WithSerializationContext:
    """A codec that wants each payload's context implements :meth:`with_context` (Temporal's interface).

    The client and worker call ``codec.with_context(ctx).encode(payloads)`` (and
    ``decode``) once per distinct context in a message, instead of one call for all.
    """

    def with_context(self, context: SerializationContext) -> Any:
        """A copy of this object that uses ``context`` (the default returns ``self``)."""
        return self
