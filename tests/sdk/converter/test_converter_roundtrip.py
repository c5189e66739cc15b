"""DataConverter: every supported type round-trips by type hint; bad values fail clearly."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid

from typing import Any, Optional, Union

import attrs
import pytest

from spindle.api import messages_pb2 as pb
from spindle.converter import DataConverter

conv = DataConverter.default


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Address:
    street: str
    zip: str


@dataclasses.dataclass
class Order:
    id: uuid.UUID
    amount: decimal.Decimal
    created: datetime.datetime
    due: datetime.date
    color: Color
    address: Address
    items: list[Address]
    tags: dict[str, int]
    pair: tuple[int, str]
    note: Optional[str] = None
    blob: bytes = b""


@attrs.define
class Point:
    x: int
    y: int
    label: str | None = None


def roundtrip(value: Any, hint: Any) -> Any:
    payload = conv.to_payload(value)
    # what travels is bytes: serialise the proto too
    payload = pb.Payload.FromString(payload.SerializeToString())
    return conv.from_payload(payload, hint)


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        (None, None),
        (None, type(None)),
        (b"\x00\xffraw", bytes),
        ("héllo", str),
        (42, int),
        (3.5, float),
        (True, bool),
        ([1, 2, 3], list[int]),
        ({"a": 1}, dict[str, int]),
        ((1, "x"), tuple[int, str]),
        ((1, 2, 3), tuple[int, ...]),
        (Color.BLUE, Color),
        (Level.HIGH, Level),
        (datetime.datetime(2024, 5, 1, 12, 30, 1, 123456, tzinfo=datetime.timezone.utc), datetime.datetime),
        (
            datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
            datetime.datetime,
        ),
        (datetime.date(2024, 2, 29), datetime.date),
        (datetime.timedelta(seconds=90, milliseconds=5), datetime.timedelta),
        (decimal.Decimal("12.3400"), decimal.Decimal),
        (uuid.UUID("12345678-1234-5678-1234-567812345678"), uuid.UUID),
        (Point(1, 2, "p"), Point),
        ([Point(1, 2), Point(3, 4)], list[Point]),
        ({"home": Address("a", "1")}, dict[str, Address]),
        (None, Optional[Address]),
        (Address("b", "2"), Optional[Address]),
        ("text", Union[int, str]),
        (7, Union[int, str]),
    ],
)
def test_roundtrip_by_type_hint(value: Any, hint: Any) -> None:
    assert roundtrip(value, hint) == value


def test_nested_dataclass_roundtrip() -> None:
    order = Order(
        id=uuid.uuid4(),
        amount=decimal.Decimal("19.99"),
        created=datetime.datetime.now(datetime.timezone.utc),
        due=datetime.date(2030, 1, 1),
        color=Color.RED,
        address=Address("Main St", "12345"),
        items=[Address("x", "1"), Address("y", "2")],
        tags={"a": 1},
        pair=(5, "five"),
        blob=b"\x01\x02",
    )
    back = roundtrip(order, Order)
    assert back == order
    assert back.created.tzinfo is not None


def test_encodings() -> None:
    assert conv.to_payload(None).metadata["encoding"] == b"binary/null"
    assert conv.to_payload(b"x").metadata["encoding"] == b"binary/plain"
    p = conv.to_payload({"a": [1, "b"]})
    assert p.metadata["encoding"] == b"json/plain"
    assert p.data == b'{"a":[1,"b"]}'


def test_no_hint_gives_plain_json() -> None:
    assert roundtrip(Address("s", "z"), None) == {"street": "s", "zip": "z"}
    assert roundtrip((1, 2), None) == [1, 2]
    assert roundtrip(Color.RED, None) == "red"
    assert roundtrip(decimal.Decimal("1.5"), Any) == "1.5"


def test_payloads_with_partial_hints() -> None:
    payloads = conv.to_payloads([Address("a", "b"), 3, "x"])
    assert len(payloads.payloads) == 3
    assert conv.from_payloads(payloads, [Address]) == [Address("a", "b"), 3, "x"]
    assert conv.from_payloads(None) == []
    assert conv.from_payloads(pb.Payloads()) == []


def test_non_serialisable_value_names_its_type() -> None:
    class Opaque:
        pass

    with pytest.raises(TypeError, match="Opaque"):
        conv.to_payload(Opaque())
    with pytest.raises(TypeError, match="Opaque"):
        conv.to_payloads([1, {"k": Opaque()}])


def test_wrong_shape_names_the_hint() -> None:
    with pytest.raises(ValueError, match="Address"):
        conv.from_payload(conv.to_payload({"street": 1}), Address)
    with pytest.raises(ValueError, match="int"):
        conv.from_payload(conv.to_payload("not a number"), int)


def test_unknown_and_codec_encodings_are_explained() -> None:
    with pytest.raises(ValueError, match="unknown payload encoding"):
        conv.from_payload(pb.Payload(metadata={"encoding": b"x/y"}, data=b""))
    with pytest.raises(ValueError, match="PayloadCodec"):
        conv.from_payload(pb.Payload(metadata={"encoding": b"binary/zlib"}, data=b""))


def test_custom_cattrs_hooks() -> None:
    class Money:
        def __init__(self, cents: int) -> None:
            self.cents = cents

    c = DataConverter.default.cattrs.copy()
    c.register_unstructure_hook(Money, lambda m: m.cents)
    c.register_structure_hook(Money, lambda v, _: Money(v))
    custom = DataConverter(cattrs_converter=c)
    assert custom.from_payload(custom.to_payload(Money(250)), Money).cents == 250
