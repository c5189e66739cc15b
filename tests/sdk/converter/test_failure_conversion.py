"""Exceptions <-> Failure, with cause chains, in both directions."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime

from spindle.api import messages_pb2 as pb
from spindle.converter import DataConverter
from spindle.exceptions import (
    ActivityError,
    ApplicationError,
    ApplicationErrorCategory,
    CancelledError,
    ChildWorkflowError,
    ServerError,
    TerminatedError,
    TimeoutError,
)

conv = DataConverter.default


def wire(f: pb.Failure) -> pb.Failure:
    return pb.Failure.FromString(f.SerializeToString())


@dataclasses.dataclass
class Detail:
    code: int


def test_application_error_fields() -> None:
    err = ApplicationError("card declined", Detail(7), "x", type="Declined", non_retryable=True,
                           next_retry_delay=datetime.timedelta(seconds=3))
    f = wire(conv.to_failure(err))
    assert f.message == "card declined"
    assert f.application_failure_info.type == "Declined"
    assert f.application_failure_info.next_retry_delay_ms == 3000
    back = conv.from_failure(f)
    assert isinstance(back, ApplicationError)
    assert back.message == "card declined"
    assert back.type == "Declined"
    assert back.non_retryable
    assert back.next_retry_delay == datetime.timedelta(seconds=3)
    assert list(back.details) == [{"code": 7}, "x"]


def test_application_error_category_round_trips() -> None:
    benign = ApplicationError("not ready yet", type="NotReady", category=ApplicationErrorCategory.BENIGN)
    f = wire(conv.to_failure(ActivityError("activity failed", cause=benign)))
    assert f.cause.application_failure_info.category == pb.APPLICATION_ERROR_CATEGORY_BENIGN
    back = conv.from_failure(f)
    assert isinstance(back, ActivityError) and isinstance(back.cause, ApplicationError)
    assert back.cause.category is ApplicationErrorCategory.BENIGN
    plain = conv.from_failure(wire(conv.to_failure(ApplicationError("boom"))))
    assert isinstance(plain, ApplicationError) and plain.category is ApplicationErrorCategory.UNSPECIFIED


def test_failures_without_or_with_an_unknown_category_read_as_unspecified() -> None:
    # recorded before the field existed: no category on the wire
    old = pb.Failure(message="boom", application_failure_info=pb.ApplicationFailureInfo(type="Boom"))
    assert old.application_failure_info.category == pb.APPLICATION_ERROR_CATEGORY_UNSPECIFIED
    assert conv.from_failure(wire(old)).category is ApplicationErrorCategory.UNSPECIFIED  # type: ignore[attr-defined]
    # from a newer sender with a category this SDK does not know
    newer = pb.Failure(message="boom", application_failure_info=pb.ApplicationFailureInfo(category=9))  # type: ignore[arg-type]
    back = conv.from_failure(wire(newer))
    assert isinstance(back, ApplicationError) and back.category is ApplicationErrorCategory.UNSPECIFIED


def test_activity_error_chain_both_ways() -> None:
    root = ApplicationError("boom", type="Boom", non_retryable=True)
    act = ActivityError("activity failed", activity_type="charge", activity_id="1", scheduled_event_id=5,
                        retry_state="NON_RETRYABLE_FAILURE", cause=root)
    f = wire(conv.to_failure(act))
    assert f.activity_failure_info.activity_type == "charge"
    assert f.activity_failure_info.retry_state == pb.RETRY_STATE_NON_RETRYABLE_FAILURE
    assert f.cause.application_failure_info.type == "Boom"
    back = conv.from_failure(f)
    assert isinstance(back, ActivityError)
    assert back.activity_type == "charge" and back.activity_id == "1" and back.scheduled_event_id == 5
    assert back.retry_state == "NON_RETRYABLE_FAILURE"
    assert isinstance(back.cause, ApplicationError)
    assert back.cause.message == "boom"
    assert back.__cause__ is back.cause


def test_child_workflow_error_chain() -> None:
    inner = TimeoutError("timed out", timeout_type="START_TO_CLOSE", last_heartbeat_details=[3])
    act = ActivityError("act", activity_type="a", cause=inner)
    child = ChildWorkflowError("child failed", namespace="default", workflow_id="c1", run_id="r1",
                               workflow_type="Child", cause=ApplicationError("wrapped", cause=act))
    back = conv.from_failure(wire(conv.to_failure(child)))
    assert isinstance(back, ChildWorkflowError)
    assert (back.workflow_id, back.run_id, back.workflow_type, back.namespace) == ("c1", "r1", "Child", "default")
    app = back.cause
    assert isinstance(app, ApplicationError)
    assert isinstance(app.cause, ActivityError)
    t = app.cause.cause
    assert isinstance(t, TimeoutError) and isinstance(t, builtins_timeout())
    assert t.timeout_type == "START_TO_CLOSE"
    assert list(t.last_heartbeat_details) == [3]


def builtins_timeout() -> type:
    import builtins

    return builtins.TimeoutError


def test_cancelled_terminated_server() -> None:
    c = conv.from_failure(wire(conv.to_failure(CancelledError("stop", "d"))))
    assert isinstance(c, CancelledError) and c.message == "stop" and list(c.details) == ["d"]
    a = conv.from_failure(wire(conv.to_failure(asyncio.CancelledError())))
    assert isinstance(a, CancelledError)
    t = conv.from_failure(wire(conv.to_failure(TerminatedError("ops said so"))))
    assert isinstance(t, TerminatedError) and t.reason == "ops said so"
    s = conv.from_failure(wire(conv.to_failure(ServerError("too big", non_retryable=True))))
    assert isinstance(s, ServerError) and s.non_retryable


def test_unknown_exception_becomes_application_error_with_stack() -> None:
    def fail() -> None:
        try:
            raise KeyError("k")
        except KeyError as e:
            raise ValueError("bad value") from e

    try:
        fail()
    except ValueError as e:
        f = wire(conv.to_failure(e))
    assert f.application_failure_info.type == "ValueError"
    assert f.message == "bad value"
    assert "fail" in f.stack_trace
    assert f.cause.application_failure_info.type == "KeyError"
    back = conv.from_failure(f)
    assert isinstance(back, ApplicationError) and back.type == "ValueError"
    assert isinstance(back.cause, ApplicationError) and back.cause.type == "KeyError"
    assert "fail" in back.stack_trace  # type: ignore[attr-defined]
    # re-serialising a decoded failure keeps the remote stack trace
    assert "fail" in conv.to_failure(back).stack_trace


def test_unserialisable_details_do_not_break_reporting() -> None:
    f = conv.to_failure(ApplicationError("x", object()))
    assert len(f.application_failure_info.details.payloads) == 1


def test_cause_cycle_is_cut() -> None:
    a = ApplicationError("a")
    b = ApplicationError("b", cause=a)
    a.__cause__ = b
    f = conv.to_failure(a)
    assert f.cause.message == "b"
    assert not f.cause.HasField("cause")


def _raise_in_child() -> None:
    raise ValueError("bad input in the child")


def test_error_from_a_process_pool_keeps_the_childs_traceback_not_a_cause() -> None:
    import concurrent.futures

    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
        try:
            pool.submit(_raise_in_child).result()
        except ValueError as e:
            err = e
    f = wire(conv.to_failure(err))
    assert f.message == "bad input in the child"
    assert f.application_failure_info.type == "ValueError"
    assert not f.HasField("cause")  # concurrent.futures' _RemoteTraceback is not a failure of its own
    assert "in _raise_in_child" in f.stack_trace
