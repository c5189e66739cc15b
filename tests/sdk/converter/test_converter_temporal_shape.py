"""The converter's Temporal-shaped surface: a frozen dataclass with ``payload_codec``,
``converter.default()``, and ``FailureError.failure`` on errors rebuilt from a failure."""

from __future__ import annotations

import dataclasses
import datetime

import cattrs
import pytest

from spindle import converter
from spindle.api import messages_pb2 as pb
from spindle.converter import DataConverter, ZlibCodec
from spindle.exceptions import ActivityError, ApplicationError, TimeoutError


class Money:
    def __init__(self, cents: int) -> None:
        self.cents = cents


def test_default_is_the_shared_default_converter() -> None:
    assert converter.default() is DataConverter.default
    assert converter.default().payload_codec is None


def test_replace_adds_a_codec_and_keeps_the_cattrs_converter() -> None:
    c = cattrs.Converter()
    c.register_unstructure_hook(Money, lambda m: m.cents)
    c.register_structure_hook(Money, lambda v, _: Money(v))
    custom = DataConverter(cattrs_converter=c)
    codec = ZlibCodec()
    with_codec = dataclasses.replace(custom, payload_codec=codec)
    assert with_codec.payload_codec is codec
    assert with_codec.cattrs is c
    assert with_codec.from_payload(with_codec.to_payload(Money(250)), Money).cents == 250
    # the original is unchanged (frozen)
    assert custom.payload_codec is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        custom.payload_codec = codec  # type: ignore[misc]


def test_replace_of_the_default_shares_its_cattrs_converter() -> None:
    derived = dataclasses.replace(converter.default(), payload_codec=ZlibCodec())
    assert derived.cattrs is DataConverter.default.cattrs


def test_payload_codec_must_be_a_codec() -> None:
    with pytest.raises(TypeError, match="payload_codec must be a PayloadCodec, got str"):
        DataConverter(payload_codec="zlib")  # type: ignore[arg-type]


def test_rebuilt_errors_carry_their_failure_proto() -> None:
    conv = DataConverter.default
    root = ApplicationError("declined", "detail", type="Declined", non_retryable=True)
    act = ActivityError("activity failed", activity_type="charge", activity_id="7", scheduled_event_id=5,
                        retry_state="NON_RETRYABLE_FAILURE", cause=root)
    wire = pb.Failure.FromString(conv.to_failure(act).SerializeToString())
    back = conv.from_failure(wire)
    assert isinstance(back, ActivityError)
    assert back.failure == wire
    assert isinstance(back.cause, ApplicationError)
    assert back.cause.failure == wire.cause
    assert back.cause.failure.application_failure_info.type == "Declined"
    # a copy: changing the message it came from changes nothing
    wire.message = "changed"
    wire.cause.message = "changed"
    assert back.failure.message == "activity failed"
    assert back.cause.failure.message == "declined"


def test_timeout_failure_proto_and_local_errors_have_none() -> None:
    conv = DataConverter.default
    f = conv.to_failure(TimeoutError("late", timeout_type="HEARTBEAT"))
    back = conv.from_failure(f)
    assert back.failure is not None and back.failure.timeout_failure_info.timeout_type == pb.TIMEOUT_TYPE_HEARTBEAT
    assert ApplicationError("raised here").failure is None
    assert TimeoutError("x").failure is None


def test_datetime_round_trip_unchanged_by_the_dataclass_form() -> None:
    when = datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone.utc)
    conv = DataConverter()
    assert conv.from_payload(conv.to_payload(when), datetime.datetime) == when
