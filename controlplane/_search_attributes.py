"""Search attributes: checking values against a namespace's registered types, and reading stored values.

Shared by the frontend (a start's attributes) and the history service (the attributes
of upsert, child-start and continue-as-new commands, and the values written to
visibility rows). It sits below both so that neither imports the other.
"""

from __future__ import annotations

import json

from collections.abc import Mapping
from datetime import datetime

from spindle.api import messages_pb2 as pb
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.namespaces import SERVER_SET_SEARCH_ATTRIBUTES, Namespace

_CHECKS = {
    "Keyword": lambda v: isinstance(v, str),
    "Text": lambda v: isinstance(v, str),
    "Int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "Double": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "Bool": lambda v: isinstance(v, bool),
    "Datetime": lambda v: isinstance(v, (str, int)) and not isinstance(v, bool),
    "KeywordList": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
}


def check_search_attributes(ns: Namespace, sa: pb.SearchAttributes, field: str) -> None:
    """Check every value against its registered type (InvalidArgument naming the attribute).

    A single-valued attribute given as a list of one value is stored as that value, and an
    empty list as no value: Temporal's untyped API passes every value as a list
    (``search_attributes={"CustomKeywordField": ["a"]}``). The payload is rewritten in place.
    """
    types = ns.search_attribute_type_names
    for name, payload in sa.indexed_fields.items():
        if name in SERVER_SET_SEARCH_ATTRIBUTES:
            raise InvalidArgument(f"{field}: search attribute {name!r} is set by the server from the run's history "
                                  "(worker build versioning); a workflow or a client cannot set it")
        t = types.get(name)
        if t is None:
            known = ", ".join(sorted(t for t in types if t not in SERVER_SET_SEARCH_ATTRIBUTES)) or "none registered"
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
        if value is not None and not _CHECKS[t](value):
            raise InvalidArgument(f"{field}.{name}: {value!r} is not a valid {t} value")


def search_attribute_values(ns: Namespace | None, attributes: Mapping[str, pb.Payload]) -> dict[str, object]:
    """The values of a run's search attributes, as a visibility row keeps them.

    Datetime values become epoch milliseconds; values that are not JSON (or not a valid
    date) are left out.
    """
    types = ns.search_attribute_type_names if ns else {}
    out: dict[str, object] = {}
    for k, p in attributes.items():
        try:
            v = json.loads(p.data) if p.data else None
        except ValueError:
            continue
        if types.get(k) == "Datetime" and isinstance(v, str):
            try:
                v = int(datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
        out[k] = v
    return out


__all__ = ["check_search_attributes", "search_attribute_values"]
