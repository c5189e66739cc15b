"""``RawValue``: a payload passed through the data converter as it is (temporalio's ``RawValue``)."""

from __future__ import annotations

import dataclasses

from spindle.api import messages_pb2 as pb

__all__ = ["RawValue"]


@dataclasses.dataclass(frozen=True)
class RawValue:
    """A payload the data converter neither encodes nor decodes.

    As an argument or return value it is sent as ``payload`` unchanged (its metadata and
    data as given); a parameter or result typed ``RawValue`` receives the payload as it
    arrived (after the codec chain, before any conversion). Decode it later with
    ``converter.from_payload(raw.payload, SomeType)``.
    """

    payload: pb.Payload
