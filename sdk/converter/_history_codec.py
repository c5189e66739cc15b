"""Decoding a recorded :class:`~spindle.client.History` (as the server stores it) with a codec chain.

For tools that show histories: the CLI (``spindle workflow show --codec``) and the
widgets given a recorded history and a client or codecs (public as
``spindle.converter.decode_history``). Decoding is per event and
lenient: an event whose payloads the codecs refuse (a poison payload, a key this side
lacks) is kept as stored and its error reported, so one bad payload does not hide the
rest of the history.
"""

from __future__ import annotations

from collections.abc import Sequence

from spindle.common._history import History, HistoryEvent
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import decode_message
from spindle.converter._serialization_context import WorkflowSerializationContext

__all__ = ["decode_history"]


async def decode_history(history: History, codecs: Sequence[PayloadCodec], *, namespace: str = "default"
                         ) -> tuple[History, list[str]]:
    """``history`` with every payload decoded by ``codecs``, and one message per event that could not be.

    The history's ``workflow_id`` and ``namespace`` give the payloads their context.
    Without codecs the history is returned as it is.
    """
    if not codecs:
        return history, []
    context = WorkflowSerializationContext(namespace, history.workflow_id)
    events: list[HistoryEvent] = []
    errors: list[str] = []
    for event in history.events:
        wire = event.to_proto()
        try:
            await decode_message(codecs, wire, context=context)
        except Exception as e:  # noqa: BLE001 - keep the event as stored and say why
            errors.append(f"event {event.event_id} ({event.event_type}): cannot decode: {type(e).__name__}: {e}")
            events.append(event)
            continue
        events.append(HistoryEvent.from_proto(wire))
    return History(history.workflow_id, history.run_id, events), errors
