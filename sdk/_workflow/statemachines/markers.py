"""Markers: ``Version`` (get_version/patched), ``SideEffect`` and custom (``record_marker``) commands."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from spindle.api import messages_pb2 as pb

__all__ = ["VERSION_MARKER", "SIDE_EFFECT_MARKER", "RESERVED_MARKERS", "version_command", "side_effect_command",
           "custom_marker_command", "RecordedMarkers"]

VERSION_MARKER = "Version"
SIDE_EFFECT_MARKER = "SideEffect"
#: Names the SDK records itself; ``workflow.record_marker`` refuses them.
RESERVED_MARKERS = frozenset({VERSION_MARKER, SIDE_EFFECT_MARKER})


def _marker(name: str, details: dict[str, pb.Payloads]) -> pb.Command:
    return pb.Command(
        command_type=pb.COMMAND_TYPE_RECORD_MARKER,
        record_marker_command_attributes=pb.RecordMarkerCommandAttributes(marker_name=name, details=details),
    )


def version_command(converter: Any, change_id: str, version: int) -> pb.Command:
    """RECORD_MARKER "Version" with details ``change_id`` and ``version``."""
    return _marker(VERSION_MARKER, {"change_id": converter.to_payloads([change_id]),
                                    "version": converter.to_payloads([version])})


def side_effect_command(converter: Any, seq: int, data: pb.Payloads) -> pb.Command:
    """RECORD_MARKER "SideEffect" with details ``id`` (its sequence number) and ``data``."""
    return _marker(SIDE_EFFECT_MARKER, {"id": converter.to_payloads([seq]), "data": data})


def custom_marker_command(converter: Any, name: str, details: dict[str, Any]) -> pb.Command:
    """RECORD_MARKER ``name`` with each detail value encoded as one payload."""
    return _marker(name, {key: converter.to_payloads([value]) for key, value in details.items()})


class RecordedMarkers:
    """The markers one replayed workflow task recorded, looked up by change id / sequence."""

    def __init__(self, converter: Any, events: Iterable[pb.HistoryEvent] = ()) -> None:
        self.versions: dict[str, int] = {}
        self.side_effects: dict[int, pb.Payloads] = {}
        for e in events:
            if e.event_type != pb.EVENT_TYPE_MARKER_RECORDED:
                continue
            m = e.marker_recorded_event_attributes
            if m.marker_name == VERSION_MARKER and "change_id" in m.details:
                change_id = converter.from_payloads(m.details["change_id"])[0]
                self.versions[str(change_id)] = int(converter.from_payloads(m.details["version"])[0])
            elif m.marker_name == SIDE_EFFECT_MARKER and "id" in m.details:
                seq = int(converter.from_payloads(m.details["id"])[0])
                self.side_effects[seq] = m.details["data"] if "data" in m.details else pb.Payloads()
