"""spindle.nexus handler context (info, client, logger, in_operation) and the workflow-run operation token."""

from __future__ import annotations

import asyncio
import base64
import json
import logging

import pytest

from spindle import nexus
from spindle.exceptions import ApplicationError, FailureError, NexusOperationError
from spindle.nexus._operation_context import operation_context


def test_outside_a_handler_in_operation_is_false_and_info_and_client_raise() -> None:
    assert nexus.in_operation() is False
    with pytest.raises(RuntimeError, match="not in a Nexus operation handler"):
        nexus.info()
    with pytest.raises(RuntimeError, match="not in a Nexus operation handler"):
        nexus.client()


def test_inside_a_handler_info_and_client_are_the_workers_and_reset_after() -> None:
    client = object()
    with operation_context(nexus.Info(task_queue="tq-h", namespace="ns-h"), client):
        assert nexus.in_operation() is True
        assert nexus.info().task_queue == "tq-h"
        assert nexus.info().namespace == "ns-h"
        assert nexus.client() is client
    assert nexus.in_operation() is False


def test_context_is_per_task_so_concurrent_handlers_do_not_see_each_other() -> None:
    async def handler(tq: str) -> str:
        with operation_context(nexus.Info(task_queue=tq), object()):
            await asyncio.sleep(0.01)
            return nexus.info().task_queue

    async def both() -> list[str]:
        return list(await asyncio.gather(handler("a"), handler("b")))

    assert asyncio.run(both()) == ["a", "b"]


def test_logger_adds_the_task_queue_inside_a_handler_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.nexus")
    nexus.logger.info("outside")
    with operation_context(nexus.Info(task_queue="tq-log"), object()):
        nexus.logger.info("inside")
    outside, inside = caplog.records
    assert outside.getMessage() == "outside" and not hasattr(outside, "nexus")
    assert "tq-log" in inside.getMessage()
    assert inside.nexus == {"task_queue": "tq-log", "namespace": ""}  # type: ignore[attr-defined]


def test_operation_token_round_trips_in_temporals_shape() -> None:
    token = nexus.WorkflowRunOperationToken(namespace="ns", workflow_id="wf-1").encode()
    assert "=" not in token
    doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert doc == {"v": 0, "t": 1, "ns": "ns", "wid": "wf-1"}
    assert nexus.WorkflowRunOperationToken.decode(token) == nexus.WorkflowRunOperationToken("ns", "wf-1")


@pytest.mark.parametrize(
    ("token", "match"),
    [
        ("!!not-base64!!", "not base64url JSON"),
        (base64.urlsafe_b64encode(b"[1]").decode(), "not a JSON object"),
        (base64.urlsafe_b64encode(b'{"t":2,"ns":"n","wid":"w"}').decode(), "type 2 is not a workflow run"),
        (base64.urlsafe_b64encode(b'{"t":1,"ns":"n"}').decode(), "no workflow id"),
        (base64.urlsafe_b64encode(b'{"t":1,"ns":5,"wid":"w"}').decode(), "namespace"),
    ],
)
def test_a_token_this_sdk_did_not_make_is_refused_naming_why(token: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        nexus.WorkflowRunOperationToken.decode(token)


def test_nexus_operation_error_has_temporals_fields_and_cause_chain() -> None:
    cause = ApplicationError("handler said no", non_retryable=True)
    err = NexusOperationError(
        "nexus operation failed",
        scheduled_event_id=5,
        endpoint="ep",
        service="Svc",
        operation="op",
        operation_token="tok",
        cause=cause,
    )
    assert isinstance(err, FailureError)
    assert (err.endpoint, err.service, err.operation, err.operation_token) == ("ep", "Svc", "op", "tok")
    assert err.scheduled_event_id == 5
    assert err.cause is cause and err.__cause__ is cause


def test_handler_errors_come_from_nexusrpc_as_temporal_handlers_raise_them() -> None:
    import nexusrpc

    err = nexusrpc.HandlerError("bad", type=nexusrpc.HandlerErrorType.BAD_REQUEST)
    assert err.retryable is False
    assert nexusrpc.HandlerError("x", type=nexusrpc.HandlerErrorType.INTERNAL).retryable is True
