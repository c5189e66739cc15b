"""``spindle namespace create|describe|list|update|delete``: namespaces, printed as JSON."""

from __future__ import annotations

import math

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from spindle.cli import new_group
from spindle.cli._connection import Connection, client_options
from spindle.cli._output import OK, fail, out, out_json
from spindle.cli._values import duration_arg

if TYPE_CHECKING:
    from spindle.client import Client, NamespaceDescription

__all__ = ["group"]

group = new_group("namespace", "create, describe, list, update and delete namespaces")


def _ns_dict(n: NamespaceDescription) -> dict[str, Any]:
    return {"name": n.name, "id": n.id, "description": n.description, "owner_email": n.owner_email,
            "retention_days": n.retention.total_seconds() / 86400 if n.retention else None,
            "search_attributes": dict(n.search_attributes), "archival_uri": n.archival_uri, "rps_limit": n.rps_limit}


class _RpsLimit(click.ParamType):
    """Requests per second: a finite number, 0 (unlimited) or more."""

    name = "RPS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            rps = float(value)
        except ValueError:
            self.fail(f"{value!r} is not a number of requests per second", param, ctx)
        if not math.isfinite(rps) or rps < 0:
            self.fail(f"{value!r}: must be a finite number, 0 (unlimited) or more", param, ctx)
        return rps


def _search_attributes(values: Iterable[str]) -> dict[str, str]:
    out_: dict[str, str] = {}
    for v in values:
        if "=" not in v:
            fail(f"--search-attribute: expected NAME=TYPE, got {v!r}")
        k, t = v.split("=", 1)
        out_[k] = t
    return out_


def _create_or_update(verb: str) -> click.Command:
    unset = None if verb == "update" else ""

    @group.command(verb, help=f"{verb} a namespace")
    @client_options(codec=False)
    @click.argument("name")
    @click.option("--retention", default=None, help="how long closed executions are kept, e.g. 7d")
    @click.option("--description", default=unset)
    @click.option("--owner-email", default=unset)
    @click.option("--archival-uri", default=unset)
    @click.option("--search-attribute", multiple=True, help="NAME=TYPE (Keyword, Text, Int, ...)")
    @click.option("--rps-limit", type=_RpsLimit(), default=None, metavar="RPS",
                  help="requests per second the namespace's clients may make, per server process (0 = unlimited; "
                       "default: the server's)")
    def command(conn: Connection, name: str, retention: str | None, description: str | None, owner_email: str | None,
                archival_uri: str | None, search_attribute: tuple[str, ...], rps_limit: float | None) -> int:
        kept = duration_arg(retention, "--retention")
        attributes = _search_attributes(search_attribute)

        async def body(client: Client) -> int:
            if verb == "create":
                n = await client.create_namespace(name, retention=kept, description=description or "",
                                                  owner_email=owner_email or "", search_attributes=attributes,
                                                  archival_uri=archival_uri or "", rps_limit=rps_limit)
            else:
                n = await client.update_namespace(name, description=description, owner_email=owner_email,
                                                  retention=kept, search_attributes=attributes or None,
                                                  archival_uri=archival_uri, rps_limit=rps_limit)
            out_json(_ns_dict(n), indent=2)
            return OK

        return conn.run(body)

    return command


create = _create_or_update("create")
update = _create_or_update("update")


@group.command("describe", help="describe a namespace")
@client_options(codec=False)
@click.argument("name")
def describe(conn: Connection, name: str) -> int:
    async def body(client: Client) -> int:
        out_json(_ns_dict(await client.describe_namespace(name)), indent=2)
        return OK

    return conn.run(body)


@group.command("list", help="list namespaces")
@client_options(codec=False)
def list_(conn: Connection) -> int:
    async def body(client: Client) -> int:
        out_json([_ns_dict(n) for n in await client.list_namespaces()], indent=2)
        return OK

    return conn.run(body)


@group.command("delete", help="delete a namespace")
@client_options(codec=False)
@click.argument("name")
@click.option("--force", is_flag=True, help="terminate running executions first")
def delete(conn: Connection, name: str, force: bool) -> int:
    async def body(client: Client) -> int:
        n = await client.delete_namespace(name, force=force)
        out(f"namespace {name} deleted ({n} running execution(s) terminated)")
        return OK

    return conn.run(body)
