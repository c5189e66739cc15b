"""Payload codecs: zlib, encryption, chains, pass-through of foreign payloads."""

from __future__ import annotations

import pytest

from spindle.api import messages_pb2 as pb
from spindle.converter import DataConverter, PayloadCodec, ZlibCodec
from spindle.converter._payload_codec import decode_payloads, encode_payloads

conv = DataConverter.default


async def test_zlib_roundtrip_and_small_passthrough() -> None:
    big = conv.to_payload("x" * 5000)
    small = conv.to_payload(1)
    codec = ZlibCodec(min_size=64)
    enc = await codec.encode([big, small])
    assert enc[0].metadata["encoding"] == b"binary/zlib"
    assert len(enc[0].data) < 200
    assert enc[1] == small
    dec = await codec.decode(enc)
    assert conv.from_payload(dec[0]) == "x" * 5000
    assert conv.from_payload(dec[1]) == 1


async def test_encryption_codec_roundtrip_and_key_rotation() -> None:
    pytest.importorskip("cryptography")
    from spindle.converter import EncryptionCodec

    old = EncryptionCodec(b"k" * 32, key_id="v1")
    p = conv.to_payload({"secret": "s3cr3t"})
    enc = (await old.encode([p]))[0]
    assert b"s3cr3t" not in enc.data
    assert enc.metadata["encryption-key-id"] == b"v1"
    new = EncryptionCodec(b"n" * 32, key_id="v2", previous_keys={"v1": b"k" * 32})
    assert conv.from_payload((await new.decode([enc]))[0]) == {"secret": "s3cr3t"}
    with pytest.raises(ValueError, match="32 bytes"):
        EncryptionCodec(b"short")


async def test_chain_encodes_in_order_and_decodes_in_reverse() -> None:
    calls: list[str] = []

    class Tag(PayloadCodec):
        def __init__(self, name: str) -> None:
            self.name = name

        async def encode(self, payloads: list[pb.Payload]) -> list[pb.Payload]:
            calls.append("enc-" + self.name)
            return [pb.Payload(metadata={"encoding": self.name.encode()}, data=p.SerializeToString())
                    for p in payloads]

        async def decode(self, payloads: list[pb.Payload]) -> list[pb.Payload]:
            calls.append("dec-" + self.name)
            return [pb.Payload.FromString(p.data) if p.metadata["encoding"] == self.name.encode() else p
                    for p in payloads]

    chain = [Tag("a"), ZlibCodec(min_size=0), Tag("b")]
    original = [conv.to_payload(v) for v in ["one", 2, None]]
    enc = await encode_payloads(chain, original)
    assert [p.metadata["encoding"] for p in enc] == [b"b"] * 3
    dec = await decode_payloads(chain, enc)
    assert [conv.from_payload(p) for p in dec] == ["one", 2, None]
    assert calls == ["enc-a", "enc-b", "dec-b", "dec-a"]
