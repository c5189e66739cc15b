"""Terraform diagnostics and plan-time unknowns, shared by the provider, resources and data sources."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tf.types import Unknown
from tf.utils import Diagnostics

from .validation import Problems

if TYPE_CHECKING:
    from .client import SpindleError


def is_unknown(value: Any) -> bool:
    """True for a value Terraform does not know yet (during plan)."""
    return value is Unknown


def report(diags: Diagnostics, problems: Problems) -> None:
    """Turn validation problems into Terraform diagnostics (each names its attribute path)."""
    for p in problems.items:
        if p.warning:
            diags.add_warning(p.summary, p.detail, path=list(p.path))
        else:
            diags.add_error(p.summary, p.detail, path=list(p.path))


def add_server_error(diags: Diagnostics, summary: str, error: SpindleError) -> None:
    """A diagnostic for a failed call, pointing at the attribute the server's message names."""
    path = [error.attribute] if error.attribute else None
    diags.add_error(summary, error.describe(), path=path)


__all__ = ["add_server_error", "is_unknown", "report"]
