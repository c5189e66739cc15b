"""What a codec server, or whoever answers at its address, can make ``CodecServerCodec`` do (docs/SECURITY.md,
"Attack surface review"): real HTTP servers on loopback that answer as an attacker would.

Spindle ships no codec server (the one in tests/sdk/converter/test_codec_server.py is the
samples' server); the surface Spindle owns is the client: where it sends the payloads and the
token, and how much of an answer it reads.
"""

from __future__ import annotations

import resource
import threading
import time

from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spindle.converter import CodecServerCodec, DataConverter

TOKEN = "Bearer codec-token-123"


class Recorder:
    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []


def serve(answer: Callable[[BaseHTTPRequestHandler], None]) -> tuple[ThreadingHTTPServer, Recorder]:
    """An HTTP server on 127.0.0.1 whose POST handler is ``answer``; records each request's headers."""
    rec = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            rec.requests.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path,
                                                                                   "method": self.command})
            answer(self)

        do_POST = do_GET = _any  # noqa: N815 - http.server's names

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, rec


@pytest.fixture
def servers() -> Iterator[list[ThreadingHTTPServer]]:
    made: list[ThreadingHTTPServer] = []
    yield made
    for s in made:
        s.shutdown()
        s.server_close()


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


PAYLOADS = [DataConverter.default.to_payload("secret plaintext")]


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
async def test_a_redirect_is_not_followed_and_the_token_stays_home(servers: list[ThreadingHTTPServer],
                                                                   code: int) -> None:
    elsewhere, seen_elsewhere = serve(lambda h: h.send_error(500))
    servers.append(elsewhere)

    def redirect(h: BaseHTTPRequestHandler) -> None:
        h.send_response(code)
        h.send_header("Location", url(elsewhere) + "/steal")
        h.send_header("Content-Length", "0")
        h.end_headers()

    codec_server, seen = serve(redirect)
    servers.append(codec_server)
    codec = CodecServerCodec(url(codec_server), headers={"Authorization": TOKEN})
    with pytest.raises(ValueError, match=rf"answered HTTP {code}: redirect to http://127\.0\.0\.1:\d+/steal refused"):
        await codec.decode(PAYLOADS)
    assert [r["authorization"] for r in seen.requests] == [TOKEN]
    assert seen_elsewhere.requests == []  # before the fix, 301/302/303 were followed with the Authorization header


async def test_an_oversized_answer_is_refused_by_its_length(servers: list[ThreadingHTTPServer]) -> None:
    def huge(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(10 * 1024**3))  # announces 10 GiB
        h.end_headers()
        h.wfile.write(b"{" * 1024)

    server, _ = serve(huge)
    servers.append(server)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match=r"answered 10737418240 bytes, over the limit of 4096 \(max_response_bytes\)"):
        await CodecServerCodec(url(server), max_response_bytes=4096, timeout=2).decode(PAYLOADS)
    assert time.monotonic() - t0 < 1.5


async def test_an_endless_answer_is_read_only_up_to_the_limit(servers: list[ThreadingHTTPServer]) -> None:
    """No Content-Length, 64 MiB streamed: the client stops after the limit, its memory does not grow by the answer."""
    def stream(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Connection", "close")
        h.end_headers()
        chunk = b" " * (1024 * 1024)
        try:
            for _ in range(64):
                h.wfile.write(chunk)
        except OSError:
            pass  # the client hung up, as it should

    server, _ = serve(stream)
    servers.append(server)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match=r"answered more than 1048576 bytes \(max_response_bytes\)"):
        await CodecServerCodec(url(server), max_response_bytes=1024 * 1024, timeout=5).decode(PAYLOADS)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 32 * 1024, grown_kib


async def test_a_malformed_answer_names_the_problem(servers: list[ThreadingHTTPServer]) -> None:
    def garbage(h: BaseHTTPRequestHandler) -> None:
        body = b'{"payloads": [{"data": "not base64!!"}'
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    server, _ = serve(garbage)
    servers.append(server)
    with pytest.raises(ValueError, match="answered something that is not Payloads JSON"):
        await CodecServerCodec(url(server)).decode(PAYLOADS)


async def test_a_server_that_never_answers_costs_the_timeout_only(servers: list[ThreadingHTTPServer]) -> None:
    server, _ = serve(lambda h: time.sleep(3))
    servers.append(server)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="cannot be reached: .*timed out"):
        await CodecServerCodec(url(server), timeout=0.5).decode(PAYLOADS)
    assert time.monotonic() - t0 < 1.5


def test_plain_http_to_another_machine_is_refused_unless_asked_for() -> None:
    for endpoint in ("http://codec.example.com:8081", "http://10.0.0.5:8081", "http://[2001:db8::1]:8081"):
        with pytest.raises(ValueError, match="sends the decoded payloads and the headers in the clear; use https://"):
            CodecServerCodec(endpoint)
        assert CodecServerCodec(endpoint, insecure_http=True).endpoint == endpoint
    for endpoint in ("http://127.0.0.1:8081", "http://localhost:8081", "http://[::1]:8081",
                     "https://codec.example.com"):
        CodecServerCodec(endpoint)
    with pytest.raises(ValueError, match="max_response_bytes: must be positive"):
        CodecServerCodec("http://127.0.0.1:1", max_response_bytes=0)


async def test_the_settings_survive_a_serialization_context() -> None:
    from spindle.converter import WorkflowSerializationContext

    codec = CodecServerCodec("http://10.0.0.5:1", insecure_http=True, max_response_bytes=7)
    other = codec.with_context(WorkflowSerializationContext(namespace="orders", workflow_id="w"))
    assert other is not codec and other.namespace == "orders"
    assert (other.max_response_bytes, other.insecure_http) == (7, True)
