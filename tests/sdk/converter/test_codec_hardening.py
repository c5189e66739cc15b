"""Codecs against hostile or misplaced payloads: bombs, plaintext, copied ciphertext, failures in clear.

Before: ZlibCodec inflated whatever it was given (a 0.97 MB payload became 1 GB and the
worker peaked at 3.3 GB); EncryptionCodec passed plaintext through on decode and bound
nothing to its place, so a ciphertext copied from another workflow decrypted; failure
messages and stack traces reached the server in plaintext under an encrypting codec.
"""

from __future__ import annotations

import json
import tracemalloc
import zlib

from collections.abc import Sequence

import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter import (
    DataConverter,
    EncryptionCodec,
    PayloadCodec,
    WithSerializationContext,
    WorkflowSerializationContext,
    ZlibCodec,
)
from spindle.converter._payload_codec import decode_payloads, encode_payloads
from spindle.converter._payload_visitor import (
    ENCODED_FAILURE_MESSAGE,
    collect_payloads,
    collect_with_contexts,
    decode_message,
    encode_message,
)
from spindle.exceptions import ApplicationError

pytest.importorskip("cryptography")

conv = DataConverter.default
KEY = b"k" * 32
SECRET = "card 4111-2222-3333-4444 declined"


def ctx(workflow_id: str = "order-1", field: str = "workflow.input", namespace: str = "default"
        ) -> WorkflowSerializationContext:
    return WorkflowSerializationContext(namespace, workflow_id, field)


# ---------------------------------------------------------------------- zlib


def zlib_bomb(inflated: int) -> pb.Payload:
    """A binary/zlib payload of a few hundred KB that inflates to ``inflated`` bytes (built in chunks)."""
    head = pb.Payload(metadata={"encoding": b"binary/plain"}).SerializeToString()
    # field 2 (data), wire type 2, then the varint length: a Payload whose data is `inflated` zero bytes
    length, varint = inflated, bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    deflater = zlib.compressobj(9)
    parts = [deflater.compress(head + b"\x12" + bytes(varint))]
    chunk = bytes(1 << 20)
    for _ in range(inflated >> 20):
        parts.append(deflater.compress(chunk))
    parts.append(deflater.flush())
    return pb.Payload(metadata={"encoding": b"binary/zlib"}, data=b"".join(parts))


async def test_zlib_refuses_a_decompression_bomb_without_inflating_it() -> None:
    bomb = zlib_bomb(256 << 20)  # 256 MiB of zeros
    assert len(bomb.data) < 512 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"binary/zlib payload of \d+ bytes inflates beyond "
                                             r"max_decompressed_size \(67108864 bytes\): refused"):
            await ZlibCodec().decode([bomb])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 << 20, f"decoding peaked at {peak >> 20} MiB"


async def test_zlib_cap_is_configurable_and_exact() -> None:
    value = conv.to_payload("x" * 10_000)
    codec = ZlibCodec(min_size=0, max_decompressed_size=len(value.SerializeToString()))
    [enc] = await codec.encode([value])
    assert await codec.decode([enc]) == [value]  # exactly at the limit: fine
    tight = ZlibCodec(max_decompressed_size=len(value.SerializeToString()) - 1)
    with pytest.raises(ValueError, match="inflates beyond max_decompressed_size"):
        await tight.decode([enc])
    with pytest.raises(ValueError, match="truncated"):
        await codec.decode([pb.Payload(metadata={"encoding": b"binary/zlib"}, data=enc.data[:-8])])
    with pytest.raises(ValueError, match="corrupt binary/zlib payload"):
        await codec.decode([pb.Payload(metadata={"encoding": b"binary/zlib"}, data=b"not zlib")])
    with pytest.raises(ValueError, match="max_decompressed_size must be positive"):
        ZlibCodec(max_decompressed_size=0)


# ---------------------------------------------------------------------- encryption: strict, binding, rotation


async def test_strict_encryption_refuses_plaintext_and_lenient_passes_it() -> None:
    plain = conv.to_payload({"approve": True})
    lenient = EncryptionCodec(KEY)
    assert await lenient.decode([plain]) == [plain]
    strict = EncryptionCodec(KEY, strict=True).with_context(ctx("order-1", "signal.input"))
    with pytest.raises(ValueError, match=r"EncryptionCodec\(strict=True\) refuses an unencrypted payload "
                                         r"\(encoding 'json/plain'\) \(signal.input of workflow 'order-1' in "
                                         r"namespace 'default'\)"):
        await strict.decode([plain])
    [enc] = await strict.encode([plain])
    assert conv.from_payload((await strict.decode([enc]))[0]) == {"approve": True}


async def test_ciphertext_is_bound_to_its_namespace_workflow_and_field() -> None:
    codec = EncryptionCodec(KEY)
    value = conv.to_payload({"amount": 100})
    [enc] = await codec.with_context(ctx("order-1", "workflow.input")).encode([value])
    assert enc.metadata["encryption-aad"] == b"spindle/v1"
    assert await codec.with_context(ctx("order-1", "workflow.input")).decode([enc]) == [value]
    for other in (ctx("order-2", "workflow.input"), ctx("order-1", "signal.input"),
                  ctx("order-1", "workflow.input", namespace="other")):
        with pytest.raises(ValueError, match="it was encrypted for another workflow, namespace or field"):
            await codec.with_context(other).decode([enc])
    with pytest.raises(ValueError, match="bound to its workflow and role"):
        await codec.decode([enc])  # no context at all
    stripped = pb.Payload(metadata={k: v for k, v in enc.metadata.items() if k != "encryption-aad"}, data=enc.data)
    with pytest.raises(ValueError, match="cannot decrypt"):
        await codec.with_context(ctx("order-1", "workflow.input")).decode([stripped])


async def test_binding_refuses_a_payload_whose_workflow_is_unknown() -> None:
    codec = EncryptionCodec(KEY).with_context(ctx("", "activity.result"))
    with pytest.raises(ValueError, match="the workflow of this activity.result is not known here"):
        await codec.encode([conv.to_payload(1)])
    unbound = EncryptionCodec(KEY, bind_context=False).with_context(ctx("", "activity.result"))
    [enc] = await unbound.encode([conv.to_payload(1)])
    assert "encryption-aad" not in enc.metadata
    assert conv.from_payload((await unbound.decode([enc]))[0]) == 1


async def test_strict_refuses_ciphertext_that_is_not_bound() -> None:
    [legacy] = await EncryptionCodec(KEY).encode([conv.to_payload("old")])  # no context: not bound
    assert conv.from_payload((await EncryptionCodec(KEY).with_context(ctx()).decode([legacy]))[0]) == "old"
    with pytest.raises(ValueError, match="not bound to its workflow"):
        await EncryptionCodec(KEY, strict=True).with_context(ctx()).decode([legacy])


async def test_key_rotation_encrypts_with_the_current_key_and_decrypts_with_any_known_id() -> None:
    old, new = b"o" * 32, b"n" * 32
    v1 = EncryptionCodec(keys={"2024": old}, key_id="2024")
    [by_old] = await v1.with_context(ctx()).encode([conv.to_payload("then")])
    v2 = EncryptionCodec(keys={"2024": old, "2025": new}, key_id="2025")
    assert v2.key_ids == ["2025", "2024"]
    [by_new] = await v2.with_context(ctx()).encode([conv.to_payload("now")])
    assert by_new.metadata["encryption-key-id"] == b"2025"
    decoded = await v2.with_context(ctx()).decode([by_old, by_new])
    assert [conv.from_payload(p) for p in decoded] == ["then", "now"]
    with pytest.raises(ValueError, match=r"unknown key id '2025' \(this codec knows \['2024'\]\)"):
        await v1.with_context(ctx()).decode([by_new])
    relabelled = pb.Payload(metadata={**by_old.metadata, "encryption-key-id": b"2025"}, data=by_old.data)
    with pytest.raises(ValueError, match="cannot decrypt"):
        await v2.with_context(ctx()).decode([relabelled])
    # the older constructor form still works: current key plus previous_keys
    legacy_form = EncryptionCodec(new, key_id="2025", previous_keys={"2024": old})
    assert conv.from_payload((await legacy_form.with_context(ctx()).decode([by_old]))[0]) == "then"
    with pytest.raises(ValueError, match="key_id 'x' is not among the keys"):
        EncryptionCodec(keys={"2024": old}, key_id="x")
    with pytest.raises(ValueError, match="needs a key"):
        EncryptionCodec()
    with pytest.raises(ValueError, match="must be 32 bytes, got 5"):
        EncryptionCodec(keys={"a": b"short"}, key_id="a")


# ---------------------------------------------------------------------- context through the visitor


class Recorder(PayloadCodec, WithSerializationContext):
    """Records the context of every payload it encodes or decodes."""

    def __init__(self, seen: list[WorkflowSerializationContext] | None = None,
                 context: WorkflowSerializationContext | None = None) -> None:
        self.seen = seen if seen is not None else []
        self.context = context

    def with_context(self, context: object) -> Recorder:
        assert isinstance(context, WorkflowSerializationContext)
        return Recorder(self.seen, context)

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        self.seen.extend([self.context] * len(payloads))  # type: ignore[list-item]
        return list(payloads)

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        return await self.encode(payloads)


def roles(msg: object, context: WorkflowSerializationContext | None = None) -> list[tuple[str, str, str]]:
    return [(c.namespace, c.workflow_id, c.field) for _, c in collect_with_contexts(msg, context)]  # type: ignore[arg-type]


def test_requests_name_their_workflow_and_each_payload_its_role() -> None:
    p = conv.to_payload
    start = svc.StartWorkflowExecutionRequest(
        namespace="ns", workflow_id="wf", input=pb.Payloads(payloads=[p(1), p(2)]),
        memo=pb.Memo(fields={"note": p("n")}), header=pb.Header(fields={"trace": p("t")}))
    assert roles(start) == [("ns", "wf", "workflow.input"), ("ns", "wf", "workflow.input"),
                            ("ns", "wf", "memo.note"), ("ns", "wf", "header.trace")]
    signal = svc.SignalWorkflowExecutionRequest(namespace="ns", workflow_execution=pb.WorkflowExecution(
        workflow_id="wf"), input=pb.Payloads(payloads=[p(1)]))
    assert roles(signal) == [("ns", "wf", "signal.input")]
    sws = svc.SignalWithStartWorkflowExecutionRequest(start=start, signal_input=pb.Payloads(payloads=[p(3)]))
    assert roles(sws, WorkflowSerializationContext("ns", "wf"))[-1] == ("ns", "wf", "signal.input")


def test_commands_name_the_child_or_signalled_workflow() -> None:
    p = conv.to_payload
    req = svc.RespondWorkflowTaskCompletedRequest(namespace="ns", commands=[
        pb.Command(schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
            input=pb.Payloads(payloads=[p("a")]))),
        pb.Command(start_child_workflow_execution_command_attributes=pb.StartChildWorkflowExecutionCommandAttributes(
            workflow_id="child", input=pb.Payloads(payloads=[p("c")]))),
        pb.Command(signal_external_workflow_execution_command_attributes=(
            pb.SignalExternalWorkflowExecutionCommandAttributes(
                namespace="other", execution=pb.WorkflowExecution(workflow_id="target"),
                input=pb.Payloads(payloads=[p("s")])))),
        pb.Command(continue_as_new_workflow_execution_command_attributes=(
            pb.ContinueAsNewWorkflowExecutionCommandAttributes(input=pb.Payloads(payloads=[p("n")])))),
        pb.Command(fail_workflow_execution_command_attributes=pb.FailWorkflowExecutionCommandAttributes(
            failure=conv.to_failure(ApplicationError("no", "detail")))),
        pb.Command(record_marker_command_attributes=pb.RecordMarkerCommandAttributes(
            details={"version": pb.Payloads(payloads=[p(2)])})),
    ])
    assert roles(req, WorkflowSerializationContext("ns", "parent")) == [
        ("ns", "parent", "activity.input"), ("ns", "child", "workflow.input"), ("other", "target", "signal.input"),
        ("ns", "parent", "workflow.input"), ("ns", "parent", "failure"), ("ns", "parent", "marker.version")]


def test_a_payload_has_the_same_context_at_every_hop() -> None:
    """What one side encodes, the other decodes under the same context (the server copies payloads)."""
    p = conv.to_payload(1)
    here = WorkflowSerializationContext("ns", "parent")
    pairs = [
        (svc.RespondWorkflowTaskCompletedRequest(commands=[pb.Command(
            schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
                input=pb.Payloads(payloads=[p])))]), here,
         svc.PollActivityTaskQueueResponse(workflow_namespace="ns", workflow_execution=pb.WorkflowExecution(
             workflow_id="parent"), input=pb.Payloads(payloads=[p])), None),
        (svc.RespondActivityTaskCompletedRequest(namespace="ns", result=pb.Payloads(payloads=[p])), here,
         pb.HistoryEvent(activity_task_completed_event_attributes=pb.ActivityTaskCompletedEventAttributes(
             result=pb.Payloads(payloads=[p]))), here),
        (svc.RecordActivityTaskHeartbeatRequest(namespace="ns", details=pb.Payloads(payloads=[p])), here,
         pb.HistoryEvent(activity_task_timed_out_event_attributes=pb.ActivityTaskTimedOutEventAttributes(
             failure=pb.Failure(timeout_failure_info=pb.TimeoutFailureInfo(
                 last_heartbeat_details=pb.Payloads(payloads=[p]))))), here),
        (svc.RespondWorkflowTaskCompletedRequest(commands=[pb.Command(
            complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes(
                result=pb.Payloads(payloads=[p])))]), WorkflowSerializationContext("ns", "child"),
         pb.HistoryEvent(child_workflow_execution_completed_event_attributes=(
             pb.ChildWorkflowExecutionCompletedEventAttributes(
                 namespace="ns", workflow_execution=pb.WorkflowExecution(workflow_id="child"),
                 result=pb.Payloads(payloads=[p])))), here),
        (svc.RespondWorkflowTaskCompletedRequest(commands=[pb.Command(
            start_child_workflow_execution_command_attributes=pb.StartChildWorkflowExecutionCommandAttributes(
                workflow_id="child", input=pb.Payloads(payloads=[p])))]), here,
         pb.HistoryEvent(workflow_execution_started_event_attributes=pb.WorkflowExecutionStartedEventAttributes(
             input=pb.Payloads(payloads=[p]))), WorkflowSerializationContext("ns", "child")),
        (svc.UpdateWorkflowExecutionRequest(namespace="ns", workflow_execution=pb.WorkflowExecution(
            workflow_id="parent"), request=pb.UpdateRequest(input=pb.Payloads(payloads=[p]))), None,
         pb.HistoryEvent(workflow_execution_update_accepted_event_attributes=(
             pb.WorkflowExecutionUpdateAcceptedEventAttributes(input=pb.Payloads(payloads=[p])))), here),
    ]
    for sent, sent_ctx, received, received_ctx in pairs:
        assert roles(sent, sent_ctx) == roles(received, received_ctx), (sent, received)


def test_each_listed_execution_names_its_own_workflow() -> None:
    resp = svc.ListWorkflowExecutionsResponse(executions=[
        svc.WorkflowExecutionInfo(execution=pb.WorkflowExecution(workflow_id=w), memo=pb.Memo(
            fields={"k": conv.to_payload(w)})) for w in ("a", "b")])
    assert roles(resp, WorkflowSerializationContext("ns", "")) == [("ns", "a", "memo.k"), ("ns", "b", "memo.k")]


async def test_plain_codecs_get_one_batch_and_context_codecs_one_call_per_context() -> None:
    calls: list[int] = []

    class Plain(PayloadCodec):
        async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
            calls.append(len(payloads))
            return list(payloads)

        async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
            return await self.encode(payloads)

    recorder = Recorder()
    start = svc.StartWorkflowExecutionRequest(namespace="ns", workflow_id="wf", input=conv.to_payloads([1, 2]),
                                              memo=pb.Memo(fields={"m": conv.to_payload(3)}))
    await encode_message([Plain(), recorder], start)
    assert calls == [3]
    assert [c.field for c in recorder.seen] == ["workflow.input", "workflow.input", "memo.m"]
    assert collect_payloads(start)  # untouched shape


# ---------------------------------------------------------------------- failures


async def test_an_encrypting_codec_encodes_failure_messages_and_stack_traces() -> None:
    try:
        raise ApplicationError(SECRET, "detail", type="Declined", non_retryable=True)
    except ApplicationError as e:
        inner = e
    outer = ApplicationError("payment failed", type="Payment")
    outer.__cause__ = inner
    failure = conv.to_failure(ApplicationError("order failed", cause=inner))
    req = svc.RespondActivityTaskFailedRequest(namespace="ns", failure=failure)
    codecs = [ZlibCodec(), EncryptionCodec(KEY, strict=True)]
    context = WorkflowSerializationContext("ns", "order-1")
    await encode_message(codecs, req, context=context)
    wire = req.SerializeToString()
    assert SECRET.encode() not in wire and b"4111" not in wire and b"raise ApplicationError" not in wire
    assert req.failure.message == ENCODED_FAILURE_MESSAGE and req.failure.cause.message == ENCODED_FAILURE_MESSAGE
    assert req.failure.stack_trace == "" and req.failure.cause.stack_trace == ""
    assert req.failure.cause.application_failure_info.type == "Declined"  # kinds and flags stay readable
    assert req.failure.cause.application_failure_info.non_retryable
    await decode_message(codecs, req, context=context)
    assert req.failure.message == "order failed" and req.failure.cause.message == SECRET
    assert "raise ApplicationError" in req.failure.cause.stack_trace
    assert not req.failure.HasField("encoded_attributes")
    assert conv.from_failure(req.failure.cause).details == ("detail",)


async def test_failures_stay_readable_with_a_codec_that_does_not_ask_for_it() -> None:
    req = svc.RespondActivityTaskFailedRequest(failure=conv.to_failure(ApplicationError(SECRET)))
    await encode_message([ZlibCodec(min_size=0)], req)
    assert req.failure.message == SECRET and not req.failure.HasField("encoded_attributes")


async def test_a_client_without_the_key_sees_encoded_failure() -> None:
    req = svc.RespondActivityTaskFailedRequest(failure=conv.to_failure(ApplicationError(SECRET)))
    context = WorkflowSerializationContext("ns", "order-1")
    await encode_message([EncryptionCodec(KEY)], req, context=context)
    await decode_message([ZlibCodec()], req, context=context)  # some other codec: leaves it encoded
    assert req.failure.message == ENCODED_FAILURE_MESSAGE
    assert req.failure.encoded_attributes.metadata["encoding"] == b"binary/encrypted"


async def test_chain_helpers_still_work_without_contexts() -> None:
    chain = [ZlibCodec(min_size=0), EncryptionCodec(KEY)]
    enc = await encode_payloads(chain, [conv.to_payload("x")])
    assert [conv.from_payload(p) for p in await decode_payloads(chain, enc)] == ["x"]
    assert json.loads((await decode_payloads(chain, enc))[0].data) == "x"
