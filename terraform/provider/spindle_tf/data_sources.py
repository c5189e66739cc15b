"""Data sources: ``spindle_namespace`` (one, by name) and ``spindle_namespaces`` (all, optionally by prefix)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import grpc

from tf import schema, types
from tf.iface import Config, DataSource, ReadDataContext, State
from tf.utils import Diagnostics

from .client import SpindleError
from .diagnostics import add_server_error, is_unknown, report
from .model import data_source_namespace
from .tftypes import Object
from .validation import Problems, check_name

if TYPE_CHECKING:
    from .context import ProviderContext

_S = types.String()
#: The element type of ``spindle_namespaces.namespaces``.
NAMESPACE_OBJECT = Object({
    "name": _S,
    "namespace_id": _S,
    "description": _S,
    "owner_email": _S,
    "retention_days": types.Number(),
    "search_attributes": types.Map(_S),
    "archival_uri": _S,
    "rps_limit": types.Number(),
})


class NamespaceDataSource(DataSource):
    """One namespace by name (default: the provider's ``namespace``)."""

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        """``spindle_namespace``."""
        return "namespace"

    @classmethod
    def get_schema(cls) -> schema.Schema:
        """Attributes of the ``spindle_namespace`` data source."""
        return schema.Schema(
            version=0,
            description="Reads one namespace.",
            attributes=[
                schema.Attribute("name", _S, optional=True, computed=True,
                                 description="Namespace to read (default: the provider's `namespace`)."),
                schema.Attribute("id", _S, computed=True, description="The namespace name."),
                schema.Attribute("namespace_id", _S, computed=True, description="Server-assigned unique ID."),
                schema.Attribute("description", _S, computed=True),
                schema.Attribute("owner_email", _S, computed=True),
                schema.Attribute("retention_days", types.Number(), computed=True),
                schema.Attribute("search_attributes", types.Map(_S), computed=True,
                                 description="Custom search attributes: name -> type."),
                schema.Attribute("archival_uri", _S, computed=True),
                schema.Attribute("rps_limit", types.Number(), computed=True,
                                 description="Requests per second per server process (0 = unlimited)."),
            ],
        )

    def validate(self, diags: Diagnostics, type_name: str, config: Config) -> None:
        """The name, when given, must be a valid namespace name."""
        super().validate(diags, type_name, config)
        name = config.get("name")
        if name is not None and not is_unknown(name):
            problems = Problems()
            check_name(name, problems)
            report(diags, problems)

    def read(self, ctx: ReadDataContext, config: Config) -> Optional[State]:
        """DescribeNamespace."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        name = config.get("name") or self.provider.default_namespace
        try:
            info = conn.describe_namespace(name)
        except SpindleError as e:
            if e.code == grpc.StatusCode.NOT_FOUND:
                ctx.diagnostics.add_error(f"Namespace {name!r} not found",
                                          f"There is no namespace {name!r} on the Spindle server at {conn.address}.",
                                          path=["name"])
            else:
                add_server_error(ctx.diagnostics, f"Cannot read namespace {name!r}", e)
            return None
        return data_source_namespace(info)


class NamespacesDataSource(DataSource):
    """Every namespace, optionally only those whose name starts with ``name_prefix``."""

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        """``spindle_namespaces``."""
        return "namespaces"

    @classmethod
    def get_schema(cls) -> schema.Schema:
        """Attributes of the ``spindle_namespaces`` data source."""
        return schema.Schema(
            version=0,
            description="Lists namespaces.",
            attributes=[
                schema.Attribute("name_prefix", _S, optional=True, description="Only names starting with this."),
                schema.Attribute("id", _S, computed=True, description="`namespaces` or `namespaces/PREFIX`."),
                schema.Attribute("names", types.List(_S), computed=True, description="Names, sorted."),
                schema.Attribute("namespaces", types.List(NAMESPACE_OBJECT), computed=True,
                                 description="Each namespace (name, namespace_id, description, owner_email, "
                                             "retention_days, search_attributes, archival_uri), sorted by name."),
            ],
        )

    def read(self, ctx: ReadDataContext, config: Config) -> Optional[State]:
        """ListNamespaces (all pages)."""
        conn = self.provider.require_connection(ctx.diagnostics)
        if conn is None:
            return None
        prefix = config.get("name_prefix") or ""
        try:
            infos = conn.list_namespaces()
        except SpindleError as e:
            add_server_error(ctx.diagnostics, "Cannot list namespaces", e)
            return None
        rows = sorted((data_source_namespace(i) for i in infos if i.name.startswith(prefix)),
                      key=lambda r: r["name"])
        for r in rows:
            r.pop("id")
        return {
            "name_prefix": config.get("name_prefix"),
            "id": f"namespaces/{prefix}" if prefix else "namespaces",
            "names": [r["name"] for r in rows],
            "namespaces": [NAMESPACE_OBJECT.encode(r) for r in rows],
        }
