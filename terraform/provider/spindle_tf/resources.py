"""The ``spindle_namespace`` resource."""

from __future__ import annotations

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

from .client import SpindleError, svc
from .diagnostics import add_server_error, is_unknown, report
from .model import namespace_state, retention_ms_from_days, type_enums, update_mask
from .validation import (
    SEARCH_ATTRIBUTE_TYPES,
    Problems,
    check_name,
    check_namespace_config,
    check_search_attribute_changes,
)

if TYPE_CHECKING:
    from .context import ProviderContext


def _known(value: Any) -> Any:
    return None if is_unknown(value) else value


def _namespace_fields(planned: State) -> dict[str, Any]:
    """The namespace's fields of a Create/UpdateNamespaceRequest, from the planned state."""
    retention = _known(planned.get("retention_days"))
    rps_limit = _known(planned.get("rps_limit"))
    return dict(
        **({"rps_limit": float(rps_limit)} if rps_limit is not None else {}),  # unset: the server's default
        name=planned["name"],
        description=planned.get("description") or "",
        owner_email=planned.get("owner_email") or "",
        retention_ms=retention_ms_from_days(retention) if retention is not None else 0,
        search_attributes=type_enums(planned.get("search_attributes")),
        archival_uri=planned.get("archival_uri") or "",
    )


class NamespaceResource(Resource):
    """A Spindle namespace: retention, custom search attributes, archival, request rate limit and ownership.

    The name is the identity (changing it replaces the namespace) and the import ID.
    """

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        """``spindle_namespace``."""
        return "namespace"

    @classmethod
    def get_schema(cls) -> schema.Schema:
        """Attributes of ``spindle_namespace``."""
        S = types.String()
        return schema.Schema(
            version=0,
            description="A Spindle namespace. Import with `terraform import spindle_namespace.NAME <namespace name>`.",
            attributes=[
                schema.Attribute("id", S, computed=True, description="The namespace name (Terraform ID)."),
                schema.Attribute("name", S, required=True, requires_replace=True,
                                 description="Namespace name: 1-64 letters, digits, `.`, `_`, `-`, starting with a "
                                             "letter or digit. Changing it replaces the namespace."),
                schema.Attribute("namespace_id", S, computed=True, description="Server-assigned unique ID."),
                schema.Attribute("description", S, optional=True, description="Free text."),
                schema.Attribute("owner_email", S, optional=True, description="Owner's email address."),
                schema.Attribute("retention_days", types.Number(), optional=True, computed=True,
                                 description="How many days closed executions are kept before deletion (or "
                                             "archival). A whole number, at least 1. Unset: the server's default "
                                             "at creation, and the current value afterwards."),
                schema.Attribute("search_attributes", types.Map(S), optional=True,
                                 description="Custom search attributes: name -> type, one of "
                                             f"{', '.join(f'`{t}`' for t in SEARCH_ATTRIBUTE_TYPES)}. Attributes "
                                             "can be added; removing one or changing its type is refused at plan "
                                             "time."),
                schema.Attribute("archival_uri", S, optional=True,
                                 description="Where closed histories are archived: `gs://BUCKET/PREFIX` or "
                                             "`file:///PATH`."),
                schema.Attribute("rps_limit", types.Number(), optional=True, computed=True,
                                 description="Requests per second the namespace's clients may make, per server "
                                             "process (0 = unlimited); calls over it get RESOURCE_EXHAUSTED with a "
                                             "retry delay. Unset: the server's default (namespace_rps_limit) at "
                                             "creation, and the current value afterwards. The operator's limit: "
                                             "raising it takes a system admin key (at most the server's cap, "
                                             "namespace_rps_limit_max or else namespace_rps_limit; 0 only when "
                                             "the server has no cap); a namespace admin key may only lower it."),
                schema.Attribute("force_destroy", types.Bool(), optional=True,
                                 description="Destroy terminates running executions. Without it, destroying a "
                                             "namespace that has running executions fails. Must be applied before "
                                             "the destroy that relies on it."),
            ],
        )

    # ------------------------------------------------------------------ validation and plan
    def validate(self, diags: Diagnostics, type_name: str, config: Config) -> None:
        """Schema checks, then Spindle's own rules (names, retention, search attribute types, ...)."""
        super().validate(diags, type_name, config)
        if not diags.has_errors():
            report(diags, check_namespace_config(config, is_unknown))

    def plan(self, ctx: PlanContext, current: Optional[State], planned: State) -> Optional[State]:
        """Refuse changes Spindle cannot make in place (search attribute removal or retyping) at plan time."""
        if current is None or "name" in ctx.changed_fields:
            return planned  # a new namespace: nothing to compare with
        sa = planned.get("search_attributes")
        if "search_attributes" in ctx.changed_fields and not is_unknown(sa):
            problems = Problems()
            check_search_attribute_changes(current.get("search_attributes"), sa, problems)
            report(ctx.diagnostics, problems)
        return planned

    # ------------------------------------------------------------------ CRUD
    def create(self, ctx: CreateContext, planned: State) -> Optional[State]:
        """CreateNamespace with every configured field."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        req = svc.CreateNamespaceRequest(**_namespace_fields(planned))
        try:
            info = conn.call("CreateNamespace", req).namespace_info
        except SpindleError as e:
            if e.code == grpc.StatusCode.ALREADY_EXISTS:
                ctx.diagnostics.add_error(
                    f"Namespace {planned['name']!r} already exists",
                    f"{e.describe()}. To manage it with Terraform, import it: terraform import <resource address> "
                    f"{planned['name']}",
                    path=["name"],
                )
            else:
                add_server_error(ctx.diagnostics, f"Cannot create namespace {planned['name']!r}", e)
            return None
        return self._state(info, planned)

    def read(self, ctx: ReadContext, current: State) -> Optional[State]:
        """DescribeNamespace; a namespace deleted outside Terraform reads as gone (planned for creation)."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return current
        name = current.get("name") or current.get("id")
        try:
            info = conn.describe_namespace(name)
        except SpindleError as e:
            if e.code == grpc.StatusCode.NOT_FOUND:
                return None
            add_server_error(ctx.diagnostics, f"Cannot read namespace {name!r}", e)
            return current
        return self._state(info, current)

    def update(self, ctx: UpdateContext, current: State, planned: State) -> Optional[State]:
        """UpdateNamespace with an update_mask of the attributes that changed."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        mask = update_mask(current, planned)
        if not mask:  # only force_destroy changed: nothing to send
            state = dict(current)
            state["force_destroy"] = planned.get("force_destroy")
            return state
        req = svc.UpdateNamespaceRequest(update_mask=mask, **_namespace_fields(planned))
        try:
            info = conn.call("UpdateNamespace", req).namespace_info
        except SpindleError as e:
            add_server_error(ctx.diagnostics, f"Cannot update namespace {planned['name']!r}", e)
            return None
        return self._state(info, planned)

    def delete(self, ctx: DeleteContext, current: State) -> None:
        """DeleteNamespace; refused while executions run unless force_destroy was applied."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        name = current["name"]
        force = bool(current.get("force_destroy"))
        try:
            conn.call("DeleteNamespace", svc.DeleteNamespaceRequest(name=name, force=force))
        except SpindleError as e:
            if e.code == grpc.StatusCode.NOT_FOUND:
                return None  # already gone
            if e.code == grpc.StatusCode.FAILED_PRECONDITION:
                ctx.diagnostics.add_error(
                    f"Cannot delete namespace {name!r}: it has running executions",
                    f"{e.message}. Terminate them, or set force_destroy = true on this resource, run terraform "
                    "apply, then destroy again (force_destroy terminates running executions).",
                    path=["force_destroy"],
                )
            else:
                add_server_error(ctx.diagnostics, f"Cannot delete namespace {name!r}", e)
        return None

    def import_(self, ctx: ImportContext, id: str) -> Optional[State]:
        """Import by namespace name."""
        problems = Problems()
        check_name(id, problems, "id")
        if problems:
            ctx.diagnostics.add_error(f"Invalid import ID {id!r}",
                                      "The import ID of spindle_namespace is the namespace name, e.g. "
                                      "terraform import spindle_namespace.orders orders.")
            return None
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        try:
            info = conn.describe_namespace(id)
        except SpindleError as e:
            if e.code == grpc.StatusCode.NOT_FOUND:
                ctx.diagnostics.add_error(f"Cannot import namespace {id!r}: not found",
                                          f"There is no namespace {id!r} on the Spindle server at {conn.address}.")
            else:
                add_server_error(ctx.diagnostics, f"Cannot import namespace {id!r}", e)
            return None
        # Empty optional fields import as null (as if unset in the configuration).
        return self._state(info, {"force_destroy": None})

    def upgrade(self, ctx: UpgradeContext, version: int, old: State) -> Optional[State]:
        """Schema version 0 is the only one so far: nothing to upgrade."""
        return old

    @staticmethod
    def _state(info: Any, prior: State) -> State:
        state = namespace_state(info, prior)
        state["force_destroy"] = prior.get("force_destroy")
        return state
