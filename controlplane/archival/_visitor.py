"""Finding every ``Payload`` inside a protobuf message (requests, responses, history events).

Which fields can lead to a ``spindle.v1.Payload`` is computed once per message type
from the descriptors (a fixed point, because ``Failure.cause`` is recursive), so a
walk only descends into fields that can hold one. ``Memo``, ``SearchAttributes`` and
``Header`` are never visited: the visibility store indexes search attributes and
memos by value, and headers carry codec metadata that must stay inline.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

__all__ = ["iter_payloads", "PAYLOAD_TYPE", "SKIPPED_TYPES"]

PAYLOAD_TYPE = pb.Payload.DESCRIPTOR.full_name
SKIPPED_TYPES = frozenset({pb.Memo.DESCRIPTOR.full_name, pb.SearchAttributes.DESCRIPTOR.full_name,
                           pb.Header.DESCRIPTOR.full_name})

_SINGLE, _REPEATED, _MAP = 0, 1, 2

#: message full name -> {field number: how to descend}; empty when no Payload is reachable.
_PLAN: dict[str, dict[int, int]] = {}


def _all_descriptors() -> list[Descriptor]:
    out: list[Descriptor] = []
    stack = [d for f in (pb.DESCRIPTOR, svc.DESCRIPTOR) for d in f.message_types_by_name.values()]
    while stack:
        d = stack.pop()
        out.append(d)
        stack.extend(d.nested_types)
    return out


def _message_type(fd: FieldDescriptor) -> Descriptor | None:
    """The message type a field holds (a map's value type for maps), or None for scalars."""
    mt = fd.message_type
    if mt is None:
        return None
    if mt.GetOptions().map_entry:
        return mt.fields_by_name["value"].message_type
    return mt


def _build_plans() -> None:
    descriptors = _all_descriptors()
    reach: dict[str, bool] = {d.full_name: d.full_name == PAYLOAD_TYPE for d in descriptors}
    changed = True
    while changed:
        changed = False
        for d in descriptors:
            if reach[d.full_name] or d.full_name in SKIPPED_TYPES:
                continue
            for fd in d.fields:
                mt = _message_type(fd)
                if mt is not None and mt.full_name not in SKIPPED_TYPES and reach.get(mt.full_name, False):
                    reach[d.full_name] = True
                    changed = True
                    break
    for d in descriptors:
        plan: dict[int, int] = {}
        if d.full_name not in SKIPPED_TYPES:
            for fd in d.fields:
                mt = _message_type(fd)
                if mt is None or mt.full_name in SKIPPED_TYPES or not reach.get(mt.full_name, False):
                    continue
                if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
                    plan[fd.number] = _MAP
                elif fd.is_repeated:
                    plan[fd.number] = _REPEATED
                else:
                    plan[fd.number] = _SINGLE
        _PLAN[d.full_name] = plan


def iter_payloads(msg: Message) -> Iterator[pb.Payload]:
    """Every Payload reachable from ``msg`` (outside memos, search attributes and headers).

    The yielded messages are live sub-messages: changing one changes ``msg``.
    """
    if not _PLAN:
        _build_plans()
    name = msg.DESCRIPTOR.full_name
    if name == PAYLOAD_TYPE:
        yield msg
        return
    plan = _PLAN.get(name)
    if not plan:
        return
    for fd, value in msg.ListFields():
        how = plan.get(fd.number)
        if how is None:
            continue
        if how == _SINGLE:
            yield from iter_payloads(value)
        elif how == _REPEATED:
            for v in value:
                yield from iter_payloads(v)
        else:
            for v in value.values():
                yield from iter_payloads(v)
