"""``CodecServerCodec``: a client, a worker and the widgets use a remote codec server (Temporal's protocol)."""

from __future__ import annotations

import asyncio
import json
import os
import threading

from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from google.protobuf import json_format

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.client import Client
from spindle.converter import CodecServerCodec, DataConverter, EncryptionCodec
from spindle.worker import Worker

pytest.importorskip("cryptography")

KEY = os.urandom(32)


def serve(codec: EncryptionCodec) -> tuple[ThreadingHTTPServer, list[str]]:
    """A codec server as in samples-python/encryption/codec_server.py; records the namespaces asked for."""
    namespaces: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            verb = self.path.strip("/")
            if verb not in ("encode", "decode") or self.headers.get("Content-Type") != "application/json":
                self.send_error(404)
                return
            namespaces.append(self.headers.get("X-Namespace", ""))
            payloads = json_format.Parse(self.rfile.read(int(self.headers["Content-Length"])), pb.Payloads())
            fn = codec.encode if verb == "encode" else codec.decode
            out = asyncio.run(fn(list(payloads.payloads)))
            body = json_format.MessageToJson(pb.Payloads(payloads=out)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, namespaces


@pytest.fixture
def codec_server() -> Iterator[tuple[str, list[str]]]:
    server, namespaces = serve(EncryptionCodec(KEY, bind_context=False))
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", namespaces
    finally:
        server.shutdown()


@workflow.defn
async def echo(value: str) -> str:
    return f"echo {value}"


async def test_round_trip_through_the_server(codec_server: tuple[str, list[str]]) -> None:
    url, namespaces = codec_server
    codec = CodecServerCodec(url + "/")
    value = DataConverter.default.to_payload({"card": "4111"})
    [enc] = await codec.encode([value])
    assert enc.metadata["encoding"] == b"binary/encrypted" and b"4111" not in enc.data
    assert await codec.decode([enc]) == [value]
    assert await EncryptionCodec(KEY).decode([enc]) == [value]  # what the server made is the same codec's output
    assert await codec.encode([]) == []
    assert namespaces == ["default", "default"]


async def test_a_client_and_worker_use_the_codec_server(codec_server: tuple[str, list[str]], tmp_path: Path) -> None:
    url, namespaces = codec_server
    raw = await Client.connect("embedded:" + str(tmp_path / "cs.db"))
    client = Client(raw.stub, namespace=raw.namespace, codecs=[CodecServerCodec(url)])
    try:
        async with Worker(client, task_queue="cs", workflows=[echo], graceful_shutdown_timeout=timedelta(seconds=1)):
            # a secret with a space: it cannot turn up by chance inside the run id's hex or base64 data
            assert await client.execute_workflow(echo, "card 4111", id="cs", task_queue="cs") == "echo card 4111"
        stored = await raw.get_workflow_handle("cs").fetch_history()
        assert "card 4111" not in json.dumps(stored.to_dict())
        from spindle.widgets import HistoryGraph

        graph = HistoryGraph(stored, codecs=[CodecServerCodec(url)])  # a notebook without the key
        assert any(n.input == ["card 4111"] for n in graph.model.nodes())
        assert set(namespaces) == {"default"}
    finally:
        await raw.close()


async def test_errors_name_the_endpoint(codec_server: tuple[str, list[str]]) -> None:
    url, _ = codec_server
    with pytest.raises(ValueError, match=r"codec server http://127\.0\.0\.1:\d+/nope/decode answered HTTP 404"):
        await CodecServerCodec(url + "/nope").decode([DataConverter.default.to_payload(1)])
    with pytest.raises(ValueError, match=r"codec server http://127\.0\.0\.1:9/decode cannot be reached"):
        await CodecServerCodec("http://127.0.0.1:9", timeout=2).decode([DataConverter.default.to_payload(1)])
    with pytest.raises(ValueError, match="must be an http"):
        CodecServerCodec("localhost:8081")
