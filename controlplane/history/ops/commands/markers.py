"""RECORD_MARKER: a marker (a side effect's result, a version, a local activity's outcome) in the history."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

from ..._context import HistoryContext
from ..._txn import Txn
from .handler import CommandHandler, Validation


def check_record_marker(a: pb.RecordMarkerCommandAttributes, where: str, v: Validation) -> str | None:
    """A marker name."""
    if not a.marker_name:
        return f"{where}.marker_name: required"
    return None


def apply_record_marker(ctx: HistoryContext, txn: Txn, a: pb.RecordMarkerCommandAttributes, wtc: int,
                        identity: str) -> None:
    """MarkerRecorded."""
    txn.event(pb.EVENT_TYPE_MARKER_RECORDED, "marker_recorded_event_attributes",
              pb.MarkerRecordedEventAttributes(marker_name=a.marker_name, details=a.details,
                                               workflow_task_completed_event_id=wtc, header=a.header,
                                               failure=a.failure))


RECORD_MARKER = CommandHandler(pb.COMMAND_TYPE_RECORD_MARKER, "record_marker_command_attributes",
                               check=check_record_marker, apply=apply_record_marker)

__all__ = ["RECORD_MARKER", "apply_record_marker", "check_record_marker"]
