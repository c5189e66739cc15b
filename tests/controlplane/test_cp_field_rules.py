"""The field rules (``spindle.controlplane._field_rules``): every request field has one, and they say what they should.

No server: these walk the service descriptor, so a new RPC or field without a rule fails here.
"""

from __future__ import annotations

import math

import pytest

from google.protobuf import descriptor as _d

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane import _field_rules as rules
from spindle.controlplane._malformed import MalformedRequest, find_wire_problem, lenient_deserializer
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.history._retry import decide, normalized_policy

T = _d.FieldDescriptor
SERVICE = svc.DESCRIPTOR.services_by_name["WorkflowService"]


def _scalar_fields(desc: _d.Descriptor, path: str, seen: set[str], lenient: bool = False):  # type: ignore[no-untyped-def]
    """(message descriptor, field, path, lenient) for every scalar field reachable from ``desc``."""
    if desc.full_name in rules.SKIPPED_MESSAGES or (desc.full_name, lenient) in seen:
        return
    seen.add((desc.full_name, lenient))  # type: ignore[arg-type]
    lenient = lenient or desc.full_name in rules.LENIENT_MESSAGES
    for f in desc.fields:
        p = f"{path}.{f.name}"
        if f.type == T.TYPE_MESSAGE:
            if f.message_type.GetOptions().map_entry:
                continue  # keys are names, values enums/names/messages: fixed by the walker
            yield from _scalar_fields(f.message_type, p, seen, lenient)
        else:
            yield desc, f, p, lenient


def test_every_scalar_field_of_every_request_has_a_rule() -> None:
    missing, checked = [], 0
    for m in SERVICE.methods:
        for desc, f, path, lenient in _scalar_fields(m.input_type, m.name, set()):
            checked += 1
            if rules.rule_for(desc, f, lenient) is None:
                missing.append(f"{path} ({desc.name}.{f.name})")
    assert checked > 150  # the walk reaches the commands' attributes, retry policies, failures
    assert not missing, "fields without a rule in _field_rules.RULES:\n" + "\n".join(missing)


def test_every_duration_and_id_field_is_covered_by_the_right_kind() -> None:
    """A field called ``*_ms`` is a duration (or an instant, named in RULES_BY_MESSAGE); ``*_id`` an id; checked by name."""
    wrong = []
    for m in SERVICE.methods:
        for desc, f, path, lenient in _scalar_fields(m.input_type, m.name, set()):
            rule = rules.rule_for(desc, f, lenient)
            if lenient:
                continue
            instant = rules.RULES_BY_MESSAGE.get(f"{desc.name}.{f.name}") is rules.INSTANT
            if f.name.endswith("_ms") and rule is not rules.DURATION and not instant:
                wrong.append(path)
            if f.name.endswith("_id") and f.type == T.TYPE_STRING and rule is not rules.NAME:
                wrong.append(path)
    assert not wrong, wrong


@pytest.mark.parametrize("msg,problem", [
    (svc.StartWorkflowExecutionRequest(execution_timeout_ms=2**63 - 1), "execution_timeout_ms: 9223372036854775807 ms is over"),
    (svc.StartWorkflowExecutionRequest(workflow_id="a\x00b"), "workflow_id: control character U+0000 at position 1"),
    (svc.StartWorkflowExecutionRequest(workflow_id="a\x85"), "workflow_id: control character U+0085"),
    (svc.StartWorkflowExecutionRequest(identity="x" * 1001), "identity: 1001 characters is over the limit of 1000"),
    (svc.SignalWithStartWorkflowExecutionRequest(start=svc.StartWorkflowExecutionRequest(run_timeout_ms=-1)),
     "start.run_timeout_ms: must not be negative, got -1"),
    (svc.RespondWorkflowTaskCompletedRequest(commands=[pb.Command(), pb.Command(
        command_type=pb.COMMAND_TYPE_START_TIMER,
        start_timer_command_attributes=pb.StartTimerCommandAttributes(start_to_fire_timeout_ms=-5))]),
     "commands[1].start_timer_command_attributes.start_to_fire_timeout_ms: must not be negative"),
    (pb.ScheduleActivityTaskCommandAttributes(retry_policy=pb.RetryPolicy(backoff_coefficient=math.nan)),
     "retry_policy.backoff_coefficient: must be 0 (the default) or between 1 and 1000"),
    (pb.ScheduleActivityTaskCommandAttributes(retry_policy=pb.RetryPolicy(non_retryable_error_types=["ok", "bad\n"])),
     "retry_policy.non_retryable_error_types[1]: control character U+000A"),
    (svc.CreateApiKeyRequest(grants={"ns\x00": "reader"}), "grants key 'ns\\x00': control character"),
    (svc.CreateApiKeyRequest(grants={"ns": "reader\x00"}), "grants['ns']: control character"),
    (svc.CreateNamespaceRequest(search_attributes={"A": 99}), "search_attributes['A']: unknown value 99"),
    (svc.StartWorkflowExecutionRequest(header=pb.Header(fields={"\x01": pb.Payload()})), "header.fields key '\\x01'"),
    (svc.RespondQueryTaskCompletedRequest(error_message="e" * 40_000), "error_message: 40000 characters"),
    (svc.ListNamespacesRequest(next_page_token=b"x" * 20_000), "next_page_token: 20000 bytes"),
    (svc.CreateScheduleRequest(schedule_id="s\n"), "schedule_id: control character U+000A"),
    (svc.CreateScheduleRequest(schedule=pb.Schedule(spec=pb.ScheduleSpec(cron_expressions=["0 6 * * *", "0\t6 * * *"]))),
     "schedule.spec.cron_expressions[1]: control character U+0009"),
    (svc.CreateScheduleRequest(schedule=pb.Schedule(spec=pb.ScheduleSpec(intervals=[pb.ScheduleIntervalSpec(every_ms=-1)]))),
     "schedule.spec.intervals[0].every_ms: must not be negative"),
    (svc.UpdateScheduleRequest(schedule=pb.Schedule(spec=pb.ScheduleSpec(end_at_ms=rules.MAX_INSTANT_MS + 1))),
     "schedule.spec.end_at_ms: 253402300799001 is not an instant between 1970 and 9999"),
    (svc.UpdateScheduleRequest(schedule=pb.Schedule(state=pb.ScheduleState(remaining_actions=-2))),
     "schedule.state.remaining_actions: must not be negative"),
    (svc.UpdateScheduleRequest(schedule=pb.Schedule(policies=pb.SchedulePolicies(catchup_window_ms=2**62))),
     "schedule.policies.catchup_window_ms: 4611686018427387904 ms is over"),
    (svc.PatchScheduleRequest(patch=svc.SchedulePatch(backfill_request=[svc.ScheduleBackfillRequest(start_time_ms=-1)])),
     "patch.backfill_request[0].start_time_ms: -1 is not an instant"),
    (svc.PatchScheduleRequest(patch=svc.SchedulePatch(pause="n" * 40_000)), "patch.pause: 40000 characters"),
    (svc.UpdateScheduleRequest(conflict_token=b"x" * 20_000), "conflict_token: 20000 bytes"),
])
def test_find_problem_names_the_field(msg, problem: str) -> None:  # type: ignore[no-untyped-def]
    found = rules.find_problem(msg, "", 1000)
    assert found is not None and found.startswith(problem), found
    with pytest.raises(InvalidArgument):
        rules.check_fields(msg, "", 1000)


@pytest.mark.parametrize("msg", [
    svc.StartWorkflowExecutionRequest(namespace="default", workflow_id="order-1 ü 🙂", workflow_type="T", task_queue="q",
                                      execution_timeout_ms=rules.MAX_DURATION_MS, identity="123@host",
                                      input=pb.Payloads(payloads=[pb.Payload(data=b"\x00\xff",
                                                                             metadata={"\x00": b"\xff"})])),
    # a worker's failure text is free (a stack trace has newlines, a message anything): not refused
    svc.RespondActivityTaskFailedRequest(failure=pb.Failure(message="a\x00\nb", stack_trace="x" * 100_000,
                                                            cause=pb.Failure(message="\x1b"))),
    svc.TerminateWorkflowExecutionRequest(reason="line 1\nline 2\ttab"),
    pb.ScheduleActivityTaskCommandAttributes(retry_policy=pb.RetryPolicy(backoff_coefficient=1.0, initial_interval_ms=5,
                                                                         maximum_interval_ms=5, maximum_attempts=3)),
])
def test_valid_values_pass(msg) -> None:  # type: ignore[no-untyped-def]
    assert rules.find_problem(msg, "", 1000) is None


def test_workflow_task_timeout_is_clamped() -> None:
    assert rules.workflow_task_timeout_ms(0, 10_000) == 10_000
    assert rules.workflow_task_timeout_ms(3_600_000, 10_000) == 120_000
    assert rules.workflow_task_timeout_ms(0, 999_999) == 120_000
    assert rules.workflow_task_timeout_ms(5_000, 10_000) == 5_000


def test_retry_backoff_does_not_overflow_at_high_attempts() -> None:
    """Before: OverflowError from ``coefficient ** (attempt - 1)`` (attempt 1,025 at x2; 104 at x1000)."""
    for coefficient, attempt in ((2.0, 1100), (1000.0, 200)):
        policy = normalized_policy(pb.RetryPolicy(backoff_coefficient=coefficient), default_initial_ms=1000,
                                   backoff=2.0, max_factor=100)
        d = decide(policy, attempt=attempt, failure=None, now_ms=0, schedule_to_close_deadline_ms=0)
        assert d.retry and d.backoff_ms == 100_000


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | 0x80]) if n else bytes([b])
        if not n:
            return out


def _ld(number: int, payload: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def test_wire_problems_agree_with_protobuf_on_depth() -> None:
    """``find_wire_problem`` reports depth exactly where protobuf starts refusing (so its message is the reason)."""
    cause = pb.Failure.DESCRIPTOR.fields_by_name["cause"].number
    failure = svc.RespondWorkflowTaskFailedRequest.DESCRIPTOR.fields_by_name["failure"].number
    parse = lenient_deserializer(svc.RespondWorkflowTaskFailedRequest)
    for levels in range(95, 105):
        inner = b""
        for _ in range(levels):
            inner = _ld(cause, inner)
        data = _ld(failure, inner)
        parsed = parse(data)
        problem = find_wire_problem(svc.RespondWorkflowTaskFailedRequest.DESCRIPTOR, data)
        assert isinstance(parsed, MalformedRequest) == (problem is not None), levels
        if problem is not None:
            assert parsed.problem == problem
            assert problem.startswith("failure.cause (x") and "nested deeper than 100 levels" in problem


def test_every_rpc_is_served_with_the_lenient_deserializer() -> None:
    """``add_to_server`` registers every method of the service (none left to grpcio's own parsing)."""
    import grpc

    from spindle.controlplane._grpc_service import add_to_server

    class FakeServer:
        handlers: list = []

        registered: dict = {}

        def add_generic_rpc_handlers(self, hs) -> None:  # type: ignore[no-untyped-def]
            self.handlers.extend(hs)

        def add_registered_method_handlers(self, service, handlers) -> None:  # type: ignore[no-untyped-def]
            self.registered[service] = handlers

    class Servicer:
        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return lambda req, ctx: None

    server = FakeServer()
    add_to_server(Servicer(), server)  # type: ignore[arg-type]
    (generic,) = server.handlers
    for m in SERVICE.methods:
        details = type("D", (grpc.HandlerCallDetails,), {"method": f"/{SERVICE.full_name}/{m.name}",
                                                         "invocation_metadata": ()})()
        h = generic.service(details)
        assert h is not None, m.name
        bad = h.request_deserializer(b"\xff")  # a truncated field key: no message type parses it
        assert isinstance(bad, MalformedRequest) and bad.type_name == m.input_type.full_name, (m.name, bad)
        # the registered-method fast path (what grpcio uses first) holds the same handler
        fast = server.registered[SERVICE.full_name][m.name]
        assert isinstance(fast.request_deserializer(b"\xff"), MalformedRequest), m.name
