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
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor as _d
from google.protobuf import message_factory
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.controlplane.api import service_pb2_grpc

from fault_helpers import FUZZ_EXAMPLES, DevServer, WorkerProc, check_history

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
    req = _class(svc.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name[rpc].input_type)()
    wid = draw(st.sampled_from(fz.targets))
    ex = pb.WorkflowExecution(workflow_id=wid)
    names = {f.name for f in req.DESCRIPTOR.fields}
    if "namespace" in names:
        req.namespace = "default"
    if rpc in NAMESPACE_ADMIN or rpc == "CreateNamespace" or rpc == "DescribeNamespace":
        if "name" in names:
            req.name = f"fuzz-ns-{draw(st.integers(0, 3))}"
        if rpc == "AddSearchAttributes":
            req.namespace = f"fuzz-ns-{draw(st.integers(0, 3))}"
    for field in ("execution", "workflow_execution"):
        if field in names:
            getattr(req, field).CopyFrom(ex)
    if "task_token" in names:
        req.task_token = draw(token(fz))
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
    for i, g in enumerate(guards):
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
