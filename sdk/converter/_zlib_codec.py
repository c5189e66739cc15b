"""The zlib payload codec: compresses large payloads, and refuses decompression bombs on the way back."""

from __future__ import annotations

import zlib

from collections.abc import Sequence

from spindle.api import messages_pb2 as pb
from spindle.converter._encodings import ENCODING_ZLIB
from spindle.converter._payload_codec import PayloadCodec

__all__ = ["ZlibCodec", "DEFAULT_MAX_DECOMPRESSED_SIZE"]

#: ZlibCodec's default limit on a decompressed payload: the largest payload a request may carry.
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024
_INFLATE_CHUNK = 1024 * 1024


class ZlibCodec(PayloadCodec):
    """Compresses payloads whose serialised size is at least ``min_size`` bytes.

    The whole original payload (metadata included) is compressed, under encoding
    ``binary/zlib``; smaller payloads pass through unchanged. Decompression stops at
    ``max_decompressed_size`` bytes (64 MiB by default, the most a request may carry):
    a payload that inflates beyond it (a decompression bomb) is refused with a
    ``ValueError`` instead of exhausting the worker's memory.

    Raises:
        ValueError: ``level`` is not 0-9, or ``max_decompressed_size`` is not positive.
    """

    def __init__(self, *, level: int = 6, min_size: int = 64,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
        if not 0 <= level <= 9:
            raise ValueError(f"ZlibCodec level must be 0-9, got {level}")
        if max_decompressed_size <= 0:
            raise ValueError(f"ZlibCodec max_decompressed_size must be positive, got {max_decompressed_size}")
        self.level = level
        self.min_size = min_size
        self.max_decompressed_size = max_decompressed_size

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        out: list[pb.Payload] = []
        for p in payloads:
            raw = p.SerializeToString()
            if len(raw) < self.min_size:
                out.append(p)
                continue
            out.append(pb.Payload(metadata={"encoding": ENCODING_ZLIB}, data=zlib.compress(raw, self.level)))
        return out

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        out: list[pb.Payload] = []
        for p in payloads:
            if p.metadata.get("encoding") != ENCODING_ZLIB:
                out.append(p)
                continue
            out.append(pb.Payload.FromString(self._inflate(p.data)))
        return out

    def _inflate(self, data: bytes) -> bytes:
        """Decompress ``data``, holding at most ``max_decompressed_size`` bytes (plus one chunk) at any time."""
        limit = self.max_decompressed_size
        inflater = zlib.decompressobj()
        chunks: list[bytes] = []
        size = 0
        pending = data
        try:
            while pending and not inflater.eof:
                chunk = inflater.decompress(pending, _INFLATE_CHUNK)
                size += len(chunk)
                if size > limit:
                    raise ValueError(
                        f"binary/zlib payload of {len(data)} bytes inflates beyond max_decompressed_size "
                        f"({limit} bytes): refused (a decompression bomb?); raise "
                        "ZlibCodec(max_decompressed_size=...) if values this large are expected")
                chunks.append(chunk)
                pending = inflater.unconsumed_tail
                if not chunk and not pending:
                    break
            tail = inflater.flush() if not inflater.eof else b""
        except zlib.error as e:
            raise ValueError(f"corrupt binary/zlib payload: {e}") from e
        if tail:
            size += len(tail)
            if size > limit:
                raise ValueError(f"binary/zlib payload of {len(data)} bytes inflates beyond max_decompressed_size "
                                 f"({limit} bytes): refused")
            chunks.append(tail)
        if not inflater.eof:
            raise ValueError("corrupt binary/zlib payload: the compressed stream is truncated")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
