"""``spindle admin``: operator commands.

``spindle admin setup-schema --config FILE`` (or ``--project/--instance/--database``)
creates the Spanner database if needed and applies every schema version it lacks;
running it again changes nothing.

``spindle admin api-key create|list|revoke`` manage API keys through a server (the
connection flags of the client commands); ``spindle admin api-key new-secret`` prints a
fresh API key secret without any server: for ``auth.bootstrap_admin_key_file`` when the
secret is kept elsewhere (Secret Manager).

The control-plane modules that implement ``setup-schema`` and ``new-secret`` are imported
only when they run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from spindle.cli import new_group
from spindle.cli._connection import Connection, client_options
from spindle.cli._output import OK, fail, note, out, out_json
from spindle.cli._values import duration_arg

if TYPE_CHECKING:
    from spindle.client import ApiKey, Client

__all__ = ["group"]

group = new_group("admin", "operator commands (database schema, API keys)")


# ---------------------------------------------------------------------- setup-schema
@group.command("setup-schema", help="create or upgrade the Cloud Spanner schema (idempotent)")
@click.option("--config", help="cluster YAML file (its store.spanner section)")
@click.option("--project")
@click.option("--instance")
@click.option("--database")
def setup_schema(config: str | None, project: str | None, instance: str | None, database: str | None) -> int:
    if config:
        from spindle.controlplane.cluster import ConfigError, load_config

        try:
            cfg = load_config(config)
        except ConfigError as e:
            fail(str(e))
        if cfg.store.kind != "spanner":
            fail(f"{config}: store is {cfg.store.kind}; setup-schema is for Spanner (SQLite needs none)")
        project, instance, database = (project or cfg.store.project, instance or cfg.store.instance,
                                       database or cfg.store.database)
    if not (project and instance and database):
        fail("setup-schema: give --config FILE or all of --project, --instance and --database")
    from spindle.controlplane.cluster import setup_spanner_schema

    try:
        result = setup_spanner_schema(project, instance, database)
    except ImportError:
        fail("google-cloud-spanner is not installed (pip install 'spindle[spanner]')")
    except Exception as e:  # noqa: BLE001 - one line for the operator
        fail(f"setup-schema failed: {type(e).__name__}: {e}")
    what = "created database; " if result.created_database else ""
    if result.applied:
        out(f"{what}schema version {result.from_version} -> {result.to_version} "
            f"(applied {', '.join(map(str, result.applied))})")
    else:
        out(f"{what}schema is up to date (version {result.to_version})")
    return OK


# ---------------------------------------------------------------------- api-key
api_key = new_group("api-key", "create, list and revoke API keys")
group.add_command(api_key)


def _key_dict(k: ApiKey) -> dict[str, Any]:
    shown = {"id": k.id, "name": k.name, "grants": dict(k.grants), "system_admin": k.system_admin,
             "expires_at": k.expires_at.isoformat() if k.expires_at else None,
             "created_at": k.created_at.isoformat() if k.created_at else None,
             "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None, "created_by": k.created_by,
             "task_queues": {ns: list(q) for ns, q in k.task_queues.items()}}
    if k.secret:
        shown["secret"] = k.secret
    return shown


def _grants(values: Iterable[str]) -> dict[str, str]:
    grants = {}
    for v in values:
        ns, sep, role = v.partition("=")
        if not sep or not ns or not role:
            fail(f"--grant: expected NAMESPACE=ROLE (reader, worker, writer, admin), got {v!r}")
        grants[ns] = role
    return grants


def _task_queues(values: Iterable[str]) -> dict[str, list[str]]:
    queues: dict[str, list[str]] = {}
    for v in values:
        ns, sep, queue = v.partition("=")
        if not sep or not ns or not queue:
            fail(f"--task-queue: expected NAMESPACE=TASK_QUEUE, got {v!r}")
        queues.setdefault(ns, []).append(queue)
    return queues


@api_key.command("create", short_help="create an API key and print its secret (once)",
                 help="Create an API key; NAME says what it is for. A system_admin may create any key; a namespace admin only keys whose grants "
                      "are all on namespaces it administers. The secret is printed this once.")
@client_options(codec=False)
@click.argument("name")
@click.option("--grant", multiple=True, metavar="NAMESPACE=ROLE",
              help="a role on a namespace: reader, worker, writer or admin (repeat for several)")
@click.option("--system-admin", is_flag=True, help="may do everything, on every namespace")
@click.option("--expires", default=None, help="how long the key works, e.g. 90d (default: no expiry)")
@click.option("--task-queue", "task_queue", multiple=True, metavar="NAMESPACE=TASK_QUEUE",
              help="confine the key's worker grant on NAMESPACE to this task queue and its sticky queues (repeat "
                   "for several; without it: every task queue)")
def create(conn: Connection, name: str, grant: tuple[str, ...], system_admin: bool, expires: str | None,
           task_queue: tuple[str, ...]) -> int:
    grants = _grants(grant)
    queues = _task_queues(task_queue)
    expiry = duration_arg(expires, "--expires")

    async def body(client: Client) -> int:
        key = await client.create_api_key(name, grants=grants, system_admin=system_admin, expires=expiry,
                                          task_queues=queues)
        out_json(_key_dict(key), indent=2)
        note(f"spindle: the secret of API key {key.id} is shown this once: store it now (the server keeps only a hash)")
        return OK

    return conn.run(body)


@api_key.command("list", help="list the API keys you may manage (no secrets)")
@client_options(codec=False)
def list_(conn: Connection) -> int:
    async def body(client: Client) -> int:
        out_json([_key_dict(k) for k in await client.list_api_keys()], indent=2)
        return OK

    return conn.run(body)


@api_key.command("revoke", help="revoke an API key (ID as list shows it): its next call fails")
@client_options(codec=False)
@click.argument("key_id", metavar="ID")
def revoke(conn: Connection, key_id: str) -> int:
    async def body(client: Client) -> int:
        await client.revoke_api_key(key_id)
        out(f"API key {key_id} revoked")
        return OK

    return conn.run(body)


@api_key.command("new-secret", short_help="print a new API key secret (no server involved)",
                 help="Print a fresh API key secret, for auth.bootstrap_admin_key_file when it is kept in a secret "
                      "store. A server makes it a system_admin key at start.")
def new_secret() -> int:
    from spindle.controlplane.server import new_api_key_secret

    out(new_api_key_secret())
    return OK
