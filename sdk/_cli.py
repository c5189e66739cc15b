"""``spindle workflow ...``, ``spindle namespace ...`` and ``spindle admin api-key ...``: the CLI's client commands.

Registered into the ``spindle`` command through the ``spindle.cli`` entry points.
Every command talks to a server (``--address``, default 127.0.0.1:7233) or an
embedded database (``--address embedded:PATH``), with ``--api-key`` (default
``$SPINDLE_API_KEY``) when the server requires keys.

Workflow commands take ``--codec MODULE:FACTORY`` (repeatable, in encoding order): the
payload codecs the workers use, so that inputs are encoded as the workers expect and
results, queries, histories and descriptions are shown decoded (``FACTORY`` is a
``PayloadCodec``, or a callable returning one or a list of them).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import math
import sys
from typing import Any, Awaitable, Callable

from spindle import exceptions as E
from spindle._cli_batch import add_batch_options, add_reset_options, reset_single
from spindle._cli_batch import dispatch as batch_dispatch
from spindle._cli_tls import add_tls_arguments, tls_from_args
from spindle.client._client import Client, WorkflowExecutionDescription
from spindle.converter._payload_codec import PayloadCodec
from spindle.common._enums import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle.common._history import History
from spindle.converter._history_codec import decode_history
from spindle._user_modules import UserModuleError, import_user_module


class _UserError(Exception):
    pass


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default="127.0.0.1:7233", help="server address, or embedded:PATH (default 127.0.0.1:7233)")
    p.add_argument("--namespace", "-n", default="default", help="namespace (default 'default')")
    p.add_argument("--api-key", default=os.environ.get("SPINDLE_API_KEY") or None, metavar="KEY",
                   help="API key, spk_... (default: $SPINDLE_API_KEY)")
    add_tls_arguments(p)


def _codec_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--codec", action="append", default=[], metavar="MODULE:FACTORY",
                   help="a payload codec the workers use, e.g. myapp.codecs:make_codec (a PayloadCodec or a "
                        "callable returning one or a list); repeat for a chain, in encoding order")


def load_codecs(specs: list[str]) -> list[PayloadCodec]:
    """The codecs named by ``--codec MODULE:FACTORY`` values, in order.

    Raises:
        _UserError: a malformed value, a module that cannot be imported, a missing attribute,
            a factory that fails, or something that is not a ``PayloadCodec``.
    """
    codecs: list[PayloadCodec] = []
    for spec in specs:
        flag = f"--codec {spec!r}"
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise _UserError(f"{flag}: expected MODULE:FACTORY, e.g. myapp.codecs:make_codec")
        try:
            obj: Any = import_user_module(module_name, flag)
        except UserModuleError as e:
            raise _UserError(str(e)) from None
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise _UserError(f"{flag}: {module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
        if not isinstance(obj, PayloadCodec):
            if not callable(obj):
                raise _UserError(f"{flag}: {attr!r} is a {type(obj).__name__}, not a PayloadCodec or a factory")
            try:
                obj = obj()
            except Exception as e:  # noqa: BLE001 - the user's factory: report, do not crash
                raise _UserError(f"{flag}: calling {attr}() failed: {type(e).__name__}: {e}") from None
        made = list(obj) if isinstance(obj, (list, tuple)) else [obj]
        for codec in made:
            if not isinstance(codec, PayloadCodec):
                raise _UserError(f"{flag}: {attr} gave a {type(codec).__name__}, not a PayloadCodec")
        codecs.extend(made)
    return codecs


def _wf(p: argparse.ArgumentParser, *, run: bool = True, batch: bool = False) -> None:
    _common(p)
    _codec_option(p)
    p.add_argument("--workflow-id", "-w", required=not batch,
                   help="workflow id" + (" (or --query for a batch)" if batch else ""))
    if run:
        p.add_argument("--run-id", "-r", default=None, help="run id (default: the latest run)")


def _json_arg(value: str, flag: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as e:
        raise _UserError(f"{flag}: not valid JSON ({e.msg} at position {e.pos}): {value!r}") from None


def _duration(value: str | None, flag: str) -> datetime.timedelta | None:
    if value is None:
        return None
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    for u in sorted(units, key=len, reverse=True):
        if value.endswith(u):
            try:
                n = float(value[: -len(u)])
            except ValueError:
                break
            if n < 0:
                break
            return datetime.timedelta(seconds=n * units[u])
    raise _UserError(f"{flag}: {value!r} is not a duration (examples: 90s, 5m, 2h, 14d)")


def _run(coro_fn: Callable[[argparse.Namespace, Client], Awaitable[int]]) -> Callable[[argparse.Namespace], int]:
    def go(args: argparse.Namespace) -> int:
        async def main() -> int:
            try:
                tls = tls_from_args(args)
            except ValueError as e:
                raise _UserError(str(e)) from None
            codecs = load_codecs(getattr(args, "codec", None) or [])
            try:
                client = await Client.connect(args.address, namespace=args.namespace, api_key=args.api_key, tls=tls,
                                              codecs=codecs)
            except ValueError as e:
                raise _UserError(str(e)) from None
            try:
                return await coro_fn(args, client)
            finally:
                await client.close()

        try:
            return asyncio.run(main())
        except _UserError as e:
            print(f"spindle: error: {e}", file=sys.stderr)
            return 2
        except (E.RPCError, E.WorkflowFailureError, E.QueryFailedError, E.UpdateFailedError) as e:
            print(f"spindle: error: {e}", file=sys.stderr)
            return 1
        except OSError as e:
            print(f"spindle: error: cannot reach {args.address}: {e}", file=sys.stderr)
            return 1
        except ValueError as e:  # a payload the codecs (or the converter) cannot decode
            print(f"spindle: error: {e}", file=sys.stderr)
            return 1

    return go


def _describe_dict(d: WorkflowExecutionDescription) -> dict[str, Any]:
    return {
        "workflow_id": d.id, "run_id": d.run_id, "workflow_type": d.workflow_type, "task_queue": d.task_queue,
        "status": d.status.name if d.status else None,
        "start_time": d.start_time.isoformat() if d.start_time else None,
        "close_time": d.close_time.isoformat() if d.close_time else None,
        "history_length": d.history_length, "memo": dict(d.memo), "search_attributes": dict(d.search_attributes),
        "pending_activities": [
            {"activity_id": a.activity_id, "activity_type": a.activity_type, "state": a.state, "attempt": a.attempt}
            for a in d.pending_activities],
    }


# ---------------------------------------------------------------------- workflow
async def _start(args: argparse.Namespace, client: Client) -> int:
    inputs = [_json_arg(v, "--input") for v in args.input]
    handle = await client.start_workflow(
        args.type, *inputs, id=args.workflow_id, task_queue=args.task_queue,
        id_reuse_policy=WorkflowIDReusePolicy[args.id_reuse_policy],
        id_conflict_policy=WorkflowIDConflictPolicy[args.id_conflict_policy],
        execution_timeout=_duration(args.execution_timeout, "--execution-timeout"),
        run_timeout=_duration(args.run_timeout, "--run-timeout"),
        start_delay=_duration(args.start_delay, "--start-delay"))
    print(json.dumps({"workflow_id": handle.id, "run_id": handle.run_id}))
    return 0


async def _signal(args: argparse.Namespace, client: Client) -> int:
    inputs = [_json_arg(v, "--input") for v in args.input]
    await client.get_workflow_handle(args.workflow_id, run_id=args.run_id).signal(args.name, *inputs)
    print("signal sent")
    return 0


async def _query(args: argparse.Namespace, client: Client) -> int:
    inputs = [_json_arg(v, "--input") for v in args.input]
    result = await client.get_workflow_handle(args.workflow_id, run_id=args.run_id).query(args.name, *inputs)
    print(json.dumps(result, default=str))
    return 0


async def _result(args: argparse.Namespace, client: Client) -> int:
    result = await client.get_workflow_handle(args.workflow_id, run_id=args.run_id).result()
    print(json.dumps(result, default=str))
    return 0


async def _cancel(args: argparse.Namespace, client: Client) -> int:
    await client.get_workflow_handle(args.workflow_id, run_id=args.run_id).cancel(args.reason)
    print("cancellation requested")
    return 0


async def _terminate(args: argparse.Namespace, client: Client) -> int:
    await client.get_workflow_handle(args.workflow_id, run_id=args.run_id).terminate(args.reason)
    print("terminated")
    return 0


async def _describe(args: argparse.Namespace, client: Client) -> int:
    d = await client.get_workflow_handle(args.workflow_id, run_id=args.run_id).describe()
    print(json.dumps(_describe_dict(d), indent=2, default=str))
    return 0


async def _show(args: argparse.Namespace, client: Client) -> int:
    # Fetched as stored and decoded event by event: a payload the codecs refuse (a poison
    # input, a key this side lacks) is reported and the rest of the history still shown.
    stored = Client(client.stub, namespace=client.namespace)  # no codecs: the history as stored
    history = await stored.get_workflow_handle(args.workflow_id, run_id=args.run_id).fetch_history()
    history, errors = await decode_history(history, client.codecs, namespace=client.namespace)
    for error in errors:
        print(f"spindle: warning: {error}", file=sys.stderr)
    if args.output == "json":
        print(history.to_json())
        return 0
    print(f"workflow {history.workflow_id} run {history.run_id}: {len(history.events)} events")
    for e in history.events:
        print(f"{e.event_id:>5}  {e.event_time.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]}  {e.event_type:<44} {_summary(e.attributes)}")
    return 0


def _summary(attrs: dict[str, Any]) -> str:
    keys = ("workflow_type", "activity_type", "activity_id", "timer_id", "signal_name", "marker_name", "workflow_id",
            "attempt", "retry_state", "cause", "reason", "update_id", "start_to_fire_timeout_ms")
    parts = [f"{k}={attrs[k]}" for k in keys if k in attrs]
    failure = attrs.get("failure")
    if isinstance(failure, dict) and failure.get("message"):
        parts.append(f"failure={failure['message']!r}")
    return " ".join(parts)


async def _list(args: argparse.Namespace, client: Client) -> int:
    rows = []
    async for d in client.list_workflows(args.query, page_size=min(args.limit, 1000)):
        rows.append(d)
        if len(rows) >= args.limit:
            break
    if args.output == "json":
        print(json.dumps([_describe_dict(d) for d in rows], indent=2, default=str))
        return 0
    print(f"{'WORKFLOW ID':<36} {'TYPE':<24} {'STATUS':<16} START")
    for d in rows:
        start = d.start_time.strftime("%Y-%m-%d %H:%M:%S") if d.start_time else ""
        print(f"{d.id:<36} {d.workflow_type:<24} {(d.status.name if d.status else ''):<16} {start}")
    return 0


def register_workflow(sub: Any) -> None:
    """Add ``spindle workflow ...``."""
    p = sub.add_parser("workflow", help="start, signal, query, result, cancel, terminate, reset, describe, show and "
                                        "list executions")
    ws = p.add_subparsers(dest="workflow_cmd", required=True, metavar="COMMAND")
    s = ws.add_parser("start", help="start a workflow")
    _wf(s, run=False)
    s.add_argument("--type", required=True, help="workflow type name")
    s.add_argument("--task-queue", "-t", required=True, help="task queue")
    s.add_argument("--input", "-i", action="append", default=[], help="a JSON argument (repeat for several)")
    s.add_argument("--id-reuse-policy", default="ALLOW_DUPLICATE", choices=[p.name for p in WorkflowIDReusePolicy])
    s.add_argument("--id-conflict-policy", default="FAIL", choices=[p.name for p in WorkflowIDConflictPolicy])
    s.add_argument("--execution-timeout", help="e.g. 1h")
    s.add_argument("--run-timeout", help="e.g. 30m")
    s.add_argument("--start-delay", help="e.g. 10s")
    s.set_defaults(func=_run(_start))
    g = ws.add_parser("signal", help="send a signal (to one execution, or to every one a --query matches)")
    _wf(g, batch=True)
    g.add_argument("--name", required=True, help="signal name")
    g.add_argument("--input", "-i", action="append", default=[], help="a JSON argument (repeat for several)")
    add_batch_options(g)
    g.set_defaults(func=_run(batch_dispatch("signal", _signal)))
    q = ws.add_parser("query", help="query a workflow")
    _wf(q)
    q.add_argument("--name", required=True, help="query name")
    q.add_argument("--input", "-i", action="append", default=[], help="a JSON argument (repeat for several)")
    q.set_defaults(func=_run(_query))
    r = ws.add_parser("result", help="wait for a run to close and print its result (JSON)")
    _wf(r)
    r.set_defaults(func=_run(_result))
    c = ws.add_parser("cancel", help="request cancellation (of one execution, or of every one a --query matches)")
    _wf(c, batch=True)
    c.add_argument("--reason", default="", help="why")
    add_batch_options(c)
    c.set_defaults(func=_run(batch_dispatch("cancel", _cancel)))
    t = ws.add_parser("terminate", help="terminate at once, no cleanup runs (one execution, or every one a --query "
                                        "matches)")
    _wf(t, batch=True)
    t.add_argument("--reason", default="", help="why")
    add_batch_options(t)
    t.set_defaults(func=_run(batch_dispatch("terminate", _terminate)))
    rs = ws.add_parser("reset", help="reset to a completed workflow task: a new run continues from there with the "
                                     "workers' current code (one workflow, or every one a --query matches)")
    _wf(rs, batch=True)
    add_reset_options(rs)
    add_batch_options(rs)
    rs.set_defaults(func=_run(batch_dispatch("reset", reset_single)))
    d = ws.add_parser("describe", help="status and pending work of a run")
    _wf(d)
    d.set_defaults(func=_run(_describe))
    h = ws.add_parser("show", help="print a run's history")
    _wf(h)
    h.add_argument("--output", "-o", choices=["table", "json"], default="table")
    h.set_defaults(func=_run(_show))
    ls = ws.add_parser("list", help="list executions matching a query")
    _common(ls)
    _codec_option(ls)
    ls.add_argument("--query", "-q", default="", help="list filter, e.g. \"WorkflowType = 'Order' AND ExecutionStatus = 'Running'\"")
    ls.add_argument("--limit", type=int, default=100)
    ls.add_argument("--output", "-o", choices=["table", "json"], default="table")
    ls.set_defaults(func=_run(_list))


# ---------------------------------------------------------------------- namespace
def _ns_dict(n: Any) -> dict[str, Any]:
    return {"name": n.name, "id": n.id, "description": n.description, "owner_email": n.owner_email,
            "retention_days": n.retention.total_seconds() / 86400 if n.retention else None,
            "search_attributes": dict(n.search_attributes), "archival_uri": n.archival_uri, "rps_limit": n.rps_limit}


def _rps_limit(value: str) -> float:
    try:
        rps = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of requests per second") from None
    if not math.isfinite(rps) or rps < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: must be a finite number, 0 (unlimited) or more")
    return rps


def _sa_arg(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        if "=" not in v:
            raise _UserError(f"--search-attribute: expected NAME=TYPE, got {v!r}")
        k, t = v.split("=", 1)
        out[k] = t
    return out


async def _ns_create(args: argparse.Namespace, client: Client) -> int:
    n = await client.create_namespace(args.name, retention=_duration(args.retention, "--retention"),
                                      description=args.description, owner_email=args.owner_email,
                                      search_attributes=_sa_arg(args.search_attribute), archival_uri=args.archival_uri,
                                      rps_limit=args.rps_limit)
    print(json.dumps(_ns_dict(n), indent=2))
    return 0


async def _ns_describe(args: argparse.Namespace, client: Client) -> int:
    print(json.dumps(_ns_dict(await client.describe_namespace(args.name)), indent=2))
    return 0


async def _ns_list(args: argparse.Namespace, client: Client) -> int:
    print(json.dumps([_ns_dict(n) for n in await client.list_namespaces()], indent=2))
    return 0


async def _ns_update(args: argparse.Namespace, client: Client) -> int:
    n = await client.update_namespace(args.name, description=args.description, owner_email=args.owner_email,
                                      retention=_duration(args.retention, "--retention"),
                                      search_attributes=_sa_arg(args.search_attribute) if args.search_attribute else None,
                                      archival_uri=args.archival_uri, rps_limit=args.rps_limit)
    print(json.dumps(_ns_dict(n), indent=2))
    return 0


async def _ns_delete(args: argparse.Namespace, client: Client) -> int:
    n = await client.delete_namespace(args.name, force=args.force)
    print(f"namespace {args.name} deleted ({n} running execution(s) terminated)")
    return 0


def register_namespace(sub: Any) -> None:
    """Add ``spindle namespace ...``."""
    p = sub.add_parser("namespace", help="create, describe, list, update and delete namespaces")
    ns = p.add_subparsers(dest="namespace_cmd", required=True, metavar="COMMAND")
    for verb, fn in (("create", _ns_create), ("update", _ns_update)):
        c = ns.add_parser(verb, help=f"{verb} a namespace")
        _common(c)
        c.add_argument("name")
        c.add_argument("--retention", default=None, help="how long closed executions are kept, e.g. 7d")
        c.add_argument("--description", default=None if verb == "update" else "")
        c.add_argument("--owner-email", default=None if verb == "update" else "")
        c.add_argument("--archival-uri", default=None if verb == "update" else "")
        c.add_argument("--search-attribute", action="append", default=[], help="NAME=TYPE (Keyword, Text, Int, ...)")
        c.add_argument("--rps-limit", type=_rps_limit, default=None, metavar="RPS",
                       help="requests per second the namespace's clients may make, per server process (0 = unlimited; "
                            "default: the server's)")
        c.set_defaults(func=_run(fn))
    d = ns.add_parser("describe", help="describe a namespace")
    _common(d)
    d.add_argument("name")
    d.set_defaults(func=_run(_ns_describe))
    ls = ns.add_parser("list", help="list namespaces")
    _common(ls)
    ls.set_defaults(func=_run(_ns_list))
    de = ns.add_parser("delete", help="delete a namespace")
    _common(de)
    de.add_argument("name")
    de.add_argument("--force", action="store_true", help="terminate running executions first")
    de.set_defaults(func=_run(_ns_delete))


# ---------------------------------------------------------------------- admin api-key
def _key_dict(k: Any) -> dict[str, Any]:
    out = {"id": k.id, "name": k.name, "grants": dict(k.grants), "system_admin": k.system_admin,
           "expires_at": k.expires_at.isoformat() if k.expires_at else None,
           "created_at": k.created_at.isoformat() if k.created_at else None,
           "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None, "created_by": k.created_by}
    if k.secret:
        out["secret"] = k.secret
    return out


def _grant_arg(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        ns, sep, role = v.partition("=")
        if not sep or not ns or not role:
            raise _UserError(f"--grant: expected NAMESPACE=ROLE (reader, worker, writer, admin), got {v!r}")
        out[ns] = role
    return out


async def _key_create(args: argparse.Namespace, client: Client) -> int:
    key = await client.create_api_key(args.name, grants=_grant_arg(args.grant), system_admin=args.system_admin,
                                      expires=_duration(args.expires, "--expires"))
    print(json.dumps(_key_dict(key), indent=2))
    print(f"spindle: the secret of API key {key.id} is shown this once: store it now (the server keeps only a hash)",
          file=sys.stderr)
    return 0


async def _key_list(args: argparse.Namespace, client: Client) -> int:
    print(json.dumps([_key_dict(k) for k in await client.list_api_keys()], indent=2))
    return 0


async def _key_revoke(args: argparse.Namespace, client: Client) -> int:
    await client.revoke_api_key(args.id)
    print(f"API key {args.id} revoked")
    return 0


def command_group(sub: Any, name: str, help: str) -> Any:
    """The subcommands of group ``name`` under ``sub``, made here unless another plugin already did.

    (``spindle admin`` holds server commands from the control plane and the client's
    ``api-key`` commands; whichever registers first creates it.)
    """
    parser = sub.choices.get(name)
    if parser is None:
        parser = sub.add_parser(name, help=help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=f"{name.replace('-', '_')}_cmd", required=True, metavar="COMMAND")


def register_api_keys(sub: Any) -> None:
    """Add ``spindle admin api-key create|list|revoke``."""
    admin = command_group(sub, "admin", "operator commands (database schema, API keys)")
    keys = command_group(admin, "api-key", "create, list and revoke API keys")
    c = keys.add_parser("create", help="create an API key and print its secret (once)",
                        description="Create an API key. A system_admin may create any key; a namespace admin only "
                                    "keys whose grants are all on namespaces it administers. The secret is printed "
                                    "this once.")
    _common(c)
    c.add_argument("name", help="what the key is for")
    c.add_argument("--grant", action="append", default=[], metavar="NAMESPACE=ROLE",
                   help="a role on a namespace: reader, worker, writer or admin (repeat for several)")
    c.add_argument("--system-admin", action="store_true", help="may do everything, on every namespace")
    c.add_argument("--expires", default=None, help="how long the key works, e.g. 90d (default: no expiry)")
    c.set_defaults(func=_run(_key_create))
    ls = keys.add_parser("list", help="list the API keys you may manage (no secrets)")
    _common(ls)
    ls.set_defaults(func=_run(_key_list))
    r = keys.add_parser("revoke", help="revoke an API key: its next call fails")
    _common(r)
    r.add_argument("id", help="the key's id (as list shows it)")
    r.set_defaults(func=_run(_key_revoke))


__all__ = ["command_group", "load_codecs", "register_api_keys", "register_namespace", "register_workflow", "History"]
