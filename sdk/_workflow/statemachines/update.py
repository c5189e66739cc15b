"""Update commands: ACCEPT_UPDATE, COMPLETE_UPDATE (success or failure) and REJECT_UPDATE."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

__all__ = ["accept_command", "complete_command", "reject_command"]


def accept_command(update_id: str) -> pb.Command:
    """ACCEPT_UPDATE: the validator passed; the handler runs."""
    return pb.Command(command_type=pb.COMMAND_TYPE_ACCEPT_UPDATE,
                      accept_update_command_attributes=pb.AcceptUpdateCommandAttributes(update_id=update_id))


def complete_command(update_id: str, *, success: pb.Payloads | None = None, failure: pb.Failure | None = None
                     ) -> pb.Command:
    """COMPLETE_UPDATE with the handler's result or failure (exactly one)."""
    attrs = pb.CompleteUpdateCommandAttributes(update_id=update_id)
    if failure is not None:
        attrs.failure.CopyFrom(failure)
    else:
        attrs.success.CopyFrom(success if success is not None else pb.Payloads())
    return pb.Command(command_type=pb.COMMAND_TYPE_COMPLETE_UPDATE, complete_update_command_attributes=attrs)


def reject_command(update_id: str, failure: pb.Failure) -> pb.Command:
    """REJECT_UPDATE: the validator (or argument decoding) refused the update; no event is written."""
    return pb.Command(command_type=pb.COMMAND_TYPE_REJECT_UPDATE,
                      reject_update_command_attributes=pb.RejectUpdateCommandAttributes(update_id=update_id,
                                                                                         failure=failure))
