"""``spindle nexus endpoint create|get|list|update|delete`` against a real server (``spindle server start-dev``),
and ``client.operator_service`` (the calls the CLI makes, as Temporal code makes them)."""

from __future__ import annotations

import asyncio
import json

from collections.abc import Iterator

import pytest

from spindle_procs import DevServer

from spindle.cli import main

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    dev = DevServer(tmp_path_factory.mktemp("nexus") / "dev.db").start()
    try:
        yield dev
    finally:
        dev.stop()


def run(capsys: pytest.CaptureFixture[str], address: str, *argv: str) -> tuple[int, str, str]:
    code = main(["nexus", "endpoint", *argv, "--address", address])
    shown = capsys.readouterr()
    return code, shown.out, shown.err


def test_an_endpoint_from_create_to_delete(server: DevServer, capsys: pytest.CaptureFixture[str]) -> None:
    a = server.address
    code, out, err = run(capsys, a, "create", "--name", "cli-orders", "--target-namespace", "default",
                         "--target-task-queue", "orders-nexus", "--description", "order operations")
    assert code == 0, err
    assert out.startswith("created Nexus endpoint cli-orders (id ")
    code, out, err = run(capsys, a, "get", "--name", "cli-orders", "-o", "json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["name"], d["target_namespace"], d["target_task_queue"], d["description"], d["version"]) == (
        "cli-orders", "default", "orders-nexus", "order operations", 1)
    assert d["allowed_caller_namespaces"] == []

    code, out, err = run(capsys, a, "update", "--name", "cli-orders", "--target-task-queue", "q2",
                         "--unset-description")
    assert (code, out) == (0, "updated Nexus endpoint cli-orders (version 2)\n"), err
    code, out, err = run(capsys, a, "get", "--name", "cli-orders")
    assert code == 0, err
    shown = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}
    assert shown["Target task queue"] == "q2" and shown["Version"] == "2", out
    assert shown["Allowed caller namespaces"] == "(only the target namespace)" and "Description" not in shown

    code, out, err = run(capsys, a, "list", "-o", "json")
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["cli-orders"], err
    code, out, err = run(capsys, a, "delete", "--name", "cli-orders")
    assert (code, out) == (0, "deleted Nexus endpoint cli-orders\n"), err
    code, out, err = run(capsys, a, "get", "--name", "cli-orders")
    assert code == 1 and "no Nexus endpoint named 'cli-orders'" in err


def test_refusals_exit_1_with_the_servers_message_and_usage_errors_2(server: DevServer,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a = server.address
    code, out, err = run(capsys, a, "create", "--name", "9bad", "--target-namespace", "default",
                         "--target-task-queue", "q")
    assert code == 1 and "spec.name" in err, err
    code, out, err = run(capsys, a, "create", "--name", "x", "--target-namespace", "no-such-ns",
                         "--target-task-queue", "q")
    assert code == 1 and "spec.target.worker.namespace" in err, err
    code, out, err = run(capsys, a, "create", "--name", "x", "--target-namespace", "default")
    assert code == 2 and "--target-task-queue" in err, err
    code, out, err = run(capsys, a, "update", "--name", "x", "--description", "d", "--unset-description")
    assert code == 2, err
    code, out, err = run(capsys, a, "list", "-o", "json")
    assert code == 0 and json.loads(out) == [], err


def test_operator_service_as_temporal_code_calls_it(server: DevServer) -> None:
    import spindle.api.nexus.v1 as nexus_v1
    import spindle.api.operatorservice.v1 as op_v1

    from spindle.client import Client
    from spindle.exceptions import RPCError

    async def body() -> None:
        client = await Client.connect(server.address)
        try:
            made = (await client.operator_service.create_nexus_endpoint(op_v1.CreateNexusEndpointRequest(
                spec=nexus_v1.EndpointSpec(name="sdk-endpoint", target=nexus_v1.EndpointTarget(
                    worker=nexus_v1.EndpointTarget.Worker(namespace="default", task_queue="q")))))).endpoint
            got = await client.operator_service.get_nexus_endpoint(op_v1.GetNexusEndpointRequest(id=made.id))
            assert got.endpoint.spec.name == "sdk-endpoint"
            await client.operator_service.delete_nexus_endpoint(op_v1.DeleteNexusEndpointRequest(
                id=made.id, version=made.version))
            with pytest.raises(RPCError) as info:
                await client.operator_service.get_nexus_endpoint(op_v1.GetNexusEndpointRequest(id=made.id))
            assert info.value.status == "NOT_FOUND"
            with pytest.raises(AttributeError, match="add_search_attributes"):
                client.operator_service.add_search_attributes  # noqa: B018 - not one Spindle serves here
        finally:
            await client.close()

    asyncio.run(body())
