"""Bad input fuzzing: random and mutated requests for every RPC of a real ``spindle server start-dev``.

Hypothesis draws an RPC and a request: either a message built field by field from the request's
descriptor (random strings, huge strings, random bytes as task and page tokens, out-of-range
enums and numbers, nested messages, maps), or a valid request (namespace "default", the ids of
workflows started for the purpose, real task tokens) with random fields merged over it. Workflow
task completions carry random commands with a real task token of a fresh task.

Every call must answer with a status within its deadline, never INTERNAL or UNKNOWN (nor
UNAVAILABLE: the server is up); afterwards the server still answers, the histories of the
workflows started before fuzzing are untouched and they complete, and every history the fuzzing
touched is sound. ``SPINDLE_FAULT_EXAMPLES`` sets the number of examples (default 300).
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from fault_helpers import FUZZ_EXAMPLES, DevServer, WorkerProc, check_history
from google.protobuf import descriptor as _d
from google.protobuf import message_factory
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc

pytestmark = pytest.mark.timeout(600)

CALL_TIMEOUT = 0.6          # seconds; long polls answer (empty) before it
FUZZ_QUEUE = "fuzzq"        # no worker polls it: the test takes its workflow tasks itself
RPCS = [m.name for m in svc.DESCRIPTOR.services_by_name["WorkflowService"].methods]
ALLOWED = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
           grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.DEADLINE_EXCEEDED,
           grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.CANCELLED}
#: RPCs that may damage the namespace the guarded workflows live in: fuzzed with random names only.
NAMESPACE_ADMIN = {"UpdateNamespace", "DeleteNamespace", "AddSearchAttributes"}
SEED = int(os.environ.get("SPINDLE_FAULT_SEED", "20240501"))


def _dumps(x: Any) -> bytes:
    return json.dumps(x).encode()


def _payloads(*values: Any) -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=_dumps(v)) for v in values])


class Fuzz:
    """The server, raw sync stub and the ids and tokens the strategies draw from."""

    def __init__(self, server: DevServer, stub: service_pb2_grpc.WorkflowServiceStub) -> None:
        self.server = server
        self.stub = stub
        self.targets: list[str] = []      # workflows the fuzzing may hit
        self.tokens: list[bytes] = []     # real task tokens seen (stale or not)
        self.touched: set[str] = set()
        self.calls: dict[str, dict[str, int]] = {}
        self.details: dict[str, str] = {}  # one example message per (rpc, status)

    def call(self, rpc: str, req: Any, timeout: float = CALL_TIMEOUT) -> tuple[grpc.StatusCode, Any]:
        try:
            resp = getattr(self.stub, rpc)(req, timeout=timeout)
            code = grpc.StatusCode.OK
        except grpc.RpcError as e:
            resp = e
            code = e.code()  # type: ignore[attr-defined]
        self.calls.setdefault(rpc, {}).setdefault(code.name, 0)
        self.calls[rpc][code.name] += 1
        if code != grpc.StatusCode.OK:
            self.details.setdefault(f"{rpc} {code.name}", str(resp.details())[:200])  # type: ignore[union-attr]
        return code, resp

    def start(self, wid: str, wtype: str, queue: str, *args: Any) -> str:
        code, resp = self.call("StartWorkflowExecution", svc.StartWorkflowExecutionRequest(
            namespace="default", workflow_id=wid, workflow_type=wtype, task_queue=queue, input=_payloads(*args),
            request_id=str(uuid.uuid4()), task_timeout_ms=2000), timeout=10)
        assert code == grpc.StatusCode.OK, resp
        return resp.run_id

    def fresh_workflow_task(self) -> bytes:
        """Start a workflow on the fuzz queue and take its first workflow task: a real, current token."""
        wid = f"fuzz-wft-{uuid.uuid4().hex[:8]}"
        self.start(wid, "fuzzflow", FUZZ_QUEUE, 1)
        self.touched.add(wid)
        for _ in range(20):
            code, resp = self.call("PollWorkflowTaskQueue", svc.PollWorkflowTaskQueueRequest(
                namespace="default", task_queue=FUZZ_QUEUE, identity="fuzzer"), timeout=5)
            if code == grpc.StatusCode.OK and resp.task_token:
                self.tokens.append(resp.task_token)
                self.touched.add(resp.workflow_execution.workflow_id)
                return resp.task_token
        raise AssertionError("no workflow task on the fuzz queue")


# ---------------------------------------------------------------- strategies from descriptors

HUGE = ["x" * 300_000, "é" * 100_000]
WEIRD = ["", " ", "default", "\x00", "../../etc/passwd", "' OR 1=1 --", "WorkflowId = 'x'", "ExecutionStatus = 'Running'",
         "WorkflowType = 'fchain3' ORDER BY StartTime", "🙂" * 10, "a" * 1001, "-1", "9" * 30, "\ud7ff", "null"]


def _class(desc: _d.Descriptor) -> Any:
    return message_factory.GetMessageClass(desc)


def token(fz: Fuzz) -> st.SearchStrategy[bytes]:
    """One of the real task tokens seen so far (the list grows: draw an index, not an element)."""
    return st.integers(0, 10**6).map(lambda i: fz.tokens[i % len(fz.tokens)] if fz.tokens else b"")


def scalar(f: _d.FieldDescriptor, fz: Fuzz) -> st.SearchStrategy[Any]:
    t = f.type
    T = _d.FieldDescriptor
    if t == T.TYPE_STRING:
        return st.one_of(st.text(max_size=40), st.sampled_from(WEIRD + fz.targets + ["fault", FUZZ_QUEUE]),
                         st.sampled_from(HUGE))
    if t == T.TYPE_BYTES:
        return st.one_of(st.binary(max_size=80), token(fz),
                         st.tuples(token(fz), st.binary(min_size=1, max_size=4)).map(
                             lambda tj: tj[0][: len(tj[0]) // 2] + tj[1] + tj[0][len(tj[0]) // 2 + len(tj[1]):]),
                         st.just(b"\xff" * 200_000), st.sampled_from([b"0", b"-5", b"99999999999", b"abc", b"1e9"]))
    if t == T.TYPE_BOOL:
        return st.booleans()
    if t in (T.TYPE_DOUBLE, T.TYPE_FLOAT):
        return st.floats(allow_nan=True, allow_infinity=True, width=32 if t == T.TYPE_FLOAT else 64)
    if t == T.TYPE_ENUM:
        return st.one_of(st.sampled_from([v.number for v in f.enum_type.values]), st.integers(-3, 1000))
    if t in (T.TYPE_INT32, T.TYPE_SINT32, T.TYPE_SFIXED32):
        return st.one_of(st.integers(-2**31, 2**31 - 1), st.sampled_from([0, 1, -1, 2**31 - 1, -2**31]))
    if t in (T.TYPE_UINT32, T.TYPE_FIXED32):
        return st.integers(0, 2**32 - 1)
    if t in (T.TYPE_UINT64, T.TYPE_FIXED64):
        return st.integers(0, 2**64 - 1)
    return st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([0, 1, -1, 2**63 - 1, -2**63, 1000, 86_400_000]))


def message(desc: _d.Descriptor, fz: Fuzz, depth: int = 0) -> st.SearchStrategy[Any]:
    fields = [f for f in desc.fields if depth < 3 or f.type != _d.FieldDescriptor.TYPE_MESSAGE]

    @st.composite
    def build(draw: Any) -> Any:
        msg = _class(desc)()
        if not fields:
            return msg
        chosen = draw(st.lists(st.sampled_from(fields), unique_by=lambda f: f.number, max_size=min(6, len(fields))))
        for f in chosen:
            _fill(draw, msg, f, fz, depth)
        return msg

    return build()


def _fill(draw: Any, msg: Any, f: _d.FieldDescriptor, fz: Fuzz, depth: int) -> None:
    T = _d.FieldDescriptor
    is_msg = f.type == T.TYPE_MESSAGE
    if is_msg and f.message_type.GetOptions().map_entry:
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        m = getattr(msg, f.name)
        for _ in range(draw(st.integers(0, 3))):
            k = draw(scalar(kf, fz))
            if vf.type == T.TYPE_MESSAGE:
                m[k].CopyFrom(draw(message(vf.message_type, fz, depth + 1)))
            else:
                m[k] = draw(scalar(vf, fz))
        return
    repeated = f.is_repeated
    n = draw(st.integers(0, 4)) if repeated else 1
    for _ in range(n):
        if is_msg:
            v = draw(message(f.message_type, fz, depth + 1))
            if repeated:
                getattr(msg, f.name).add().CopyFrom(v)
            else:
                getattr(msg, f.name).CopyFrom(v)
        else:
            v = draw(scalar(f, fz))
            try:
                if repeated:
                    getattr(msg, f.name).append(v)
                else:
                    setattr(msg, f.name, v)
            except (ValueError, TypeError):
                pass  # e.g. a float out of a float32's range


def base_request(rpc: str, fz: Fuzz, draw: Any) -> Any:
    """A valid request for ``rpc`` in namespace "default" aimed at the fuzz targets."""
    return valid_request(rpc, draw(st.sampled_from(fz.targets)), draw(token(fz)), draw(st.integers(0, 3)))


def valid_request(rpc: str, wid: str, task_token: bytes, ns_index: int) -> Any:
    """A valid request for ``rpc`` in namespace "default" aimed at workflow ``wid`` (namespace admin: fuzz-ns-N)."""
    req = _class(svc.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name[rpc].input_type)()
    ex = pb.WorkflowExecution(workflow_id=wid)
    names = {f.name for f in req.DESCRIPTOR.fields}
    if "namespace" in names:
        req.namespace = "default"
    if rpc in NAMESPACE_ADMIN or rpc == "CreateNamespace" or rpc == "DescribeNamespace":
        if "name" in names:
            req.name = f"fuzz-ns-{ns_index}"
        if rpc == "AddSearchAttributes":
            req.namespace = f"fuzz-ns-{ns_index}"
    for field in ("execution", "workflow_execution"):
        if field in names:
            getattr(req, field).CopyFrom(ex)
    if "task_token" in names:
        req.task_token = task_token
    if rpc in ("StartWorkflowExecution",):
        req.workflow_id, req.workflow_type, req.task_queue = wid, "fuzzflow", FUZZ_QUEUE
    if rpc == "SignalWithStartWorkflowExecution":
        req.start.namespace, req.start.workflow_id, req.start.workflow_type = "default", wid, "fuzzflow"
        req.start.task_queue, req.signal_name = FUZZ_QUEUE, "go"
    if rpc == "SignalWorkflowExecution":
        req.signal_name = "go"
    if rpc in ("PollWorkflowTaskQueue", "PollActivityTaskQueue"):
        req.task_queue = FUZZ_QUEUE
    if rpc == "QueryWorkflow":
        req.query.query_type = "q"
    if rpc == "UpdateWorkflowExecution":
        req.request.name = "u"
    return req


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    d = tmp_path_factory.mktemp("fuzz")
    server = DevServer(d / "fuzz.db").start()
    w = WorkerProc(server.address, d / "worker.log").start()
    channel = grpc.insecure_channel(server.address, options=[("grpc.max_send_message_length", 64 * 1024 * 1024),
                                                             ("grpc.max_receive_message_length", 64 * 1024 * 1024)])
    fz = Fuzz(server, service_pb2_grpc.WorkflowServiceStub(channel))
    try:
        yield fz
    finally:
        channel.close()
        w.kill()
        server.kill()


def _history(fz: Fuzz, wid: str) -> list[pb.HistoryEvent]:
    events: list[pb.HistoryEvent] = []
    token = b""
    while True:
        code, resp = fz.call("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(
            namespace="default", execution=pb.WorkflowExecution(workflow_id=wid), next_page_token=token), timeout=10)
        assert code == grpc.StatusCode.OK, resp
        events.extend(resp.history.events)
        token = resp.next_page_token
        if not token or not resp.history.events:
            return events


def _wait_closed(fz: Fuzz, wid: str, timeout: float = 30) -> pb.HistoryEvent:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        code, resp = fz.call("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(
            namespace="default", execution=pb.WorkflowExecution(workflow_id=wid), close_event_only=True,
            wait_new_event=True), timeout=5)
        if code == grpc.StatusCode.OK and resp.history.events:
            return resp.history.events[-1]
    raise AssertionError(f"{wid} did not close")


def test_fuzz_every_rpc(fuzz: Fuzz) -> None:
    fz = fuzz
    # before: guarded workflows (never addressed by the fuzzing) and targets (addressed on purpose)
    guards = [f"guard-{i}" for i in range(3)]
    for g in guards:
        fz.start(g, "fsigwait", "fault", 1)
    fz.start("guard-chain", "fchain3", "fault", 7)
    assert json.loads(_wait_closed(fz, "guard-chain").workflow_execution_completed_event_attributes.result.payloads[0].data) == 10
    for i in range(4):
        wid = f"target-{i}"
        fz.targets.append(wid)
        fz.touched.add(wid)
        fz.start(wid, "fsigwait" if i % 2 else "fuzzflow", "fault" if i % 2 else FUZZ_QUEUE, 3)
    fz.fresh_workflow_task()
    time.sleep(0.5)
    before = {g: [e.SerializeToString() for e in _history(fz, g)] for g in guards + ["guard-chain"]}
    bad: list[str] = []

    # generate only: no replay of a stored example and no shrinking (both would re-run calls against a
    # server whose state moved on); every finding is collected in `bad` with its request instead.
    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(SEED)
    @given(data=st.data())
    def one(data: Any) -> None:
        rpc = data.draw(st.sampled_from(RPCS), label="rpc")
        desc = svc.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name[rpc].input_type
        how = data.draw(st.sampled_from(["random", "mutated", "mutated"]), label="how")
        if how == "random":
            req = data.draw(message(desc, fz), label="request")
            if rpc in NAMESPACE_ADMIN | {"CreateNamespace"} and "name" in {f.name for f in desc.fields} \
                    and getattr(req, "name", "") in ("", "default"):
                req.name = "fuzz-ns-r"
            if rpc == "AddSearchAttributes" and req.namespace in ("", "default"):
                req.namespace = "fuzz-ns-r"
        else:
            req = base_request(rpc, fz, data.draw)
            if rpc == "RespondWorkflowTaskCompleted" and data.draw(st.booleans(), label="fresh token"):
                req.task_token = fz.fresh_workflow_task()
                cmds = data.draw(st.lists(message(pb.Command.DESCRIPTOR, fz), max_size=5), label="commands")
                del req.commands[:]
                req.commands.extend(cmds)
            else:
                over = data.draw(message(desc, fz), label="overlay")
                if rpc in NAMESPACE_ADMIN | {"CreateNamespace", "DescribeNamespace"}:
                    for f in ("name", "namespace"):
                        if f in {x.name for x in desc.fields} and getattr(over, f, "") in ("default",):
                            over.ClearField(f)
                req.MergeFrom(over)
        if rpc in NAMESPACE_ADMIN and (getattr(req, "name", None) == "default" or
                                       getattr(req, "namespace", None) == "default"):
            return  # never damage the namespace the guarded workflows live in
        for field in ("execution", "workflow_execution"):
            if field in {f.name for f in desc.fields}:
                wid = getattr(req, field).workflow_id
                if wid.startswith("guard"):
                    return
                if getattr(req, "namespace", "") == "default":
                    fz.touched.add(wid)
        if rpc in ("StartWorkflowExecution",) and req.namespace == "default":
            fz.touched.add(req.workflow_id)
        if rpc == "SignalWithStartWorkflowExecution" and req.start.namespace == "default":
            fz.touched.add(req.start.workflow_id)
        t0 = time.monotonic()
        code, resp = fz.call(rpc, req)
        took = time.monotonic() - t0
        details = str(getattr(resp, "details", lambda: "")())
        if code not in ALLOWED or "metadata size exceeds" in details:
            bad.append(f"{rpc} -> {code.name}: {details[:300]} (request {str(req)[:300]!r})")
        if took > CALL_TIMEOUT + 2:
            bad.append(f"{rpc} took {took:.1f} s (deadline {CALL_TIMEOUT} s)")
        assert fz.server.alive(), f"the server died on {rpc}: {fz.server.log()[-3000:]}"

    one()
    print("calls:", json.dumps(fz.calls, sort_keys=True))
    print("\n".join(f"  {k}: {v}" for k, v in sorted(fz.details.items())))
    assert fz.server.alive()
    code, resp = fz.call("GetSystemInfo", svc.GetSystemInfoRequest(), timeout=5)
    assert code == grpc.StatusCode.OK, resp
    assert not bad, "\n".join(bad[:20])

    # the guarded workflows: histories untouched, and they complete
    for g in guards + ["guard-chain"]:
        assert [e.SerializeToString() for e in _history(fz, g)] == before[g], f"{g}: history changed"
    for i, g in enumerate(guards):
        code, resp = fz.call("SignalWorkflowExecution", svc.SignalWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=g), signal_name="go",
            input=_payloads(f"v{i}"), request_id=str(uuid.uuid4())), timeout=10)
        assert code == grpc.StatusCode.OK, resp
        close = _wait_closed(fz, g)
        assert close.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, close
        assert json.loads(close.workflow_execution_completed_event_attributes.result.payloads[0].data) == [f"v{i}"]
    # a new execution still runs end to end
    fz.start("after-fuzz", "fchain3", "fault", 100)
    assert json.loads(_wait_closed(fz, "after-fuzz").workflow_execution_completed_event_attributes.result.payloads[0].data) == 103
    # every history the fuzzing reached is sound
    problems: list[str] = []
    for wid in sorted(fz.touched):
        code, _ = fz.call("DescribeWorkflowExecution", svc.DescribeWorkflowExecutionRequest(
            namespace="default", execution=pb.WorkflowExecution(workflow_id=wid)), timeout=10)
        if code != grpc.StatusCode.OK:
            continue
        problems += check_history(_history(fz, wid), what=wid, activity_input_plus_one=False)
    assert not problems, "\n".join(problems[:20])
    log = fz.server.log()
    errors = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
    assert not errors, "server log:\n" + "\n".join(errors[:40])


# ---------------------------------------------------------------- every field of every RPC, deterministically
#
# The hypothesis test above samples; this one enumerates the service descriptor so that no RPC and
# no field is left out (a new one is covered the day it is added): each scalar field, at any depth
# (commands and their attributes, retry policies, failures, maps' keys), gets the extreme values of
# its type on an otherwise valid request; each string field gets bytes that are not UTF-8, and each
# Failure a 150-level nesting, sent as raw bytes. No call may answer INTERNAL, UNKNOWN or UNAVAILABLE;
# whatever the field rules (``spindle.controlplane._field_rules``) refuse must be INVALID_ARGUMENT, as
# must every request that does not parse.

_F = _d.FieldDescriptor
MAX_DEPTH = 4  # Failure.cause recurses: its fields are reached at the first levels, deeper adds nothing
_SKIP = {"spindle.v1.Payload"}
#: A valid command of each command type (the attributes' oneof name -> command type, attributes).
_COMMANDS: dict[str, tuple[int, dict[str, Any]]] = {
    "schedule_activity_task_command_attributes": (pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, dict(
        activity_id="a", activity_type="A", task_queue="fuzz-aq", start_to_close_timeout_ms=5000)),
    "start_timer_command_attributes": (pb.COMMAND_TYPE_START_TIMER, dict(timer_id="t", start_to_fire_timeout_ms=60_000)),
    "complete_workflow_execution_command_attributes": (pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, {}),
    "fail_workflow_execution_command_attributes": (pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION, {}),
    "request_cancel_activity_task_command_attributes": (pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK, {}),
    "cancel_timer_command_attributes": (pb.COMMAND_TYPE_CANCEL_TIMER, dict(timer_id="t")),
    "cancel_workflow_execution_command_attributes": (pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION, {}),
    "request_cancel_external_workflow_execution_command_attributes": (
        pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION, dict(workflow_id="fuzz-nobody")),
    "record_marker_command_attributes": (pb.COMMAND_TYPE_RECORD_MARKER, dict(marker_name="m")),
    "continue_as_new_workflow_execution_command_attributes": (
        pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION, dict(workflow_type="fuzzflow", task_queue=FUZZ_QUEUE)),
    "start_child_workflow_execution_command_attributes": (
        pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION, dict(workflow_id="fuzz-child", workflow_type="fuzzflow",
                                                             task_queue=FUZZ_QUEUE)),
    "signal_external_workflow_execution_command_attributes": (
        pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION, dict(signal_name="s")),
    "upsert_workflow_search_attributes_command_attributes": (pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, {}),
    "accept_update_command_attributes": (pb.COMMAND_TYPE_ACCEPT_UPDATE, dict(update_id="u")),
    "complete_update_command_attributes": (pb.COMMAND_TYPE_COMPLETE_UPDATE, dict(update_id="u")),
    "reject_update_command_attributes": (pb.COMMAND_TYPE_REJECT_UPDATE, dict(update_id="u")),
}


def extremes(f: _d.FieldDescriptor) -> list[Any]:
    """The values of ``f``'s type most likely to break a server: bounds, NaN, control characters, huge."""
    t = f.type
    if t == _F.TYPE_STRING:
        return ["\x00", "a\u0085b", "x" * 100_000]
    if t == _F.TYPE_BYTES:
        return [b"\xff" * 20_000, str(10**30).encode()]
    if t == _F.TYPE_DOUBLE:
        return [math.nan, math.inf, -math.inf, -1.0, 1e300]
    if t == _F.TYPE_FLOAT:
        return [math.nan, math.inf, -1.0]
    if t == _F.TYPE_ENUM:
        return [2**31 - 1, -1]
    if t in (_F.TYPE_INT32, _F.TYPE_SINT32, _F.TYPE_SFIXED32):
        return [2**31 - 1, -2**31, -1]
    if t in (_F.TYPE_UINT32, _F.TYPE_FIXED32):
        return [2**32 - 1]
    if t in (_F.TYPE_UINT64, _F.TYPE_FIXED64):
        return [2**64 - 1]
    if t in (_F.TYPE_INT64, _F.TYPE_SINT64, _F.TYPE_SFIXED64):
        return [2**63 - 1, -2**63, -1]
    return []  # bool: both values are valid


def field_paths(desc: _d.Descriptor, depth: int = 0) -> Iterator[tuple[_d.FieldDescriptor, ...]]:
    """Every path of fields to a scalar (or a map, or a Failure) below ``desc``."""
    for f in desc.fields:
        if f.type != _F.TYPE_MESSAGE:
            yield (f,)
        elif f.message_type.GetOptions().map_entry:
            yield (f,)  # its keys get the string extremes
        elif f.message_type.full_name not in _SKIP and depth < MAX_DEPTH:
            if f.message_type.full_name == "spindle.v1.Failure":
                yield (f,)  # the deep-nesting case
            for rest in field_paths(f.message_type, depth + 1):
                yield (f, *rest)


def _name_of(path: tuple[_d.FieldDescriptor, ...]) -> str:
    return ".".join(f.name for f in path)


def _child(msg: Any, f: _d.FieldDescriptor) -> Any:
    """The sub-message ``f`` of ``msg`` (the first element of a repeated field); a command gets the type it needs."""
    if f.is_repeated:
        items = getattr(msg, f.name)
        return items[0] if len(items) else items.add()
    if f.containing_oneof is not None and f.containing_oneof.name == "attributes" and f.name in _COMMANDS:
        command_type, attrs = _COMMANDS[f.name]
        msg.command_type = command_type
        if not msg.HasField(f.name):
            getattr(msg, f.name).CopyFrom(_class(f.message_type)(**attrs))
    return getattr(msg, f.name)


def with_value(base: Any, path: tuple[_d.FieldDescriptor, ...], value: Any) -> Any | None:
    """A copy of ``base`` with the field at ``path`` set to ``value`` (None when the type cannot hold it)."""
    req = type(base)()
    req.CopyFrom(base)
    msg = req
    for f in path[:-1]:
        msg = _child(msg, f)
    leaf = path[-1]
    try:
        if leaf.type == _F.TYPE_MESSAGE:  # a map: the value is a key
            entry = getattr(msg, leaf.name)
            vf = leaf.message_type.fields_by_name["value"]
            if vf.type == _F.TYPE_MESSAGE:
                entry[value].CopyFrom(_class(vf.message_type)())
            else:
                entry[value] = vf.default_value if vf.type != _F.TYPE_ENUM else 1
        elif leaf.is_repeated:
            getattr(msg, leaf.name).append(value)
        else:
            setattr(msg, leaf.name, value)
    except (ValueError, TypeError):
        return None
    return req


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | 0x80]) if n else bytes([b])
        if not n:
            return out


def _wire(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): key, length, bytes."""
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def nested_raw(path: tuple[_d.FieldDescriptor, ...], innermost: bytes) -> bytes:
    """Raw bytes putting ``innermost`` (the encoded value of the last field) at ``path``: appended to a message, it merges."""
    out = innermost
    for f in reversed(path):
        out = _wire(f.number, out)
    return out


def deep_failure(levels: int) -> bytes:
    cause = pb.Failure.DESCRIPTOR.fields_by_name["cause"].number
    out = b""
    for _ in range(levels):
        out = _wire(cause, out)
    return out


class CommandTasks:
    """Current workflow tasks for command fuzzing, on a queue of their own, cheaply.

    A task failed for a bad command is scheduled again at once for its second attempt (backoff
    starts at the third): each workflow serves two completions, then is terminated (a workflow
    with a task pending counts against start admission) and a new one started.
    """

    QUEUE = "fuzzcmd"

    def __init__(self, fz: Fuzz) -> None:
        self.fz = fz
        self.wid = ""
        self.uses = 0

    def token(self) -> bytes:
        for _ in range(3):
            if not self.wid or self.uses >= 2:
                self.close()
                self.wid = f"fuzz-cmd-{uuid.uuid4().hex[:8]}"
                self.fz.start(self.wid, "fuzzflow", self.QUEUE, 1)
                self.fz.touched.add(self.wid)
            code, resp = self.fz.call("PollWorkflowTaskQueue", svc.PollWorkflowTaskQueueRequest(
                namespace="default", task_queue=self.QUEUE, identity="fuzzer"), timeout=1)
            self.uses += 1
            if code == grpc.StatusCode.OK and resp.task_token:
                return resp.task_token
            self.uses = 2  # the run closed or waits (e.g. a timer): take a new workflow
        raise AssertionError("no workflow task on the command fuzzing queue")

    def close(self) -> None:
        if self.wid:
            self.fz.call("TerminateWorkflowExecution", svc.TerminateWorkflowExecutionRequest(
                namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=self.wid), reason="fuzzed"),
                timeout=10)
            self.wid = ""
            self.uses = 0


def test_fuzz_every_field_of_every_rpc(fuzz: Fuzz) -> None:
    from spindle.controlplane._field_rules import find_problem

    fz = fuzz
    if not fz.targets:  # run alone: the targets the sampling test would have started
        for i in range(2):
            wid = f"target-f{i}"
            fz.targets.append(wid)
            fz.start(wid, "fuzzflow", FUZZ_QUEUE, 3)
    service = svc.DESCRIPTOR.services_by_name["WorkflowService"]
    channel = grpc.insecure_channel(fz.server.address, options=[("grpc.max_send_message_length", 64 * 1024 * 1024),
                                                                ("grpc.max_receive_message_length", 64 * 1024 * 1024)])
    bad: list[str] = []
    counts = {"calls": 0, "fields": 0, "malformed": 0}
    seconds: dict[str, float] = {}  # per RPC, printed: what the test spends its time on
    slow: list[str] = []

    tasks = CommandTasks(fz)

    def check(rpc: str, what: str, code: grpc.StatusCode, details: str, must_be_invalid: bool) -> None:
        counts["calls"] += 1
        if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNAVAILABLE) \
                or code not in ALLOWED:
            bad.append(f"{rpc} {what} -> {code.name}: {details[:200]}")
        elif must_be_invalid and code != grpc.StatusCode.INVALID_ARGUMENT:
            bad.append(f"{rpc} {what} -> {code.name} (the field rules refuse it: INVALID_ARGUMENT expected): "
                       f"{details[:200]}")

    try:
        for m in service.methods:
            rpc = m.name
            base = valid_request(rpc, fz.targets[0], fz.tokens[-1] if fz.tokens else b"", 9)
            raw_call = channel.unary_unary(f"/{service.full_name}/{rpc}", request_serializer=lambda b: b,
                                           response_deserializer=lambda b: b)
            t0 = time.monotonic()
            for path in field_paths(m.input_type):
                counts["fields"] += 1
                name = _name_of(path)
                leaf = path[-1]
                in_commands = path[0].name == "commands"
                # typed extremes
                if leaf.type == _F.TYPE_MESSAGE and not leaf.message_type.GetOptions().map_entry:
                    values: list[Any] = []  # a Failure: the raw deep nesting below
                elif leaf.type == _F.TYPE_MESSAGE:
                    values = ["\x00", "k" * 100_000]
                else:
                    values = extremes(leaf)
                for v in values[:2] if in_commands else values:  # a command's costs a workflow task
                    req = with_value(base, path, v)
                    if req is None:
                        continue
                    if in_commands:
                        req.task_token = tasks.token()
                    if rpc in NAMESPACE_ADMIN and getattr(req, "name", getattr(req, "namespace", "")) == "default":
                        continue
                    expected_invalid = find_problem(req, "", 1000) is not None
                    t1 = time.monotonic()
                    code, resp = fz.call(rpc, req, timeout=0.5)
                    if in_commands and code == grpc.StatusCode.OK:
                        tasks.uses = 2  # a valid command: the run may have closed or wait on a timer
                    if time.monotonic() - t1 > 0.3:
                        slow.append(f"{rpc} {name}={str(v)[:20]!r}: {code.name} {time.monotonic() - t1:.1f} s")
                    details = "" if code == grpc.StatusCode.OK else str(resp.details())
                    # a stale token may be refused (NOT_FOUND) before the commands are read
                    check(rpc, f"{name}={str(v)[:20]!r}", code, details, expected_invalid and
                          (not in_commands or code != grpc.StatusCode.NOT_FOUND))
                # bytes that do not parse: a string that is not UTF-8, a Failure nested 150 levels
                raw = None
                if leaf.type == _F.TYPE_STRING:
                    raw = nested_raw(path[:-1], _wire(leaf.number, b"ok\xff\xfe"))
                elif leaf.type == _F.TYPE_MESSAGE and leaf.message_type.full_name == "spindle.v1.Failure":
                    raw = nested_raw(path, deep_failure(150))
                if raw is not None:
                    counts["malformed"] += 1
                    data = base.SerializeToString() + raw
                    try:
                        raw_call(data, timeout=2)
                        code, details = grpc.StatusCode.OK, ""
                    except grpc.RpcError as e:
                        code, details = e.code(), str(e.details())  # type: ignore[attr-defined]
                    check(rpc, f"{name} (malformed)", code, details, True)
                assert fz.server.alive(), f"the server died on {rpc} {name}: {fz.server.log()[-3000:]}"
            seconds[rpc] = round(time.monotonic() - t0, 1)
    finally:
        tasks.close()
        channel.close()
    print("every field:", counts, "seconds:", sorted(seconds.items(), key=lambda kv: -kv[1])[:8])
    print(f"{len(slow)} calls over 0.3 s:", "\n".join(slow[:40]))
    assert counts["fields"] > 300 and counts["malformed"] > 150, counts
    assert not bad, f"{len(bad)} bad answers:\n" + "\n".join(bad[:30])
    # still serving: a new execution runs end to end on the real worker
    fz.start("after-every-field", "fchain3", "fault", 5)
    close = _wait_closed(fz, "after-every-field")
    assert json.loads(close.workflow_execution_completed_event_attributes.result.payloads[0].data) == 8
    problems: list[str] = []
    for wid in sorted(fz.touched):
        code, _ = fz.call("DescribeWorkflowExecution", svc.DescribeWorkflowExecutionRequest(
            namespace="default", execution=pb.WorkflowExecution(workflow_id=wid)), timeout=10)
        if code == grpc.StatusCode.OK:
            problems += check_history(_history(fz, wid), what=wid, activity_input_plus_one=False)
    assert not problems, "\n".join(problems[:20])
    errors = [line for line in fz.server.log().splitlines() if " ERROR " in line or "Traceback" in line]
    assert not errors, "server log:\n" + "\n".join(errors[:40])
