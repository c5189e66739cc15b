"""The archive side of erasure: ``spindle.controlplane.archival._erasure`` (``erase_archived_page``,
``archived_run_matcher``), looked up when used so that a build without it still erases live runs."""

from __future__ import annotations

import importlib

from types import ModuleType

_MODULE = "spindle.controlplane.archival._erasure"


def helper() -> ModuleType | None:
    """The archive erasure module, or None when it is not part of this build."""
    try:
        module = importlib.import_module(_MODULE)
    except ImportError:
        return None
    return module if hasattr(module, "erase_archived_page") and hasattr(module, "archived_run_matcher") else None


__all__ = ["helper"]
