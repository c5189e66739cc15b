"""``spindle nexus endpoint create|get|list|update|delete``: the Nexus endpoint registry (docs/NEXUS.md).

A Nexus endpoint routes the Nexus operations workflows call by its name to a task queue of a namespace of
this server (the target), where a worker with Nexus service handlers runs them. Workflows of the target
namespace may call it; ``--allow-caller-namespace`` (repeatable) lets other namespaces' workflows call it too.
The flags follow Temporal's CLI (``temporal operator nexus endpoint ...``): an endpoint is named by ``--name``.

Every verb takes the connection flags of the other client commands (``--address``, ``--api-key`` /
``$SPINDLE_API_KEY``, TLS); ``--namespace`` is not used (endpoints belong to the server). ``create``,
``update`` and ``delete`` need the target namespace's admin role (``update``: of the current and the new
target); ``get`` and ``list`` any valid credentials. Malformed flags exit 2 before anything is sent; the
server's refusals exit 1 with its message.

Examples::

    spindle nexus endpoint create --name orders --target-namespace shop --target-task-queue orders-nexus \\
        --allow-caller-namespace billing --description "order operations"
    spindle nexus endpoint list
    spindle nexus endpoint update --name orders --target-task-queue orders-nexus-v2
    spindle nexus endpoint delete --name orders
"""

from __future__ import annotations

import datetime
import json

from typing import TYPE_CHECKING, Any

import click

from spindle.cli import new_group
from spindle.cli._connection import Connection, client_options
from spindle.cli._output import OK, CommandFailed, fail, out, out_json

if TYPE_CHECKING:
    from spindle.api import messages_pb2 as pb
    from spindle.client import Client

__all__ = ["endpoint_dict", "group"]

group = new_group("nexus", "Nexus: the endpoints that route workflows' Nexus operations to a namespace's task queue")
endpoint = new_group("endpoint", "create, show, change and delete Nexus endpoints")
group.add_command(endpoint)

_OUTPUT = click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="output format")
_NAME = click.option("--name", required=True, help="the endpoint's name")


def _description(text: str) -> pb.Payload:
    from spindle.api import messages_pb2 as pb

    return pb.Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode())


def _description_text(p: pb.Payload) -> str | None:
    if not p.data:
        return None
    try:
        value = json.loads(p.data)
    except ValueError:
        return p.data.decode(errors="replace")
    return value if isinstance(value, str) else json.dumps(value)


def _time(ms: int) -> str | None:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat() if ms else None


def endpoint_dict(ep: pb.Endpoint) -> dict[str, Any]:
    """What ``get`` and ``list`` print of an endpoint (``--output json``)."""
    w = ep.spec.target.worker
    return {"id": ep.id, "version": ep.version, "name": ep.spec.name, "target_namespace": w.namespace,
            "target_task_queue": w.task_queue, "allowed_caller_namespaces": list(ep.spec.allowed_caller_namespaces),
            "description": _description_text(ep.spec.description), "create_time": _time(ep.created_time_ms),
            "last_modified_time": _time(ep.last_modified_time_ms)}


def _print(d: dict[str, Any]) -> None:
    for key in ("name", "id", "version", "target_namespace", "target_task_queue"):
        out(f"{key.replace('_', ' ').capitalize() + ':':<28}{d[key]}")
    callers = ", ".join(d["allowed_caller_namespaces"]) or "(only the target namespace)"
    out(f"{'Allowed caller namespaces:':<28}{callers}")
    if d["description"] is not None:
        out(f"{'Description:':<28}{d['description']}")
    out(f"{'Created:':<28}{d['create_time'] or '-'}")
    out(f"{'Last modified:':<28}{d['last_modified_time'] or '-'}")


async def _by_name(client: Client, name: str) -> pb.Endpoint:
    from spindle.api import service_pb2 as svc

    resp = await client.operator_service.list_nexus_endpoints(svc.ListNexusEndpointsRequest(name=name), retry=True)
    if not resp.endpoints:
        raise CommandFailed(f"no Nexus endpoint named {name!r}")
    ep: pb.Endpoint = resp.endpoints[0]
    return ep


@endpoint.command("create", help="create an endpoint routing operations to --target-task-queue of "
                                 "--target-namespace (needs that namespace's admin role)")
@client_options(codec=False)
@_NAME
@click.option("--target-namespace", required=True, help="the namespace whose workers run the operations")
@click.option("--target-task-queue", required=True, help="the task queue those workers poll")
@click.option("--description", default=None, help="free text shown by get")
@click.option("--allow-caller-namespace", "callers", multiple=True,
              help="a namespace whose workflows may call the endpoint besides the target namespace (repeatable)")
@_OUTPUT
def create(conn: Connection, name: str, target_namespace: str, target_task_queue: str, description: str | None,
           callers: tuple[str, ...], output: str) -> int:
    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc

    spec = pb.EndpointSpec(name=name, target=pb.EndpointTarget(worker=pb.EndpointTarget.Worker(
        namespace=target_namespace, task_queue=target_task_queue)), allowed_caller_namespaces=list(callers))
    if description is not None:
        spec.description.CopyFrom(_description(description))

    async def body(client: Client) -> int:
        resp = await client.operator_service.create_nexus_endpoint(svc.CreateNexusEndpointRequest(spec=spec))
        if output == "json":
            out_json(endpoint_dict(resp.endpoint), indent=2)
        else:
            out(f"created Nexus endpoint {name} (id {resp.endpoint.id})")
        return OK

    return conn.run(body)


@endpoint.command("get", help="show an endpoint (any valid credentials)")
@client_options(codec=False)
@_NAME
@_OUTPUT
def get(conn: Connection, name: str, output: str) -> int:
    async def body(client: Client) -> int:
        d = endpoint_dict(await _by_name(client, name))
        if output == "json":
            out_json(d, indent=2)
        else:
            _print(d)
        return OK

    return conn.run(body)


@endpoint.command("list", help="list the endpoints by name (any valid credentials)")
@client_options(codec=False)
@_OUTPUT
def list_(conn: Connection, output: str) -> int:
    from spindle.api import service_pb2 as svc

    async def body(client: Client) -> int:
        rows: list[dict[str, Any]] = []
        token = b""
        while True:
            resp = await client.operator_service.list_nexus_endpoints(
                svc.ListNexusEndpointsRequest(page_size=100, next_page_token=token), retry=True)
            rows += [endpoint_dict(e) for e in resp.endpoints]
            token = resp.next_page_token
            if not token:
                break
        if output == "json":
            out_json(rows, indent=2)
            return OK
        out(f"{'NAME':<32} {'TARGET NAMESPACE':<24} {'TARGET TASK QUEUE':<28} ALLOWED CALLERS")
        for r in rows:
            out(f"{r['name']:<32} {r['target_namespace']:<24} {r['target_task_queue']:<28} "
                f"{','.join(r['allowed_caller_namespaces']) or '-'}")
        return OK

    return conn.run(body)


@endpoint.command("update", help="change an endpoint: the flags given replace those values (needs the admin role of "
                                 "its current target namespace and of the new one)")
@client_options(codec=False)
@_NAME
@click.option("--target-namespace", default=None, help="the new target namespace")
@click.option("--target-task-queue", default=None, help="the new target task queue")
@click.option("--description", default=None, help="the new description")
@click.option("--unset-description", is_flag=True, help="remove the description")
@click.option("--allow-caller-namespace", "callers", multiple=True,
              help="replaces the allowed caller namespaces (repeatable)")
@click.option("--unset-allowed-caller-namespaces", "unset_callers", is_flag=True,
              help="only the target namespace may call the endpoint")
@_OUTPUT
def update(conn: Connection, name: str, target_namespace: str | None, target_task_queue: str | None,
           description: str | None, unset_description: bool, callers: tuple[str, ...], unset_callers: bool,
           output: str) -> int:
    from spindle.api import service_pb2 as svc

    if description is not None and unset_description:
        fail("give --description or --unset-description, not both")
    if callers and unset_callers:
        fail("give --allow-caller-namespace or --unset-allowed-caller-namespaces, not both")

    async def body(client: Client) -> int:
        ep = await _by_name(client, name)
        spec = ep.spec
        if target_namespace is not None:
            spec.target.worker.namespace = target_namespace
        if target_task_queue is not None:
            spec.target.worker.task_queue = target_task_queue
        if description is not None:
            spec.description.CopyFrom(_description(description))
        if unset_description:
            spec.ClearField("description")
        if callers or unset_callers:
            del spec.allowed_caller_namespaces[:]
            spec.allowed_caller_namespaces.extend(callers)
        resp = await client.operator_service.update_nexus_endpoint(
            svc.UpdateNexusEndpointRequest(id=ep.id, version=ep.version, spec=spec))
        if output == "json":
            out_json(endpoint_dict(resp.endpoint), indent=2)
        else:
            out(f"updated Nexus endpoint {name} (version {resp.endpoint.version})")
        return OK

    return conn.run(body)


@endpoint.command("delete", help="delete an endpoint; operations already scheduled through it keep running "
                                 "(needs the admin role of its target namespace)")
@client_options(codec=False)
@_NAME
def delete(conn: Connection, name: str) -> int:
    from spindle.api import service_pb2 as svc

    async def body(client: Client) -> int:
        ep = await _by_name(client, name)
        await client.operator_service.delete_nexus_endpoint(svc.DeleteNexusEndpointRequest(id=ep.id,
                                                                                           version=ep.version))
        out(f"deleted Nexus endpoint {name}")
        return OK

    return conn.run(body)
