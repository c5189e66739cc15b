"""The API-key RPCs (CreateApiKey, ListApiKeys, RevokeApiKey): who may manage which key, and validation.

A ``system_admin`` manages every key. A namespace ``admin`` manages the keys whose
grants are all on namespaces it administers (never a ``system_admin`` key, never a key
without grants): it can hand out and take back access to its own namespaces and
nothing more. Any other caller is refused before anything is looked up. Called with no
principal (the in-process control plane) everything is allowed.
"""

from __future__ import annotations

import re

from spindle.api import service_pb2 as svc
from spindle.controlplane._resource_rules import API_KEY_NAME_MAX_LENGTH
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import InvalidArgument, NotFound, PermissionDenied
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import ApiKeyRow

from ._keys import ApiKeys, grants_of
from ._principal import Principal
from ._roles import Role, parse_role
from ._task_queues import check_task_queues, parse_task_queues

#: Longest key name, characters.
MAX_NAME = API_KEY_NAME_MAX_LENGTH  # shared with the Terraform provider: _resource_rules
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DEFAULT_MAX_ID_LENGTH = ServerConfig.max_id_length


def key_info(row: ApiKeyRow) -> svc.ApiKeyInfo:
    """What the API says about a stored key (never its hash)."""
    return svc.ApiKeyInfo(id=row.key_id, name=row.name, grants={ns: r.value for ns, r in grants_of(row).items()},
                          system_admin=row.system_admin, create_time_ms=row.create_time_ms,
                          expire_time_ms=row.expire_time_ms, revoke_time_ms=row.revoke_time_ms,
                          created_by=row.created_by,
                          task_queues={ns: svc.ApiKeyTaskQueues(names=sorted(q))
                                       for ns, q in parse_task_queues(row.task_queues).items()})


def _may_manage(principal: Principal | None, grants: dict[str, Role], system_admin: bool) -> bool:
    if principal is None or principal.system_admin:
        return True
    return not system_admin and bool(grants) and all(principal.administers(ns) for ns in grants)


def _require_some_admin(principal: Principal | None, action: str) -> None:
    if principal is None or principal.system_admin:
        return
    if not any(role is Role.ADMIN for role in principal.grants.values()):
        raise PermissionDenied(f"{action} requires system_admin or role 'admin' on a namespace (principal "
                               f"{principal} has neither)")


class ApiKeyAdmin:
    """Serves the API-key RPCs over an :class:`ApiKeys` and the namespace registry."""

    def __init__(self, keys: ApiKeys, namespaces: NamespaceRegistry, *, max_id_length: int = DEFAULT_MAX_ID_LENGTH
                 ) -> None:
        self.keys = keys
        self.namespaces = namespaces
        self.max_id_length = max_id_length  # of task queue names (the server's ``max_id_length``)

    async def create(self, req: svc.CreateApiKeyRequest, principal: Principal | None) -> svc.CreateApiKeyResponse:
        _require_some_admin(principal, "CreateApiKey")
        name = req.name.strip()
        if not name:
            raise InvalidArgument("name: required (say who or what the key is for)")
        if len(name) > MAX_NAME or _CONTROL.search(name):
            raise InvalidArgument(f"name: at most {MAX_NAME} characters, no control characters")
        if req.ttl_ms < 0:
            raise InvalidArgument(f"ttl_ms: must not be negative, got {req.ttl_ms}")
        grants: dict[str, Role] = {}
        for ns, role in sorted(req.grants.items()):
            try:
                grants[ns] = parse_role(role, f"grants[{ns!r}]")
            except ValueError as e:
                raise InvalidArgument(str(e)) from None
        if not grants and not req.system_admin:
            raise InvalidArgument("grants: a key needs at least one grant {namespace: role}, or system_admin")
        try:
            task_queues = check_task_queues({ns: list(q.names) for ns, q in req.task_queues.items()}, grants,
                                            req.system_admin, self.max_id_length)
        except ValueError as e:
            raise InvalidArgument(str(e)) from None
        if not _may_manage(principal, grants, req.system_admin):
            assert principal is not None
            if req.system_admin:
                raise PermissionDenied(f"CreateApiKey: only a system_admin may create a system_admin key (principal "
                                       f"{principal} is not one)")
            ns = next(n for n in grants if not principal.administers(n))
            raise PermissionDenied(f"CreateApiKey: a grant on namespace {ns!r} requires role 'admin' on namespace "
                                   f"{ns!r}")
        for ns in grants:  # only now: a caller who may not grant on it never learns whether it exists
            if not self._exists(ns):
                await self.namespaces.load()  # created on another member since we last looked
                if not self._exists(ns):
                    raise InvalidArgument(f"grants[{ns!r}]: namespace {ns!r} does not exist")
        row, secret = await self.keys.create(name, grants, system_admin=req.system_admin, ttl_ms=req.ttl_ms,
                                             created_by=str(principal) if principal is not None else "in-process",
                                             task_queues=task_queues)
        return svc.CreateApiKeyResponse(key=key_info(row), secret=secret)

    def _exists(self, name: str) -> bool:
        try:
            self.namespaces.get(name)
            return True
        except (NotFound, InvalidArgument):
            return False

    async def list(self, req: svc.ListApiKeysRequest, principal: Principal | None) -> svc.ListApiKeysResponse:
        _require_some_admin(principal, "ListApiKeys")
        rows = [r for r in await self.keys.list() if _may_manage(principal, grants_of(r), r.system_admin)]
        return svc.ListApiKeysResponse(keys=[key_info(r) for r in rows])

    async def revoke(self, req: svc.RevokeApiKeyRequest, principal: Principal | None) -> svc.RevokeApiKeyResponse:
        _require_some_admin(principal, "RevokeApiKey")
        if not req.id:
            raise InvalidArgument("id: required (the key's id, as ListApiKeys shows it)")
        row = await self.keys.get(req.id)
        if row is None:
            raise NotFound(f"id: API key {req.id!r} does not exist")
        if not _may_manage(principal, grants_of(row), row.system_admin):
            raise PermissionDenied(f"RevokeApiKey: key {req.id!r} has grants outside the namespaces principal "
                                   f"{principal} administers (or is a system_admin key)")
        revoked = await self.keys.revoke(req.id)
        assert revoked is not None
        return svc.RevokeApiKeyResponse(key=key_info(revoked))


__all__ = ["ApiKeyAdmin", "MAX_NAME", "key_info"]
