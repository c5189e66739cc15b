"""A workflow run's event history as plain Python values, with a JSON form.

``History.to_json()`` / ``History.from_json()`` define the one history format that
the CLI (``--output json``), the widgets and the replayer share::

    {"workflow_id": "order-1", "run_id": "…", "events": [
        {"event_id": 1, "event_type": "WorkflowExecutionStarted",
         "event_time": "2024-05-01T12:00:00.123000+00:00",
         "attributes": {"workflow_type": "OrderWorkflow", "task_queue": "orders", …}},
        …]}

``attributes`` is the protobuf JSON mapping of the event's attributes message
(``json_format.MessageToDict`` with proto field names: enums as names, bytes as
base64, unset fields omitted) except that 64-bit integers stay JSON numbers.
Payloads appear as ``{"metadata": {"encoding": <base64>}, "data": <base64>}``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb

__all__ = ["History", "HistoryEvent", "WorkflowHistory", "event_type_name", "event_type_value", "message_to_dict"]

_UTC = datetime.timezone.utc
_EVENT_TYPE_PREFIX = "EVENT_TYPE_"


def _camel(enum_name: str) -> str:
    return "".join(part.capitalize() for part in enum_name.removeprefix(_EVENT_TYPE_PREFIX).split("_"))


_TYPE_TO_NAME: dict[int, str] = {v.number: _camel(v.name) for v in pb.EventType.DESCRIPTOR.values}
_NAME_TO_TYPE: dict[str, int] = {name: number for number, name in _TYPE_TO_NAME.items()}
# Event type -> the name of the oneof field holding its attributes ("WorkflowExecutionStarted" ->
# "workflow_execution_started_event_attributes").
_ATTR_FIELD: dict[int, str] = {}
for _f in pb.HistoryEvent.DESCRIPTOR.oneofs_by_name["attributes"].fields:
    _camel_name = _f.message_type.name.removesuffix("EventAttributes")
    if _camel_name in _NAME_TO_TYPE:
        _ATTR_FIELD[_NAME_TO_TYPE[_camel_name]] = _f.name


def event_type_name(event_type: int) -> str:
    """``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED`` (as a number) -> ``"ActivityTaskScheduled"``."""
    return _TYPE_TO_NAME.get(event_type, f"Unknown{event_type}")


def event_type_value(name: str) -> int:
    """``"ActivityTaskScheduled"`` (or ``"EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"``) -> its proto number.

    Raises:
        ValueError: the name is not an event type.
    """
    if name in _NAME_TO_TYPE:
        return _NAME_TO_TYPE[name]
    if name.startswith(_EVENT_TYPE_PREFIX) and name in pb.EventType.keys():
        return int(pb.EventType.Value(name))
    raise ValueError(f"unknown event type {name!r}")


_INT64_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)


def _value_to_json(fd: FieldDescriptor, value: Any) -> Any:
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return message_to_dict(value)
    if fd.type == FieldDescriptor.TYPE_ENUM:
        ev = fd.enum_type.values_by_number.get(value)
        return ev.name if ev is not None else value
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value


def message_to_dict(msg: Message) -> dict[str, Any]:
    """The protobuf JSON mapping of ``msg`` with proto field names and 64-bit ints as numbers.

    ``json_format.ParseDict`` reads the result back into the same message.
    """
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            out[fd.name] = {str(k): _value_to_json(vfd, v) for k, v in value.items()}
        elif fd.is_repeated:
            out[fd.name] = [_value_to_json(fd, v) for v in value]
        else:
            out[fd.name] = _value_to_json(fd, value)
    return out


@dataclasses.dataclass(frozen=True)
class HistoryEvent:
    """One event of a history.

    Attributes:
        event_id: 1, 2, 3, ... with no gap.
        event_type: the CamelCase type, e.g. ``"ActivityTaskScheduled"``.
        event_time: when the server wrote the event (timezone-aware, UTC).
        attributes: the event's attributes (see the module docstring for the mapping).
    """

    event_id: int
    event_type: str
    event_time: datetime.datetime
    attributes: dict[str, Any]

    @classmethod
    def from_proto(cls, event: pb.HistoryEvent) -> HistoryEvent:
        """Build from a wire event."""
        which = event.WhichOneof("attributes")
        attrs = message_to_dict(getattr(event, which)) if which else {}
        return cls(
            event_id=event.event_id,
            event_type=event_type_name(event.event_type),
            event_time=datetime.datetime.fromtimestamp(event.event_time_ms / 1000, _UTC),
            attributes=attrs,
        )

    def to_proto(self) -> pb.HistoryEvent:
        """Build the wire event (what the replayer consumes).

        Raises:
            ValueError: the type is unknown or the attributes do not fit it.
        """
        etype = event_type_value(self.event_type)
        ev = pb.HistoryEvent(
            event_id=self.event_id,
            event_time_ms=round(self.event_time.timestamp() * 1000),
            event_type=etype,  # type: ignore[arg-type]
        )
        field = _ATTR_FIELD.get(etype)
        if field is not None:
            target = getattr(ev, field)
            try:
                json_format.ParseDict(self.attributes, target)
            except json_format.ParseError as e:
                raise ValueError(f"event {self.event_id} ({self.event_type}): bad attributes: {e}") from e
            target.SetInParent()
        return ev

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form used by :meth:`History.to_json`."""
        return {
            "event_id": self.event_id,
            "event_type": self.event_type,
            "event_time": self.event_time.isoformat(),
            "attributes": self.attributes,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HistoryEvent:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: a key is missing or has the wrong type.
        """
        try:
            t = d["event_time"]
            if isinstance(t, (int, float)):
                when = datetime.datetime.fromtimestamp(t / 1000, _UTC)
            else:
                when = datetime.datetime.fromisoformat(str(t).replace("Z", "+00:00"))
                if when.tzinfo is None:
                    when = when.replace(tzinfo=_UTC)
            event_type = str(d["event_type"])
            if event_type.startswith(_EVENT_TYPE_PREFIX):
                event_type = event_type_name(event_type_value(event_type))
            return cls(int(d["event_id"]), event_type, when, dict(d.get("attributes") or {}))
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed history event {d!r}: {e}") from e


@dataclasses.dataclass
class History:
    """The events of one workflow run, in order.

    Obtain one with ``await handle.fetch_history()`` or ``History.from_json(text)``;
    give it to ``Replayer.replay_workflow``.
    """

    workflow_id: str
    run_id: str
    events: list[HistoryEvent]

    @classmethod
    def from_proto(cls, workflow_id: str, run_id: str, events: Iterable[pb.HistoryEvent]) -> History:
        """Build from wire events."""
        return cls(workflow_id, run_id, [HistoryEvent.from_proto(e) for e in events])

    def to_proto_events(self) -> list[pb.HistoryEvent]:
        """The events as wire messages, in order."""
        return [e.to_proto() for e in self.events]

    def to_dict(self) -> dict[str, Any]:
        """``{"workflow_id": ..., "run_id": ..., "events": [...]}``."""
        return {"workflow_id": self.workflow_id, "run_id": self.run_id, "events": [e.to_dict() for e in self.events]}

    def to_json(self, *, indent: int | None = None) -> str:
        """Serialise in the shared history format (see the module docstring)."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes | dict[str, Any]) -> History:
        """Parse the shared history format (a JSON string, or the already-parsed dict).

        Raises:
            ValueError: the text is not JSON or not in the history format.
        """
        d = json.loads(text) if isinstance(text, (str, bytes)) else text
        if not isinstance(d, dict) or not isinstance(d.get("events"), list):
            raise ValueError('history JSON must be an object with an "events" list')
        return cls(str(d.get("workflow_id", "")), str(d.get("run_id", "")), [HistoryEvent.from_dict(e) for e in d["events"]])

    def __iter__(self) -> Iterator[HistoryEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def events_of_type(self, event_type: str) -> Sequence[HistoryEvent]:
        """The events whose ``event_type`` equals ``event_type`` (e.g. ``"TimerFired"``)."""
        return [e for e in self.events if e.event_type == event_type]




WorkflowHistory = History
"""temporalio's name for a run's history (``client.list_workflows(q).map_histories()`` yields these)."""
