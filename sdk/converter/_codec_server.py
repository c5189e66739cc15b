"""``CodecServerCodec``: a payload codec that asks a remote codec server (Temporal's protocol).

A codec server keeps the keys away from the machines that only look at data (a
notebook, a laptop): it answers ``POST {endpoint}/encode`` and ``POST {endpoint}/decode``
with a JSON body ``{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}``
(the protobuf JSON form of ``Payloads``) and the ``X-Namespace`` header, the protocol of
Temporal's codec servers (samples-python ``encryption/codec_server.py``), so one server
can serve both. Give it to a client (``codecs=[CodecServerCodec(url)]``) or to the widgets
(``HistoryGraph(history, codecs=[...])``).
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

from collections.abc import Mapping, Sequence

from google.protobuf import json_format

from spindle.api import messages_pb2 as pb
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._serialization_context import (
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

__all__ = ["CodecServerCodec"]


class CodecServerCodec(PayloadCodec, WithSerializationContext):
    """Encodes and decodes payloads by calling a codec server at ``endpoint`` (an ``http(s)://`` URL).

    Args:
        endpoint: the server's base URL; ``/encode`` and ``/decode`` are appended.
        headers: extra HTTP headers (e.g. ``{"Authorization": "Bearer ..."}``).
        namespace: sent as ``X-Namespace`` when the payloads' context does not name one.
        timeout: seconds per request.

    Errors (unreachable server, an HTTP error, an answer that is not one payload per
    payload) raise ``ValueError`` naming the endpoint.

    Raises:
        ValueError: ``endpoint`` is not an http(s) URL.
    """

    def __init__(self, endpoint: str, *, headers: Mapping[str, str] | None = None, namespace: str = "default",
                 timeout: float = 10.0) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"CodecServerCodec endpoint must be an http(s) URL, got {endpoint!r}")
        self.endpoint = endpoint.rstrip("/")
        self.headers = dict(headers or {})
        self.namespace = namespace
        self.timeout = timeout

    def with_context(self, context: SerializationContext) -> CodecServerCodec:
        """This codec, sending the context's namespace."""
        if not isinstance(context, WorkflowSerializationContext) or not context.namespace or \
                context.namespace == self.namespace:
            return self
        return CodecServerCodec(self.endpoint, headers=self.headers, namespace=context.namespace,
                                timeout=self.timeout)

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        return await self._call("encode", payloads)

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        return await self._call("decode", payloads)

    async def _call(self, verb: str, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        if not payloads:
            return []
        body = json_format.MessageToJson(pb.Payloads(payloads=payloads)).encode()
        answer = await asyncio.to_thread(self._post, f"{self.endpoint}/{verb}", body)
        try:
            out = list(json_format.Parse(answer, pb.Payloads()).payloads)
        except json_format.ParseError as e:
            raise ValueError(f"codec server {self.endpoint}/{verb} answered something that is not Payloads JSON: "
                             f"{e}") from e
        if len(out) != len(payloads):
            raise ValueError(f"codec server {self.endpoint}/{verb} returned {len(out)} payloads for {len(payloads)}")
        return out

    def _post(self, url: str, body: bytes) -> bytes:
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "X-Namespace": self.namespace, **self.headers})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as e:
            raise ValueError(f"codec server {url} answered HTTP {e.code}: {e.reason}") from e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ValueError(f"codec server {url} cannot be reached: {reason}") from e
