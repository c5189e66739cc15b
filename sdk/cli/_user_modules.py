"""Importing the user's own modules named on a command line (``--activities MODULE``,
``--workflows MODULE:ATTR``).

A console script (``spindle ...``) does not put the working directory on ``sys.path`` the
way ``python -m`` does, so ``spindle dsl run ... --activities examples.reports.activities``
could not find a module that ``python -m`` finds from the same folder. Every CLI verb that
imports user code goes through :func:`import_user_module`, which behaves like ``python -m``.
"""

from __future__ import annotations

import importlib
import sys

from types import ModuleType

__all__ = ["UserModuleError", "import_user_module"]


class UserModuleError(ValueError):
    """The module a command-line option names cannot be imported (the message says which and why)."""


def import_user_module(name: str, option: str) -> ModuleType:
    """Import ``name`` with the working directory on the import path, as ``python -m`` does.

    Args:
        name: a dotted module name, e.g. ``examples.reports.activities``.
        option: how the command line named it (``--activities 'x'``), for the message.

    Raises:
        UserModuleError: the name is empty, or importing it failed (the message names the
            option, the module and the error the import raised).
    """
    if not name or any(not part.isidentifier() for part in name.split(".")):
        raise UserModuleError(f"{option}: {name!r} is not a module name (expected e.g. myapp.activities)")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")
    try:
        return importlib.import_module(name)
    except Exception as error:  # noqa: BLE001 - any failure inside the user's module is reported, not raised
        raise UserModuleError(f"{option}: cannot import module {name!r}: {type(error).__name__}: {error}") from error
