"""Request validation: every problem is reported with the field it concerns."""

from __future__ import annotations

import json

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import InvalidArgument, ResourceExhausted
from spindle.controlplane.namespaces import Namespace

_SA_CHECKS = {
    "Keyword": lambda v: isinstance(v, str),
    "Text": lambda v: isinstance(v, str),
    "Int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "Double": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "Bool": lambda v: isinstance(v, bool),
    "Datetime": lambda v: isinstance(v, (str, int)) and not isinstance(v, bool),
    "KeywordList": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
}


def require_id(value: str, field: str, config: ServerConfig) -> None:
    if not value:
        raise InvalidArgument(f"{field}: required (got an empty value)")
    if len(value) > config.max_id_length:
        raise InvalidArgument(f"{field}: {len(value)} characters is over the limit of {config.max_id_length}")


def check_timeout(value: int, field: str) -> None:
    if value < 0:
        raise InvalidArgument(f"{field}: must not be negative, got {value}")


def payload_size(*messages: object) -> int:
    total = 0
    for m in messages:
        if m is not None and hasattr(m, "ByteSize"):
            total += m.ByteSize()  # type: ignore[attr-defined]
    return total


def check_payloads(config: ServerConfig, field: str, *messages: object) -> None:
    size = payload_size(*messages)
    if size > config.max_payload_bytes:
        raise ResourceExhausted(f"{field}: {size} bytes is over the payload limit of {config.max_payload_bytes} bytes "
                                "(store large values elsewhere and pass a reference)")


def check_search_attributes(ns: Namespace, sa: pb.SearchAttributes, field: str) -> None:
    """Check every value against its registered type (InvalidArgument naming the attribute).

    A single-valued attribute given as a list of one value is stored as that value, and an
    empty list as no value: Temporal's untyped API passes every value as a list
    (``search_attributes={"CustomKeywordField": ["a"]}``). The payload is rewritten in place.
    """
    types = ns.search_attribute_type_names
    for name, payload in sa.indexed_fields.items():
        t = types.get(name)
        if t is None:
            known = ", ".join(sorted(types)) or "none registered"
            raise InvalidArgument(f"{field}: search attribute {name!r} is not registered in namespace {ns.name!r} "
                                  f"(registered: {known})")
        try:
            value = json.loads(payload.data) if payload.data else None
        except ValueError as e:
            raise InvalidArgument(f"{field}.{name}: value is not JSON") from e
        if t != "KeywordList" and isinstance(value, list):
            if len(value) > 1:
                raise InvalidArgument(f"{field}.{name}: a {t} attribute holds one value, got a list of {len(value)} "
                                      "(register it as KeywordList to store several keywords)")
            value = value[0] if value else None
            payload.data = json.dumps(value).encode() if value is not None else b""
        if value is not None and not _SA_CHECKS[t](value):
            raise InvalidArgument(f"{field}.{name}: {value!r} is not a valid {t} value")


def check_enum(value: int, enum: object, field: str) -> None:
    if value not in enum.values():  # type: ignore[attr-defined]
        raise InvalidArgument(f"{field}: unknown value {value}")
