"""``CodecServerCodec``: a payload codec that asks a remote codec server (Temporal's protocol).

A codec server keeps the keys away from the machines that only look at data (a
notebook, a laptop): it answers ``POST {endpoint}/encode`` and ``POST {endpoint}/decode``
with a JSON body ``{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}``
(the protobuf JSON form of ``Payloads``) and the ``X-Namespace`` header, the protocol of
Temporal's codec servers (samples-python ``encryption/codec_server.py``), so one server
can serve both. Give it to a client (``codecs=[CodecServerCodec(url)]``) or to the widgets
(``HistoryGraph(history, codecs=[...])``).

What a codec server (or whoever answers at its address) cannot make this client do:

- **follow a redirect**: an answer 3xx is an error; the payloads and the ``headers`` (say an
  ``Authorization`` token) are never sent to the address it names;
- **use unbounded memory**: an answer over ``max_response_bytes`` (Content-Length or the
  bytes actually read) is an error after reading at most that many bytes plus one;
- **receive decoded payloads in the clear from another machine**: ``http://`` is accepted for
  loopback hosts only (``127.0.0.0/8``, ``::1``, ``localhost``); another host needs
  ``https://``, or ``insecure_http=True`` when the network itself is trusted.

Spindle ships no codec server: what guards ``/encode`` and ``/decode`` (a bind address, a
token, CORS for a browser UI, a body limit) is the server's own (see docs/CODECS.md).
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.parse
import urllib.request

from collections.abc import Mapping, Sequence

from google.protobuf import json_format

from spindle.api import messages_pb2 as pb
from spindle.api._addresses import is_loopback_host
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._serialization_context import (
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

__all__ = ["CodecServerCodec", "DEFAULT_MAX_RESPONSE_BYTES"]

#: The largest answer read from a codec server by default (the gRPC channel's message limit).
DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuses every redirect: following one would send the payloads and headers to another address."""

    def redirect_request(self, req: urllib.request.Request, fp: object, code: int, msg: str, headers: object,
                         newurl: str) -> None:
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl} refused (not followed)",
                                     headers, fp)  # type: ignore[arg-type]


_OPENER = urllib.request.build_opener(_NoRedirect())


class CodecServerCodec(PayloadCodec, WithSerializationContext):
    """Encodes and decodes payloads by calling a codec server at ``endpoint`` (an ``http(s)://`` URL).

    Args:
        endpoint: the server's base URL; ``/encode`` and ``/decode`` are appended.
        headers: extra HTTP headers (e.g. ``{"Authorization": "Bearer ..."}``).
        namespace: sent as ``X-Namespace`` when the payloads' context does not name one.
        timeout: seconds per request.
        max_response_bytes: the largest answer accepted (module docstring).
        insecure_http: allow ``http://`` to a host that is not this machine (payloads, decoded
            ones included, and headers then travel in the clear).

    Errors (unreachable server, an HTTP error, an answer that is not one payload per
    payload) raise ``ValueError`` naming the endpoint.

    Raises:
        ValueError: ``endpoint`` is not an http(s) URL, or is ``http://`` to another machine
            without ``insecure_http``, or ``max_response_bytes`` is not positive.
    """

    def __init__(self, endpoint: str, *, headers: Mapping[str, str] | None = None, namespace: str = "default",
                 timeout: float = 10.0, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 insecure_http: bool = False) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"CodecServerCodec endpoint must be an http(s) URL, got {endpoint!r}")
        host = urllib.parse.urlsplit(endpoint).hostname or ""
        if endpoint.startswith("http://") and not insecure_http and not is_loopback_host(host):
            raise ValueError(f"CodecServerCodec endpoint {endpoint!r}: http:// to another machine ({host}) sends the "
                             "decoded payloads and the headers in the clear; use https://, or pass "
                             "insecure_http=True if the network is trusted")
        if max_response_bytes < 1:
            raise ValueError(f"CodecServerCodec max_response_bytes: must be positive, got {max_response_bytes}")
        self.endpoint = endpoint.rstrip("/")
        self.headers = dict(headers or {})
        self.namespace = namespace
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.insecure_http = insecure_http

    def with_context(self, context: SerializationContext) -> CodecServerCodec:
        """This codec, sending the context's namespace."""
        if not isinstance(context, WorkflowSerializationContext) or not context.namespace or \
                context.namespace == self.namespace:
            return self
        return CodecServerCodec(self.endpoint, headers=self.headers, namespace=context.namespace,
                                timeout=self.timeout, max_response_bytes=self.max_response_bytes,
                                insecure_http=self.insecure_http)

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
            with _OPENER.open(request, timeout=self.timeout) as response:
                limit = self.max_response_bytes
                length = response.headers.get("Content-Length")
                if length is not None and length.isdigit() and int(length) > limit:
                    raise ValueError(f"codec server {url} answered {int(length)} bytes, over the limit of {limit} "
                                     "(max_response_bytes)")
                data: bytes = response.read(limit + 1)
                if len(data) > limit:
                    raise ValueError(f"codec server {url} answered more than {limit} bytes (max_response_bytes)")
                return data
        except urllib.error.HTTPError as e:
            raise ValueError(f"codec server {url} answered HTTP {e.code}: {e.reason}") from e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ValueError(f"codec server {url} cannot be reached: {reason}") from e
