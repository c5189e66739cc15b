"""Apply the codec chain to every ``Payload`` inside a protobuf message, in place.

The client encodes requests and decodes responses with it; the worker does the
same for tasks and completions, so the server stores only encoded bytes. All the
payloads of one message are collected first and given to the codecs in a single
batch (one ``encode``/``decode`` call per codec per message).

``SearchAttributes`` are skipped: the server indexes their JSON values, so they
must stay readable.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from spindle.controlplane.api import messages_pb2 as pb
from spindle._converter import PayloadCodec, decode_payloads, encode_payloads

__all__ = ["collect_payloads", "encode_message", "decode_message"]

_PAYLOAD = pb.Payload.DESCRIPTOR.full_name
_SKIP = frozenset({pb.SearchAttributes.DESCRIPTOR.full_name})

# A plan step: (field name, kind, is_payload) where kind is "one" | "many" | "map".
_Step = tuple[str, str, bool]
_plans: dict[str, list[_Step]] = {}
_contains: dict[str, bool] = {}


def _may_contain(desc: Descriptor, visiting: set[str]) -> bool:
    name = desc.full_name
    if name in _contains:
        return _contains[name]
    if name == _PAYLOAD:
        return True
    if name in _SKIP:
        return False
    if name in visiting:  # a recursive type (Failure.cause): decided by its other fields
        return False
    visiting.add(name)
    found = False
    for fd in desc.fields:
        sub = _field_message(fd)
        if sub is not None and _may_contain(sub, visiting):
            found = True
    visiting.discard(name)
    if not visiting:
        _contains[name] = found
    return found


def _field_message(fd: FieldDescriptor) -> Descriptor | None:
    if fd.type != FieldDescriptor.TYPE_MESSAGE:
        return None
    mt = fd.message_type
    if mt.GetOptions().map_entry:
        vfd = mt.fields_by_name["value"]
        return vfd.message_type if vfd.type == FieldDescriptor.TYPE_MESSAGE else None
    return mt


def _plan(desc: Descriptor) -> list[_Step]:
    plan = _plans.get(desc.full_name)
    if plan is not None:
        return plan
    plan = []
    _plans[desc.full_name] = plan  # registered before recursion so recursive types terminate
    for fd in desc.fields:
        sub = _field_message(fd)
        if sub is None or sub.full_name in _SKIP:
            continue
        is_payload = sub.full_name == _PAYLOAD
        if not is_payload and not _may_contain(sub, set()):
            continue
        if fd.message_type.GetOptions().map_entry:
            kind = "map"
        elif fd.is_repeated:
            kind = "many"
        else:
            kind = "one"
        plan.append((fd.name, kind, is_payload))
    return plan


def collect_payloads(msg: Message, out: list[pb.Payload] | None = None) -> list[pb.Payload]:
    """Every ``Payload`` reachable from ``msg`` (outside ``SearchAttributes``), depth first.

    The returned objects are the live sub-messages, so ``p.CopyFrom(new)`` edits ``msg``.
    """
    if out is None:
        out = []
    for name, kind, is_payload in _plan(msg.DESCRIPTOR):
        if kind == "one":
            if not msg.HasField(name):
                continue
            sub = getattr(msg, name)
            if is_payload:
                out.append(sub)
            else:
                collect_payloads(sub, out)
        else:
            container = getattr(msg, name)
            items = container.values() if kind == "map" else container
            if is_payload:
                out.extend(items)
            else:
                for sub in items:
                    collect_payloads(sub, out)
    return out


async def encode_message(codecs: Sequence[PayloadCodec], msg: Message) -> None:
    """Encode, in place, every payload of ``msg`` with ``codecs`` (no-op without codecs)."""
    if not codecs:
        return
    targets = collect_payloads(msg)
    if targets:
        _replace(targets, await encode_payloads(codecs, targets))


async def decode_message(codecs: Sequence[PayloadCodec], msg: Message) -> None:
    """Decode, in place, every payload of ``msg`` with ``codecs`` (no-op without codecs).

    Raises:
        ValueError: a codec could not decode a payload (wrong key, corrupt data).
    """
    if not codecs:
        return
    targets = collect_payloads(msg)
    if targets:
        _replace(targets, await decode_payloads(codecs, targets))


def _replace(targets: list[pb.Payload], new: list[pb.Payload]) -> None:
    # Copy first: a codec may return the very objects it was given.
    fresh = [pb.Payload(metadata=p.metadata, data=p.data) for p in new]
    for target, value in zip(targets, fresh):
        target.CopyFrom(value)
