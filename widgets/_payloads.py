"""Turning the payloads and failures of History JSON into text people can read.

History JSON (``spindle.client.History.to_json``) stores a payload as
``{"metadata": {"encoding": <base64>}, "data": <base64>}``; ``json/plain`` payloads
are decoded to JSON values, anything else is summarised. Codecs run before this:
a handle's history is decoded by its client's codecs, a recorded history by the
codecs given to the widget (``client=`` or ``codecs=``); what no codec decoded
(encrypted without the key, compressed without the codec) stays opaque, and a
failure encoded by the codec reads "Encoded failure".
"""

from __future__ import annotations

import base64
import binascii
import json

from collections.abc import Mapping
from typing import Any

__all__ = ["OpaquePayload", "decode_payload", "decode_payloads", "failure_text", "format_value", "truncate"]


class OpaquePayload:
    """A payload the widgets cannot decode (shown as ``<encoding, N bytes>``)."""

    def __init__(self, encoding: str, size: int) -> None:
        self.encoding = encoding
        self.size = size

    def __repr__(self) -> str:
        return f"<{self.encoding or 'no encoding'}, {self.size} bytes>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaquePayload) and (self.encoding, self.size) == (other.encoding, other.size)

    def __hash__(self) -> int:
        return hash((self.encoding, self.size))


def _b64(text: Any) -> bytes:
    if not isinstance(text, str):
        return b""
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return b""


def decode_payload(payload: Mapping[str, Any]) -> Any:
    """One payload as a Python value (JSON payloads), ``None`` (null) or an :class:`OpaquePayload`."""
    metadata = payload.get("metadata") or {}
    encoding = _b64(metadata.get("encoding")).decode("utf-8", "replace")
    data = _b64(payload.get("data"))
    if encoding == "json/plain":
        try:
            return json.loads(data)
        except ValueError:
            return OpaquePayload(encoding, len(data))
    if encoding == "binary/null":
        return None
    return OpaquePayload(encoding, len(data))


def decode_payloads(payloads: Any) -> list[Any]:
    """``{"payloads": [...]}`` (a ``Payloads`` message) as a list of values; ``[]`` when absent."""
    if not isinstance(payloads, Mapping):
        return []
    return [decode_payload(p) for p in payloads.get("payloads") or () if isinstance(p, Mapping)]


def format_value(value: Any) -> str:
    """A value as indented JSON (or ``repr`` for what JSON cannot show)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters (with an ellipsis) and whether it was cut."""
    if limit <= 0 or len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + "…", True


def _failure_kind(failure: Mapping[str, Any]) -> str:
    app = failure.get("application_failure_info")
    if isinstance(app, Mapping):
        return str(app.get("type") or "ApplicationError")
    for key, name in (
        ("timeout_failure_info", "TimeoutError"),
        ("canceled_failure_info", "CancelledError"),
        ("terminated_failure_info", "TerminatedError"),
        ("server_failure_info", "ServerError"),
        ("activity_failure_info", "ActivityError"),
        ("child_workflow_execution_failure_info", "ChildWorkflowError"),
    ):
        if key in failure:
            info = failure[key]
            if key == "timeout_failure_info" and isinstance(info, Mapping) and info.get("timeout_type"):
                return f"{name} ({str(info['timeout_type']).removeprefix('TIMEOUT_TYPE_')})"
            return name
    return "Failure"


def failure_text(failure: Any, *, with_stack: bool = False) -> str:
    """A failure chain as ``Type: message`` lines (``caused by`` for each cause)."""
    lines: list[str] = []
    current = failure if isinstance(failure, Mapping) else None
    depth = 0
    while current is not None and depth < 20:
        prefix = "caused by " if depth else ""
        lines.append(f"{prefix}{_failure_kind(current)}: {current.get('message', '')}")
        app = current.get("application_failure_info")
        if isinstance(app, Mapping):
            details = decode_payloads(app.get("details"))
            if details:
                lines.append(f"  details: {json.dumps(details, default=repr, ensure_ascii=False)}")
            if app.get("non_retryable"):
                lines.append("  non-retryable")
        if with_stack and current.get("stack_trace"):
            lines.append("  " + str(current["stack_trace"]).replace("\n", "\n  "))
        cause = current.get("cause")
        current = cause if isinstance(cause, Mapping) else None
        depth += 1
    return "\n".join(lines)
