"""The client's codec chain applied to whole requests and responses (a collaborator of ``spindle.client.Client``).

The modules that do the client's calls encode every payload of a request and decode every payload of a
response through it (``client._encode`` / ``client._decode``), so the server only ever stores encoded bytes.
"""

from __future__ import annotations

from google.protobuf.message import Message

from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import decode_message, encode_message
from spindle.converter._serialization_context import WorkflowSerializationContext

__all__ = ["ClientCodecs"]


class ClientCodecs:
    """Encodes and decodes the payloads of wire messages of one namespace with one codec chain."""

    def __init__(self, namespace: str, codecs: tuple[PayloadCodec, ...]) -> None:
        self._namespace = namespace
        self._codecs = codecs

    async def encode(self, msg: Message, workflow_id: str = "",
                     context: WorkflowSerializationContext | None = None) -> None:
        """Encode ``msg``'s payloads; ``workflow_id`` (or ``context``) names the workflow where ``msg`` does not."""
        if self._codecs:
            await encode_message(self._codecs, msg,
                                 context=context or WorkflowSerializationContext(self._namespace, workflow_id))

    async def decode(self, msg: Message, workflow_id: str = "") -> None:
        """Decode ``msg``'s payloads; ``workflow_id`` names the workflow where ``msg`` does not."""
        if self._codecs:
            await decode_message(self._codecs, msg, context=WorkflowSerializationContext(self._namespace, workflow_id))
