"""A server with few file descriptors keeps serving new clients, however many idle connections and long polls others hold.

Found (issue 16): with a 128-file limit, 200 idle connections used up the server's file
descriptors: the listener could no longer accept ("File descriptor limit reached"), so every
new client waited until its deadline. Now the server raises its soft open-files limit to the
hard one, caps connections below what the limit leaves (a connection over the cap is closed
at once: UNAVAILABLE, never a wait), closes idle connections and unfinished handshakes after
a timeout, and caps the long polls one client may hold (RESOURCE_EXHAUSTED naming the limit,
with a retry delay). docs/LIMITS.md.
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import subprocess
import time
import uuid

from datetime import timedelta
from pathlib import Path

import grpc
import pytest

from spindle_procs import LISTEN_RE, SPINDLE, read_line

from spindle import activity, workflow
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.client import Client
from spindle.client._retry_delay import retry_delay
from spindle.exceptions import RPCError
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)

SOFT, HARD = 64, 128
PER_CLIENT = 20


@activity.defn
async def double(x: int) -> int:
    return 2 * x


@workflow.defn
class Doubler:
    @workflow.run
    async def run(self, x: int) -> int:
        return await workflow.execute_activity(double, x, start_to_close_timeout=timedelta(seconds=10))


def _low_file_limit() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT, HARD))


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _channel(address: str) -> grpc.aio.Channel:
    # a connection of its own (channels share connections by default)
    return grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts the server's descriptors in /proc")
async def test_idle_connections_and_long_polls_do_not_lock_out_a_new_client(tmp_path: Path) -> None:
    db = tmp_path / "limits.db"
    config = tmp_path / "server.yaml"
    config.write_text(f"max_connection_idle: 2\nconnection_handshake_timeout: 3\n"
                      f"max_long_polls_per_client: {PER_CLIENT}\n")
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([SPINDLE, "server", "start-dev", "--db", str(db), "--port", "0", "--config", str(config),
                                 "--log-level", "info"], stdout=subprocess.PIPE, stderr=log, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=_low_file_limit)
    channels: list[grpc.aio.Channel] = []
    raw: list[socket.socket] = []
    try:
        m = read_line(proc, LISTEN_RE, 30)
        assert m is not None, log_path.read_text()
        address = f"127.0.0.1:{m.group(2)}"
        text = log_path.read_text()
        assert f"open-files limit raised from {SOFT} to {HARD}" in text, text
        assert f"open-files limit {HARD} " in text, text

        # A greedy client parks long polls; over its allowance it is refused at once, naming the limit.
        greedy = _channel(address)
        channels.append(greedy)
        gstub = service_pb2_grpc.WorkflowServiceStub(greedy)
        req = svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue="nobody-works-here", identity="greedy")
        parked = [asyncio.ensure_future(gstub.PollWorkflowTaskQueue(req, timeout=60)) for _ in range(PER_CLIENT + 5)]
        done, _ = await asyncio.wait(parked, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        await asyncio.sleep(0.5)
        refused = [t for t in parked if t.done()]
        assert len(refused) == 5, f"{len(refused)} of {len(parked)} polls ended early"
        for t in refused:
            e = t.exception()
            assert isinstance(e, grpc.aio.AioRpcError) and e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
            assert f"max_long_polls_per_client = {PER_CLIENT}" in (e.details() or ""), e.details()
            assert retry_delay(e) == pytest.approx(1.0), "a refused poll carries a retry delay"

        # 200 idle connections (each made one call), and 50 sockets that never even say hello.
        async def connect_once() -> str:
            ch = _channel(address)
            channels.append(ch)
            t0 = time.monotonic()
            try:
                await service_pb2_grpc.WorkflowServiceStub(ch).GetSystemInfo(svc.GetSystemInfoRequest(), timeout=8)
                return "ok"
            except grpc.aio.AioRpcError as e:
                assert e.code() == grpc.StatusCode.UNAVAILABLE, f"{e.code()} {e.details()}"
                assert time.monotonic() - t0 < 5, "a connection over the cap must be refused, not left waiting"
                return "refused"

        outcomes = await asyncio.gather(*[connect_once() for _ in range(200)])
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", int(m.group(2))))
            raw.append(s)
        assert outcomes.count("refused") > 0, "the server accepted more connections than its file limit allows"
        assert outcomes.count("ok") > 10
        assert _fds(proc.pid) < HARD - 32, "the server used up its file descriptors"

        # Idle connections are closed after max_connection_idle, silent sockets after the handshake timeout.
        deadline = time.monotonic() + 15
        while _fds(proc.pid) > 40 and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        assert _fds(proc.pid) <= 40, f"idle connections were not closed: {_fds(proc.pid)} descriptors open"

        # The greedy client's polls were held all along (it is not cut off). It ends them now: a new client on
        # this host is the same client to the server (no credentials: its address), whatever identity it declares.
        assert all(not t.done() for t in parked if t not in refused)
        for t in parked:
            t.cancel()

        # A new client connects (retrying quickly if it is refused, never waiting for a deadline) and runs a workflow.
        client = None
        give_up = time.monotonic() + 30
        while client is None:
            try:
                client = await Client.connect(address)
            except RPCError as e:
                assert e.status == "UNAVAILABLE" and time.monotonic() < give_up, str(e)
                await asyncio.sleep(0.5)
        try:
            async with Worker(client, task_queue="q", workflows=[Doubler], activities=[double]):
                result = await asyncio.wait_for(
                    client.execute_workflow(Doubler.run, 21, id=f"d-{uuid.uuid4()}", task_queue="q"), 30)
            assert result == 42
        finally:
            await client.close()

        # The server still serves.
        info = await service_pb2_grpc.WorkflowServiceStub(_channel(address)).GetSystemInfo(svc.GetSystemInfoRequest(),
                                                                                          timeout=10)
        assert info.server_version
        assert proc.poll() is None
    finally:
        for s in raw:
            s.close()
        for ch in channels:
            await ch.close()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_the_server_wide_long_poll_cap_refuses_the_next_poll_and_frees_slots(tmp_path: Path) -> None:
    from spindle.api import messages_pb2 as pb
    from spindle.controlplane.config import ServerConfig
    from spindle.controlplane.server import ControlPlane, serve
    from spindle.controlplane.store.sqlite import SqliteStore

    cp = ControlPlane(SqliteStore(str(tmp_path / "cap.db")), ServerConfig(num_shards=1, max_long_polls=3,
                                                                           long_poll_namespace_share=1.0))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = service_pb2_grpc.WorkflowServiceStub(ch)
            await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
                namespace="default", workflow_id="w", workflow_type="W", task_queue="q", request_id="r"), timeout=10)
            # three long polls of three clients fill the server's allowance: two worker polls and a
            # result wait (a history read that waits for the close event)
            polls = [asyncio.ensure_future(stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
                namespace="default", task_queue="idle", identity=f"worker-{i}"), timeout=60)) for i in range(2)]
            polls.append(asyncio.ensure_future(stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
                namespace="default", execution=pb.WorkflowExecution(workflow_id="w"), wait_new_event=True,
                close_event_only=True), timeout=60)))
            await asyncio.sleep(0.5)
            assert not any(p.done() for p in polls)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
                    namespace="default", task_queue="q", identity="worker-3"), timeout=10)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_long_polls = 3" in (refused.value.details() or "")
            assert retry_delay(refused.value) == pytest.approx(1.0)
            # calls that do not wait are not counted
            await stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
                namespace="default", execution=pb.WorkflowExecution(workflow_id="w")), timeout=10)
            # a poll that ends gives its slot back: the refused worker now gets the workflow's task
            polls[0].cancel()
            await asyncio.sleep(0.2)
            task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
                namespace="default", task_queue="q", identity="worker-3"), timeout=10)
            assert task.workflow_execution.workflow_id == "w"
            for p in polls:
                p.cancel()
    finally:
        await server.stop(0)
        await cp.stop()


def test_long_poll_clients_are_keyed_by_principal_or_address_never_by_declared_identity() -> None:
    from spindle.controlplane._long_polls import long_poll_key

    poll = svc.PollWorkflowTaskQueueRequest(namespace="orders", identity="1234@host-a")
    assert long_poll_key("PollWorkflowTaskQueue", poll, None, "ipv4:10.0.0.7:53122") == ("ipv4:10.0.0.7", "orders")
    assert long_poll_key("PollWorkflowTaskQueue", poll, "key:k1", "ipv4:10.0.0.7:53122") == ("key:k1", "orders")
    other = svc.PollActivityTaskQueueRequest(namespace="orders", identity="another-name")
    assert long_poll_key("PollActivityTaskQueue", other, "key:k1", "ipv4:10.0.0.8:1") == ("key:k1", "orders")
    assert long_poll_key("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(
        namespace="b", wait_new_event=True), "anonymous", "ipv6:[::1]:4000") == ("ipv6:[::1]", "b")
    assert long_poll_key("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(), None,
                         "ipv4:10.0.0.7:1") is None
    assert long_poll_key("StartWorkflowExecution", svc.StartWorkflowExecutionRequest(), None, "ipv4:10.0.0.7:1") is None
