"""Namespaces: creation, lookup (cached), update and deletion, with validation."""

from __future__ import annotations

import json
import re
import time
import uuid

from dataclasses import dataclass, field

from spindle.api import service_pb2 as svc

from ._resource_rules import (
    ARCHIVAL_URI_RE,
    BUILTIN_SEARCH_ATTRIBUTES,
    NAMESPACE_NAME_RE,
    SEARCH_ATTRIBUTE_NAME_RE,
    SEARCH_ATTRIBUTE_TYPES,
    is_rate,
    raises_rate,
)
from ._uri_roots import archival_uri_problem
from .config import ServerConfig
from .errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from .store import ApiKeyRow, ConditionFailedError, NamespaceRow, Store

# The rules (patterns, built-in names, type names) are shared with the Terraform provider: _resource_rules.
NAME_RE = NAMESPACE_NAME_RE
SA_NAME_RE = SEARCH_ATTRIBUTE_NAME_RE
BUILTIN_FIELDS = BUILTIN_SEARCH_ATTRIBUTES
#: Wire enum value -> type name: ``KeywordList`` is ``SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST``.
SA_TYPE_NAMES = {
    svc.SearchAttributeType.Value("SEARCH_ATTRIBUTE_TYPE_" + re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).upper()): name
    for name in SEARCH_ATTRIBUTE_TYPES
}
SA_TYPES_BY_NAME = {v: k for k, v in SA_TYPE_NAMES.items()}

#: Search attributes every namespace has without registering them (Temporal's system attributes of
#: the same role): a schedule sets them on each run it starts, so ``ScheduledById = 'daily-sales'``
#: lists a schedule's runs. They cannot be registered (nor given another type).
SYSTEM_SEARCH_ATTRIBUTES: dict[str, int] = {
    "ScheduledById": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD,
    "ScheduledStartTime": svc.SEARCH_ATTRIBUTE_TYPE_DATETIME,
    # worker build versioning: the build a run is pinned to or last ran on, its deployment and behavior
    # ('Pinned' / 'AutoUpgrade'): ``TemporalWorkerDeploymentVersion = 'orders.1.0'`` lists what still runs there
    "TemporalWorkerDeploymentVersion": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD,
    "TemporalWorkerDeployment": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD,
    "TemporalWorkflowVersioningBehavior": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD,
}
#: System search attributes only the server sets (from the history): a workflow or client that set them
#: could hide a run from a drainage count or a query for what still runs on an old build.
SERVER_SET_SEARCH_ATTRIBUTES = frozenset({"TemporalWorkerDeploymentVersion", "TemporalWorkerDeployment",
                                          "TemporalWorkflowVersioningBehavior"})

#: Search attributes pre-registered in the default namespace of ``spindle server start-dev`` and of
#: the test environments (``spindle.testing.WorkflowEnvironment``), as Temporal's dev server has them,
#: so that samples and tests written for Temporal run unchanged. (``CustomStringField`` is the older
#: name of a Text attribute that samples still use.) Only attributes a namespace lacks are added:
#: one its owner registered with another type keeps that type.
DEV_SEARCH_ATTRIBUTES: dict[str, int] = {
    "CustomKeywordField": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD,
    "CustomStringField": svc.SEARCH_ATTRIBUTE_TYPE_TEXT,
    "CustomTextField": svc.SEARCH_ATTRIBUTE_TYPE_TEXT,
    "CustomIntField": svc.SEARCH_ATTRIBUTE_TYPE_INT,
    "CustomDoubleField": svc.SEARCH_ATTRIBUTE_TYPE_DOUBLE,
    "CustomBoolField": svc.SEARCH_ATTRIBUTE_TYPE_BOOL,
    "CustomDatetimeField": svc.SEARCH_ATTRIBUTE_TYPE_DATETIME,
    "CustomKeywordListField": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST,
}


@dataclass
class Namespace:
    id: str
    name: str
    description: str = ""
    owner_email: str = ""
    retention_ms: int = 0
    search_attributes: dict[str, int] = field(default_factory=dict)
    archival_uri: str = ""
    #: Requests per second the namespace may make (0 = unlimited); see ``ServerConfig.namespace_rps_limit``.
    rps_limit: float = 0.0
    create_time_ms: int = 0
    update_time_ms: int = 0
    version: int = 0

    @property
    def search_attribute_type_names(self) -> dict[str, str]:
        """Type name of every search attribute a run may carry: the registered ones and the system ones."""
        return {**{k: SA_TYPE_NAMES[v] for k, v in self.search_attributes.items()},
                **{k: SA_TYPE_NAMES[v] for k, v in SYSTEM_SEARCH_ATTRIBUTES.items()}}

    def to_row(self) -> NamespaceRow:
        data = {
            "description": self.description, "owner_email": self.owner_email, "retention_ms": self.retention_ms,
            "search_attributes": self.search_attributes, "archival_uri": self.archival_uri,
            "rps_limit": self.rps_limit, "create_time_ms": self.create_time_ms, "update_time_ms": self.update_time_ms,
        }
        return NamespaceRow(self.id, self.name, json.dumps(data, sort_keys=True), "REGISTERED", self.version)

    @classmethod
    def from_row(cls, row: NamespaceRow, *, default_rps_limit: float = 0.0) -> "Namespace":
        """The namespace a store row holds; one stored without ``rps_limit`` gets ``default_rps_limit``."""
        d = json.loads(row.data)
        return cls(
            id=row.id, name=row.name, description=d.get("description", ""), owner_email=d.get("owner_email", ""),
            retention_ms=int(d.get("retention_ms", 0)),
            search_attributes={k: int(v) for k, v in d.get("search_attributes", {}).items()},
            archival_uri=d.get("archival_uri", ""), rps_limit=float(d.get("rps_limit", default_rps_limit)),
            create_time_ms=int(d.get("create_time_ms", 0)),
            update_time_ms=int(d.get("update_time_ms", 0)), version=row.version,
        )

    def to_proto(self) -> svc.NamespaceInfo:
        return svc.NamespaceInfo(
            name=self.name, id=self.id, description=self.description, owner_email=self.owner_email,
            retention_ms=self.retention_ms, search_attributes=self.search_attributes, archival_uri=self.archival_uri,  # type: ignore[arg-type]  # protobuf enum fields are typed as their ValueType; the int is one of its values
            rps_limit=self.rps_limit, state="REGISTERED", create_time_ms=self.create_time_ms, update_time_ms=self.update_time_ms,
        )


def validate_name(name: str, field_name: str = "name") -> None:
    if not name:
        raise InvalidArgument(f"{field_name}: a namespace name is required")
    if not NAME_RE.match(name):
        raise InvalidArgument(
            f"{field_name}: invalid namespace name {name!r} (1-64 characters: letters, digits, '.', '_', '-'; "
            "starting with a letter or digit)"
        )


def validate_search_attributes(sa: dict[str, int], field_name: str = "search_attributes") -> None:
    for k, v in sa.items():
        if not SA_NAME_RE.match(k):
            raise InvalidArgument(f"{field_name}: invalid search attribute name {k!r} (letters, digits, '_')")
        if k in BUILTIN_FIELDS:
            raise InvalidArgument(f"{field_name}: {k!r} is a built-in field and cannot be registered")
        if k in SYSTEM_SEARCH_ATTRIBUTES:
            raise InvalidArgument(f"{field_name}: {k!r} is a system search attribute (set by schedules on the runs "
                                  "they start) and cannot be registered")
        if v not in SA_TYPE_NAMES:
            raise InvalidArgument(
                f"{field_name}: search attribute {k!r} has unknown type {v} "
                f"(known: {', '.join(SA_TYPE_NAMES.values())})"
            )


def _validate_common(retention_ms: int, owner_email: str, archival_uri: str) -> None:
    if retention_ms < 0:
        raise InvalidArgument(f"retention_ms: must not be negative, got {retention_ms}")
    if owner_email and "@" not in owner_email:
        raise InvalidArgument(f"owner_email: {owner_email!r} is not an email address")
    if archival_uri and not ARCHIVAL_URI_RE.match(archival_uri):
        raise InvalidArgument(f"archival_uri: {archival_uri!r} must start with gs:// or file://")


def rps_limit_cap(config: ServerConfig) -> float:
    """The largest ``rps_limit`` a system admin may give a namespace (0 = no cap, unlimited allowed).

    ``namespace_rps_limit_max`` when set, else the server's default ``namespace_rps_limit``:
    by default a namespace may be given at most what a new one gets.
    """
    return config.namespace_rps_limit_max or config.namespace_rps_limit


def check_rps_limit(value: float, config: ServerConfig, field_name: str = "rps_limit") -> None:
    """``value`` is a finite number, 0 (unlimited) or positive, within the cap (``rps_limit_cap``) if there is one."""
    if not is_rate(value):
        raise InvalidArgument(f"{field_name}: must be a finite number of requests per second, 0 (unlimited) or more, "
                              f"got {value}")
    cap = rps_limit_cap(config)
    if cap and not 0 < value <= cap:
        raise InvalidArgument(f"{field_name}: must be more than 0 and at most {cap:g} requests per second on this "
                              f"server (namespace_rps_limit_max, or namespace_rps_limit when that is 0; set by the "
                              f"operator), got {value:g}")


def check_rps_limit_change(ns: "Namespace", value: float, config: ServerConfig, *, may_raise: bool) -> None:
    """A change of ``ns``'s ``rps_limit`` to ``value``: a valid rate, raised only by who ``may_raise`` (a system admin).

    Raises:
        InvalidArgument: not a rate, or over the cap (``check_rps_limit``).
        PermissionDenied: ``value`` allows more than the current limit and the caller may not raise it.
    """
    if is_rate(value) and not may_raise and raises_rate(ns.rps_limit, value):
        current = "unlimited" if ns.rps_limit == 0 else f"{ns.rps_limit:g} requests per second"
        raise PermissionDenied(
            f"rps_limit: only a system admin may raise namespace {ns.name!r}'s request rate limit (now {current}, "
            f"asked {'unlimited (0)' if value == 0 else f'{value:g}'}); a namespace admin may lower it (a value more "
            f"than 0 and at most {ns.rps_limit:g})")
    check_rps_limit(value, config)


class NamespaceRegistry:
    """Namespaces, cached in memory by name and id; the store is the source of truth.

    ``config`` supplies the tenant limits a namespace is checked against: the default and the
    cap of ``rps_limit`` and the roots archival URIs must be under (``ServerConfig()``'s when
    not given: no namespace archival URIs).
    """

    def __init__(self, store: Store, *, default_retention_ms: int, config: ServerConfig | None = None) -> None:
        self.store = store
        self.default_retention_ms = default_retention_ms
        self.config = config or ServerConfig()
        self._by_name: dict[str, Namespace] = {}
        self._by_id: dict[str, Namespace] = {}

    async def load(self) -> None:
        for row in await self.store.list_namespaces():
            self._cache(Namespace.from_row(row, default_rps_limit=self.config.namespace_rps_limit))

    def _cache(self, ns: Namespace) -> None:
        self._by_name[ns.name] = ns
        self._by_id[ns.id] = ns

    def get(self, name: str, field_name: str = "namespace") -> Namespace:
        """The namespace called ``name``; raises NotFound (or InvalidArgument when empty)."""
        ns = self._by_name.get(name)
        if ns is None:
            if not name:
                raise InvalidArgument(f"{field_name}: a namespace is required")
            raise NotFound(f"{field_name}: namespace {name!r} not found")
        return ns

    def by_id(self, ns_id: str) -> Namespace | None:
        return self._by_id.get(ns_id)

    def all(self) -> list[Namespace]:
        return sorted(self._by_name.values(), key=lambda n: n.name)

    async def create(self, req: svc.CreateNamespaceRequest) -> Namespace:
        validate_name(req.name)
        validate_search_attributes(dict(req.search_attributes))
        _validate_common(req.retention_ms, req.owner_email, req.archival_uri)
        self._check_archival_root(req.archival_uri)
        rps_limit = self.config.namespace_rps_limit
        if req.HasField("rps_limit"):
            check_rps_limit(req.rps_limit, self.config)
            rps_limit = req.rps_limit
        if req.name in self._by_name:
            raise AlreadyExists(f"name: namespace {req.name!r} already exists")
        now = int(time.time() * 1000)
        ns = Namespace(
            id=uuid.uuid4().hex, name=req.name, description=req.description, owner_email=req.owner_email,
            retention_ms=req.retention_ms or self.default_retention_ms,
            search_attributes=dict(req.search_attributes), archival_uri=req.archival_uri, rps_limit=rps_limit,
            create_time_ms=now, update_time_ms=now,
        )
        try:
            await self.store.create_namespace(ns.to_row())
        except ConditionFailedError as e:
            raise AlreadyExists(f"name: namespace {req.name!r} already exists") from e
        self._cache(ns)
        return ns

    async def ensure(self, name: str, search_attributes: dict[str, int] | None = None) -> Namespace:
        """Create ``name`` with defaults unless it exists; register those of ``search_attributes`` it lacks.

        An attribute the namespace already has keeps its type (no error).
        """
        wanted = dict(search_attributes or {})
        ns = self._by_name.get(name)
        if ns is None:
            return await self.create(svc.CreateNamespaceRequest(name=name, search_attributes=wanted))  # type: ignore[arg-type]  # protobuf enum fields are typed as their ValueType; the int is one of its values
        missing = {k: v for k, v in wanted.items() if k not in ns.search_attributes}
        return await self.add_search_attributes(name, missing) if missing else ns

    async def update(self, req: svc.UpdateNamespaceRequest, *, may_raise_limits: bool = True) -> Namespace:
        """Apply ``req`` (its ``update_mask``; all fields when empty) to the namespace; checked first, nothing changes on error.

        ``may_raise_limits``: the caller may raise the namespace's limits (a system admin, or no auth);
        otherwise raising ``rps_limit`` is PermissionDenied (``check_rps_limit_change``).
        """
        ns = self.get(req.name, "name")
        fields = {"description", "owner_email", "retention", "search_attributes", "archival_uri", "rps_limit"}
        mask = set(req.update_mask) or fields
        unknown = mask - fields
        if unknown:
            raise InvalidArgument(f"update_mask: unknown field(s) {', '.join(sorted(unknown))}")
        new = Namespace(**{**ns.__dict__})
        new.search_attributes = dict(ns.search_attributes)
        if "description" in mask:
            new.description = req.description
        if "owner_email" in mask:
            new.owner_email = req.owner_email
        if "retention" in mask:
            new.retention_ms = req.retention_ms or self.default_retention_ms
        if "archival_uri" in mask:
            new.archival_uri = req.archival_uri
        if "rps_limit" in mask and (req.update_mask or req.HasField("rps_limit")):
            check_rps_limit_change(ns, req.rps_limit, self.config, may_raise=may_raise_limits)
            new.rps_limit = req.rps_limit
        if "search_attributes" in mask:
            validate_search_attributes(dict(req.search_attributes))
            for k, v in ns.search_attributes.items():
                if k in req.search_attributes and req.search_attributes[k] != v:
                    raise FailedPrecondition(
                        f"search_attributes: {k!r} is registered as {SA_TYPE_NAMES[v]}; its type cannot change"
                    )
            new.search_attributes = dict(req.search_attributes)
        _validate_common(req.retention_ms if "retention" in mask else 0, new.owner_email, new.archival_uri)
        if new.archival_uri != ns.archival_uri:  # a URI set earlier (under other roots) may stay
            self._check_archival_root(new.archival_uri)
        return await self._replace(ns, new)

    def _check_archival_root(self, uri: str) -> None:
        if uri:
            problem = archival_uri_problem(uri, self.config.archival_allowed_roots)
            if problem:
                raise InvalidArgument(problem)

    async def add_search_attributes(self, name: str, attrs: dict[str, int]) -> Namespace:
        ns = self.get(name)
        validate_search_attributes(attrs)
        for k, v in attrs.items():
            if k in ns.search_attributes and ns.search_attributes[k] != v:
                raise AlreadyExists(f"search_attributes: {k!r} is already registered as {SA_TYPE_NAMES[ns.search_attributes[k]]}")
        new = Namespace(**{**ns.__dict__})
        new.search_attributes = {**ns.search_attributes, **attrs}
        return await self._replace(ns, new)

    async def _replace(self, old: Namespace, new: Namespace) -> Namespace:
        new.version = old.version + 1
        new.update_time_ms = int(time.time() * 1000)
        try:
            await self.store.update_namespace(new.to_row(), old.version)
        except ConditionFailedError as e:
            raise FailedPrecondition(f"namespace {old.name!r} was changed concurrently; retry") from e
        self._cache(new)
        return new

    async def delete(self, name: str, *, now_ms: int | None = None) -> list[ApiKeyRow]:
        """Delete the namespace, and with it (one store transaction) every API-key grant on it.

        Keys left with no grant (not system_admin ones) are revoked at ``now_ms`` (default:
        the wall clock). Returns the keys as changed: the caller refreshes its key cache.
        """
        ns = self.get(name, "name")
        await self.store.delete_deployments(ns.id)
        changed = await self.store.delete_namespace(name, int(time.time() * 1000) if now_ms is None else now_ms)
        self._by_name.pop(ns.name, None)
        self._by_id.pop(ns.id, None)
        return changed
