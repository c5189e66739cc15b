"""The ``spindle_api_key`` resource: an API key with per-namespace roles, its secret a sensitive attribute or a file.

A key cannot be changed once made (the server stores only a hash of its secret, and
its grants are what the secret stands for), so every setting forces a new key: the
old one is revoked after the new one exists (``create_before_destroy`` works too).
Destroying the resource revokes the key. A key revoked or expired outside Terraform
reads as gone, so the next apply makes a new one. The secret is known only to the
Terraform run that created the key; an imported key has none.

Where the secret goes: the ``secret`` attribute (sensitive, but kept in the state), or,
with ``secret_file``, only a file (``_secret_file``): ``secret`` is then null and the
state never holds it. ``task_queues`` confines the key's worker grants to task queues.

Import reads every setting back from the server (``expires_in_days`` from the key's
lifetime when it is a whole number of days), so a configuration that matches the key
plans no change; ``system_admin = false`` and ``grants = {}`` mean the same as leaving
them out.
"""

from __future__ import annotations

import datetime
import re

from typing import TYPE_CHECKING, Any, Optional

import grpc

from tf import schema, types
from tf.iface import (
    Config,
    CreateContext,
    DeleteContext,
    ImportContext,
    PlanContext,
    ReadContext,
    Resource,
    State,
    UpdateContext,
    UpgradeContext,
)
from tf.utils import Diagnostics

from ._resource_rules import API_KEY_NAME_MAX_LENGTH, ROLES
from ._secret_file import remove_secret, secret_file_problem, write_secret
from .client import SpindleError, svc
from .diagnostics import add_server_error, is_unknown, report
from .validation import Problems

if TYPE_CHECKING:
    from .context import ProviderContext

MS_PER_DAY = 86_400_000
_KEY_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class _NullIsFalse(types.Bool):
    """A bool where null and false mean the same (``system_admin``): no replacement between them."""

    def semantically_equal(self, a_decoded: Any, b_decoded: Any) -> bool:
        return bool(a_decoded) == bool(b_decoded) if not (is_unknown(a_decoded) or is_unknown(b_decoded)) \
            else a_decoded is b_decoded


class _NullIsEmptyMap(types.Map):
    """A map where null and {} mean the same (``grants``, ``task_queues``): no replacement between them."""

    def semantically_equal(self, a_decoded: Any, b_decoded: Any) -> bool:
        if is_unknown(a_decoded) or is_unknown(b_decoded):
            return a_decoded is b_decoded
        return _sorted_values(a_decoded or {}) == _sorted_values(b_decoded or {})


def _sorted_values(m: dict[str, Any]) -> dict[str, Any]:
    return {k: sorted(v) if isinstance(v, list) else v for k, v in m.items()}


def check_api_key_config(config: Any, unknown: Any = is_unknown) -> Problems:
    """Problems of a ``spindle_api_key`` block as written (each names its attribute)."""
    problems = Problems()
    name = config.get("name")
    if isinstance(name, str) and not unknown(name) and (not name.strip() or len(name) > API_KEY_NAME_MAX_LENGTH):
        problems.error(["name"], "Invalid API key name",
                       f"name: 1 to {API_KEY_NAME_MAX_LENGTH} characters, not only spaces.")
    grants = config.get("grants")
    if isinstance(grants, dict):
        for ns, role in grants.items():
            if not unknown(role) and role not in ROLES:
                problems.error(["grants"], f"Unknown role {role!r} for namespace {ns!r}",
                               f"grants[{ns!r}]: one of {', '.join(ROLES)}.")
    admin = config.get("system_admin")
    if not grants and not unknown(grants) and not admin and not unknown(admin):
        problems.error(["grants"], "An API key needs a grant",
                       "Give grants = { NAMESPACE = ROLE } (roles: reader, worker, writer, admin) or "
                       "system_admin = true.")
    days = config.get("expires_in_days")
    if days is not None and not unknown(days) and (days <= 0 or days != int(days)):
        problems.error(["expires_in_days"], "Invalid expiry", f"expires_in_days: a whole number of days >= 1, got {days}.")
    _check_task_queues(problems, config.get("task_queues"), grants, admin, unknown)
    path = config.get("secret_file")
    if path is not None and not unknown(path):
        problem = secret_file_problem(path)
        if problem:
            problems.error(["secret_file"], "Invalid secret_file", problem)
    return problems


def _check_task_queues(problems: Problems, queues: Any, grants: Any, admin: Any, unknown: Any) -> None:
    """``task_queues`` confine worker grants: each namespace is granted ``worker``; names are not empty."""
    if not isinstance(queues, dict):
        return
    for ns, names in queues.items():
        if admin is True:
            problems.error(["task_queues"], "task_queues on a system_admin key",
                           "A system_admin key cannot be confined to task queues.")
            return
        role = grants.get(ns) if isinstance(grants, dict) else None
        if isinstance(grants, dict) and not unknown(grants) and not unknown(role) and role != "worker":
            held = f"role {role!r}" if role is not None else "no grant"
            problems.error(["task_queues"], f"task_queues for namespace {ns!r} without a worker grant",
                           f"task_queues[{ns!r}]: task queues confine a 'worker' grant; the key holds {held} on "
                           f"namespace {ns!r}.")
        if isinstance(names, list) and not unknown(names):
            if not names:
                problems.error(["task_queues"], f"No task queue for namespace {ns!r}",
                               f"task_queues[{ns!r}]: name at least one task queue (leave the namespace out for "
                               "every queue).")
            for name in names:
                if isinstance(name, str) and not unknown(name) and (not name or _CONTROL.search(name)):
                    problems.error(["task_queues"], f"Invalid task queue name {name!r}",
                                   f"task_queues[{ns!r}]: task queue names are not empty and have no control "
                                   "characters.")


def _rfc3339(ms: int) -> Optional[str]:
    if not ms:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiKeyResource(Resource):
    """A Spindle API key. Import with ``terraform import spindle_api_key.NAME <key id>`` (no secret then)."""

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        """``spindle_api_key``."""
        return "api_key"

    @classmethod
    def get_schema(cls) -> schema.Schema:
        """Attributes of ``spindle_api_key``."""
        S = types.String()
        return schema.Schema(
            version=0,
            description="A Spindle API key: per-namespace roles (reader, worker, writer, admin) or system_admin. "
                        "Any change makes a new key; destroying revokes it.",
            attributes=[
                schema.Attribute("id", S, computed=True, description="The key id (not secret; as listed)."),
                schema.Attribute("name", S, required=True, requires_replace=True,
                                 description="Who or what the key is for."),
                schema.Attribute("grants", _NullIsEmptyMap(S), optional=True, requires_replace=True,
                                 description="Namespace -> role: `reader`, `worker`, `writer` or `admin`."),
                schema.Attribute("system_admin", _NullIsFalse(), optional=True, requires_replace=True,
                                 description="May do everything, on every namespace (creating namespaces, any key)."),
                schema.Attribute("task_queues", _NullIsEmptyMap(types.Set(S)), optional=True, requires_replace=True,
                                 description="Namespace -> the only task queues (and their sticky queues) the key's "
                                             "`worker` grant there may poll and answer. Unset: every task queue."),
                schema.Attribute("secret_file", S, optional=True, requires_replace=True,
                                 description="Absolute path of a file the new key's secret is written to (mode 0600) "
                                             "instead of the state: `secret` is then null. Removed on destroy."),
                schema.Attribute("expires_in_days", types.Number(), optional=True, requires_replace=True,
                                 description="The key stops working this many days after it is created. Unset: "
                                             "never."),
                schema.Attribute("expire_time", S, computed=True,
                                 description="When the key stops working (RFC 3339), null if never."),
                schema.Attribute("secret", S, computed=True, sensitive=True,
                                 description="The key's secret (`spk_...`), known only to the run that created it "
                                             "(kept in the state: protect the state; or use `secret_file`); null "
                                             "with `secret_file` and for an imported key."),
            ],
        )

    def validate(self, diags: Diagnostics, type_name: str, config: Config) -> None:
        """Schema checks, then roles, a grant or system_admin, and the expiry."""
        super().validate(diags, type_name, config)
        if not diags.has_errors():
            report(diags, check_api_key_config(config))

    def plan(self, ctx: PlanContext, current: Optional[State], planned: State) -> Optional[State]:
        """Every setting forces a new key (the framework plans the replacement)."""
        return planned

    def create(self, ctx: CreateContext, planned: State) -> Optional[State]:
        """CreateApiKey; the secret goes into the (sensitive) state, or only into ``secret_file``."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        days = planned.get("expires_in_days")
        queues = {ns: svc.ApiKeyTaskQueues(names=list(names)) for ns, names in (planned.get("task_queues") or {}).items()}
        req = svc.CreateApiKeyRequest(name=planned["name"], grants=dict(planned.get("grants") or {}),
                                      system_admin=bool(planned.get("system_admin")),
                                      ttl_ms=int(days * MS_PER_DAY) if days else 0, task_queues=queues)
        try:
            resp = conn.call("CreateApiKey", req)
        except SpindleError as e:
            add_server_error(ctx.diagnostics, f"Cannot create API key {planned['name']!r}", e)
            return None
        path = planned.get("secret_file")
        if not path:
            return self._state(resp.key, planned, secret=resp.secret)
        try:
            write_secret(path, resp.secret)
        except OSError as e:  # the key is useless without its secret: take it back
            self._revoke(conn, ctx.diagnostics, resp.key.id)
            ctx.diagnostics.add_error(f"Cannot write the secret of API key {planned['name']!r} to {path!r}",
                                      f"{e}. The key was revoked; fix the path or its directory and apply again.")
            return None
        return self._state(resp.key, planned, secret=None)

    def read(self, ctx: ReadContext, current: State) -> Optional[State]:
        """The key as listed; revoked, expired or missing reads as gone."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return current
        try:
            key = self._find(conn, current["id"])
        except SpindleError as e:
            add_server_error(ctx.diagnostics, f"Cannot read API key {current['id']!r}", e)
            return current
        if key is None or key.revoke_time_ms or (key.expire_time_ms and key.expire_time_ms <= _now_ms()):
            return None
        return self._state(key, current, secret=current.get("secret"))

    def update(self, ctx: UpdateContext, current: State, planned: State) -> Optional[State]:
        """Only what means the same can change in place (null and false, null and {}): the key stays as it is."""
        return {**planned, "id": current["id"], "expire_time": current.get("expire_time"),
                "secret": current.get("secret")}

    def delete(self, ctx: DeleteContext, current: State) -> None:
        """RevokeApiKey (a key already gone is fine); its ``secret_file`` goes too if it still holds its secret."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        if self._revoke(conn, ctx.diagnostics, current["id"]) and current.get("secret_file"):
            remove_secret(current["secret_file"], current["id"])
        return None

    @staticmethod
    def _revoke(conn: Any, diags: Diagnostics, key_id: str) -> bool:
        """RevokeApiKey; whether the key is now revoked or gone (else an error diagnostic)."""
        try:
            conn.call("RevokeApiKey", svc.RevokeApiKeyRequest(id=key_id))
        except SpindleError as e:
            if e.code != grpc.StatusCode.NOT_FOUND:
                add_server_error(diags, f"Cannot revoke API key {key_id!r}", e)
                return False
        return True

    def import_(self, ctx: ImportContext, id: str) -> Optional[State]:
        """Import by key id (16 hex digits); the secret stays unknown to Terraform."""
        if not _KEY_ID_RE.match(id):
            ctx.diagnostics.add_error(f"Invalid import ID {id!r}",
                                      "The import ID of spindle_api_key is the key id (16 hex digits, as "
                                      "`spindle admin api-key list` shows it).")
            return None
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        try:
            key = self._find(conn, id)
        except SpindleError as e:
            add_server_error(ctx.diagnostics, f"Cannot import API key {id!r}", e)
            return None
        if key is None or key.revoke_time_ms:
            ctx.diagnostics.add_error(f"Cannot import API key {id!r}: not found",
                                      f"There is no active API key {id!r} on the Spindle server at {conn.address}.")
            return None
        lifetime = key.expire_time_ms - key.create_time_ms if key.expire_time_ms else 0
        days = lifetime // MS_PER_DAY if lifetime and lifetime % MS_PER_DAY == 0 else None
        return self._state(key, {"expires_in_days": days, "secret_file": None}, secret=None)

    def upgrade(self, ctx: UpgradeContext, version: int, old: State) -> Optional[State]:
        """Schema version 0 is the only one so far."""
        return old

    @staticmethod
    def _find(conn: Any, key_id: str) -> Any:
        for key in conn.call("ListApiKeys", svc.ListApiKeysRequest()).keys:
            if key.id == key_id:
                return key
        return None

    @staticmethod
    def _state(key: Any, prior: State, *, secret: Optional[str]) -> State:
        grants = dict(key.grants)
        queues = {ns: sorted(q.names) for ns, q in key.task_queues.items()}
        return {
            "id": key.id,
            "name": key.name,
            "grants": grants if grants or prior.get("grants") is not None else None,
            "system_admin": True if key.system_admin else (False if prior.get("system_admin") is not None else None),
            "expires_in_days": prior.get("expires_in_days"),
            "expire_time": _rfc3339(key.expire_time_ms),
            "secret": secret,
            "task_queues": queues if queues or prior.get("task_queues") is not None else None,
            "secret_file": prior.get("secret_file"),
        }


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


__all__ = ["ApiKeyResource", "check_api_key_config"]
