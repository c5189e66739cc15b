"""The cattrs converter Spindle's JSON encoding uses: one rule for ``DataConverter`` and ``JSONPlainPayloadConverter``.

UUIDs and Decimals travel as strings, timedeltas as seconds; everything else is
cattrs' JSON preset. These hooks decide the bytes histories store: change them and
old histories decode differently.
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid

from collections.abc import Callable

import cattrs

from cattrs.preconf.json import make_converter

__all__ = ["make_cattrs_converter", "compact_json_dumps"]


def make_cattrs_converter() -> cattrs.Converter:
    """A fresh cattrs converter with Spindle's hooks (callers may add their own to it)."""
    conv = make_converter()
    conv.register_unstructure_hook(uuid.UUID, str)
    conv.register_structure_hook(uuid.UUID, lambda v, _: v if isinstance(v, uuid.UUID) else uuid.UUID(v))
    conv.register_unstructure_hook(decimal.Decimal, str)
    conv.register_structure_hook(decimal.Decimal, lambda v, _: decimal.Decimal(str(v)))
    conv.register_unstructure_hook(datetime.timedelta, lambda v: v.total_seconds())
    conv.register_structure_hook(datetime.timedelta, lambda v, _: datetime.timedelta(seconds=v))
    return conv


def compact_json_dumps() -> Callable[[object], str]:
    """The JSON writer of ``json/plain`` payloads: no spaces, UTF-8 kept, NaN allowed, keys in insertion order."""
    return json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode
