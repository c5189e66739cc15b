"""Conversions between Spindle's ``NamespaceInfo`` and Terraform state (pure Python).

``NamespaceInfo`` is duck-typed (anything with its fields), so these functions are
testable without protobuf. Search attribute types travel as the wire enum's
numbers (1 = Keyword ... 7 = KeywordList) and are shown to users as names.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from .validation import SEARCH_ATTRIBUTE_TYPES

MS_PER_DAY = 86_400_000

#: Wire enum value -> Terraform type name, and back.
TYPE_NAME_BY_ENUM: dict[int, str] = {i + 1: name for i, name in enumerate(SEARCH_ATTRIBUTE_TYPES)}
ENUM_BY_TYPE_NAME: dict[str, int] = {name: i for i, name in TYPE_NAME_BY_ENUM.items()}

#: Attributes of ``spindle_namespace`` that Terraform stores (resource and data source).
NAMESPACE_FIELDS = ("id", "name", "namespace_id", "description", "owner_email", "retention_days",
                    "search_attributes", "archival_uri", "rps_limit")


class NamespaceInfoLike(Protocol):
    """The fields of ``spindle.v1.NamespaceInfo`` that the provider reads."""

    name: str
    id: str
    description: str
    owner_email: str
    retention_ms: int
    search_attributes: Mapping[str, int]
    archival_uri: str
    rps_limit: float


def number(value: float) -> int | float:
    """A float as Terraform shows it: whole numbers as ``int``."""
    return int(value) if float(value).is_integer() else value


def retention_days_from_ms(ms: int) -> int | float:
    """Whole days as an ``int``; a retention set outside Terraform in hours shows as a fraction."""
    days = ms / MS_PER_DAY
    return int(days) if days.is_integer() else days


def retention_ms_from_days(days: int | float) -> int:
    """Days (as Terraform gives them) to milliseconds."""
    return int(round(float(days) * MS_PER_DAY))


def type_names(search_attributes: Mapping[str, int]) -> dict[str, str]:
    """Wire enum numbers to type names (unknown numbers show as ``Unknown(N)``, so drift is visible)."""
    return {k: TYPE_NAME_BY_ENUM.get(int(v), f"Unknown({int(v)})") for k, v in sorted(search_attributes.items())}


def type_enums(search_attributes: Mapping[str, str] | None) -> dict[str, Any]:
    """Type names (already validated) to wire enum numbers (``SearchAttributeType`` values)."""
    return {k: ENUM_BY_TYPE_NAME[v] for k, v in (search_attributes or {}).items()}


def _keep_null(server_value: Any, prior: Any, empty: Any) -> Any:
    """An optional attribute the user left unset (null) stays null while the server has the empty value.

    Without this, an unset ``description`` would read back as ``""`` and every plan
    would show ``"" -> null``.
    """
    if server_value == empty and prior is None:
        return None
    return server_value


def namespace_state(info: NamespaceInfoLike, prior: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Terraform state for a namespace; ``prior`` (state or plan) decides null-vs-empty for optional fields."""
    prior = prior or {}
    return {
        "id": info.name,
        "name": info.name,
        "namespace_id": info.id,
        "description": _keep_null(info.description, prior.get("description"), ""),
        "owner_email": _keep_null(info.owner_email, prior.get("owner_email"), ""),
        "retention_days": retention_days_from_ms(info.retention_ms),
        "search_attributes": _keep_null(type_names(info.search_attributes), prior.get("search_attributes"), {}),
        "archival_uri": _keep_null(info.archival_uri, prior.get("archival_uri"), ""),
        "rps_limit": number(info.rps_limit),
    }


def data_source_namespace(info: NamespaceInfoLike) -> dict[str, Any]:
    """A namespace as the data sources show it (every field set, empty strings and maps included)."""
    return {
        "id": info.name,
        "name": info.name,
        "namespace_id": info.id,
        "description": info.description,
        "owner_email": info.owner_email,
        "retention_days": retention_days_from_ms(info.retention_ms),
        "search_attributes": type_names(info.search_attributes),
        "archival_uri": info.archival_uri,
        "rps_limit": number(info.rps_limit),
    }


def update_mask(current: Mapping[str, Any], planned: Mapping[str, Any]) -> list[str]:
    """Server ``update_mask`` names for the attributes that differ between state and plan."""
    mask: list[str] = []
    for attr in ("description", "owner_email", "archival_uri"):
        if (current.get(attr) or "") != (planned.get(attr) or ""):
            mask.append(attr)
    if planned.get("retention_days") is not None and current.get("retention_days") != planned.get("retention_days"):
        mask.append("retention")
    if (current.get("search_attributes") or {}) != (planned.get("search_attributes") or {}):
        mask.append("search_attributes")
    if planned.get("rps_limit") is not None and current.get("rps_limit") != planned.get("rps_limit"):
        mask.append("rps_limit")
    return mask
