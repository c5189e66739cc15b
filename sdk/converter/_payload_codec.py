"""Payload codecs: the asynchronous bytes-to-bytes steps (compression, encryption) on the wire.

A :class:`PayloadCodec` is applied by the client and worker to every payload that
crosses the wire; the server only ever stores encoded bytes. Codecs are not part of the
``DataConverter``'s conversion because they may do I/O (a key service) and must not run
inside workflow code. A codec that also implements
:class:`~spindle.converter.WithSerializationContext` is told, for each payload, which
namespace and workflow it belongs to and its role (:class:`WorkflowSerializationContext`);
plain codecs are called as before. :func:`encode_payloads` and :func:`decode_payloads`
run a chain of codecs; the built-in codecs are in :mod:`spindle.converter._zlib_codec`
and :mod:`spindle.converter._encryption_codec`.
"""

from __future__ import annotations

import abc

from collections.abc import Sequence
from typing import ClassVar

from spindle.api import messages_pb2 as pb
from spindle.converter._serialization_context import SerializationContext, WithSerializationContext

__all__ = ["PayloadCodec", "encode_payloads", "decode_payloads"]


class PayloadCodec(abc.ABC):
    """An asynchronous transformation of payloads (compression, encryption).

    ``encode`` runs on the way to the server and ``decode`` on the way back; a
    chain of codecs encodes in order and decodes in reverse order. ``decode`` must
    pass through, unchanged, payloads it did not encode (check the ``encoding``
    metadata), because histories may hold payloads written before the codec was
    added. Codecs run in the client and worker, never inside workflow code, so
    they may do I/O. Errors: raise ``ValueError`` saying what is wrong with which
    payload; the worker fails the workflow task with it (the task is retried).

    Set ``encode_common_attributes = True`` on a codec that protects secrets: failure
    messages and stack traces then travel inside an encoded payload too (see
    :mod:`spindle.converter._payload_visitor`).
    """

    #: Whether failure messages and stack traces must be encoded along with the payloads.
    encode_common_attributes: ClassVar[bool] = False

    @abc.abstractmethod
    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        """Return one encoded payload per input payload, in order."""

    @abc.abstractmethod
    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        """Return one decoded payload per input payload, in order."""


async def _run_codec(codec: PayloadCodec, payloads: list[pb.Payload],
                     contexts: Sequence[SerializationContext] | None, encode: bool) -> list[pb.Payload]:
    """One codec over ``payloads``: one call, or one call per distinct context for a context-aware codec."""
    if contexts is None or not isinstance(codec, WithSerializationContext):
        out = await (codec.encode(payloads) if encode else codec.decode(payloads))
        result = list(out)
        if len(result) != len(payloads):
            what = "encode" if encode else "decode"
            raise ValueError(f"{type(codec).__name__}.{what} returned {len(result)} payloads for {len(payloads)}")
        return result
    groups: dict[SerializationContext, list[int]] = {}
    for i, ctx in enumerate(contexts):
        groups.setdefault(ctx, []).append(i)
    merged: list[pb.Payload | None] = [None] * len(payloads)
    for ctx, indexes in groups.items():
        bound = codec.with_context(ctx)
        part = [payloads[i] for i in indexes]
        got = list(await (bound.encode(part) if encode else bound.decode(part)))
        if len(got) != len(part):
            what = "encode" if encode else "decode"
            raise ValueError(f"{type(codec).__name__}.{what} returned {len(got)} payloads for {len(part)}")
        for i, p in zip(indexes, got):
            merged[i] = p
    return merged  # type: ignore[return-value]


async def encode_payloads(codecs: Sequence[PayloadCodec], payloads: Sequence[pb.Payload],
                          contexts: Sequence[SerializationContext] | None = None) -> list[pb.Payload]:
    """Run ``payloads`` through each codec's ``encode``, first to last.

    ``contexts`` (one per payload) is given to codecs that implement
    :class:`WithSerializationContext`; other codecs see one batch.
    """
    out = list(payloads)
    for codec in codecs:
        out = await _run_codec(codec, out, contexts, True)
    return out


async def decode_payloads(codecs: Sequence[PayloadCodec], payloads: Sequence[pb.Payload],
                          contexts: Sequence[SerializationContext] | None = None) -> list[pb.Payload]:
    """Run ``payloads`` through each codec's ``decode``, last to first (``contexts`` as in :func:`encode_payloads`)."""
    out = list(payloads)
    for codec in reversed(codecs):
        out = await _run_codec(codec, out, contexts, False)
    return out
