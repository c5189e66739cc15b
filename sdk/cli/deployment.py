"""``spindle deployment list|describe|set-current|set-ramping``: worker deployments (worker build versioning).

A worker deployment is a named set of builds of the workers of some task queues; the server
learns it, and each build (version ``DEPLOYMENT.BUILD``), from the pollers that name it. Its
routing sends new and auto-upgrade executions to the *current* version, and a percentage of
them to a *ramping* one; pinned executions stay on the build that started them until they
close. ``describe`` shows each version's status so an operator knows when an old build's
workers can be stopped: DRAINED (no open execution waits for it) is that point.

Every verb takes the connection flags of the other client commands (``--address``,
``--namespace``, ``--api-key`` / ``$SPINDLE_API_KEY``, TLS). ``list`` and ``describe`` need the
namespace's reader role; ``set-current`` and ``set-ramping`` its admin role. Malformed flag
values exit 2 before anything is sent; the server's refusals exit 1 with its message.

Examples::

    spindle deployment describe orders
    spindle deployment set-ramping orders 2.0 --percentage 10
    spindle deployment set-current orders 2.0
    spindle deployment set-ramping orders --stop
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math

from typing import TYPE_CHECKING, Any

import click

from spindle.cli import new_group
from spindle.cli._connection import Connection, client_options
from spindle.cli._output import OK, CommandFailed, fail, out, out_json

if TYPE_CHECKING:
    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc
    from spindle.client import Client

__all__ = ["deployment_dict", "group", "version_text"]

group = new_group("deployment", "list and describe worker deployments (builds of versioned workers), and set which "
                                "build new executions go to")

_STATUS_PREFIX = "WORKER_DEPLOYMENT_VERSION_STATUS_"
_DRAINAGE_PREFIX = "VERSION_DRAINAGE_STATUS_"


# ---------------------------------------------------------------------- flag values
class _Percentage(click.ParamType):
    """A percentage of new executions: a number from 0 to 100."""

    name = "P"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            p = float(value)
        except ValueError:
            self.fail(f"{value!r} is not a number (a percentage from 0 to 100)", param, ctx)
        if not math.isfinite(p) or not 0 <= p <= 100:
            self.fail(f"{value!r}: must be a percentage from 0 to 100", param, ctx)
        return p


class _ConflictToken(click.ParamType):
    """The base64 conflict token ``describe`` printed."""

    name = "TOKEN"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> bytes:
        if isinstance(value, bytes):
            return value
        try:
            token = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            self.fail(f"{value!r} is not a token as 'spindle deployment describe' prints it (base64)", param, ctx)
        if not token:
            self.fail("empty token", param, ctx)
        return token


_OUTPUT = click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table",
                       help="table for people (default), json for scripts")
_CONFLICT_TOKEN = click.option("--conflict-token", type=_ConflictToken(), default=None, metavar="TOKEN",
                               help="the conflict token 'describe' printed: refused if the deployment's routing "
                                    "changed since (so two operators do not overwrite each other)")
_ALLOW_NO_POLLERS = click.option("--allow-no-pollers", is_flag=True,
                                 help="set a build no worker has polled with yet (default: refused, so a typo does "
                                      "not route executions to a build that has no workers)")


# ---------------------------------------------------------------------- printing
def version_text(v: pb.WorkerDeploymentVersion | None) -> str | None:
    """``DEPLOYMENT.BUILD`` (None for an unset version: unversioned workers)."""
    if v is None or not v.deployment_name:
        return None
    return f"{v.deployment_name}.{v.build_id}"


def _time(ms: int) -> str | None:
    if not ms:
        return None
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


def _token(token: bytes) -> str:
    return base64.b64encode(token).decode()


def _routing_dict(r: svc.RoutingConfig) -> dict[str, Any]:
    ramping = version_text(r.ramping_deployment_version) if r.HasField("ramping_deployment_version") else None
    return {"current_version": version_text(r.current_deployment_version) if r.HasField("current_deployment_version")
            else None,
            "current_version_changed_time": _time(r.current_version_changed_time_ms),
            "ramping_version": ramping,
            "ramping_percentage": round(float(r.ramping_version_percentage), 4) if ramping else None,
            "ramping_version_changed_time": _time(r.ramping_version_changed_time_ms)}


def _version_dict(s: svc.WorkerDeploymentVersionSummary) -> dict[str, Any]:
    from spindle.api import service_pb2 as svc

    status = svc.WorkerDeploymentVersionStatus.Name(s.status).removeprefix(_STATUS_PREFIX)
    drainage = svc.VersionDrainageStatus.Name(s.drainage_status).removeprefix(_DRAINAGE_PREFIX)
    return {"version": version_text(s.deployment_version), "build_id": s.deployment_version.build_id,
            "status": status, "drainage": None if drainage == "UNSPECIFIED" else drainage,
            "open_pinned_executions": s.open_pinned_executions, "last_poller_time": _time(s.last_poller_time_ms),
            "task_queues": list(s.task_queues), "create_time": _time(s.create_time_ms)}


def deployment_dict(resp: svc.DescribeWorkerDeploymentResponse) -> dict[str, Any]:
    """A DescribeWorkerDeployment response as JSON values (``--output json``)."""
    info = resp.worker_deployment_info
    return {"name": info.name, "create_time": _time(info.create_time_ms),
            "last_modifier_identity": info.last_modifier_identity, "routing": _routing_dict(info.routing_config),
            "conflict_token": _token(resp.conflict_token),
            "versions": [_version_dict(s) for s in info.version_summaries]}


def _print_deployment(d: dict[str, Any]) -> None:
    r = d["routing"]
    out(f"deployment {d['name']} (created {d['create_time'] or '-'})")
    since = f" (since {r['current_version_changed_time']})" if r["current_version_changed_time"] else ""
    out(f"  current:   {r['current_version'] or 'unversioned workers'}{since}")
    if r["ramping_version"]:
        since = f" (since {r['ramping_version_changed_time']})" if r["ramping_version_changed_time"] else ""
        out(f"  ramping:   {r['ramping_version']} at {r['ramping_percentage']:g}% of new executions{since}")
    else:
        out("  ramping:   none")
    if d["last_modifier_identity"]:
        out(f"  last set by: {d['last_modifier_identity']}")
    out(f"  conflict token: {d['conflict_token']}")
    out("")
    out(f"{'BUILD':<16} {'STATUS':<9} {'DRAINAGE':<9} {'OPEN PINNED':>11}  {'LAST POLLER':<20}  TASK QUEUES")
    for v in d["versions"]:
        out(f"{v['build_id']:<16} {v['status']:<9} {v['drainage'] or '-':<9} {v['open_pinned_executions']:>11}  "
            f"{v['last_poller_time'] or '-':<20}  {', '.join(v['task_queues']) or '-'}")
    drained = [v["build_id"] for v in d["versions"] if v["status"] == "DRAINED"]
    if drained:
        out(f"\nDRAINED (no open execution waits for it; its workers can be stopped): {', '.join(drained)}")


async def _set(call: Any, req: Any) -> Any:
    """A Set* call; a refusal for a build no poller named says which flag allows it."""
    from spindle.exceptions import RPCError

    try:
        return await call(req)
    except RPCError as e:
        if "allow_no_pollers" in str(e):
            raise CommandFailed(f"{e} [--allow-no-pollers]") from None
        raise


def _request(client: Client, kind: str, **fields: Any) -> Any:
    from spindle.api import service_pb2 as svc

    return getattr(svc, kind)(namespace=client.namespace, **fields)


# ---------------------------------------------------------------------- commands
@group.command("list", short_help="list the worker deployments and their routing", help="list the namespace's worker deployments with their current and ramping versions "
                            "(needs the namespace's reader role)")
@client_options(codec=False)
@_OUTPUT
def list_(conn: Connection, output: str) -> int:
    async def body(client: Client) -> int:
        rows: list[dict[str, Any]] = []
        token = b""
        while True:
            resp = await client.workflow_service.list_worker_deployments(
                _request(client, "ListWorkerDeploymentsRequest", page_size=100, next_page_token=token), retry=True)
            rows += [{"name": s.name, "create_time": _time(s.create_time_ms), **_routing_dict(s.routing_config)}
                     for s in resp.worker_deployments]
            token = resp.next_page_token
            if not token:
                break
        if output == "json":
            out_json(rows, indent=2)
            return OK
        out(f"{'NAME':<24} {'CURRENT':<28} {'RAMPING':<34} CREATED")
        for r in rows:
            ramping = f"{r['ramping_version']} ({r['ramping_percentage']:g}%)" if r["ramping_version"] else "-"
            out(f"{r['name']:<24} {r['current_version'] or '-':<28} {ramping:<34} {r['create_time'] or '-'}")
        return OK

    return conn.run(body)


@group.command("describe", short_help="show a deployment's routing and each version's status", help="show a deployment's routing (current version, ramping version and percentage) and "
                                "each version: its status (CURRENT, RAMPING, DRAINING, DRAINED, INACTIVE), open "
                                "pinned executions, last poll and task queues. A DRAINED version has no open "
                                "execution waiting for it: its workers can be stopped (needs the reader role)")
@client_options(codec=False)
@click.argument("name")
@_OUTPUT
def describe(conn: Connection, name: str, output: str) -> int:
    async def body(client: Client) -> int:
        resp = await client.workflow_service.describe_worker_deployment(
            _request(client, "DescribeWorkerDeploymentRequest", deployment_name=name), retry=True)
        d = deployment_dict(resp)
        if output == "json":
            out_json(d, indent=2)
        else:
            _print_deployment(d)
        return OK

    return conn.run(body)


def _changed(output: str, name: str, what: str, new: str, previous: str, resp: Any, extra: dict[str, Any]) -> None:
    if output == "json":
        out_json({"deployment": name, what: new or None, f"previous_{what}": previous or None, **extra,
                  "conflict_token": _token(resp.conflict_token)}, indent=2)
    else:
        out(f"{name}: {what.replace('_', ' ')} {new or 'none'} (was {previous or 'none'})")


@group.command("set-current", short_help="make a build the current version (admin)", help="make BUILD the current version of deployment NAME: new executions and "
                                   "auto-upgrade ones go to its workers (pinned executions stay where they are). "
                                   "Refused for a build no worker has polled with, unless --allow-no-pollers; "
                                   "--unversioned (no BUILD) sends them to unversioned workers. Needs the "
                                   "namespace's admin role")
@client_options(codec=False)
@click.argument("name")
@click.argument("build", required=False)
@click.option("--unversioned", is_flag=True, help="instead of a BUILD: new executions go to unversioned workers")
@_ALLOW_NO_POLLERS
@_CONFLICT_TOKEN
@_OUTPUT
def set_current(conn: Connection, name: str, build: str | None, unversioned: bool, allow_no_pollers: bool,
                conflict_token: bytes | None, output: str) -> int:
    if unversioned == (build is not None):
        fail("give a BUILD or --unversioned (one of them)")
    if build is not None and not build.strip():
        fail("BUILD: empty (use --unversioned to route new executions to unversioned workers)")

    async def body(client: Client) -> int:
        req = _request(client, "SetWorkerDeploymentCurrentVersionRequest", deployment_name=name,
                       build_id=build or "", conflict_token=conflict_token or b"", identity=client.identity,
                       allow_no_pollers=allow_no_pollers)
        resp = await _set(client.workflow_service.set_worker_deployment_current_version, req)
        _changed(output, name, "current_version", f"{name}.{build}" if build else "",
                 version_text(resp.previous_deployment_version) or "", resp, {})
        return OK

    return conn.run(body)


@group.command("set-ramping", short_help="ramp a percentage of new executions to a build, or --stop (admin)", help="send --percentage P (0 to 100) of new and auto-upgrade executions of deployment "
                                   "NAME to BUILD, the rest to the current version (chosen by workflow id, so a "
                                   "workflow keeps its side); --stop ends the ramp. Refused for a build no worker "
                                   "has polled with, unless --allow-no-pollers. Needs the namespace's admin role")
@client_options(codec=False)
@click.argument("name")
@click.argument("build", required=False)
@click.option("--percentage", type=_Percentage(), default=None, metavar="P",
              help="percentage of new executions that go to BUILD, 0 to 100")
@click.option("--stop", is_flag=True, help="stop ramping (no BUILD, no --percentage)")
@_ALLOW_NO_POLLERS
@_CONFLICT_TOKEN
@_OUTPUT
def set_ramping(conn: Connection, name: str, build: str | None, percentage: float | None, stop: bool,
                allow_no_pollers: bool, conflict_token: bytes | None, output: str) -> int:
    if stop:
        if build is not None or percentage is not None:
            fail("--stop takes no BUILD and no --percentage")
    else:
        if build is None or not build.strip():
            fail("give the BUILD to ramp (or --stop to end the ramp)")
        if percentage is None:
            fail("--percentage is required with a BUILD (0 to 100)")

    async def body(client: Client) -> int:
        req = _request(client, "SetWorkerDeploymentRampingVersionRequest", deployment_name=name,
                       build_id=build or "", percentage=percentage or 0.0, conflict_token=conflict_token or b"",
                       identity=client.identity, allow_no_pollers=allow_no_pollers)
        resp = await _set(client.workflow_service.set_worker_deployment_ramping_version, req)
        previous = version_text(resp.previous_deployment_version) or ""
        if previous:
            previous += f" at {resp.previous_percentage:g}%"
        new = f"{name}.{build} at {percentage:g}%" if build else ""
        if output == "json":
            _changed(output, name, "ramping_version", f"{name}.{build}" if build else "",
                     version_text(resp.previous_deployment_version) or "", resp,
                     {"percentage": percentage if build else None,
                      "previous_percentage": round(float(resp.previous_percentage), 4) if previous else None})
        else:
            _changed(output, name, "ramping_version", new, previous, resp, {})
        return OK

    return conn.run(body)
